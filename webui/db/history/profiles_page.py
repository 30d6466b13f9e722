"""One list page over every readable profile (``profile=all``). Each database answers its own
keyset page; the pages are merged, never whole tables, and the cursor remembers where each
database stopped (a row's place in its database: its keyset key and id, a chain's root's for
a row shown as its tip). The stores of one profile (the live file, archives, replicas) are
merged by webui.db.history.list_page, which also folds copies."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from webui.db import Logbook, LogbookDBError, SessionQuery
from webui.db.history.list_page import DONE, decode, encode
from webui.db.sessions.store import encode_cursor


@dataclass
class MergedPage:
    rows: list[dict[str, Any]]
    cursor: str | None
    facets: dict[str, int]
    folded: int = 0  # copies of a session already shown from an earlier store
    # Stores that could not answer in time (or at all): named on the page, never a failed page.
    missing: list[str] = field(default_factory=list)


def count(q: SessionQuery, books: list[tuple[str, Logbook]]) -> tuple[int, bool]:
    """The sessions of every profile that match (total, capped: a count stopped at its cap)."""
    counts = [book.sessions.count(q) for _name, book in books]
    return sum(c[0] for c in counts), any(c[1] for c in counts)


def _sort_key(r: dict[str, Any], label: str) -> tuple:
    return (r["_sort_key"] if r["_sort_key"] is not None else 0, r[label], r["_sort_id"])


def session_page(
    q: SessionQuery,
    books: list[tuple[str, Logbook]],
    label: str = "profile",
) -> MergedPage:
    """A merged page: rows labelled with their database (``label``), the next cursor,
    merged facets."""
    cursors = decode(q.after)
    fetched: list[dict[str, Any]] = []
    more: dict[str, bool] = {}
    facets: dict[str, int] = {}
    missing: list[str] = []
    for i, (name, lb) in enumerate(books):
        state = cursors.get(name)
        try:
            by_source = lb.sessions.source_facets(replace(q, after=None))
            for src, n in by_source.items():
                facets[src] = facets.get(src, 0) + n
            if state == DONE:
                continue
            rows, nxt = lb.sessions.page(replace(q, after=state))
        except LogbookDBError as exc:
            if i == 0:
                raise
            # A profile that is slow, locked or gone: named as missing, the others shown
            # (its cursor stays where it was).
            missing.append(f"{name}: {exc.message}")
            continue
        more[name] = nxt is not None
        for r in rows:
            r[label] = name
        fetched.extend(rows)
    fetched.sort(key=lambda r: _sort_key(r, label), reverse=q.descending)
    # Walk the merged order: shown rows up to the page size; folded copies met on the way
    # are passed over (and their store's cursor moves past them too).
    page: list[dict[str, Any]] = []
    consumed: dict[str, dict[str, Any]] = {}
    folded = 0
    walked = 0
    for r in fetched:
        if len(page) >= q.limit:
            break
        walked += 1
        consumed[r[label]] = r
        if r.get("_copy"):
            folded += 1
        else:
            page.append(r)
    new = dict(cursors)
    for name in more:
        mine = [r for r in fetched if r[label] == name]
        last = consumed.get(name)
        if last is not None:
            exhausted = last is mine[-1] and not more[name]
            new[name] = DONE if exhausted else encode_cursor(last["_sort_key"], last["_sort_id"])
        elif not mine:
            new[name] = DONE
    finished = all(new.get(n) == DONE for n in more) and walked >= len(fetched)
    cursor = None if finished or not page else encode(new)
    return MergedPage(
        page,
        cursor,
        dict(sorted(facets.items(), key=lambda kv: (-kv[1], kv[0]))),
        folded,
        missing,
    )
