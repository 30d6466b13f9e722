"""Small interface endpoints: the theme preference, and the cheap "what changed" checks that
live pages poll (204 when nothing changed, so an idle tab costs one indexed query)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, redirect, request, url_for

from webui.web.access import safe_next
from webui.web.logbooks import get_logbook

bp = Blueprint("ui", __name__)

THEMES = ("light", "dark", "auto")


@bp.get("/theme")
def set_theme():
    choice = request.args.get("set", "auto")
    nxt = safe_next(request.args.get("next"), url_for("sessions.list_sessions"))
    resp = redirect(nxt)
    if choice in ("light", "dark"):
        resp.set_cookie("theme", choice, max_age=365 * 86400, samesite="Lax", httponly=False)
    else:
        resp.delete_cookie("theme")
    return resp


@bp.get("/changes")
def changes():
    """A fingerprint of what the sessions list shows (newest message, newest session, how many
    are live). Answers 204 when it equals ?since=, else the new fingerprint."""
    lb = get_logbook()
    token = lb.sessions.change_token()
    if request.args.get("since") == token:
        return Response(status=204)
    return jsonify({"token": token})
