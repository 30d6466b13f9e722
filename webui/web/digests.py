"""The digest (webui.db.digest) as pages use it: brought up to date within the page's budget
(the stats rollup's, LOGBOOK_ROLLUP_BUDGET), never waiting for the background pass, which a
page starts when the digest is behind (other profiles and stores start theirs on first use)."""

from __future__ import annotations

import time

from flask import current_app, g

from webui.db import Logbook
from webui.db.digest import Coverage
from webui.db.errors import LogbookDBError

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


def _objects_due(book: Logbook) -> bool:
    d = book.digest
    conn = d.connect()
    try:
        return bool(d.objects.due(conn))
    except LogbookDBError:
        return False
    finally:
        conn.close()
