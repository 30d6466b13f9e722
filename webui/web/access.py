"""Who may view and who may change, in local and remote mode (README: "Remote viewing and
security").

* Local mode (loopback bind, the default): no login; changes allowed unless --read-only.
* Remote mode (--insecure): anyone who reaches the port may view (unless --private); changes
  need the admin token, and with no token configured they are off. Every client counts as
  remote here, loopback ones included: a reverse proxy on the same host must not open doors.
* Every POST: a CSRF token (Flask-WTF), and a cross-site request is refused outright
  (Sec-Fetch-Site / Origin), so a page elsewhere cannot drive a logged-in browser.
"""

from __future__ import annotations

import hmac
from functools import wraps
from pathlib import Path
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Flask,
    abort,
    current_app,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_wtf.csrf import CSRFProtect

from webui.web.login_throttle import LoginThrottle, address_key

csrf = CSRFProtect()
bp = Blueprint("access", __name__)

OPEN_ENDPOINTS = {"access.login", "access.logout", "static"}


def _generation_file() -> Path:
    return Path(current_app.instance_path) / "session_generation"


def session_generation() -> int:
    """A counter kept in the instance folder that logout bumps: every admin cookie issued
    before it stops working, even one captured and replayed after the logout."""
    state = current_app.extensions.setdefault("logbook_session_generation", {})
    if "value" not in state:
        try:
            state["value"] = int(_generation_file().read_text().strip() or 0)
        except (OSError, ValueError):
            state["value"] = 0
    return state["value"]


def _bump_generation() -> None:
    state = current_app.extensions.setdefault("logbook_session_generation", {})
    state["value"] = session_generation() + 1
    try:
        _generation_file().write_text(str(state["value"]))
    except OSError:
        pass  # a read-only instance folder: the bump still holds until the next restart


def _token_mark() -> str:
    """A keyed digest of the configured token and the session generation: rotating the token
    or logging out logs every admin cookie out."""
    token = current_app.config.get("LOGBOOK_TOKEN") or ""
    return hmac.new(
        current_app.config["SECRET_KEY"].encode(),
        f"{token}\n{session_generation()}".encode(),
        "sha256",
    ).hexdigest()


def is_admin() -> bool:
    return bool(
        token_configured()
        and session.get("admin")
        and hmac.compare_digest(str(session["admin"]), _token_mark())
    )


def safe_next(value: str | None, default: str) -> str:
    """A same-site path to go back to, never another site (//evil, /\t/evil, http://…)."""
    if not value:
        return default
    cleaned = "".join(ch for ch in value if ch not in "\t\r\n").replace("\\", "/")
    parts = urlsplit(cleaned)
    if parts.scheme or parts.netloc or not cleaned.startswith("/") or cleaned.startswith("//"):
        return default
    return cleaned


def token_configured() -> bool:
    return bool(current_app.config.get("LOGBOOK_TOKEN"))


def change_refusal() -> str | None:
    """Why changes are off right now, or None when they are allowed."""
    cfg = current_app.config
    if cfg["LOGBOOK_READ_ONLY"]:
        return "Logbook runs with --read-only: nothing can be changed."
    pin = g.get("store_pin")
    if pin:
        return (
            f"This is kept in “{pin}”, which Logbook only reads: changes apply to the live "
            "database. Move it back from cold storage to change it there."
        )
    from webui.db import LogbookDBError
    from webui.web.logbooks import get_logbook

    try:
        writer_refusal = get_logbook().actions.w.refusal
    except LogbookDBError as exc:
        return exc.message
    if writer_refusal:
        return writer_refusal
    if cfg["LOGBOOK_REMOTE"]:
        if not token_configured():
            return (
                "Remote mode without an admin token: changes are off. Start Logbook with "
                "--token (or HERMES_LOGBOOK_TOKEN) to allow them after logging in."
            )
        if not is_admin():
            return "Log in with the admin token to make changes."
    return None


def removal_refusal() -> str | None:
    """Why changes that write messages (delete, prune, cold storage) are off right now, or
    None: every change's own refusal first, then the file's (a search index whose tokenizer
    Logbook cannot load, webui.db.changes.tokenizer)."""
    reason = change_refusal()
    if reason:
        return reason
    from webui.db import LogbookDBError
    from webui.web.logbooks import get_logbook

    try:
        return get_logbook().actions.w.removal_refusal
    except LogbookDBError as exc:
        return exc.message


def changes_line() -> str:
    """Which changes this file takes here and why, in one line (the navigation and every
    page's foot; the start-up line says the same)."""
    from webui.db import LogbookDBError
    from webui.hermes.changes import changes_line as line
    from webui.web.logbooks import get_logbook

    cfg = current_app.config
    try:
        lb = get_logbook()
    except LogbookDBError as exc:
        return f"changes: off — {exc.message}"
    writer = lb.actions.w
    refusal = None if cfg["LOGBOOK_READ_ONLY"] else change_refusal()
    return line(
        hermes=lb.actions.rules.hermes,
        refusal=refusal,
        removal_refusal=writer.removal_reason,
        read_only=cfg["LOGBOOK_READ_ONLY"],
    )


