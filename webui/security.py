"""Headers and request checks that hold in every mode.

* Host check: in local mode only loopback names (and the bound address) are accepted, which
  defeats DNS rebinding: a foreign page that rebinds its name to 127.0.0.1 still sends its
  own name in Host.
* A strict Content-Security-Policy: scripts and styles from our own origin only, nothing
  inline, no framing.
"""

from __future__ import annotations

from flask import Flask, abort, request

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def allowed_hosts(app: Flask) -> set[str]:
    allowed = set(LOOPBACK_NAMES)
    bound = str(app.config.get("LOGBOOK_HOST") or "").lower()
    if bound:
        allowed.add(bound if ":" not in bound else f"[{bound}]")
    allowed.update(h.lower() for h in app.config.get("LOGBOOK_ALLOWED_HOSTS", ()))
    return allowed


def init_app(app: Flask) -> None:
    hosts = allowed_hosts(app)

    @app.before_request
    def check_host():
        # Remote mode answers whatever name the LAN uses for this machine.
        if app.config["LOGBOOK_REMOTE"]:
            return None
        if _host_name(request.host) not in hosts:
            abort(400, description="This Logbook only answers to localhost. The request's "
                                   "Host header names another site (DNS rebinding?).")
        return None

    @app.after_request
    def headers(resp):
        resp.headers.setdefault("Content-Security-Policy", CSP)
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["X-Frame-Options"] = "DENY"
        resp.headers["Cross-Origin-Opener-Policy"] = "same-origin"
        # Fragments and full pages share URLs: caches must keep them apart.
        resp.vary.add("HX-Request")
        if request.endpoint != "static":
            resp.headers.setdefault("Cache-Control", "no-store")
        return resp
