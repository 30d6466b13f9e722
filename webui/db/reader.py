"""Read-only access to the live state.db through Flask-SQLAlchemy's engine.

Every page query goes through :meth:`Reader.rows` (or its siblings), which
* checks a read-only connection out of the pool (``mode=ro`` + ``PRAGMA query_only``),
* arms SQLite's progress handler with a deadline, so no user-driven query can run away,
* retries briefly when the gateway's checkpoint or a transient I/O error gets in the way,
* turns every sqlite error into a LogbookDBError with a message fit for a user.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine
from sqlalchemy.pool import QueuePool

from webui.db import deadline as request_deadline
from webui.db.errors import (
    BadRequest,
    DatabaseBusy,
    DatabaseMissing,
    DatabaseUnavailable,
    QueryTimeout,
)
from webui.db.schema import OpenedDatabase, Schema, connect_readonly, inspect
from webui.db.values import shown

db = SQLAlchemy()

# SQLite's primary result codes (extended codes keep these in their low byte).
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_INTERRUPT, SQLITE_IOERR = 5, 6, 9, 10
TRANSIENT = {SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR}


def _code(exc: BaseException) -> int | None:
    """The SQLite result code: by number, never by the message text (FTS5 errors quote the
    user's own words, which may well say "busy")."""
    inner = getattr(exc, "orig", exc)
    code = getattr(inner, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


TOOK_TOO_LONG = (
    "This took too long and was stopped so the server stays responsive. Narrow it (a source, "
    "a date range, more specific words) and try again."
)
# The watchdog interrupts a statement this long after its deadline, if the progress handler
# (which normally stops it at the deadline) was not called in time.
WATCHDOG_GRACE_S = 0.05

# How often a request may stat() the database file to notice it was deleted or replaced.
IDENTITY_CHECK_S = 1.0

# The progress handler runs every this many SQLite VM instructions: often enough to stop
# within a millisecond or two of the deadline, rarely enough to cost nothing measurable.
PROGRESS_STEPS = 1_000


def engine_options(opened: OpenedDatabase, pool_size: int) -> dict[str, Any]:
    """Engine options for Flask-SQLAlchemy: we create each DBAPI connection ourselves so
    that it is read-only from birth and never issues a persistent PRAGMA."""

    def creator() -> sqlite3.Connection:
        return connect_readonly(opened.path, immutable=opened.immutable)

    return {
        "creator": creator,
        "poolclass": QueuePool,
        "pool_size": pool_size,
        "max_overflow": pool_size,
        "pool_timeout": 5,
        # A replaced or pruned file shows through on the next checkout: connections are cheap.
        "pool_recycle": 300,
    }


class Reader:
    def __init__(
        self,
        opened: OpenedDatabase,
        *,
        time_limit_s: float = 5.0,
        retries: int = 4,
        engine: Callable[[], Engine] | None = None,
    ):
        self.opened = opened
        # The primary database's engine is Flask-SQLAlchemy's; other profiles bring their own.
        self._engine = engine or (lambda: db.engine)
        self.schema: Schema = opened.schema
        self.time_limit_s = time_limit_s
        self.retries = retries
        self._identity: tuple[int, int] | None = None
        self._identity_checked = 0.0
        self._watch: sqlite3.Connection | None = None
        self._watch_inode = 0
        # Which watcher connection this is: data_version is per connection, so a value read on
        # a new one (after the file was let go while idle, or replaced) is never compared with
        # the old one's. A counter, not id(): a new connection may reuse a freed one's address.
        self._watch_generation = 0
        self._watch_lock = threading.Lock()
        self.watch_files = False  # see data_version: for files followed by Litestream

    def data_version(self) -> str:
        """Changes whenever anyone (the gateway, Hermes's CLI, Logbook's own writer) commits
        to the file, or the file is replaced: SQLite's data_version on one connection kept
        for this purpose, and the file's inode. Cheap (no page is read), so an answer may be
        shared until it moves. On any error a value that never repeats: nothing is shared.

        A file another program rewrites page by page outside SQLite's own protocol (a
        Litestream replica being followed) is watched by its files' sizes and times instead:
        it must not be held open, and its changes never move data_version."""
        if self.watch_files:
            try:
                parts = []
                for suffix in ("", "-wal"):
                    try:
                        st = os.stat(f"{self.opened.path}{suffix}")
                        parts.append(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
                    except FileNotFoundError:
                        parts.append("-")
                return "files:" + "/".join(parts)
            except OSError:
                return f"unknown:{time.monotonic()}"
        with self._watch_lock:
            try:
                inode = os.stat(self.opened.path).st_ino
                if self._watch is None or self._watch_inode != inode:
                    if self._watch is not None:
                        self._watch.close()
                    self._watch = connect_readonly(
                        self.opened.path, immutable=self.opened.immutable
                    )
                    self._watch_inode = inode
                    self._watch_generation += 1
                version = self._watch.execute("PRAGMA data_version").fetchone()[0]
                return f"{inode}:{self._watch_generation}:{version}"
            except (OSError, sqlite3.Error):
                self._watch = None
                return f"unknown:{time.monotonic()}"

    def let_go(self) -> None:
        """Close every connection this reader holds (the pool's and the data_version
        watcher's): another process may then lock the file for itself. The next query opens
        them again."""
        self._engine().dispose()
        with self._watch_lock:
            if self._watch is not None:
                self._watch.close()
                self._watch = None

    def holds_connections(self) -> bool:
        """Is any connection to the file open (in the pool, checked out, or the watcher's)?"""
        with self._watch_lock:
            if self._watch is not None:
                return True
        pool = self._engine().pool
        counts = [getattr(pool, name, None) for name in ("checkedin", "checkedout")]
        if any(c is None for c in counts):
            return True  # a pool that cannot say: assume it holds some
        return any(c() for c in counts)

    def let_go_if_unused(self) -> bool:
        """``let_go`` when no connection of the pool is in use (a request, an export or
        background work holds one: it goes on, and the next idle moment lets go). Whether
        every connection was closed."""
        engine = self._engine()
        pool = engine.pool
        checked_out = getattr(pool, "checkedout", None)
        if checked_out is not None and checked_out():
            return False
        self.let_go()
        return True

    # -- plumbing -------------------------------------------------------------------------

    def _check_identity(self) -> None:
        """check_file, at most once a second, for queries run outside a request's own check."""
        now = time.monotonic()
        if now - self._identity_checked < IDENTITY_CHECK_S:
            return
        self._identity_checked = now
        self.check_file()

    def check_file(self) -> str:
        """Is the file still the one being served? "same", or "replaced" (a restore from a
        backup: new connections open the new file; the caller drops what it kept about the
        old one). A deleted or moved file raises DatabaseMissing; a replacement of another
        schema raises DatabaseUnavailable (it needs a restart). A stat: microseconds."""
        path = self.opened.path
        try:
            st = os.stat(path)
        except OSError:
            self._engine().dispose()
            raise DatabaseMissing(
                f"The database file {path} is gone (deleted or moved while Logbook was "
                "running). Put it back, or restart Logbook with the right --db."
            ) from None
        identity = (st.st_dev, st.st_ino)
        if self._identity is None:
            self._identity = identity
            return "same"
        if identity == self._identity:
            return "same"
        try:
            conn = connect_readonly(path, immutable=self.opened.immutable)
            try:
                fresh = inspect(conn)
            finally:
                conn.close()
        except sqlite3.Error:
            fresh = None
        if fresh is None or fresh.columns != self.schema.columns:
            raise DatabaseUnavailable(
                f"The database file {path} was replaced by one Logbook cannot read with "
                "what it learned at start-up (another schema). Restart Logbook to read it."
            )
        self._identity = identity
        self._engine().dispose()  # new connections open the new file
        return "replaced"

    def _limit(self, time_limit_s: float | None) -> float:
        """This query's time: the default limit, cut to what is left of the request's
        deadline. An explicit limit (exports, prune) is the caller's own budget."""
        if time_limit_s is not None:
            return time_limit_s
        left = request_deadline.remaining()
        return self.time_limit_s if left is None else min(self.time_limit_s, left)

    @contextmanager
    def _raw(self, time_limit_s: float | None) -> Iterator[sqlite3.Connection]:
        limit = self._limit(time_limit_s)
        if limit <= 0:
            raise QueryTimeout(TOOK_TOO_LONG)
        self._check_identity()
        with self._engine().connect() as conn:
            raw: sqlite3.Connection = conn.connection.driver_connection  # type: ignore[assignment]
            deadline = time.monotonic() + limit
            gone = request_deadline.gone_check() if time_limit_s is None else None
            if gone is None:
                raw.set_progress_handler(
                    lambda: 1 if time.monotonic() > deadline else 0, PROGRESS_STEPS
                )
            else:  # a page's query also stops when its client has left
                raw.set_progress_handler(
                    lambda: 1 if time.monotonic() > deadline or gone() else 0, PROGRESS_STEPS
                )
            try:
                with request_deadline.WATCHDOG.watch(raw, deadline + WATCHDOG_GRACE_S):
                    yield raw
            finally:
                raw.set_progress_handler(None, 0)

    def _run(self, fn, time_limit_s: float | None):
        attempt = 0
        while True:
            try:
                with self._raw(time_limit_s) as raw:
                    return fn(raw)
            except OverflowError:
                raise BadRequest("A number in the request is too large.") from None
            except (sqlite3.OperationalError, sa_exc.OperationalError) as exc:
                msg = str(getattr(exc, "orig", exc)).lower()
                code = _code(exc)
                if code == SQLITE_INTERRUPT:
                    raise QueryTimeout(TOOK_TOO_LONG) from None
                if code in TRANSIENT and attempt < self.retries:
                    attempt += 1
                    time.sleep(random.uniform(0.02, 0.12) * attempt)
                    continue
                if code in TRANSIENT:
                    raise DatabaseBusy(
                        "The Hermes database is busy (locked by the gateway or a "
                        "checkpoint). Try again in a moment."
                    ) from None
                if "unable to open" in msg or "no such table" in msg:
                    raise DatabaseUnavailable(
                        f"The database {self.opened.path} cannot be read right now."
                    ) from None
                raise
            except (sqlite3.DatabaseError, sa_exc.DatabaseError) as exc:
                msg = str(getattr(exc, "orig", exc))
                raise DatabaseUnavailable(
                    f"The database {self.opened.path} could not be read ({msg})."
                ) from None

    # -- public API -------------------------------------------------------------------------

    def run(self, fn: Callable[[sqlite3.Connection], Any], time_limit_s: float | None = None):
        """``fn(connection)`` for a run of statements that belong together (under one
        deadline, errors turned into messages, the whole run retried on a busy file)."""
        return self._run(fn, time_limit_s)

    def rows(
        self, sql: str, params: Sequence[Any] = (), *, time_limit_s: float | None = None
    ) -> list[dict[str, Any]]:
        def fn(raw: sqlite3.Connection):
            cur = raw.execute(sql, tuple(params))
            names = [d[0] for d in cur.description or ()]
            # Each value of the type its column is meant to hold (webui.db.values): a
            # damaged row is shown as what it is, never breaks the page.
            return [shown(names, r) for r in cur.fetchall()]

        return self._run(fn, time_limit_s)

    def column(
        self, sql: str, params: Sequence[Any] = (), *, time_limit_s: float | None = None
    ) -> list[Any]:
        """The first column of every row, read row by row: a list of 200,000 session ids is
        15 MB this way, against 70 MB as a list of row dicts built after ``fetchall``."""

        def fn(raw: sqlite3.Connection):
            cur = raw.execute(sql, tuple(params))
            name = cur.description[0][0]
            return [shown([name], r)[name] for r in cur]

        return self._run(fn, time_limit_s)

    def one(self, sql: str, params: Sequence[Any] = (), **kw) -> dict[str, Any] | None:
        found = self.rows(sql, params, **kw)
        return found[0] if found else None

    def scalar(self, sql: str, params: Sequence[Any] = (), **kw) -> Any:
        def fn(raw: sqlite3.Connection):
            row = raw.execute(sql, tuple(params)).fetchone()
            return row[0] if row else None

        return self._run(fn, kw.get("time_limit_s"))

    @contextmanager
    def connection(self, time_limit_s: float | None = None) -> Iterator[sqlite3.Connection]:
        """One read-only connection for a run of queries (an export reuses it across many
        sessions instead of checking one out per query)."""
        with self._raw(time_limit_s) as raw:
            yield raw
