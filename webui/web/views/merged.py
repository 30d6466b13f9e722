"""One list, search or stats page over several databases: every readable profile
(``profile=all``) or every store (the live file, archives, replicas). Each database answers
its own keyset page; the pages are merged, never whole tables, and the cursor remembers where
each database stopped. Across stores a session kept in two of them (an old backup beside the
live file) is shown once, from the first store that has it (live first), and the page says
how many copies were folded."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field, replace
from typing import Any

from flask import current_app

from webui.db import BadRequest, Logbook, LogbookDBError, SessionQuery
from webui.db.sessions import encode_cursor
from webui.web.profiles import merged_logbooks
from webui.web.stores import kept_answer

DONE = "done"


@dataclass
class MergedPage:
    rows: list[dict[str, Any]]
    cursor: str | None
    facets: dict[str, int]
    folded: int = 0  # copies of a session already shown from an earlier store
    # Stores that could not answer in time (or at all): named on the page, never a failed page.
    missing: list[str] = field(default_factory=list)


def encode(cursors: dict[str, Any]) -> str:
    return (
        base64.urlsafe_b64encode(json.dumps(cursors, separators=(",", ":")).encode())
        .decode()
        .rstrip("=")
    )


def decode(cursor: str | None) -> dict[str, Any]:
    if not cursor:
        return {}
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(value, dict):
            raise ValueError
        return value
    except (ValueError, TypeError):
        raise BadRequest(
            "The page cursor ('after') is not valid; start from the first page."
        ) from None


def _sort_key(r: dict[str, Any], label: str) -> tuple:
    return (r["_sort_key"] if r["_sort_key"] is not None else 0, r[label], r["id"])


def session_page(
    q: SessionQuery,
    books: list[tuple[str, Logbook]] | None = None,
    label: str = "profile",
    fold: bool = False,
) -> MergedPage:
    """A merged page: rows labelled with their database (``label``: "profile" or "store"),
    the next cursor, merged facets. ``fold``: a session id already in an earlier database
    is left out (counted in ``folded``)."""
    books = books if books is not None else merged_logbooks(current_app)
    cursors = decode(q.after)
    fetched: list[dict[str, Any]] = []
    more: dict[str, bool] = {}
    facets: dict[str, int] = {}
    missing: list[str] = []
    for i, (name, lb) in enumerate(books):
        state = cursors.get(name)
        try:
            by_source = (
                kept_answer(
                    lb,
                    ("facets", repr(replace(q, after=None))),
                    lambda lb=lb: lb.sessions.source_facets(replace(q, after=None)),
                )
                if i and label == "store"
                else lb.sessions.source_facets(replace(q, after=None))
            )
            for src, n in by_source.items():
                facets[src] = facets.get(src, 0) + n
            if state == DONE:
                continue
            if i and label == "store":
                # An archive's or replica's page: kept while its file stands still.
                rows, nxt = kept_answer(
                    lb,
                    ("page", repr(replace(q, after=state))),
                    lambda lb=lb, state=state: lb.sessions.page(replace(q, after=state)),
                )
                rows = [dict(r) for r in rows]
            else:
                rows, nxt = lb.sessions.page(replace(q, after=state))
        except LogbookDBError as exc:
            if i == 0 and label == "profile":
                raise
            # An archive or replica that is slow, locked or gone: its part is named as missing
            # and the others are shown (its cursor stays where it was).
            missing.append(f"{name}: {exc.message}")
            continue
        more[name] = nxt is not None
        for r in rows:
            r[label] = name
        fetched.extend(rows)
    if fold:
        _mark_copies(fetched, books, label)
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
            new[name] = DONE if exhausted else encode_cursor(last["_sort_key"], last["id"])
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


def _mark_copies(rows: list[dict[str, Any]], books: list[tuple[str, Logbook]], label: str) -> None:
    """Mark (``_copy``) each row whose session an earlier database also holds."""
    order = [name for name, _ in books]
    by_name = dict(books)
    for i, name in enumerate(order[1:], start=1):
        mine = [r for r in rows if r[label] == name]
        if not mine:
            continue
        ids = [r["id"] for r in mine]
        earlier: set[str] = set()
        for j, before in enumerate(order[:i]):
            book = by_name[before]
            try:
                # Two read-only stores (archives, replicas) answer the same while they stand
                # still: their probe is kept; the live file is asked each time.
                earlier |= (
                    kept_answer(
                        book,
                        ("existing", tuple(ids)),
                        lambda b=book, ids=ids: b.sessions.existing(ids),
                    )
                    if j and label == "store"
                    else book.sessions.existing(ids)
                )
            except LogbookDBError:
                continue  # that store is named as missing; its copies cannot be told
        for r in mine:
            if r["id"] in earlier:
                r["_copy"] = True
