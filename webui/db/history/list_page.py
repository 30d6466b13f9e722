"""The session list over every store as one history: each store answers its own keyset page,
the pages are merged, and the cursor remembers where each store stopped.

Exactly once, whole:

* a store's rows are consumed in its own order ((key, id) of its keyset), so each store's
  cursor always stands after a prefix of its rows and no row is skipped or repeated;
* a session kept in two stores is shown from the first store that answered and holds it
  (live first); the others' copies are passed over (their cursors move past them) and
  counted apart (webui.db.stores.history);
* a conversation whose compression chain goes on in another store (its older segments in an
  archive, its newest in the live file) is one row: its root's place, showing its newest part;
* a store whose summary says it cannot hold a row of this page (another source, another
  time, no such session, or every row sorting after what the page already holds) is not
  asked at all (this is what keeps 45 archive files close to the cost of one);
* a store that fails (corrupt, gone, too slow) is named as missing; its copies are not
  folded from it, and the rest of the history is shown."""

from __future__ import annotations

import base64
import json
import sqlite3
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from webui.db import BadRequest, LogbookDBError, SessionQuery
from webui.db.deadline import OUT_OF_TIME
from webui.db.sessions.store import encode_cursor, parse_day
from webui.db.stores.history import History, history_of, store_answer, walk_across
from webui.db.stores.store_set import LIVE, Store
from webui.hermes import listing

DONE = "done"


@dataclass
class StorePage:
    rows: list[dict[str, Any]]
    cursor: str | None
    facets: dict[str, int]
    folded: int = 0  # copies passed over on this page
    missing: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # each store's matching rows
    copies: int = 0  # of those, copies of sessions an earlier store holds
    answered: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """The sessions of the whole history that match: a session kept in two stores once."""
        return sum(self.counts.values()) - self.copies


def encode(cursors: dict[str, Any]) -> str:
    raw = json.dumps(cursors, separators=(",", ":")).encode()
    if len(raw) > 600:  # many stores: packed (a URL stays short)
        raw = b"z" + zlib.compress(raw, 9)
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str | None) -> dict[str, Any]:
    if not cursor:
        return {}
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        if raw[:1] == b"z":
            raw = zlib.decompress(raw[1:], bufsize=1 << 16)
        value = json.loads(raw)
        if not isinstance(value, dict):
            raise ValueError
        return value
    except (ValueError, TypeError, zlib.error):
        raise BadRequest(
            "The page cursor ('after') is not valid; start from the first page."
        ) from None


def order_key(value: Any) -> tuple:
    """A sort key's value as SQLite orders values of mixed types (NULL, numbers, text)."""
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, bytes(value))


def may_match(store: Store, q: SessionQuery, now: float | None = None) -> bool:
    """Could this store hold a row of ``q`` (at ``now``: the clock's time when not given)?
    Read from its summary (True without one)."""
    s = store.summary
    if s is None:
        return True
    if s.sessions == 0:
        return False
    sources = set(q.sources)
    if q.narrow.source:
        sources = sources & {q.narrow.source} if sources else {q.narrow.source}
        if not sources:
            return False
    if sources and not sources & set(s.sources):
        return False
    if q.narrow.sessions and not set(q.narrow.sessions) & s.id_set():
        return False
    since = parse_day(q.since) if q.since else None
    until = parse_day(q.until, end=True) if q.until else None
    if q.narrow.started_after is not None:
        since = max(since or q.narrow.started_after, q.narrow.started_after)
    if q.narrow.started_before is not None:
        until = min(until or q.narrow.started_before, q.narrow.started_before)
    if not s.may_hold(since, until):
        return False
    if q.active_minutes:
        newest = (s.bounds.get("last_active") or [None, None])[1]
        at = time.time() if now is None else now
        if newest is not None and newest < at - q.active_minutes * 60:
            return False
    return True


def _beyond(store: Store, q: SessionQuery, worst: tuple | None) -> bool:
    """Every row of this store sorts after ``worst`` (the page's last place so far)."""
    if worst is None or store.summary is None:
        return False
    lo, hi = store.summary.bounds.get(q.sort_key) or [None, None]
    best = hi if q.descending else lo
    if best is None:
        return False
    return order_key(best) < worst if q.descending else order_key(best) > worst


def _asked(store: Store, q: SessionQuery, what: str, compute: Callable[[], Any]) -> Any:
    """A store's answer: computed for the live file, kept while an archive stands still."""
    if store.kind == LIVE:
        return compute()
    return store_answer(store, (what, repr(q)), compute)


