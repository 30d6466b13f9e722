"""The digest of every message (webui/db/digest/follow.py) and what pages ask of it: storage
(storage.py, objects.py), the files agents changed (files.py), reliability (reliability.py).

Pages read the digest's own file under the request's deadline; their answers are kept
(webui.web.digests.kept) under the digest's mark, which moves whenever it reads anything new."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from webui.db import deadline as request_deadline
from webui.db.digest.follow import Digest
from webui.db.digest.tables import Coverage
from webui.db.errors import QueryTimeout
from webui.db.ledger_file import instance_file
from webui.db.reader import TOOK_TOO_LONG
from webui.db.schema import OpenedDatabase

__all__ = ["Digest", "Coverage", "digest_path", "reading", "mark"]


def digest_path(instance: Path, opened: OpenedDatabase) -> Path:
    """This file's digest: named by the file's path and inode (a file replaced by a backup
    gets a digest of its own; the old one is removed)."""
    key = hashlib.sha1(str(opened.path).encode()).hexdigest()[:12]
    return instance_file(instance, "digest", opened.path, key)


@contextmanager
def reading(d: Digest) -> Iterator[sqlite3.Connection]:
    """A connection to the digest (state.db attached as ``st``) whose statements stop at the
    request's deadline (or the reader's query limit outside a request)."""
    left = request_deadline.remaining()
    limit = d.r.time_limit_s if left is None else min(d.r.time_limit_s, left)
    if limit <= 0:
        raise QueryTimeout(TOOK_TOO_LONG)
    conn = d.connect()
    deadline = time.monotonic() + limit
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
    try:
        yield conn
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):
            raise QueryTimeout(TOOK_TOO_LONG) from None
        raise
    finally:
        conn.close()


def mark(d: Digest, conn: sqlite3.Connection) -> tuple:
    """What the digest's answers depend on: how far it read, what it counted, the sessions it
    knows, and the objects measured. Moves whenever it takes in anything."""
    meta = d.meta(conn)
    return tuple(
        meta.get(k)
        for k in ("max_id", "counted", "sess_n", "sess_rowid", "audit_after", "objects_pages")
    ) + (conn.execute("SELECT COUNT(*), MAX(measured_at) FROM main.objects").fetchone(),)
