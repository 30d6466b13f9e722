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

  // Arriving from a search hit (?hl=term…#m-<id>): mark the terms inside that message.
  function highlightTerms() {
    var params = new URLSearchParams(window.location.search);
    var terms = params.getAll("hl").filter(function (t) { return t.trim().length > 0; });
    var m = /^#m-(\d+)$/.exec(window.location.hash);
    if (!terms.length || !m) return;
    var root = document.getElementById("m-" + m[1]);
    if (!root) return;
    var lowered = terms.map(function (t) { return t.toLowerCase(); });
    // The message's own text only: its "⋯" menu (copy, raw text) holds the same words, and a
    // mark there would open that panel over the very hit the reader came for.
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (n) {
        return n.parentElement && n.parentElement.closest(".msg-menu")
          ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
      }
    });
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    nodes.forEach(function (node) {
      var text = node.nodeValue, low = text.toLowerCase(), pos = 0, frag = null;
      for (;;) {
        var best = -1, len = 0;
        lowered.forEach(function (t) {
          var i = low.indexOf(t, pos);
          if (i >= 0 && (best < 0 || i < best)) { best = i; len = t.length; }
        });
        if (best < 0) break;
        frag = frag || document.createDocumentFragment();
        frag.appendChild(document.createTextNode(text.slice(pos, best)));
        var mark = document.createElement("mark");
        mark.textContent = text.slice(best, best + len);
        frag.appendChild(mark);
        pos = best + len;
      }
      if (frag) {
        frag.appendChild(document.createTextNode(text.slice(pos)));
        node.parentNode.replaceChild(frag, node);
      }
    });
    root.querySelectorAll("details:not(.msg-menu)").forEach(function (d) {
      if (d.querySelector("mark")) d.open = true;
    });
  }

  // "/" focuses the search box (the header's, or the search page's own).
  document.addEventListener("keydown", function (e) {
    if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var box = document.getElementById("s-q") || document.getElementById("header-q");
    if (box) { e.preventDefault(); box.focus(); box.select(); }
  });

  document.addEventListener("DOMContentLoaded", openMessageAnchor);
  // On a phone the filter form folds behind one button (which says how many filters are on),
  // so the first sessions are on the first screen.
  document.addEventListener("DOMContentLoaded", function () {
    if (!window.matchMedia || !window.matchMedia("(max-width: 720px)").matches) return;
    document.querySelectorAll("details.filter-more[open]").forEach(function (d) {
      d.removeAttribute("open");
    });
  });
  // Stats count days in the reader's time zone. The first visit does not know it yet (UTC);
  // the browser tells the page once, and a cookie keeps it for the next visits.
  document.addEventListener("DOMContentLoaded", function () {
    var input = document.querySelector("input[data-browser-tz]");
    if (!input || /[?&]tz=/.test(window.location.search)) return;
    var zone;
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
    if (!zone || zone === input.value) return;
    input.value = zone;
    if (window.htmx) window.htmx.trigger(input.form, "submit");
  });
  document.addEventListener("DOMContentLoaded", highlightTerms);
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
  // A failed htmx request says why, in the page (a banner that stays until the next request
  // succeeds) and as a toast: never only in the console.
  function showRequestError(text) {
    var banner = document.getElementById("request-error");
    if (banner) {
      banner.querySelector(".text").textContent = text;
      banner.hidden = false;
    }
  }
  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    var doc = new DOMParser().parseFromString(xhr.responseText, "text/html");
    var msg = doc.querySelector(".error-page p");
    showRequestError((msg ? msg.textContent : "The request failed.") + " (" + xhr.status + ")");
  });
  document.addEventListener("htmx:sendError", function () {
    showRequestError("Logbook did not answer: is it still running?");
  });
  document.addEventListener("htmx:afterRequest", function (e) {
    var banner = document.getElementById("request-error");
    if (banner && e.detail.successful) banner.hidden = true;
  });
  document.addEventListener("click", function (e) {
    if (e.target.closest && e.target.closest("#request-error .close")) {
      document.getElementById("request-error").hidden = true;
    }
  });

  // Stats period: a date applies when complete (Apply, Enter or leaving the field), never
  // on each typed digit; choosing dates unticks the preset periods and vice versa.
  document.addEventListener("change", function (e) {
    var t = e.target;
    var form = t.closest && t.closest("#stats-form");
    if (!form) return;
    if (t.type === "date") {
      e.stopPropagation();  // the form's htmx "change" trigger must not see half-typed dates
      form.querySelectorAll("input[name=period]").forEach(function (r) { r.checked = false; });
      t.dataset.pending = "1";
    } else if (t.name === "period") {
      form.querySelectorAll("input[type=date]").forEach(function (d) { d.value = ""; });
    }
  }, true);
  document.addEventListener("focusout", function (e) {
    var t = e.target;
    if (t.type !== "date" || !t.dataset.pending || !t.closest("#stats-form")) return;
    delete t.dataset.pending;
    if (window.htmx) window.htmx.trigger(t.closest("#stats-form"), "submit");
  });
})();

