"""Headers and request checks that hold in every mode.

* Host check: in local mode only loopback names (and the bound address) are accepted, which
  defeats DNS rebinding: a foreign page that rebinds its name to 127.0.0.1 still sends its
  own name in Host.
* A strict Content-Security-Policy: scripts and styles from our own origin only, nothing
  inline, no framing.
"""

from __future__ import annotations

import ipaddress
import socket

from flask import Flask, abort, request

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


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


def machine_names() -> set[str]:
    """The names this machine answers to on its own network (host name, FQDN, mDNS name)."""
    names = set()
    for name in (socket.gethostname(), socket.getfqdn()):
        if name:
            names.add(name.lower())
            names.add(name.lower().split(".")[0] + ".local")
    return names


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


def init_app(app: Flask) -> None:
    hosts = allowed_hosts(app)
    remote_names = hosts | machine_names()

    @app.before_request
    def check_host():
        name = _host_name(request.host)
        if not app.config["LOGBOOK_REMOTE"]:
            if name not in hosts:
                abort(
                    400,
                    description="This Logbook only answers to localhost. The request's "
                    "Host header names another site (DNS rebinding?).",
                )
            return None
        # Remote mode: an address, this machine's own names, or a name given with
        # --allow-host. Any other name is a foreign site rebinding its DNS to us.
        if is_ip_literal(name) or name in remote_names:
            return None
        abort(
            400,
            description=f"This Logbook does not answer to the name “{name}”. If that name "
            f"is this machine's, start Logbook with --allow-host {name}.",
        )

    @app.after_request
    def headers(resp):
        resp.headers.setdefault("Content-Security-Policy", CSP)
        resp.headers["X-Content-Type-Options"] = "nosniff"
        # same-origin: other sites learn nothing, and our own form POSTs keep a real Origin.
        resp.headers["Referrer-Policy"] = "same-origin"
        resp.headers["X-Frame-Options"] = "DENY"
        resp.headers["Cross-Origin-Opener-Policy"] = "same-origin"
        # Fragments and full pages share URLs: caches must keep them apart.
        resp.vary.add("HX-Request")
        if request.endpoint != "static":
            resp.headers.setdefault("Cache-Control", "no-store")
        return resp
