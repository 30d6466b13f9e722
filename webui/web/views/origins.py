"""Where conversations come from: chats across resets, workspaces, people (schema 22)."""

from __future__ import annotations

from flask import Blueprint, abort, g, jsonify, redirect, url_for
from htmx_flask import request

from webui.db.history.chats import Groups, chat_elsewhere, people_of, workspaces_of
from webui.db.stores.store_set import LIVE
from webui.present.rows import message_json
from webui.web.logbooks import get_logbook, live_logbook
from webui.web.stores import elsewhere, request_stores, short_of_time
from webui.web.views import render_page, wants_json
from webui.web.views.conversation import prepare_messages

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
    after = request.args.get("after") or None
    missing: list[str] = []
    stores = _stores()
    if len(stores) > 1:
        rows, cursor = Groups(stores, missing, short_of_time).chats(after)
    else:
        rows, cursor = lb.origins.chats(after)
    nxt = url_for("origins.chats", after=cursor) if cursor else None
    notice = " ".join(x for x in (_missing(lb, "session_key"), _not_read(missing)) if x) or None
    if wants_json():
        json_next = url_for("origins.chats", after=cursor, format="json") if cursor else None
        return jsonify(
            {
                "chats": rows,
                "next": json_next,
                "notice": notice,
                **({"missing_stores": missing} if missing else {}),
            }
        )
    return render_page("chats.html", {}, rows=rows, next_url=nxt, notice=notice)


def _not_read(missing: list[str]) -> str | None:
    return f"Not read now: {'; '.join(missing)}." if missing else None


@bp.get("/chats/<path:session_key>")
def chat(session_key: str):
    """A chat as one conversation across its resets: the timeline of its sessions' messages
    (``from``: the session a page starts at, ``at``: after this message cursor), with the
    index of its sessions (``after``: their keyset cursor, as on /chats)."""
    lb = get_logbook()
    head = lb.origins.chat(session_key)
    if head is None:
        kept = _chat_elsewhere(session_key) if not g.get("store_pin") else []
        if kept:  # a chat kept only in an archive or on another machine: read it there
            return redirect(
                url_for("origins.chat", session_key=session_key, store=kept[0]["store"])
            )
        abort(404, description=f"No chat has the key “{session_key}”.")
    rows, cursor = lb.origins.chat_sessions(session_key, request.args.get("after") or None)
    timeline = lb.origins.timeline(
        lb.messages,
        session_key,
        start=request.args.get("from") or None,
        after=request.args.get("at") or None,
    )

    def timeline_url(**fmt):
        if not timeline.next_session:
            return None
        return url_for(
            "origins.chat",
            session_key=session_key,
            **{"from": timeline.next_session},
            at=timeline.next_after,
            **fmt,
        )

    if wants_json():
        nxt = (
            url_for("origins.chat", session_key=session_key, after=cursor, format="json")
            if cursor
            else None
        )
        return jsonify(
            {
                "chat": head,
                "sessions": rows,
                "next": nxt,
                "timeline": [
                    {
                        "session_id": part.session["id"],
                        "end_reason": part.session["end_reason"],
                        "messages": [message_json(m) for m in part.messages],
                    }
                    for part in timeline.parts
                ],
                "timeline_next": timeline_url(format="json"),
            }
        )
    parts = [
        {
            "session": part.session,
            "from_start": part.from_start,
            "messages": prepare_messages(part.session["id"], part.messages, {}, marks=part.marks),
            # The page ends inside this session: its ending belongs to the next page.
            "cut": part is timeline.parts[-1] and timeline.next_after is not None,
        }
        for part in timeline.parts
    ]
    nxt = url_for("origins.chat", session_key=session_key, after=cursor) if cursor else None
    return render_page(
        "chat.html",
        {"timeline": "timeline"},
        chat=head,
        rows=rows,
        next_url=nxt,
        parts=parts,
        timeline_next=timeline_url(),
        latest=lb.origins.last_session(session_key),
        elsewhere=_chat_elsewhere(session_key),
    )


def _stores() -> list:
    """The stores this page spans (``store=`` narrows; a pinned store alone), live first."""
    if g.get("store_pin") or g.get("all_profiles"):
        return []
    return request_stores(live_logbook())


def _chat_elsewhere(session_key: str) -> list[dict]:
    """The same chat's sessions kept in other stores (its older days in an archive, or the
    newest on another machine): each store's part, to open there."""
    return chat_elsewhere(elsewhere(live_logbook(), g.get("store_pin") or LIVE), session_key)


@bp.get("/workspaces")
def workspaces():
    lb = get_logbook()
    stores = _stores()
    missing: list[str] = []
    if len(stores) > 1:
        rows = Groups(stores, missing, short_of_time).workspaces()
    else:
        rows = workspaces_of(lb)
    notice = (
        " ".join(x for x in (_missing(lb, "cwd", "git_repo_root"), _not_read(missing)) if x) or None
    )
    if wants_json():
        return jsonify({"workspaces": rows, "notice": notice})
    return render_page("workspaces.html", {}, rows=rows, notice=notice)


@bp.get("/people")
def people():
    lb = get_logbook()
    stores = _stores()
    missing: list[str] = []
    if len(stores) > 1:
        rows = Groups(stores, missing, short_of_time).people()
    else:
        rows = people_of(lb)
    notice = " ".join(x for x in (_missing(lb, "user_id"), _not_read(missing)) if x) or None
    if wants_json():
        return jsonify({"people": rows, "notice": notice})
    return render_page("people.html", {}, rows=rows, notice=notice)
