"""Where conversations come from: chats across resets, workspaces, people (schema 22)."""

from __future__ import annotations

from flask import Blueprint, abort, g, jsonify, url_for
from htmx_flask import request

from webui.db import get_logbook, live_logbook
from webui.db.stores import LIVE
from webui.present.rows import message_json
from webui.web.stores import readable, request_stores
from webui.web.views import render_page, wants_json
from webui.web.views.sessions import prepare_messages

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
    """A chat as one conversation across its resets: the timeline of its sessions' messages
    (``from``: the session a page starts at, ``at``: after this message cursor), with the
    index of its sessions (``after``: their keyset cursor, as on /chats)."""
    lb = get_logbook()
    head = lb.origins.chat(session_key)
    if head is None:
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
            "messages": prepare_messages(part.session["id"], part.messages, {}),
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
    )


def _books(lb) -> list[tuple[str, object]]:
    """The stores this page spans (``store=`` narrows; a pinned store alone), live first."""
    if g.get("store_pin") or g.get("all_profiles"):
        return [(g.get("store_pin") or LIVE, lb)]
    return [(s.name, s.logbook) for s in readable(request_stores(live_logbook()))]


SUMMED = ("sessions", "messages", "tokens", "cost", "included_sessions", "unpriced_sessions")


def merge_groups(per_store: list[tuple[str, list[dict]]], key: str, joined: tuple[str, ...]):
    """Rows of the same group (a workspace, a person) from several stores as one: figures
    summed, first and last activity widened, names and sources joined; ``stores`` says where
    its sessions are kept. A session kept in two stores counts in each."""
    out: dict[str, dict] = {}
    for name, rows in per_store:
        for r in rows:
            cur = out.get(r[key])
            if cur is None:
                out[r[key]] = cur = {**r, "stores": [name]}
                continue
            for k in SUMMED:
                cur[k] = (cur.get(k) or 0) + (r.get(k) or 0)
            firsts = [x for x in (cur.get("first_active"), r.get("first_active")) if x is not None]
            cur["first_active"] = min(firsts) if firsts else None
            cur["last_active"] = max(
                (x for x in (cur.get("last_active"), r.get("last_active")) if x is not None),
                default=None,
            )
            for k in joined:
                cur[k] = ",".join(x for x in (cur.get(k), r.get(k)) if x)
            cur["stores"].append(name)
    return list(out.values())


@bp.get("/workspaces")
def workspaces():
    lb = get_logbook()
    books = _books(lb)
    # Both scan every session row (no index holds cwd): shared like the list's facets
    # (80 ms each on 200,000 sessions).
    per_store, per_branch = [], {}
    for name, book in books:
        per_store.append(
            (name, [dict(r) for r in book.sessions.shared("workspaces", book.origins.workspaces)])
        )
        for ws, branches in book.sessions.shared("branches", book.origins.branches).items():
            merged_branches = {b["branch"]: dict(b) for b in per_branch.get(ws, [])}
            for b in branches:
                had = merged_branches.get(b["branch"])
                if had is None:
                    merged_branches[b["branch"]] = dict(b)
                else:
                    for k in ("sessions", "cost", "included_sessions", "unpriced_sessions"):
                        had[k] = (had.get(k) or 0) + (b.get(k) or 0)
            per_branch[ws] = sorted(
                merged_branches.values(), key=lambda b: (-b["sessions"], b["branch"])
            )
    rows = merge_groups(per_store, "workspace", ("branches",))
    rows.sort(key=lambda r: -(r.get("last_active") or 0))
    for r in rows:
        r["branches"] = sorted({b for b in (r.get("branches") or "").split(",") if b})
        r["branch_figures"] = per_branch.get(r["workspace"], [])
        if len(books) == 1:
            del r["stores"]
    notice = _missing(lb, "cwd", "git_repo_root")
    if wants_json():
        return jsonify({"workspaces": rows, "notice": notice})
    return render_page("workspaces.html", {}, rows=rows, notice=notice)


@bp.get("/people")
def people():
    lb = get_logbook()
    books = _books(lb)
    per_store = [
        (name, [dict(r) for r in book.sessions.shared("people", book.origins.people)])
        for name, book in books
    ]
    rows = merge_groups(per_store, "user_id", ("names", "sources"))
    rows.sort(key=lambda r: (-(r.get("cost") or 0), -(r.get("sessions") or 0)))
    for r in rows:
        r["names"] = sorted({n for n in (r.get("names") or "").split(",") if n})
        r["sources"] = sorted({n for n in (r.get("sources") or "").split(",") if n})
        if len(books) == 1:
            del r["stores"]
    notice = _missing(lb, "user_id")
    if wants_json():
        return jsonify({"people": rows, "notice": notice})
    return render_page("people.html", {}, rows=rows, notice=notice)
