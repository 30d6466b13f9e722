"""'All profiles': one list, search or stats page over every readable profile's database.
Each database answers its own keyset page; the pages are merged, never whole tables, and the
cursor remembers where each database stopped."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

from flask import current_app

from webui.db import BadRequest, SessionQuery
from webui.web.profiles import merged_logbooks

DONE = "done"


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


def session_page(q: SessionQuery) -> tuple[list[dict[str, Any]], str | None, dict[str, int]]:
    """A merged page: rows labelled with their profile, the next cursor, merged facets."""
    cursors = decode(q.after)
    fetched: list[dict[str, Any]] = []
    more: dict[str, bool] = {}
    facets: dict[str, int] = {}
    for name, lb in merged_logbooks(current_app):
        for src, n in lb.sessions.source_facets(replace(q, after=None)).items():
            facets[src] = facets.get(src, 0) + n
        state = cursors.get(name)
        if state == DONE:
            continue
        rows, nxt = lb.sessions.page(replace(q, after=state))
        more[name] = nxt is not None
        for r in rows:
            r["profile"] = name
        fetched.extend(rows)
    reverse = q.descending
    fetched.sort(
        key=lambda r: (r["_sort_key"] if r["_sort_key"] is not None else 0, r["profile"], r["id"]),
        reverse=reverse,
    )
    page = fetched[: q.limit]
    from webui.db.sessions import encode_cursor

    new = dict(cursors)
    for name in more:
        mine = [r for r in page if r["profile"] == name]
        fetched_mine = [r for r in fetched if r["profile"] == name]
        if mine:
            last = mine[-1]
            exhausted = len(mine) == len(fetched_mine) and not more[name]
            new[name] = DONE if exhausted else encode_cursor(last["_sort_key"], last["id"])
        elif not fetched_mine:
            new[name] = DONE
    finished = all(new.get(n) == DONE for n in more) and len(fetched) <= q.limit
    cursor = None if finished or not page else encode(new)
    return page, cursor, dict(sorted(facets.items(), key=lambda kv: (-kv[1], kv[0])))
