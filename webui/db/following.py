"""Following state.db by what changed: the engine the stats rollup (webui.db.stats.rollup) and the
digest (webui.db.digest) each compose, given a *ledger* — the object that owns their own
file's tables and knows what a message or a session adds to them.

The engine owns the walk, the same for both:

* new messages: ids above the highest read (Hermes's ids are AUTOINCREMENT: never reused, so
  a range of ids is read once), in batches sized so that each read takes about the pace's
  read target — no read transaction long enough to hold back Hermes's WAL checkpoints; a read
  that runs out of time changes nothing and the next batch is a quarter of the size;
* new sessions by rowid, copied in chunks of SESSIONS_PER_READ; when the number of sessions is
  not the number known plus the new ones (some went, or a rowid was reused), the ledger
  compares the lists;
* a transcript rewritten in place (Hermes's /retry, /undo, /compress delete a session's rows
  and insert new ones): on the batch that catches up, a session that gets new messages and
  holds fewer rows than the ledger counted is counted again, alone;
* anything else deleted: the FTS index's own row count (one record Hermes's triggers keep,
  read in O(1)) no longer matches the messages counted, and an audit compares every session's
  count with the ledger's, SESSIONS_PER_AUDIT_STEP sessions a step;
* a ledger file of another version is emptied and read again (it is only a cache).

A ledger gives (see :class:`Ledger`): ``connect``, ``version``, ``tables``, ``raw`` (how its
reads of state.db take values), ``session_columns``, ``add_sessions``, ``reconcile``,
``note_sessions``, ``read_range``, ``apply``, ``recount``, ``counts`` and ``kept``. Nothing is
ever written into state.db.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from webui import threads
from webui.db import sql as sqlh
from webui.db.errors import LogbookDBError, QueryTimeout
from webui.db.ledger_file import Coverage, chunks, known, meta, set_meta
from webui.db.reader import Reader
from webui.db.search import fts_record

log = logging.getLogger(__name__)

SESSIONS_PER_READ = 20_000  # sessions copied per read while catching up
SESSIONS_PER_AUDIT_STEP = 2_000
REWRITE_CHECK_MAX = 1_000  # sessions checked for a rewritten transcript on one batch, at most


@dataclass(frozen=True)
class Pace:
    """How a ledger's batches are sized and how its background pass waits after a failure."""

    name: str  # for the log: "the stats rollup", "the digest"
    first_batch: int  # ids in the first read, before its speed is known
    min_batch: int
    max_batch: int
    read_target_s: float = 0.25
    # The pause after the n-th failure in a row is 0.5 s doubled min(n, doublings) times, a
    # minute at most; a read that ran out of time and any other failure each have theirs.
    timeout_doublings: int = 3
    error_doublings: int = 7


# -- reading state.db ---------------------------------------------------------------------------


class Reads:
    """Each statement on state.db its own read transaction, under the read limit (stretched by
    ``patience`` when even the smallest read keeps running out of time), timed."""

    def __init__(self, reader: Reader, limit_s: float):
        self.r = reader
        self.limit_s = limit_s
        self.patience = 1.0
        self.longest_s = 0.0  # the longest single read (a read transaction)
        self.made = 0  # reads made

    def __call__(
        self, statement: str, params: Sequence[Any] = (), raw: bool = False
    ) -> list[dict[str, Any]]:
        """``raw``: values as SQLite gives them (an FTS record is a BLOB); else each coerced
        to its column's type as pages show them (webui.db.values)."""
        began = time.monotonic()
        limit = self.limit_s * self.patience
        if raw:

            def fetch(conn: sqlite3.Connection) -> list[dict[str, Any]]:
                cur = conn.execute(statement, tuple(params))
                names = [d[0] for d in cur.description]
                return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

            rows = self.r.run(fetch, time_limit_s=limit)
        else:
            rows = self.r.rows(statement, params, time_limit_s=limit)
        self.longest_s = max(self.longest_s, time.monotonic() - began)
        self.made += 1
        return rows