def store_page(
    q: SessionQuery,
    stores: list[Store],
    missing: list[str],
    short_of_time: Callable[[], bool],
    clock: Callable[[], float] = time.time,
) -> StorePage:
    """One merged page of the list over ``stores`` (readable ones, live first). ``missing``:
    the stores not read, to which the ones failing now are added; ``short_of_time``: is the
    page's budget too short to ask one more store (webui.db.deadline.short_of_time)?"""
    cursors = decode(q.after)
    whole = replace(q, after=None)
    answered = {s.name: s for s in stores}  # the stores that answered so far (by name)
    books = {s.name: s.logbook for s in stores}
    facets: dict[str, int] = {}
    now = clock()
    matching = [s for s in stores if may_match(s, whole, now)]
    matched = {s.name for s in matching}
    for s in stores:
        if s.kind != LIVE and short_of_time():
            _fail(s, OUT_OF_TIME, missing, answered)
            continue
        if s.name not in matched and s.summary is not None and not (q.sources or q.narrow.source):
            for src in s.summary.sources:  # nothing of it matches: its sources with none
                facets.setdefault(src, 0)
            continue
        try:
            by_source = s.summary.facets_for(whole) if s.summary is not None else None
            if by_source is None:
                by_source = _asked(
                    s, whole, "facets", partial(s.book.sessions.source_facets, whole)
                )
        except (LogbookDBError, sqlite3.Error) as exc:
            _fail(s, exc, missing, answered)
            continue
        for src, n in by_source.items():
            facets[src] = facets.get(src, 0) + n
    # Copies are told apart by the history of every readable store: a store failing later
    # only makes fewer rows copies, so this errs towards asking a store, never skipping one.
    history = history_of(stores)
    page: list[dict[str, Any]] = []
    folded = 0
    finished = False
    for _round in range(ROUNDS):
        rows, cursors, finished, passed = _round_of(
            q, cursors, q.limit - len(page), matching, answered, history, missing, short_of_time
        )
        page += rows
        folded += passed
        if finished or len(page) >= q.limit:
            break
    names = list(answered)
    if q.conversations and history.split:
        _whole_conversations(page, history, books, names, missing)
    counts, copies = _counts(whole, matched, answered, history, missing, short_of_time)
    return StorePage(
        page,
        None if finished else encode(cursors),
        dict(sorted(facets.items(), key=lambda kv: (-kv[1], kv[0]))),
        folded,
        missing,
        {name: counts.get(name, 0) for name in answered},
        copies,
        list(answered),
    )


ROUNDS = 20  # rounds of asking the stores for one page (when copies or short pages need more)


def _round_of(
    q: SessionQuery,
    cursors: dict[str, Any],
    needed: int,
    matching: list[Store],
    answered: dict[str, Store],
    history: History,
    missing: list[str],
    short_of_time: Callable[[], bool],
) -> tuple[list[dict[str, Any]], dict[str, Any], bool, int]:
    """Each store asked for its next rows, merged: up to ``needed`` rows shown, the copies met
    on the way passed over. The walk stops where a store that has more rows than it gave
    runs out of given ones (its next rows may sort before anything after): the next round
    asks again. (rows, the stores' cursors, finished?, copies passed over)."""
    first, rest = matching[:1], matching[1:]

    def best_of(s: Store) -> tuple:
        lo, hi = (s.summary.bounds.get(q.sort_key) if s.summary else None) or [None, None]
        best = hi if q.descending else lo
        return order_key(best) if best is not None else (9,)

    # Stores that may hold the page's best rows first: the others are then often not asked.
    rest.sort(key=best_of, reverse=q.descending)
    every = [s.name for s in matching]
    rank = {s.name: i for i, s in enumerate(matching)}
    # (sort key, store, row) for every row fetched: an archive's rows are its kept answer,
    # read and never changed; only the rows shown are copied.
    fetched: list[tuple[tuple, str, dict[str, Any]]] = []
    more: dict[str, bool] = {}
    keys: list[tuple] = []  # of the rows fetched that are not copies (as far as known)
    worst, len_sorted = None, -1
    for s in first + rest:
        state = cursors.get(s.name)
        if state == DONE or s.name not in answered:
            continue
        if s.kind != LIVE and short_of_time():
            _fail(s, OUT_OF_TIME, missing, answered)
            continue
        if len(keys) >= needed and len(keys) != len_sorted:
            worst, len_sorted = _worst(keys, needed, q), len(keys)
        if _beyond(s, q, worst):
            continue  # not asked: its cursor stays where it was
        asked = replace(q, after=state)
        try:
            rows, nxt = _asked(s, asked, "page", partial(s.book.sessions.page, asked))
        except (LogbookDBError, sqlite3.Error) as exc:
            _fail(s, exc, missing, answered)
            continue
        more[s.name] = nxt is not None
        for r in rows:
            k = order_key(r.get("_sort_key"))
            if not history.is_copy(s.name, str(r.get("_sort_id", r["id"])), every):
                keys.append(k)
            fetched.append(((k, -rank[s.name], str(r["_sort_id"])), s.name, r))
    names = list(answered)
    fetched.sort(key=lambda x: x[0], reverse=q.descending)
    left = dict.fromkeys(more, 0)
    for _k, name, _r in fetched:
        left[name] += 1
    page: list[dict[str, Any]] = []
    consumed: dict[str, dict[str, Any]] = {}
    passed = walked = 0
    for _k, name, r in fetched:
        if len(page) >= needed:
            break
        walked += 1
        consumed[name] = r
        left[name] -= 1
        if history.is_copy(name, str(r.get("_sort_id", r["id"])), names):
            passed += 1
        else:
            page.append({**r, "store": name, "_src": name})
        if left[name] == 0 and more[name]:
            break  # its next rows, not given yet, may come before the rest
    new = {k: v for k, v in cursors.items() if k in rank}
    for name in more:
        last = consumed.get(name)
        if last is not None:
            exhausted = left[name] == 0 and not more[name]
            new[name] = DONE if exhausted else encode_cursor(last["_sort_key"], last["_sort_id"])
        elif not left[name]:
            new[name] = DONE
    # A store not asked for want of time is asked again on the next page (its cursor stays).
    later = {line.split(": ", 1)[0] for line in missing if line.endswith(OUT_OF_TIME)}
    pending = [
        s for s in matching if (s.name in answered or s.name in later) and new.get(s.name) != DONE
    ]
    finished = not pending and walked >= len(fetched)
    return page, new, finished, passed


