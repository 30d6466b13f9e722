"""Where conversations come from: chats across resets, workspaces, people (schema 22)."""

from __future__ import annotations

from flask import Blueprint, abort, jsonify, url_for
from htmx_flask import request

from webui.db import get_logbook
from webui.web.views import render_page, wants_json

bp = Blueprint("origins", __name__)

MISSING = (
    "This database (schema {v}) does not record where sessions come from; Hermes 0.19 "
    "(schema 22) records chats, people and workspaces."
)


def _missing(lb, *columns: str) -> str | None:
    return None if lb.origins.has(*columns) else MISSING.format(v=lb.schema.version)


@bp.get("/chats")
def chats():
    lb = get_logbook()
    rows, cursor = lb.origins.chats(request.args.get("after") or None)
    nxt = url_for("origins.chats", after=cursor) if cursor else None
    if wants_json():
        json_next = url_for("origins.chats", after=cursor, format="json") if cursor else None
        return jsonify({"chats": rows, "next": json_next, "notice": _missing(lb, "session_key")})
    return render_page(
        "chats.html", {}, rows=rows, next_url=nxt, notice=_missing(lb, "session_key")
    )


@bp.get("/chats/<path:session_key>")
def chat(session_key: str):
    lb = get_logbook()
    head = lb.origins.chat(session_key)
    if head is None:
        abort(404, description=f"No chat has the key “{session_key}”.")
    rows, cursor = lb.origins.chat_sessions(session_key, request.args.get("after") or None)
    if wants_json():
        nxt = (
            url_for("origins.chat", session_key=session_key, after=cursor, format="json")
            if cursor
            else None
        )
        return jsonify({"chat": head, "sessions": rows, "next": nxt})
    nxt = url_for("origins.chat", session_key=session_key, after=cursor) if cursor else None
    return render_page("chat.html", {}, chat=head, rows=rows, next_url=nxt)


@bp.get("/workspaces")
def workspaces():
    lb = get_logbook()
    rows = lb.origins.workspaces()
    for r in rows:
        r["branches"] = sorted(b for b in (r.get("branches") or "").split(",") if b)
    notice = _missing(lb, "cwd", "git_repo_root")
    if wants_json():
        return jsonify({"workspaces": rows, "notice": notice})
    return render_page("workspaces.html", {}, rows=rows, notice=notice)


@bp.get("/people")
def people():
    lb = get_logbook()
    rows = lb.origins.people()
    for r in rows:
        r["names"] = sorted(n for n in (r.get("names") or "").split(",") if n)
        r["sources"] = sorted(n for n in (r.get("sources") or "").split(",") if n)
    notice = _missing(lb, "user_id")
    if wants_json():
        return jsonify({"people": rows, "notice": notice})
    return render_page("people.html", {}, rows=rows, notice=notice)