class Via:
    """An attribute of a composed part, read and set through the whole: ``_batch =
    Via("follower", "batch")`` on a class whose objects hold a ``follower``."""

    def __init__(self, part: str, name: str):
        self.part, self.name = part, name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(getattr(obj, self.part), self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(getattr(obj, self.part), self.name, value)


class Ledger(Protocol):
    """What the engine asks of the tables it keeps (the rollup's, the digest's)."""

    @property
    def version(self) -> str: ...  # another in the file's meta: the file is emptied
    @property
    def tables(self) -> Sequence[str]: ...  # emptied on a reset
    @property
    def raw(self) -> bool: ...  # how its reads of state.db take values (Reads)

    def connect(self) -> sqlite3.Connection: ...
    def session_columns(self) -> list[tuple[str, str]]: ...  # (name, SQL over sessions)
    def add_sessions(self, conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> int: ...
    def reconcile(self, conn: sqlite3.Connection) -> None: ...
    def note_sessions(self, conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None: ...
    def read_range(self, lo: int, hi: int) -> tuple[Any, set[str], float]: ...
    def apply(self, conn: sqlite3.Connection, read: Any) -> int: ...
    def recount(self, conn: sqlite3.Connection, sid: str, upto: int) -> None: ...
    def counts(self, conn: sqlite3.Connection, where: str, params: list) -> dict[str, int]: ...
    def kept(self, conn: sqlite3.Connection, ids: set[str]) -> set[str]: ...


# -- the engine -----------------------------------------------------------------------------------


class Follower:
    """Brings a ledger up to date with state.db, or as far as a budget allows."""

    def __init__(self, reader: Reader, ledger: Ledger, reads: Reads, pace: Pace):
        self.r = reader
        self.ledger = ledger
        self.reads = reads
        self.pace = pace
        self.read_target_s = min(pace.read_target_s, reads.limit_s / 2)
        self.batch = pace.first_batch
        self.lock = threading.Lock()
        self.warming = False  # the background pass runs: pages do not wait for it
        self.refreshed_at: float | None = None  # when it last caught up with the file
        self._fts = fts_record.index_table(reader)

    def _read(self, statement: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self.reads(statement, params, raw=self.ledger.raw)

    def coverage(self) -> Coverage:
        """How far the ledger has read, without waiting for a refresh that is under way."""
        conn = self.ledger.connect()
        try:
            m = meta(conn)
        finally:
            conn.close()
        db_max = self.r.scalar("SELECT COALESCE(MAX(id), 0) FROM messages") or 0
        if m.get("version") != self.ledger.version:
            return Coverage(0, db_max, 0)
        return Coverage(int(m["max_id"]), db_max, int(m["counted"]), "audit_after" in m)

    def warm(
        self,
        budget_s: float = 0.25,
        pause_s: float = 0.02,
        then: Callable[[], bool] | None = None,
    ) -> Coverage:
        """Read the whole history in short steps (a background thread), each holding the lock
        for about ``budget_s``, pages let in between; ``then``: steps to take once caught up
        (each says whether more remain), still as the background pass. A step that fails (the
        file locked for a moment, a read that ran out of time on a cold disk) is tried again
        after a pause that grows: the pass never gives up half way."""
        self.warming = True
        failures = 0
        try:
            while True:
                try:
                    cov = self.refresh(budget_s)
                    failures, self.reads.patience = 0, 1.0
                except (LogbookDBError, sqlite3.Error) as exc:
                    failures += 1
                    timeout = isinstance(exc, QueryTimeout)
                    if timeout and self.batch <= self.pace.min_batch and failures >= 2:
                        # The smallest read did not fit twice: give reads more time (up to a
                        # minute) rather than retry the same read forever.
                        self.reads.patience = min(
                            self.reads.patience * 4, 60.0 / max(self.reads.limit_s, 1e-3)
                        )
                    self.batch = max(self.pace.min_batch, self.batch // 4)  # smaller reads
                    if failures >= 20:
                        raise
                    log.warning("%s paused (%s); trying again", self.pace.name, exc)
                    doublings = (
                        self.pace.timeout_doublings if timeout else self.pace.error_doublings
                    )
                    time.sleep(min(60.0, 0.5 * 2 ** min(failures, doublings)))
                    continue
                if cov.complete:
                    break
                time.sleep(pause_s)
                threads.make_way(budget_s)  # pages first, while they are being answered
            while then is not None and then():
                time.sleep(pause_s)
                threads.make_way(budget_s)
            return cov
        finally:
            self.warming = False

    def refresh(self, budget_s: float = 0.4, wait: bool = True) -> Coverage:
        """Up to date, or as far as the budget allows. ``wait=False`` (a page): when another
        thread is refreshing, or the background pass runs, answer at once with how far it
        got instead of queueing behind it; and when a read runs out of time (a tight read
        limit, a busy disk), the same: the page is partial, never failed, and the background
        pass (which retries with more patience) goes on."""
        if not wait and self.warming:
            return self.coverage()
        if not self.lock.acquire(blocking=wait):
            return self.coverage()
        try:
            return self._refresh(budget_s)
        except QueryTimeout:
            if wait:
                raise
            log.info(
                "%s: a page's read ran out of time; it answers with what is read", self.pace.name
            )
        finally:
            self.lock.release()
        return self.coverage()

    def _refresh(self, budget_s: float) -> Coverage:
        deadline = time.monotonic() + budget_s
        conn = self.ledger.connect()
        try:
            if meta(conn).get("version") != self.ledger.version:
                self._reset(conn)
            self._follow_sessions(conn, meta(conn))
            max_id = int(meta(conn)["max_id"])
            db_max = self.r.scalar("SELECT COALESCE(MAX(id), 0) FROM messages") or 0
            # At least one batch a refresh, however small the budget.
            first = True
            while max_id < db_max and (first or time.monotonic() < deadline):
                first = False
                hi = min(max_id + self.batch, db_max)
                try:
                    self._add_range(conn, max_id, hi, last=hi == db_max)
                except QueryTimeout:
                    # A read that ran out of time (a cold disk, a tight limit) changed
                    # nothing (its transaction rolled back): the next one is a quarter of the size.
                    if self.batch <= self.pace.min_batch:
                        raise
                    self.batch = max(self.pace.min_batch, self.batch // 4)
                    continue
                max_id = hi
            m = meta(conn)
            if max_id >= db_max and "audit_after" not in m and self._unexplained(m):
                log.info("messages went away unexplained: %s checks every session", self.pace.name)
                set_meta(conn, audit_after="")
                m = meta(conn)
            while "audit_after" in m and max_id >= db_max and time.monotonic() < deadline:
                self._audit_step(conn, m)
                m = meta(conn)
            cov = Coverage(max_id, db_max, int(m["counted"]), "audit_after" in m)
            if cov.complete:
                self.refreshed_at = time.time()
            return cov
        finally:
            conn.close()

    def _reset(self, conn: sqlite3.Connection) -> None:
        with sqlh.transaction(conn, immediate=False):
            for table in self.ledger.tables:
                conn.execute(f"DELETE FROM main.{table}")
            set_meta(
                conn,
                version=self.ledger.version,
                max_id=0,
                counted=0,
                sess_rowid=0,
                sess_n=0,
                fts_base=0,
            )

    # -- sessions ---------------------------------------------------------------------------

    def _columns(self, null: bool = False) -> str:
        return ", ".join(
            f"{'NULL' if null else sql} AS {name}" for name, sql in self.ledger.session_columns()
        )

    def session_rows(self, ids: set[str]) -> list[dict[str, Any]]:
        """These sessions as state.db has them now (the ledger's columns)."""
        out: list[dict[str, Any]] = []
        for part in chunks(sorted(ids)):
            out += self._read(
                f"SELECT {self._columns()} FROM sessions WHERE id IN ({sqlh.in_list(len(part))})",
                part,
            )
        return out

    def unknown(self, conn: sqlite3.Connection, ids: set[str]) -> set[str]:
        """Of these sessions, those the ledger does not know yet."""
        return ids - known(conn, ids)

    def _follow_sessions(self, conn: sqlite3.Connection, m: dict[str, str]) -> None:
        """New sessions (rowids above the highest seen) to the ledger; when the count says some
        went (or a rowid was reused), the ledger compares the lists. One read gives both the
        count and the last new rows, so they describe the same moment."""
        seen_rowid, seen_n = int(m.get("sess_rowid", 0)), int(m.get("sess_n", 0))
        added = 0
        # A first copy (200,000 sessions on ten million messages) in chunks, each its own
        # short read; the last part comes with the count.
        while True:
            rows = self._read(
                f"SELECT rowid AS rid, {self._columns()} FROM sessions WHERE rowid > ? "
                "ORDER BY rowid LIMIT ?",
                [seen_rowid, SESSIONS_PER_READ],
            )
            if len(rows) < SESSIONS_PER_READ:
                break
            with sqlh.transaction(conn, immediate=False):
                added += self.ledger.add_sessions(conn, rows)
                seen_rowid = rows[-1]["rid"]
                set_meta(conn, sess_rowid=seen_rowid)
        both = self._read(
            f"SELECT NULL AS rid, {self._columns(null=True)}, COUNT(*) AS n FROM sessions "
            f"UNION ALL SELECT rowid, {self._columns()}, NULL FROM sessions WHERE rowid > ?",
            [seen_rowid],
        )
        total, new = both[0]["n"], both[1:]
        if total == seen_n and not new and not added:
            return
        with sqlh.transaction(conn, immediate=False):
            added += self.ledger.add_sessions(conn, new)
            top = max([seen_rowid, *(r["rid"] for r in new)])
            if total != seen_n + added:
                self.ledger.reconcile(conn)
            set_meta(conn, sess_rowid=top, sess_n=total)

    # -- messages ---------------------------------------------------------------------------

    def _add_range(self, conn: sqlite3.Connection, lo: int, hi: int, last: bool) -> None:
        """Messages with ids in (lo, hi] into the ledger, in one transaction of its file. On the
        batch that catches up (``last``), the sessions that got some and were counted before
        are checked for rows that went away (a rewritten transcript) and counted again where
        they did; while catching up, sessions interleave over every batch and checking each
        would count them again and again: a rewrite then shows in the FTS index's count, and
        the audit finds it."""
        read, touched, seconds = self.ledger.read_range(lo, hi)
        # Each read has the time limit: the next batch is sized so that one takes about
        # read_target_s (``seconds``: the ledger's measure of one read of this batch).
        rate = (hi - lo) / max(seconds, 1e-4)
        self.batch = int(
            min(self.pace.max_batch, max(self.pace.min_batch, rate * self.read_target_s))
        )
        rewritten = self._rewritten(conn, touched, lo) if last else []
        # Sessions not known yet are read while catching up; every session that got a
        # message is read again (a model switched) once caught up.
        info = self.session_rows(touched if last else self.unknown(conn, touched))
        with sqlh.transaction(conn, immediate=False):
            self.ledger.note_sessions(conn, info)
            for sid in rewritten:
                self.ledger.recount(conn, sid, lo)
            counted = int(meta(conn)["counted"]) + self.ledger.apply(conn, read)
            set_meta(conn, max_id=hi, counted=counted)

    def _rewritten(self, conn: sqlite3.Connection, touched: set[str], lo: int) -> list[str]:
        """Of the sessions that got new messages, those counted before whose rows up to ``lo``
        are fewer now than were counted (their transcript was rewritten)."""
        before: dict[str, int] = {}
        for part in chunks(sorted(touched)):
            before.update(
                self.ledger.counts(conn, f"session_id IN ({sqlh.in_list(len(part))})", part)
            )
        if not before or len(before) > REWRITE_CHECK_MAX:
            return []  # many at once (a catch-up): the FTS count and the audit cover them
        now: dict[str, int] = {}
        for part in chunks(sorted(before)):
            now.update(
                (r["session_id"], r["n"])
                for r in self._read(
                    "SELECT session_id, COUNT(*) AS n FROM messages WHERE session_id IN "
                    f"({sqlh.in_list(len(part))}) AND id <= ? GROUP BY 1",
                    [*part, lo],
                )
            )
        return [sid for sid, n in before.items() if now.get(sid, 0) != n]

    # -- rows that went away unexplained ------------------------------------------------------

    def _with_index_count(self, column: str, max_id: int) -> dict[str, Any]:
        """One read: the FTS index's record (``avg``, its row count: fts_record) and
        ``column`` (SQL taking ``max_id``), in the same moment."""
        return self.reads(
            f"SELECT {fts_record.averages_sql(self._fts)} AS avg, {column}", [max_id], raw=True
        )[0]

    def _unexplained(self, m: dict[str, str]) -> bool:
        """Did rows go away that no batch explained? Read once caught up: the FTS index's row
        count against the messages counted, in a moment when no message is waiting to be read
        (a rewritten transcript's new rows, not read yet, would make its deleted ones look
        unexplained). The difference measured after an audit (an index out of step with the
        table) is the one expected from then on."""
        row = self._with_index_count(
            "EXISTS (SELECT 1 FROM messages WHERE id > ?) AS waiting", int(m["max_id"])
        )
        total = fts_record.row_count(row["avg"])
        if total is None or row["waiting"]:
            return False
        return total - int(m["counted"]) != int(m.get("fts_base", 0))

    def _audit_step(self, conn: sqlite3.Connection, m: dict[str, str]) -> None:
        """The next SESSIONS_PER_AUDIT_STEP sessions' message counts (Hermes's session index,
        up to the highest id counted) against the ledger's; a session that differs is counted
        again. The last step ends the audit."""
        after, upto = m["audit_after"], int(m["max_id"])
        counts = {
            r["session_id"]: r["n"]
            for r in self._read(
                "SELECT session_id, COUNT(*) AS n FROM messages WHERE session_id > ? "
                "AND id <= ? GROUP BY session_id ORDER BY session_id LIMIT ?",
                [after, upto, SESSIONS_PER_AUDIT_STEP],
            )
        }
        last = max(counts) if len(counts) >= SESSIONS_PER_AUDIT_STEP else None
        bound = " AND session_id <= ?" if last is not None else ""
        mine = self.ledger.counts(
            conn, f"session_id > ?{bound}", [after, *([last] if last is not None else [])]
        )
        known = set(mine) | self.ledger.kept(conn, set(counts))
        differ = [sid for sid in known if counts.get(sid, 0) != mine.get(sid, 0)]
        with sqlh.transaction(conn, immediate=False):
            for sid in differ:
                self.ledger.recount(conn, sid, upto)
            if last is None:
                conn.execute("DELETE FROM main.meta WHERE key = 'audit_after'")
            else:
                set_meta(conn, audit_after=last)
        if last is None:
            self._measure_base(conn)

    def _measure_base(self, conn: sqlite3.Connection) -> None:
        """After an audit the counts are exact: the index's difference from them, from now."""
        m = meta(conn)
        row = self._with_index_count(
            "(SELECT COUNT(*) FROM messages WHERE id > ?) AS tail", int(m["max_id"])
        )
        total = fts_record.row_count(row["avg"])
        if total is not None:
            set_meta(conn, fts_base=total - row["tail"] - int(m["counted"]))
