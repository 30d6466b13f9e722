"""Where conversations come from: chats across resets, workspaces, people (schema 22)."""

from __future__ import annotations

import sqlite3

from flask import Blueprint, abort, g, jsonify, redirect, url_for
from htmx_flask import request

from webui import keep
from webui.db import BadRequest, LogbookDBError
from webui.db.sessions.origins import PAGE as CHATS_PAGE
from webui.db.sql import decode_cursor, encode_cursor
from webui.db.stores.history import history_of, store_answer
from webui.db.stores.store_set import LIVE
from webui.hermes.origin import distinct_labels
from webui.present.rows import message_json
from webui.web.logbooks import get_logbook, live_logbook
from webui.web.stores import OUT_OF_TIME, elsewhere, request_stores, short_of_time
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
        rows, cursor = _merged_chats(stores, after, missing)
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


def _merged_chats(stores, after: str | None, missing: list[str]):
    """Every chat of every store as one row: its sessions in all stores added up (each
    store's copies of an earlier store's sessions left out), first and last activity
    widened, the stores named; most recently active first, paged by (last activity, key)."""
    rows = _merged(stores, "all_chats", "session_key", (), missing)
    for r in rows:
        r["store"] = r["stores"][0]
    rows.sort(key=lambda r: (-(r.get("last_active") or 0), r["session_key"]))
    if after:
        try:
            key, last_key = decode_cursor(after)
        except Exception:  # noqa: BLE001 - decode_cursor words its own error
            raise BadRequest("The page cursor ('after') is not valid.") from None
        key = key or 0
        rows = [
            r
            for r in rows
            if (r.get("last_active") or 0) < key
            or ((r.get("last_active") or 0) == key and r["session_key"] > last_key)
        ]
    page, more = rows[:CHATS_PAGE], len(rows) > CHATS_PAGE
    cursor = encode_cursor(page[-1]["last_active"], page[-1]["session_key"]) if more else None
    distinct_labels(page)
    return page, cursor


def _groups(stores, what: str, missing: list[str]) -> list[tuple[str, list[dict]]]:
    """Each store's groups (``what``: all_chats, people or workspaces) with its copies of an
    earlier store's sessions left out; a store that fails is named, the others answer."""
    readable = [s for s in stores if s.logbook is not None]
    missing += [f"{s.name}: {s.message or s.status}" for s in stores if s.logbook is None]
    history = history_of(readable)
    names = [s.name for s in readable]
    out = []
    for s in readable:
        if s.kind != LIVE and short_of_time():
            missing.append(f"{s.name}: {OUT_OF_TIME}")
            continue
        dup = history.copies_in(s.name, names)
        book = s.logbook
        method = getattr(book.origins, what)

        def compute(method=method, dup=dup):
            return method(dup) if what == "all_chats" else method(dup, None)

        try:
            if s.kind == "live" and not dup:
                rows = book.sessions.shared(f"{what}-whole", compute)
            else:
                rows = store_answer(s, (what, len(dup), hash(tuple(dup))), compute)
        except (LogbookDBError, sqlite3.Error) as exc:
            message = exc.message if isinstance(exc, LogbookDBError) else str(exc)
            missing.append(f"{s.name}: {message}")
            continue
        out.append((s.name, rows))  # kept values: read, never changed here
    return out


# The merged rows of chats, people and workspaces, kept while every store's part is the same
# kept value (pages read them, never change them).
_merged_groups = keep.VersionedCache(16)


def _mark(groups) -> tuple:
    return tuple((name, id(rows), len(rows)) for name, rows in groups)


def _merged(stores, what: str, key: str, joined: tuple[str, ...], missing: list[str]):
    """merge_groups of every store's groups, kept (copies handed out: the page changes its
    rows)."""
    groups = _groups(stores, what, missing)
    mark = _mark(groups)
    rows = _merged_groups.get_or_set((what, mark), mark, lambda: merge_groups(groups, key, joined))
    return [{**r, "stores": list(r["stores"])} for r in rows]


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


