"""The one place that writes to the shared state.db.

The Hermes gateway writes to the same file with a 1 s busy timeout and 15 jittered retries;
after about 16 s of waiting it drops the message. So every write of ours is a short
``BEGIN IMMEDIATE`` transaction on its own connection, waits only briefly for the lock itself,
retries with jitter, and large jobs (prune, a big delete) are cut into batches that each stay
far below 100 ms. Connection settings are per connection (busy timeout, foreign_keys, the
same as Hermes's own connection); nothing persistent is changed, no DDL, no VACUUM.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TypeVar
from urllib.request import pathname2url

from webui.db.deadline import WATCHDOG
from webui.db.errors import (
    DatabaseBusy,
    DatabaseMissing,
    DatabaseUnavailable,
    DiskFull,
    LogbookDBError,
)
from webui.db.schema import OpenedDatabase, decode_text

T = TypeVar("T")
log = logging.getLogger("webui.writer")

BUSY_TIMEOUT_S = 0.2
ATTEMPTS = 15
# Messages deleted per transaction: a first size, then adapted to the time each one took.
MESSAGE_BATCH, MESSAGE_BATCH_MIN, MESSAGE_BATCH_MAX = 400, 50, 600
TARGET_TXN_S = 0.025  # a batch aims at this long holding the lock; the budget is 100 ms
BUDGET_TXN_S = 0.1  # a transaction held longer is logged, with where its time went
# A batch whose statements run longer than this (an FTS5 segment merge inside the write, a
# core taken by other work) is rolled back and retried smaller, so the lock is never held
# past the budget for a batch that could have been cut. The commit that follows is short. The
# margin to 100 ms is for the interrupt's own delay on a busy machine (40-66 ms measured
# beside the hostile benchmark's search bombs) and the rollback.
STATEMENTS_BUDGET_S = 0.045
PAUSE_MIN_S = 0.005  # and the lock stays free at least this long after each


class WritesDisabled(LogbookDBError):
    status = 403


class RemovalRefused(LogbookDBError):
    """A change that writes messages (delete, prune, cold storage) on a file where this process
    cannot (Writer.removal_refusal)."""

    status = 409


class TooSlow(Exception):
    """A batch's statements outran STATEMENTS_BUDGET_S; it was rolled back whole. The caller
    cuts the batch and tries again (never raised when the caller set no limit)."""


class Writer:
    def __init__(self, opened: OpenedDatabase, *, newest_known_version: int):
        self.opened = opened
        self.stats = {"transactions": 0, "longest_s": 0.0, "retries": 0}
        self._local = threading.local()  # this thread's last transaction time
        schema = opened.schema
        self.refusal: str | None = None
        # Called after every COMMIT, with no argument (webui.db.changes: the unit of work that
        # runs knows it changed the file; tests kill the process there).
        self.on_commit: list[Callable[[], None]] = []
        # Set by the lane (webui.db.changes): raises unless the calling thread holds the
        # live file's lane, so no change is ever written around it.
        self.require_lane: Callable[[], None] | None = None
        if opened.immutable:
            self.refusal = "The database is opened as a read-only snapshot; changes are off."
        elif schema.version is not None and schema.version > newest_known_version:
            self.refusal = (
                f"This database uses schema v{schema.version}, newer than Logbook "
                f"knows (v{newest_known_version}); changes are off so nothing is "
                "written in a shape the newer Hermes does not expect."
            )
        # Why nothing may write to ``messages`` here (delete, prune, cold storage), when renames
        # and flags still may: a search index whose tokenizer this process cannot load
        # (webui.db.changes.tokenizer); and the libraries every writing connection loads.
        self.removal_refusal: str | None = None
        self.removal_reason: str | None = None  # the same, as a clause for one line
        self.libraries: list = []
        if self.refusal is None:
            self._check_tokenizers()

    def _check_tokenizers(self) -> None:
        from webui.db.changes import tokenizer
        from webui.db.schema import connect_readonly

        try:
            conn = connect_readonly(self.opened.path)
        except sqlite3.Error:
            return  # the pages say what is wrong with the file; a change will too
        try:
            reason, self.libraries = tokenizer.check(conn, self.opened.path)
        except sqlite3.Error:
            reason = None
        finally:
            conn.close()
        if reason:
            self.removal_reason = reason
            self.removal_refusal = (
                f"Deleting, pruning and cold storage are off for this file: {reason}. "
                "Nothing was changed."
            )
        tokenizer.need(self.libraries)

    def _connect(self, foreign_keys: bool = True) -> sqlite3.Connection:
        # mode=rw: never create the file. A state.db deleted under a running Logbook must not
        # come back as an empty database from a rename.
        conn = sqlite3.connect(
            "file:" + pathname2url(os.path.abspath(self.opened.path)) + "?mode=rw",
            uri=True,
            timeout=BUSY_TIMEOUT_S,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.text_factory = decode_text
        if self.libraries:  # a search index's tokenizer (webui.db.changes.tokenizer)
            from webui.db.changes import tokenizer

            tokenizer.load(conn, self.libraries)
        # Per connection, as Hermes's own. Off only for a move back from cold storage, whose
        # messages enter before their session row (so no page shows half a conversation).
        conn.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
        # No checkpoint inside our COMMIT (per connection, not persisted): checkpoint() runs
        # a PASSIVE one between batches instead, which never blocks the gateway.
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        # Per connection, not persisted: in WAL mode NORMAL syncs the WAL at checkpoints, not
        # at every COMMIT. Each commit stays atomic and survives a crash of any process
        # (kill -9); only a power cut may forget the last commits, never half of one, and a
        # removal's journal finishes them at the next start. A COMMIT's fsync took up to
        # 0.8 s on this file under load (3.6 ms median; NORMAL: 0.7 ms, at most 7 ms).
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    def require_removals(self) -> None:
        """Raise unless changes that write messages may run on this file."""
        if self.refusal:
            raise WritesDisabled(self.refusal)
        if self.removal_refusal:
            raise RemovalRefused(self.removal_refusal)

    @property
    def last_transaction_s(self) -> float:
        """How long this thread's last transaction held the write lock (BEGIN to COMMIT)."""
        return getattr(self._local, "took", 0.0)

    def checkpoint(self) -> None:
        """A PASSIVE checkpoint, as Hermes runs every 50 writes: copies what it can from the
        WAL without waiting for or blocking anyone."""
        if self.refusal:
            return
        conn = self._connect()
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.OperationalError:
            pass  # best effort, as in Hermes
        finally:
            conn.close()

    def run(
        self,
        fn: Callable[[sqlite3.Connection], T],
        *,
        give_up_after: float | None = None,
        foreign_keys: bool = True,
    ) -> T:
        """fn inside one BEGIN IMMEDIATE transaction, retried while the gateway holds the lock.
        Any error rolls everything back: no write is ever half done. ``give_up_after``: fn's
        statements are interrupted after that many seconds and the whole transaction is
        rolled back (TooSlow), for callers that can retry with a smaller batch."""
        if self.refusal:
            raise WritesDisabled(self.refusal)
        if self.require_lane is not None:
            self.require_lane()
        try:
            return self._run(fn, give_up_after, foreign_keys)
        except sqlite3.Error as exc:
            raise as_change_error(exc, self.opened.path) from None

    def _run(
        self,
        fn: Callable[[sqlite3.Connection], T],
        give_up_after: float | None,
        foreign_keys: bool,
    ) -> T:
        conn = self._connect(foreign_keys)
        try:
            for attempt in range(ATTEMPTS):
                try:
                    # Waiting for the lock (up to BUSY_TIMEOUT_S) holds nothing: the budget
                    # counts from when BEGIN IMMEDIATE has the lock to when COMMIT frees it.
                    conn.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError as exc:
                    if _is_busy(exc) and attempt < ATTEMPTS - 1:
                        self.stats["retries"] += 1
                        time.sleep(random.uniform(0.02, 0.15))
                        continue
                    if _is_busy(exc):
                        raise DatabaseBusy(
                            "The Hermes gateway kept the database locked; "
                            "nothing was changed. Try again."
                        ) from None
                    raise
                started = time.perf_counter()
                guard: AbstractContextManager = nullcontext()
                if give_up_after is not None:
                    stop_at = started + give_up_after
                    conn.set_progress_handler(lambda s=stop_at: time.perf_counter() > s, 1000)
                    # FTS5 merges segments inside its own short statements and blob reads,
                    # where the progress handler is seldom called: the watchdog interrupts.
                    guard = WATCHDOG.watch(conn, time.monotonic() + give_up_after)
                try:
                    try:
                        with guard:
                            result = fn(conn)
                    finally:
                        # Never interrupt the COMMIT itself (the watchdog is done with it too).
                        conn.set_progress_handler(None, 0)
                    committing = time.perf_counter()
                    conn.execute("COMMIT")
                except BaseException as exc:
                    if conn.in_transaction:  # SQLite may have rolled back already
                        conn.execute("ROLLBACK")
                    # Interrupted (the error names what was cut: a statement, an FTS5 table's
                    # constructor): the limit passed, so the batch was too slow, whatever broke.
                    if (
                        give_up_after is not None
                        and isinstance(exc, sqlite3.Error)
                        and time.perf_counter() >= stop_at
                    ):
                        self._held(time.perf_counter() - started)
                        self.stats["abandoned"] = self.stats.get("abandoned", 0) + 1
                        raise TooSlow() from None
                    raise
                ended = time.perf_counter()
                for told in self.on_commit:
                    told()
                took = ended - started
                if took > BUDGET_TXN_S:
                    log.warning(
                        "a write held the lock %.0f ms (statements %.0f ms, commit %.0f ms; %s)",
                        took * 1000,
                        (committing - started) * 1000,
                        (ended - committing) * 1000,
                        "a batch at its smallest, no time limit"
                        if give_up_after is None
                        else f"statements limited to {give_up_after * 1000:.0f} ms",
                    )
                self._held(took)
                return result
            raise DatabaseBusy("The database stayed locked; nothing was changed.")
        finally:
            conn.close()

    def _held(self, took: float) -> None:
        self.stats["transactions"] += 1
        self.stats["longest_s"] = max(self.stats["longest_s"], took)
        self._local.took = took
        # Leave the lock free at least as long as we held it: a gateway writer whose busy
        # handler polls between our back-to-back transactions gets its turn.
        time.sleep(max(PAUSE_MIN_S, took))


def as_change_error(exc: sqlite3.Error, path) -> LogbookDBError:
    """A failed change in words for the user; the transaction was rolled back, so nothing of
    it was written."""
    msg = str(exc).lower()
    if "full" in msg:
        return DiskFull(
            f"The disk holding {path} is full (or the file reached its size limit): nothing "
            "was changed. Free some space and try again."
        )
    if "readonly" in msg or "read-only" in msg:
        return WritesDisabled(f"{path} cannot be written to right now: nothing was changed.")
    if "unable to open" in msg or "no such table" in msg:
        return DatabaseMissing(
            f"The database file {path} is gone or cannot be opened: nothing was changed."
        )
    return DatabaseUnavailable(f"The change could not be written ({exc}): nothing was changed.")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg
