"""Chats, workspaces and people over the whole history: each store's groups (its copies of an
earlier store's sessions left out), merged into one row per chat, workspace or person —
figures summed, first and last activity widened, names joined, the stores named. A store that
fails or is not asked in time is named in ``missing``; the others answer.

Kept: each store's groups (the live file's while no session appears or goes, an archive's
while its file stands still: webui.db.stores.history.store_answer) and the merged rows while
every store's part is the same kept value. Pages get copies of the merged rows (they change
them); the stores' kept values are read, never changed here."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from webui import keep
from webui.db import BadRequest, LogbookDBError
from webui.db.deadline import OUT_OF_TIME
from webui.db.sessions.origins import PAGE as CHATS_PAGE
from webui.db.sql import decode_cursor, encode_cursor
from webui.db.stores.history import copies_among, store_answer
from webui.db.stores.store_set import LIVE, Store
from webui.hermes.origin import distinct_labels

if TYPE_CHECKING:
    from webui.db import Logbook

# The merged rows of chats, people and workspaces, kept while every store's part is the same
# kept value.
_merged_groups = keep.VersionedCache(16)

SUMMED = ("sessions", "messages", "tokens", "cost", "included_sessions", "unpriced_sessions")
SHOWN = 500  # workspaces and people listed, the most recent or costly first


class Groups:
    """Chats, workspaces and people across ``stores`` (live first). ``missing``: the stores
    not read, to which those failing now are added; ``short_of_time``: is the page's budget
    too short to ask one more store (webui.db.deadline.short_of_time)?"""

    def __init__(
        self, stores: list[Store], missing: list[str], short_of_time: Callable[[], bool]
    ) -> None:
        self.stores = stores
        self.missing = missing
        self.short_of_time = short_of_time

    def chats(self, after: str | None) -> tuple[list[dict], str | None]:
        """Every chat of every store as one row: its sessions in all stores added up, first
        and last activity widened, the stores named; most recently active first, paged by
        (last activity, key). (rows, the next page's cursor or None)"""
        rows = self._merged("all_chats", "session_key", ())
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

    def workspaces(self) -> list[dict]:
        groups = self._groups("workspaces")
        branches = self._groups("branches")
        mark = _mark(groups) + _mark(branches)
        return _merged_groups.get_or_set(
            ("workspaces", mark), mark, lambda: workspace_rows(groups, branches, True)
        )

    def people(self) -> list[dict]:
        groups = self._groups("people")
        mark = _mark(groups)
        return _merged_groups.get_or_set(("people", mark), mark, lambda: people_rows(groups, True))

    def _groups(self, what: str) -> list[tuple[str, Any]]:
        """Each store's groups (``what``: all_chats, people, workspaces or branches) with its
        copies of an earlier store's sessions left out; a store that fails is named, the
        others answer."""
        stores = self.stores
        readable = [s for s in stores if s.logbook is not None]
        self.missing += [f"{s.name}: {s.message or s.status}" for s in stores if s.logbook is None]
        copies = copies_among(readable)
        out = []
        for s in readable:
            if s.kind != LIVE and self.short_of_time():
                self.missing.append(f"{s.name}: {OUT_OF_TIME}")
                continue
            dup = copies.of(s.name)
            book = s.book
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
                self.missing.append(f"{s.name}: {message}")
                continue
            out.append((s.name, rows))  # kept values: read, never changed here
        return out

    def _merged(self, what: str, key: str, joined: tuple[str, ...]) -> list[dict]:
        """merge_groups of every store's groups, kept (copies handed out: the page changes
        its rows)."""
        groups = self._groups(what)
        mark = _mark(groups)
        rows = _merged_groups.get_or_set(
            (what, mark), mark, lambda: merge_groups(groups, key, joined)
        )
        return [{**r, "stores": list(r["stores"])} for r in rows]


def _mark(groups) -> tuple:
    return tuple((name, id(rows), len(rows)) for name, rows in groups)


def workspaces_of(lb: Logbook) -> list[dict]:
    """One store's workspaces page. Both parts scan every session row (no index holds cwd):
    shared like the list's facets (80 ms each on 200,000 sessions)."""
    return workspace_rows(
        [(LIVE, lb.sessions.shared("workspaces", lb.origins.workspaces))],
        [(LIVE, lb.sessions.shared("branches", lb.origins.branches))],
        False,
    )


def people_of(lb: Logbook) -> list[dict]:
    """One store's people page (shared while no session appears or goes)."""
    return people_rows([(LIVE, lb.sessions.shared("people", lb.origins.people))], False)


def chat_elsewhere(stores: list[Store], session_key: str) -> list[dict]:
    """The same chat's head in each of ``stores`` that holds it (its older days in an archive,
    or the newest on another machine), to open there; a store that fails is passed over."""
    out = []
    for store in stores:
        try:
            head = store.book.origins.chat(session_key)
        except LogbookDBError:
            continue
        if head:
            out.append({**head, "store": store.name})
    return out


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


def workspace_rows(groups, branch_parts, several: bool) -> list[dict]:
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
    rows = rows[:SHOWN]
    for r in rows:
        r["branches"] = sorted({b for b in (r.get("branches") or "").split(",") if b})
        r["branch_figures"] = per_branch.get(r["workspace"], [])
        if several:
            r["store"] = r["stores"][0]
        else:
            del r["stores"]
    return rows


def people_rows(groups, several: bool) -> list[dict]:
    rows = merge_groups(groups, "user_id", ("names", "sources"))
    rows.sort(key=lambda r: (-(r.get("cost") or 0), -(r.get("sessions") or 0)))
    rows = rows[:SHOWN]
    for r in rows:
        r["names"] = sorted({n for n in (r.get("names") or "").split(",") if n})
        r["sources"] = sorted({n for n in (r.get("sources") or "").split(",") if n})
        if several:
            r["store"] = r["stores"][0]
        else:
            del r["stores"]
    return rows