SUMMED = ("sessions", "messages", "tokens", "cost", "included_sessions", "unpriced_sessions")


def merge_groups(per_store: list[tuple[str, list[dict]]], key: str, joined: tuple[str, ...]):
    """Rows of the same group (a chat, a workspace, a person) from several stores as one:
    figures summed, first and last activity widened, names and sources joined; ``stores``
    says where its sessions are kept. Each store's rows come with its copies of an earlier
    store's sessions already left out (webui.db.stores.history), so every session counts once."""
    out: dict[str, dict] = {}
    for name, rows in per_store:
        for r in rows:
            if not r.get("sessions"):
                continue
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
    stores = _stores()
    missing: list[str] = []
    # Both scan every session row (no index holds cwd): shared like the list's facets
    # (80 ms each on 200,000 sessions).
    if len(stores) > 1:
        groups = _groups(stores, "workspaces", missing)
        branches = _groups(stores, "branches", missing)
        mark = _mark(groups) + _mark(branches)
        rows = _merged_groups.get_or_set(
            ("workspaces", mark), mark, lambda: _workspace_rows(groups, branches, True)
        )
    else:
        rows = _workspace_rows(
            [(LIVE, lb.sessions.shared("workspaces", lb.origins.workspaces))],
            [(LIVE, lb.sessions.shared("branches", lb.origins.branches))],
            False,
        )
    notice = (
        " ".join(x for x in (_missing(lb, "cwd", "git_repo_root"), _not_read(missing)) if x) or None
    )
    if wants_json():
        return jsonify({"workspaces": rows, "notice": notice})
    return render_page("workspaces.html", {}, rows=rows, notice=notice)


def _workspace_rows(groups, branch_parts, several: bool) -> list[dict]:
    """The workspaces page's rows from each store's groups and branches (new rows: the
    stores' kept values are read, never changed)."""
    rows = merge_groups(groups, "workspace", ("branches",))
    per_branch: dict[str, list[dict]] = {}
    for _name, part in branch_parts:
        for ws, branches in part.items():
            merged_branches = {b["branch"]: b for b in per_branch.get(ws, [])}
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
    rows.sort(key=lambda r: -(r.get("last_active") or 0))
    rows = rows[:500]
    for r in rows:
        r["branches"] = sorted({b for b in (r.get("branches") or "").split(",") if b})
        r["branch_figures"] = per_branch.get(r["workspace"], [])
        if several:
            r["store"] = r["stores"][0]
        else:
            del r["stores"]
    return rows


@bp.get("/people")
def people():
    lb = get_logbook()
    stores = _stores()
    missing: list[str] = []
    if len(stores) > 1:
        groups = _groups(stores, "people", missing)
        mark = _mark(groups)
        rows = _merged_groups.get_or_set(("people", mark), mark, lambda: _people_rows(groups, True))
    else:
        rows = _people_rows([(LIVE, lb.sessions.shared("people", lb.origins.people))], False)
    notice = " ".join(x for x in (_missing(lb, "user_id"), _not_read(missing)) if x) or None
    if wants_json():
        return jsonify({"people": rows, "notice": notice})
    return render_page("people.html", {}, rows=rows, notice=notice)


def _people_rows(groups, several: bool) -> list[dict]:
    rows = merge_groups(groups, "user_id", ("names", "sources"))
    rows.sort(key=lambda r: (-(r.get("cost") or 0), -(r.get("sessions") or 0)))
    rows = rows[:500]
    for r in rows:
        r["names"] = sorted({n for n in (r.get("names") or "").split(",") if n})
        r["sources"] = sorted({n for n in (r.get("sources") or "").split(",") if n})
        if several:
            r["store"] = r["stores"][0]
        else:
            del r["stores"]
    return rows