def can_view() -> bool:
    cfg = current_app.config
    return not (cfg["LOGBOOK_REMOTE"] and cfg["LOGBOOK_PRIVATE"]) or is_admin()


def change_required(view):
    @wraps(view)
    def wrapper(*args, **kwargs):
        reason = change_refusal()
        if reason:
            abort(403, description=reason)
        return view(*args, **kwargs)

    return wrapper


def removal_required(view):
    """A change that writes messages: 403 when changes are off, 409 when this file refuses
    it (its messages cannot be written from here), with the reason; nothing is changed."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        reason = change_refusal()
        if reason:
            abort(403, description=reason)
        reason = removal_refusal()
        if reason:
            abort(409, description=reason)
        return view(*args, **kwargs)

    return wrapper


def _same_origin() -> bool:
    """Is this change request from one of Logbook's own pages?

    Browsers that send Sec-Fetch-Site tell the truth about it, so it decides alone: a plain
    form POST may carry ``Origin: null`` (privacy settings, redirects) while Sec-Fetch-Site
    still says same-origin. Without it, an Origin must name this host; with neither header
    (scripts, old browsers) the CSRF token still guards the request."""
    site = request.headers.get("Sec-Fetch-Site")
    if site:
        return site in ("same-origin", "none")
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    if origin == "null":
        return False
    return urlsplit(origin).netloc.lower() == request.host.lower()


def init_app(app: Flask) -> None:
    csrf.init_app(app)
    app.extensions["login_throttle"] = LoginThrottle()
    app.register_blueprint(bp)

    @app.before_request
    def guard():
        if request.method not in ("GET", "HEAD", "OPTIONS") and not _same_origin():
            abort(
                403,
                description="Cross-site request refused: changes can only come from "
                "Logbook's own pages.",
            )
        if request.endpoint in OPEN_ENDPOINTS:
            return None
        if not can_view():
            if request.args.get("format") == "json":
                abort(401, description="This Logbook is private: log in with the admin token.")
            return redirect(url_for("access.login", next=request.full_path))
        return None

    @app.context_processor
    def access_facts():
        refusal = change_refusal()
        removal = refusal or removal_refusal()
        return {
            "can_change": refusal is None,
            "change_refusal": refusal,
            "can_remove": removal is None,
            "removal_refusal": removal,
            "changes_line": changes_line() if can_view() else None,
            "is_admin": is_admin(),
            "remote_mode": app.config["LOGBOOK_REMOTE"],
            "token_configured": bool(app.config.get("LOGBOOK_TOKEN")),
        }


# Failed logins are throttled per address and, against guessers that rotate addresses, for
# everyone together; an address that has not failed is always checked, so the right token
# gets in during a flood (webui/web/login_throttle.py).
@bp.route("/login", methods=["GET", "POST"])
def login():
    error = None
    nxt = safe_next(request.values.get("next"), url_for("sessions.list_sessions"))
    if request.method == "POST":
        # A browser that logged in with this token before counts on its own: guessers at
        # the same address (a shared NAT, a proxy not named with --trusted-proxy) cannot lock
        # it out.
        known = _known_browser()
        key = f"browser:{known}" if known else address_key(request.remote_addr)
        throttle = current_app.extensions["login_throttle"]
        refusal = throttle.refusal(key, everyone=not known)
        if refusal:
            return render_template("login.html", error=refusal, next=nxt), 429
        expected = current_app.config.get("LOGBOOK_TOKEN") or ""
        given = request.form.get("token", "")
        if expected and hmac.compare_digest(given.encode(), expected.encode()):
            session.clear()
            session["admin"] = _token_mark()
            session.permanent = True
            response = redirect(nxt)
            response.set_cookie(
                KNOWN_COOKIE,
                _known_mark(),
                max_age=KNOWN_MAX_AGE_S,
                path=url_for("access.login"),
                httponly=True,
                samesite="Strict",
                secure=request.is_secure,
            )
            return response
        if expected:
            throttle.failed(key)
        error = (
            "That token is not right."
            if expected
            else "No admin token is configured, so there is nothing to log in to."
        )
    return render_template("login.html", error=error, next=nxt), (401 if error else 200)


KNOWN_COOKIE = "logbook_known"
KNOWN_MAX_AGE_S = 365 * 86400


def _known_mark() -> str:
    """What a browser that logged in with the current token keeps (a keyed digest of the
    token: a new token, or another install's key, makes every old one worthless)."""
    token = current_app.config.get("LOGBOOK_TOKEN") or ""
    return hmac.new(
        current_app.config["SECRET_KEY"].encode(), f"known-browser\n{token}".encode(), "sha256"
    ).hexdigest()


def _known_browser() -> str | None:
    """A short name for this browser when it carries a valid known-browser mark, else None.
    The mark survives logout (it proves a past login, never grants one)."""
    mark = request.cookies.get(KNOWN_COOKIE) or ""
    if not current_app.config.get("LOGBOOK_TOKEN") or not mark:
        return None
    return mark[:16] if hmac.compare_digest(mark.encode(), _known_mark().encode()) else None


@bp.post("/logout")
def logout():
    if is_admin():
        _bump_generation()
    session.clear()
    return redirect(url_for("sessions.list_sessions"))