def _worst(keys: list[tuple], needed: int, q: SessionQuery) -> tuple:
    """The key of the page's last place among the rows fetched so far: a store whose every
    row sorts after it cannot put one on this page."""
    ordered = sorted(keys, reverse=q.descending)
    return ordered[needed - 1]


def _fail(store: Store, exc: Any, missing: list[str], answered: dict[str, Store]) -> None:
    message = exc.message if isinstance(exc, LogbookDBError) else str(exc)
    line = f"{store.name}: {message}"
    if line not in missing:
        missing.append(line)
    answered.pop(store.name, None)


def _counts(
    q: SessionQuery,
    matched: set[str],
    answered: dict[str, Store],
    history: History,
    missing: list[str],
    short_of_time: Callable[[], bool],
) -> tuple[dict[str, int], int]:
    """Each store's matching rows, and how many of them are copies of a session an earlier
    store that answered holds (counted among the copies' ids only: none in most stores)."""
    names = list(answered)
    counts: dict[str, int] = {}
    copies = 0
    for s in list(answered.values()):
        if s.name not in matched:
            counts[s.name] = 0
            continue
        known = s.summary.count_for(q) if s.summary is not None else None
        if known is None and s.kind != LIVE and short_of_time():
            _fail(s, OUT_OF_TIME, missing, answered)
            continue
        try:
            counts[s.name] = (
                known
                if known is not None
                else _asked(s, q, "count", partial(s.book.sessions.count, q))[0]
            )
            dup = history.copies_in(s.name, names)
            if dup:
                copies += store_answer(
                    s,
                    ("copies", repr(q), len(dup), hash(tuple(dup))),
                    partial(s.book.sessions.count_among, q, dup),
                )
        except (LogbookDBError, sqlite3.Error) as exc:
            _fail(s, exc, missing, answered)
            counts.pop(s.name, None)
    return counts, copies


def _whole_conversations(
    page: list[dict[str, Any]],
    history: History,
    books: dict[str, Any],
    answered: list[str],
    missing: list[str],
) -> None:
    """A row whose conversation goes on in another store shows its newest part (its tip,
    wherever it is kept) and the whole chain's totals."""
    for row in page:
        root = str(row["_sort_id"])
        local = (row.get("chain") or {}).get("members") or [root]
        if not history.crosses(local):
            continue
        parts = [(row["_src"], [root])]
        for name, ids in walk_across(history, root, answered):
            if parts[-1][0] == name:
                parts[-1][1].extend(ids)
            else:
                parts.append((name, list(ids)))
        if len(parts) < 2:
            continue
        where, segment = parts[-1]
        try:
            tip = books[where].sessions.details([segment[-1]]).get(segment[-1])
            totals = [books[n].sessions.chain_totals(ids) for n, ids in parts]
        except (LogbookDBError, sqlite3.Error) as exc:
            line = f"{where}: a conversation's newest part could not be read ({exc})"
            if line not in missing:
                missing.append(line)
            continue
        if tip is None:
            continue
        first = dict(row)
        first["id"] = root
        merged = listing.project(first, tip)
        merged["chain"] = {
            **{k: sum(t[k] for t in totals) for k in totals[0] if k not in NOT_SUMMED},
            "segments": sum(t["segments"] for t in totals),
            "root": root,
            "members": [i for _n, ids in parts for i in ids],
            "stores": [n for n, _ids in parts],
        }
        merged["store"] = where
        merged["root_store"] = row["_src"]
        row.clear()
        row.update(merged)


NOT_SUMMED = ("segments", "root", "members")