// Toasts for htmx actions (HX-Trigger: {"toast": "…"}) and for flashed messages.
(function () {
  "use strict";
  // A toast is words, or {text, href, link}: the end of long work, linking to its result.
  // Only a path on this server is followed (never another site, never javascript:).
  function toast(what) {
    var box = document.getElementById("toasts");
    if (!box) return;
    var p = document.createElement("p");
    p.className = "toast show";
    p.setAttribute("role", "status");
    var text = typeof what === "string" ? what : String(what && what.text || "");
    p.textContent = text;
    var linked = what && typeof what.href === "string" && /^\/(?!\/)/.test(what.href);
    if (linked) {
      var a = document.createElement("a");
      a.href = what.href;
      a.textContent = what.link || "Open";
      p.appendChild(document.createTextNode(" · "));
      p.appendChild(a);
    }
    box.appendChild(p);
    setTimeout(function () { p.remove(); }, linked ? 12000 : 5000);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.body.addEventListener("toast", function (e) {
      var d = e.detail;
      toast(d && d.value !== undefined ? d.value : d && d.text !== undefined ? d : String(d));
    });
    document.querySelectorAll("#toasts .toast").forEach(function (p) {
      setTimeout(function () { p.remove(); }, 5000);
    });
  });

  // Inline rename: Escape puts the title back without saving.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") return;
    var input = e.target;
    if (!input.classList || !input.classList.contains("title-input")) return;
    var form = input.closest("form.title-slot");
    if (form && window.htmx) {
      e.preventDefault();
      window.htmx.ajax("GET", form.getAttribute("data-cancel"), {target: form, swap: "outerHTML"});
    }
  });
  // Focus the title input when the edit form arrives.
  document.addEventListener("htmx:afterSwap", function (e) {
    var input = e.detail.target && e.detail.target.querySelector
      ? (e.detail.elt.querySelector && e.detail.elt.querySelector(".title-input")) : null;
    var any = document.querySelector("form.title-slot .title-input");
    (input || any) && (input || any).focus();
  });

  // Selection: shift-click selects the range since the last ticked row.
  var last = null;
  document.addEventListener("click", function (e) {
    var box = e.target;
    if (!box.matches || !box.matches("table.sessions td.sel input[type=checkbox]")) return;
    var boxes = Array.prototype.slice.call(
      document.querySelectorAll("table.sessions td.sel input[type=checkbox]"));
    if (e.shiftKey && last && last !== box) {
      var a = boxes.indexOf(last), b = boxes.indexOf(box);
      var lo = Math.min(a, b), hi = Math.max(a, b);
      for (var i = lo; i <= hi; i++) boxes[i].checked = box.checked;
    }
    last = box;
    var n = boxes.filter(function (x) { return x.checked; }).length;
    var count = document.querySelector(".bulk-count");
    if (count) count.textContent = n ? n + " selected" : "";
  });
})();

