"""Where conversations come from: chats across resets, workspaces, people (schema 22)."""

from __future__ import annotations

from flask import Blueprint, abort, g, jsonify, redirect, url_for
from htmx_flask import request

from webui.db import LogbookDBError, get_logbook, live_logbook
from webui.db.origins import PAGE as CHATS_PAGE
from webui.db.sql import encode_cursor
from webui.db.stores import LIVE
from webui.present.rows import message_json
from webui.web.stores import elsewhere, readable, request_stores
from webui.web.views import merged, render_page, wants_json
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
    books = _books(lb)
    after = request.args.get("after") or None
    if len(books) > 1:
        rows, cursor = _merged_chats(books, after)
    else:
        rows, cursor = lb.origins.chats(after)
    nxt = url_for("origins.chats", after=cursor) if cursor else None
    if wants_json():
        json_next = url_for("origins.chats", after=cursor, format="json") if cursor else None
        return jsonify({"chats": rows, "next": json_next, "notice": _missing(lb, "session_key")})
    return render_page(
        "chats.html", {}, rows=rows, next_url=nxt, notice=_missing(lb, "session_key")
    )


def _merged_chats(books, after: str | None):
    """Each store's chats, most recently active first, merged page by page (a cursor per
    store, as the merged list keeps them). A chat whose older sessions are kept in an archive
    has a row there too, labelled with its store."""
    cursors = merged.decode(after)
    fetched: list[dict] = []
    more: dict[str, bool] = {}
    for name, book in books:
        state = cursors.get(name)
        if state == merged.DONE:
            continue
        rows, nxt = book.origins.chats(state)
        more[name] = nxt is not None
        for r in rows:
            r["store"] = name
        fetched.extend(rows)
    order = {name: i for i, (name, _book) in enumerate(books)}
    fetched.sort(key=lambda r: (-(r["last_active"] or 0), r["session_key"], order[r["store"]]))
    # The same chat with the same sessions in a later store (an old backup beside the live
    # file) is a copy: left out, as the list leaves out copies of sessions.
    seen: set[tuple] = set()
    for r in fetched:
        same = (r["session_key"], r["sessions"], r["first_active"], r["last_active"])
        r["_copy"] = same in seen
        seen.add(same)
    page = fetched[:CHATS_PAGE]
    new = dict(cursors)
    for name in more:
        mine = [r for r in fetched if r["store"] == name]
        shown = [r for r in page if r["store"] == name]
        if shown:
            last = shown[-1]
            done = last is mine[-1] and not more[name]
            new[name] = (
                merged.DONE if done else encode_cursor(last["last_active"], last["session_key"])
            )
        elif not mine:
            new[name] = merged.DONE
    finished = all(new.get(n) == merged.DONE for n in more) and len(page) == len(fetched)
    shown = [r for r in page if not r.pop("_copy")]
    for r in fetched[CHATS_PAGE:]:
        r.pop("_copy", None)
    return shown, None if finished or not page else merged.encode(new)


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


def _books(lb) -> list[tuple[str, object]]:
    """The stores this page spans (``store=`` narrows; a pinned store alone), live first."""
    if g.get("store_pin") or g.get("all_profiles"):
        return [(g.get("store_pin") or LIVE, lb)]
    return [(s.name, s.logbook) for s in readable(request_stores(live_logbook()))]


SUMMED = ("sessions", "messages", "tokens", "cost", "included_sessions", "unpriced_sessions")


def merge_groups(per_store: list[tuple[str, list[dict]]], key: str, joined: tuple[str, ...]):
    """Rows of the same group (a workspace, a person) from several stores as one: figures
    summed, first and last activity widened, names and sources joined; ``stores`` says where
    its sessions are kept. A group whose sessions in a later store are exactly those of an
    earlier one is a copy and counts once; a session kept in two stores among others counts
    in each."""
    out: dict[str, dict] = {}
    seen: set[tuple] = set()
    for name, rows in per_store:
        for r in rows:
            # The same group with the same sessions in a later store (an old backup beside
            # the live file) is a copy: counted once, as the list folds copies of sessions.
            same = (r[key], r.get("sessions"), r.get("first_active"), r.get("last_active"))
            if same in seen:
                continue
            seen.add(same)
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


def _chat_elsewhere(session_key: str) -> list[dict]:
    """The same chat's sessions kept in other stores (its older days in an archive, or the
    newest on another machine): each store's part, to open there."""
    out = []
    for store in elsewhere(live_logbook(), g.get("store_pin") or LIVE):
        try:
            head = store.logbook.origins.chat(session_key)
        except LogbookDBError:
            continue
        if head:
            out.append({**head, "store": store.name})
    return out


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
