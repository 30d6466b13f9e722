"""The digest (webui.db.digest) as pages use it: brought up to date within the page's budget
(the stats rollup's, LOGBOOK_ROLLUP_BUDGET), never waiting for the background pass, which a
page starts when the digest is behind (other profiles and stores start theirs on first use)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

from flask import current_app, g

from webui import keep
from webui.db import Logbook
from webui.db import digest as dg
from webui.db.digest import Coverage
from webui.db.errors import LogbookDBError

T = TypeVar("T")

# A file this small has its tables measured by dbstat within a page's budget (the background
# pass measures larger ones, one table at a time).
SMALL_FILE = 64 * 1024 * 1024


def current(book: Logbook) -> Coverage:
    """The book's digest brought up to date (once a request: a page that reads it several
    times reads it as of one moment)."""
    seen = g.setdefault("digest_coverage", {})
    if id(book) not in seen:
        seen[id(book)] = _current(book)
    return seen[id(book)]


def _current(book: Logbook) -> Coverage:
    d = book.digest
    budget = current_app.config["LOGBOOK_ROLLUP_BUDGET"]
    began = time.monotonic()
    cov = d.refresh(budget, wait=False)
    try:
        if not d.warming and book.size_bytes() <= SMALL_FILE:
            while time.monotonic() - began < budget and d.objects.step():
                pass
    except LogbookDBError:
        pass  # measured on the next visit, or by the background pass
    if not cov.complete or (not d.warming and _objects_due(book)):
        d.ensure_warming(current_app._get_current_object())
    return cov


def kept(book: Logbook, key: Any, compute: Callable[[sqlite3.Connection], T]) -> T:
    """``compute(conn)`` on the book's digest, kept (webui.keep) under the digest's mark:
    while it reads nothing new the answer is reused; once it moved, the previous answer is
    still served (up to LOGBOOK_STATS_STALE_S old) while one background thread works out the
    next, as the statistics are (so a page beside a writing gateway never waits for it)."""
    d = book.digest
    with dg.reading(d) as conn:
        mark = dg.mark(d, conn)
    policy = keep.reused(current_app.config)

    def run() -> T:
        with dg.reading(d) as conn:
            return compute(conn)

    return book.sessions.cached(f"digest:{key!r}", mark, run, policy)


OBJECTS_CHECK_S = 60.0  # how often a page asks whether the tables are due to be measured


def _objects_due(book: Logbook) -> bool:
    d = book.digest
    now = time.monotonic()
    if now - getattr(d, "objects_checked", -OBJECTS_CHECK_S) < OBJECTS_CHECK_S:
        return False
    d.objects_checked = now
    conn = d.connect()
    try:
        return bool(d.objects.due(conn))
    except LogbookDBError:
        return False
    finally:
        conn.close()
