// Hermes Logbook: small progressive enhancements. Every page works without this file.
(function () {
  "use strict";

  // A link to #m-<id> whose message is not on the loaded page: ask the server for the page
  // that holds it (the server understands ?at=<id>).
  function openMessageAnchor() {
    var m = /^#m-(\d+)$/.exec(window.location.hash);
    if (!m) return;
    var el = document.getElementById("m-" + m[1]);
    if (el) {
      el.classList.add("flash");
      return;
    }
    if (!document.querySelector(".conversation")) return;
    var url = new URL(window.location.href);
    if (url.searchParams.get("at") === m[1]) return; // already asked; avoid a loop
    url.searchParams.delete("after");
    url.searchParams.delete("before");
    url.searchParams.set("at", m[1]);
    window.location.replace(url.toString());
  }

  document.addEventListener("DOMContentLoaded", openMessageAnchor);
  window.addEventListener("hashchange", openMessageAnchor);

  // Keep the filter form's aria-busy in step with htmx requests, for screen readers.
  document.addEventListener("htmx:beforeRequest", function (e) {
    var t = e.detail && e.detail.target;
    if (t) t.setAttribute("aria-busy", "true");
  });
  document.addEventListener("htmx:afterSettle", function (e) {
    var t = e.detail && e.detail.target;
    if (t) t.setAttribute("aria-busy", "false");
  });
  // A failed htmx request shows the server's message instead of failing silently.
  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    var box = document.getElementById("toast");
    if (!box) {
      box = document.createElement("div");
      box.id = "toast";
      box.setAttribute("role", "alert");
      document.body.appendChild(box);
    }
    var doc = new DOMParser().parseFromString(xhr.responseText, "text/html");
    var msg = doc.querySelector(".error-page p");
    box.textContent = (msg ? msg.textContent : "Request failed") + " (" + xhr.status + ")";
    box.className = "toast show";
    setTimeout(function () { box.className = "toast"; }, 6000);
  });
})();
