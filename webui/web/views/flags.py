"""Pin and hide: flags the file's Hermes sets on a whole compression lineage (0.20+ files,
whose sessions have the columns). ``POST /sessions/<id>/pin`` with ``pinned=1|0`` (as
`hermes sessions pin|unpin <id>`; 0.22 also un-hides the lineage it pins) and ``POST
/sessions/<id>/hide`` with ``hidden=1|0`` (set_session_hidden). htmx gets the button back with a
toast, a plain form a redirect, a script JSON."""

from __future__ import annotations

from flask import Blueprint, abort, flash, jsonify, redirect, render_template, url_for
from htmx_flask import request

from webui.web.access import change_required, safe_next
from webui.web.logbooks import get_logbook
from webui.web.views import wants_json
from webui.web.views.actions import _browser_form, _session_or_404, _toast

bp = Blueprint("flags", __name__)

_YES = ("1", "true", "yes", "on", "pin", "hide")
_NO = ("0", "false", "no", "off", "unpin", "unhide", "show")


def _wanted(name: str) -> bool:
    value = (request.form.get(name) or "").strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    abort(400, description=f"Say {name}=1 or {name}=0.")


def _flag(column: str, session_id: str):
    lb = get_logbook()
    if not lb.schema.has("sessions", column):
        abort(
            404,
            description=f"This database has no {'pins' if column == 'pinned' else 'hidden sessions'}"
            " (Hermes 0.20 added them).",
        )
    s = _session_or_404(session_id)
    return lb, s


def _answer(s: dict, what: str, on: bool, matched: int, changed: int, message: str):
    if wants_json() or (not request.htmx and not _browser_form()):
        return jsonify(
            {
                "id": s["id"],
                what: on,
                "matched": matched,
                "rows_changed": changed,
                "message": message,
            }
        )
    if request.htmx:
        fresh = {**s, **get_logbook().actions.session_flags(s["id"])}
        body = render_template("_flag_buttons.html", s=fresh, where=request.form.get("where"))
        return _toast(body, message)
    flash(message)
    return redirect(
        safe_next(request.form.get("next"), url_for("sessions.view_session", session_id=s["id"]))
    )


@bp.post("/sessions/<session_id>/pin")
@change_required
def pin(session_id: str):
    pinned = _wanted("pinned")
    lb, s = _flag("pinned", session_id)
    matched, changed = lb.actions.set_pinned([s["id"]], pinned)
    title = (lb.sessions.brief(s["id"]) or s).get("title")
    # `hermes sessions pin|unpin`'s own words
    message = f"{'Pinned' if pinned else 'Unpinned'} session '{s['id']}'." + (
        f"  ({title})" if title else ""
    )
    return _answer(s, "pinned", pinned, matched, changed, message)


@bp.post("/sessions/<session_id>/hide")
@change_required
def hide(session_id: str):
    hidden = _wanted("hidden")
    lb, s = _flag("hidden", session_id)
    matched, changed = lb.actions.set_hidden([s["id"]], hidden)
    message = (
        f"Hid session '{s['id']}' (with its compression chain) from Hermes's lists; it stays "
        "resumable."
        if hidden
        else f"Session '{s['id']}' is shown in Hermes's lists again."
    )
    return _answer(s, "hidden", hidden, matched, changed, message)