// Everyday comforts: live updates, keyboard, theme, copy buttons, local times.
(function () {
  "use strict";
  var POLL_MS = 4000;

  function ready(fn) {
    if (document.readyState !== "loading") fn(); else document.addEventListener("DOMContentLoaded", fn);
  }

  // --- live: the tail of an active session, and the sessions list -------------------------
  // Polls only while the tab is visible; the server answers 204 when nothing changed.
  function pollTail() {
    if (document.hidden || !window.htmx) return;
    var tail = document.getElementById("live-tail");
    if (!tail || tail.dataset.busy) return;
    tail.dataset.busy = "1";
    window.htmx.ajax("GET", tail.getAttribute("data-poll"), {target: tail, swap: "outerHTML"})
      .then(function () { var t = document.getElementById("live-tail"); if (t) delete t.dataset.busy; },
            function () { delete tail.dataset.busy; });
  }
  var listToken = null;
  function pollList() {
    if (document.hidden || !window.htmx) return;
    var results = document.getElementById("results");
    var url = new URL(window.location.href);
    if (!results || url.searchParams.get("after")) return;   // live only on the first page
    // The URL comes from the page, so it carries the profile being looked at.
    var changes = new URL(document.body.getAttribute("data-changes-url") || "/changes",
                          window.location.href);
    if (listToken) changes.searchParams.set("since", listToken);
    fetch(changes.toString(),
          {headers: {"Accept": "application/json"}})
      .then(function (r) { return r.status === 200 ? r.json() : null; })
      .then(function (body) {
        if (!body) return;
        var first = listToken === null;
        listToken = body.token;
        if (!first) window.htmx.ajax("GET", window.location.href, {target: "#results", swap: "outerHTML"});
      })
      .catch(function () {});
  }
  ready(function () {
    setInterval(pollTail, POLL_MS);
    setInterval(pollList, POLL_MS * 2);
    pollList();
  });

  // --- keyboard ---------------------------------------------------------------------------
  function typing(e) {
    var t = e.target;
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(t.tagName));
  }
  function rowLinks() {
    var links = document.querySelectorAll(
      "table.sessions tbody tr .title-slot a:first-child, ol.hits li.hit a.snippet");
    return Array.prototype.slice.call(links);
  }
  // The query box searches as one types (its own trigger). Its `change` (fired when it loses
  // focus, e.g. by a click on a hit) must not search again: that search's pushed URL would
  // cancel the navigation the click started. The filters' changes still search.
  document.addEventListener("change", function (e) {
    if (e.target && e.target.id === "s-q") e.stopPropagation();
  }, true);
  // After a search, focus moves to the results so j/k walk the hits (instead of typing into
  // the query box); search-as-you-type keeps the focus where the reader types.
  function focusResults() {
    var r = document.getElementById("search-results");
    if (r && r.querySelector("ol.hits li")) r.focus({preventScroll: true});
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (new URLSearchParams(window.location.search).get("q")) focusResults();
  });
  document.addEventListener("htmx:afterSettle", function (e) {
    var cfg = e.detail.requestConfig;
    if (e.detail.target && e.detail.target.id === "search-results" && cfg &&
        cfg.triggeringEvent && cfg.triggeringEvent.type === "submit") focusResults();
  });

  var pendingG = 0;
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e)) return;
    var dialog = document.getElementById("shortcuts");
    if (e.key === "?") {
      e.preventDefault();
      if (dialog && !dialog.open) dialog.showModal();
      return;
    }
    if (e.key === "j" || e.key === "k") {
      var links = rowLinks();
      if (!links.length) return;
      var i = links.indexOf(document.activeElement);
      i = e.key === "j" ? Math.min(links.length - 1, i + 1) : Math.max(0, i < 0 ? 0 : i - 1);
      links.forEach(function (a) { a.closest("tr, li").classList.remove("kbd-current"); });
      links[i].closest("tr, li").classList.add("kbd-current");
      links[i].focus();
      links[i].scrollIntoView({block: "nearest"});
      e.preventDefault();
      return;
    }
    if (e.key === "g") { pendingG = Date.now(); return; }
    if (pendingG && Date.now() - pendingG < 1500) {
      pendingG = 0;
      if (e.key === "s") window.location.href = document.body.getAttribute("data-sessions-url") || "/sessions";
      if (e.key === "t") window.location.href = document.body.getAttribute("data-stats-url") || "/stats";
    }
  });

  // --- theme: remembered in a cookie, applied at once -----------------------------------
  document.addEventListener("click", function (e) {
    var toggle = e.target.closest && e.target.closest("[data-theme-toggle]");
    if (!toggle) return;
    e.preventDefault();
    var root = document.documentElement;
    var current = root.getAttribute("data-theme") ||
      (window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
    var next = current === "dark" ? "light" : "dark";
    root.setAttribute("data-theme", next);
    document.cookie = "theme=" + next + "; Path=/; Max-Age=31536000; SameSite=Lax";
  });

  // --- copy buttons (shown only where JavaScript can copy) ------------------------------
  function revealCopy(root) {
    (root || document).querySelectorAll(
      "button.copy[hidden], button[data-shortcuts][hidden]")
      .forEach(function (b) { b.hidden = false; });
  }

  // --- long conversations: moving by message and by question, from anywhere -------------
  // The messages sit under two sticky bars (the site header and the viewer's own); a message
  // counts as "here" once its top has reached them. Moving scrolls within what is loaded;
  // beyond it, the server finds the message and opens the page that holds it (the links
  // work the same way without this script).
  function barsBottom() {
    var nav = document.querySelector(".viewer-nav");
    var header = parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--header-h")) || 0;
    return header + (nav ? nav.offsetHeight : 0);
  }
  function shownMessages() {
    return Array.prototype.slice.call(document.querySelectorAll("article.msg[data-n]"));
  }
  function topMessage() {
    var msgs = shownMessages(), edge = barsBottom() + 12;
    for (var i = 0; i < msgs.length; i++) {
      if (msgs[i].getBoundingClientRect().bottom > edge) return msgs[i];
    }
    return msgs.length ? msgs[msgs.length - 1] : null;
  }
  function atTop(m) {
    return Math.abs(m.getBoundingClientRect().top - (barsBottom() + 8)) < 6;
  }
  // The message the reader is at: the one last moved to while its start is on the screen
  // (at the end of a conversation it cannot reach the top), else the one at the top.
  function currentMessage() {
    var marked = document.querySelector("article.msg.kbd-current[data-n]");
    if (marked) {
      var top = marked.getBoundingClientRect().top;
      if (top >= barsBottom() - 2 && top < window.innerHeight - 24) return marked;
    }
    return topMessage();
  }
  function updatePosition() {
    var pos = document.querySelector(".viewer-nav .pos");
    var top = currentMessage();
    if (!pos || !top) return;
    var total = Number(pos.getAttribute("data-total"));
    pos.textContent = "message " + Number(top.getAttribute("data-n")).toLocaleString() +
      " of " + total.toLocaleString();
  }
  function bringToTop(m) {
    document.documentElement.style.setProperty("--bars-h", barsBottom() + "px");
    m.scrollIntoView({block: "start"});
    m.setAttribute("tabindex", "-1");
    m.focus({preventScroll: true});
    shownMessages().forEach(function (x) { x.classList.remove("kbd-current"); });
    m.classList.add("kbd-current");
    updatePosition();
  }
  // The message to move to, among those loaded: the next or previous one (of any role, or a
  // user's question only) from the one now at the top. Forward it is always one after that
  // one: at the top of a conversation the first message is in view already, and "next" goes
  // past it (it used to bring it up under the bars first, so the first "next" did not move
  // on). Back, a message whose start is hidden under the bars is shown from its start first.
  function step(dir, questionsOnly) {
    var msgs = shownMessages().filter(function (m) {
      return !questionsOnly || m.classList.contains("role-user");
    });
    var top = currentMessage();
    if (!top) return {found: null};
    var n = Number(top.getAttribute("data-n"));
    var i;
    if (dir > 0) {
      for (i = 0; i < msgs.length; i++) {
        if (Number(msgs[i].getAttribute("data-n")) > n) return {found: msgs[i]};
      }
    } else {
      for (i = msgs.length - 1; i >= 0; i--) {
        var j = Number(msgs[i].getAttribute("data-n"));
        if (j < n || (j === n && !atTop(msgs[i]) && msgs[i].getBoundingClientRect().top < barsBottom())) return {found: msgs[i]};
      }
    }
    return {found: null};
  }
  function moveByQuestion(dir) {
    var hit = step(dir, true).found;
    if (hit) { bringToTop(hit); return; }
    // Not loaded: the server finds it from the loaded edge in that direction.
    var link = document.querySelector('.viewer-nav a[data-turn="' + (dir > 0 ? "next" : "prev") + '"]');
    var msgs = shownMessages();
    if (!link || !msgs.length) return;
    var edge = dir > 0 ? msgs[msgs.length - 1] : msgs[0];
    var url = new URL(link.getAttribute("data-url"), window.location.href);
    url.searchParams.set("from", edge.id.replace(/^m-/, ""));
    window.location.href = url.toString();
  }
  function moveByMessage(dir) {
    var hit = step(dir, false).found;
    if (hit) { bringToTop(hit); return; }
    // Past what is loaded: the next page (as scrolling would load it) or the previous one.
    var pager = document.querySelector(dir > 0 ? "#more-messages a" : "#earlier-messages a");
    if (pager) pager.click();
  }
  var posTimer = 0;
  window.addEventListener("scroll", function () {
    if (posTimer) return;
    posTimer = setTimeout(function () { posTimer = 0; updatePosition(); }, 120);
  }, {passive: true});
  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest(".viewer-nav a[data-turn]");
    if (!b || e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    moveByQuestion(b.getAttribute("data-turn") === "next" ? 1 : -1);
  });
  var viewerG = 0;
  document.addEventListener("keydown", function (e) {
    if (!document.querySelector(".conversation") || e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var go = function (which) {
      var a = document.querySelector('.viewer-nav a[data-go="' + which + '"]');
      if (a) window.location.href = a.href;
    };
    if (e.key === "j" || e.key === "k") { e.preventDefault(); e.stopImmediatePropagation(); moveByMessage(e.key === "j" ? 1 : -1); return; }
    if (e.key === "n" || e.key === "p") { e.preventDefault(); moveByQuestion(e.key === "n" ? 1 : -1); return; }
    if (e.key === "G") { e.preventDefault(); go("last"); return; }
    if (e.key === ":") {
      var box = document.querySelector(".viewer-nav input[name=n]");
      if (box) { e.preventDefault(); box.focus(); }
      return;
    }
    if (e.key === "g") {
      if (viewerG && Date.now() - viewerG < 1500) { viewerG = 0; e.preventDefault(); e.stopImmediatePropagation(); go("first"); return; }
      viewerG = Date.now();
    }
  }, true);
  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("button.copy");
    if (b) {
      var text = b.getAttribute("data-copy");
      if (text === null) {
        var src = document.querySelector(b.getAttribute("data-copy-from"));
        text = src ? src.textContent : "";
      }
      var done = function () { b.textContent = "Copied"; setTimeout(function () { b.textContent = "Copy"; }, 1500); };
      if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, done); else done();
      return;
    }
    var s = e.target.closest && e.target.closest("button[data-shortcuts]");
    if (s) { var d = document.getElementById("shortcuts"); if (d) d.showModal(); }
  });

  // --- times: exact time on hover, in the reader's own time zone --------------------------
  function localTimes(root) {
    (root || document).querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (!isNaN(d)) t.title = d.toLocaleString();
    });
  }
  // On a phone, the viewer's metadata starts folded.
  function foldOnPhones() {
    if (window.innerWidth < 720) {
      document.querySelectorAll("details.meta[open]").forEach(function (d) { d.open = false; });
    }
  }
  // Sticky bars sit just under the sticky site header, whatever height it wraps to (at the
  // top of the screen on a phone, where the header scrolls away).
  function headerHeight() {
    var h = document.querySelector("header.top");
    if (!h) return;
    var stuck = getComputedStyle(h).position === "sticky" || getComputedStyle(h).position === "fixed";
    document.documentElement.style.setProperty("--header-h", (stuck ? h.offsetHeight : 0) + "px");
  }
  window.addEventListener("resize", headerHeight);
  // The header's height also changes when its fonts arrive or a profile menu wraps it.
  if (window.ResizeObserver) {
    ready(function () {
      var h = document.querySelector("header.top");
      if (h) new ResizeObserver(headerHeight).observe(h);
    });
  }
  // Opened at a message (?at=…#m-<id>): it sits just under the sticky bars, marked as the
  // one the keys move from.
  function openAtMessage() {
    var m = /^#m-(\d+)$/.exec(window.location.hash);
    var target = m && document.getElementById("m-" + m[1]);
    if (target && document.querySelector(".viewer-nav")) bringToTop(target);
  }
  // Lineage titles: the server shortens them by an estimate; here they are measured in the
  // font the reader has, and shortened further (keeping a " #3" suffix) until they fit.
  function fitLineageTitles(root) {
    (root || document).querySelectorAll("svg.lineage a.node").forEach(function (a) {
      var rect = a.querySelector("rect"), t = a.querySelector("text.t1");
      if (!rect || !t || !t.getComputedTextLength) return;
      var room = rect.width.baseVal.value - 2 * (t.x.baseVal[0].value - rect.x.baseVal.value);
      if (t.getComputedTextLength() <= room) return;
      var full = t.textContent, m = / #\d+$/.exec(full), suffix = m ? m[0] : "";
      var chars = Array.from(full.slice(0, full.length - suffix.length).replace(/\u2026$/, ""));
      while (chars.length && t.getComputedTextLength() > room) {
        chars.pop();
        t.textContent = chars.join("").trimEnd() + "\u2026" + suffix;
      }
    });
  }
  ready(function () {
    headerHeight(); revealCopy(); localTimes(); foldOnPhones(); openAtMessage(); updatePosition();
    fitLineageTitles();
  });
  document.addEventListener("htmx:afterSettle", function (e) { revealCopy(e.target); localTimes(e.target); fitLineageTitles(e.target); });
})();

// The profile switcher submits itself (its Go button does the same without JavaScript).
document.addEventListener("change", function (e) {
  if (e.target.matches && e.target.matches("select[data-autosubmit]")) e.target.form.submit();
});

// The navigation's menus are <details>: they open and close without this script. With it,
// Escape closes an open one (the focus goes back to its button), as does a click or a focus
// anywhere else, and opening one closes the others.
(function () {
  "use strict";
  function menus() { return Array.prototype.slice.call(document.querySelectorAll("details.nav-menu")); }
  document.addEventListener("toggle", function (e) {
    var d = e.target;
    if (!d.matches || !d.matches("details.nav-menu") || !d.open) return;
    menus().forEach(function (m) { if (m !== d) m.open = false; });
  }, true);
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") return;
    menus().forEach(function (m) {
      if (!m.open) return;
      var inside = m.contains(document.activeElement);
      m.open = false;
      if (inside) m.querySelector("summary").focus();
    });
  });
  function closeOutside(target) {
    menus().forEach(function (m) { if (m.open && !m.contains(target)) m.open = false; });
  }
  document.addEventListener("click", function (e) { closeOutside(e.target); });
  document.addEventListener("focusin", function (e) { closeOutside(e.target); });
})();
