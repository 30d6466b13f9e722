"""An incremental rollup of the messages table, kept in the instance folder.

Tool usage, the activity heatmap and exact messages-per-source need every message; scanning
ten million rows per page view would stall the page. The rollup stores per-session counts
(by role, by tool name, by weekday × hour) in its own SQLite file, keyed by the highest
message id it has seen, and follows the file by what changed, never by counting it again:

* new messages: ids above the highest seen (Hermes's ids are AUTOINCREMENT: never reused, so
  a range of ids is read once), in batches sized to take about READ_TARGET_S each, so no
  read transaction is long enough to hold back Hermes's WAL checkpoints;
* new sessions: rowids above the highest seen; sessions gone: the number of sessions is not
  the number known plus the new ones, so the two lists are compared (once, in the
  background, one pass over the sessions, not the messages);
* a transcript rewritten in place (Hermes's /retry, /undo, /compress delete a session's rows
  and insert the new ones): a session that gets new messages and was counted before has its
  older rows counted again through Hermes's (session_id, timestamp) index, one session;
* anything else deleted (another tool deleting rows of a session that gets nothing new): the
  FTS index's own row count (one record Hermes's triggers keep, read in O(1)) no longer
  matches the messages counted plus the new ones, and an audit compares every session's count
  with the rollup's, in steps of SESSIONS_PER_AUDIT_STEP sessions through that index.

The first pass over a file is made by a background thread from start-up (Logbook.warm); it
is resumable after a restart (the file keeps how far it got) and yields to pages between
batches. Nothing is ever written into state.db.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webui import threads
from webui.db import fts_record
from webui.db import sql as sqlh
from webui.db.errors import LogbookDBError, QueryTimeout
from webui.db.reader import Reader
from webui.db.schema import readonly_uri

log = logging.getLogger(__name__)

VERSION = "5"  # 3: hours in UTC, tool-call entries; 4: daily sums; 5: followed by what changed
DAY_S = 86400
# A batch of new ids is sized so that reading it takes about this long (its read transaction
# is that long at most: Hermes's checkpoints wait for no reader longer).
READ_TARGET_S = 0.25
FIRST_BATCH = 20_000
MIN_BATCH, MAX_BATCH = 100, 200_000
SESSIONS_PER_AUDIT_STEP = 2_000
# Sessions checked for a rewritten transcript on one batch, at most.
REWRITE_CHECK_MAX = 1_000
IN_CHUNK = 500  # ids per IN (...) list
SESSIONS_PER_READ = 20_000  # sessions copied per read while catching up
# Sessions whose start SQLite cannot read as a number have no day (NULL): they are always
# counted through the per-session rows.
DAY_OF = (
    "CASE WHEN typeof(started_at) IN ('integer', 'real') "
    f"THEN CAST(started_at / {DAY_S} AS INTEGER) - (started_at < 0 AND started_at % {DAY_S} != 0) END"
)
PER_SESSION = ("roles", "tools", "calls", "hours")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS roles (session_id TEXT, role TEXT, n INTEGER,
                                  PRIMARY KEY (session_id, role));
CREATE TABLE IF NOT EXISTS tools (session_id TEXT, tool_name TEXT, n INTEGER,
                                  PRIMARY KEY (session_id, tool_name));
-- Entries in assistants' tool_calls lists, by function name (Hermes counts a tool by the
-- larger of these and its tool-result rows).
CREATE TABLE IF NOT EXISTS calls (session_id TEXT, tool_name TEXT, n INTEGER,
                                  PRIMARY KEY (session_id, tool_name));
CREATE TABLE IF NOT EXISTS hours (session_id TEXT, dow INTEGER, hour INTEGER, n INTEGER,
                                  PRIMARY KEY (session_id, dow, hour));
-- The filterable columns of every session, so panels never touch state.db's wide rows;
-- day: the UTC day it started (days since 1970), NULL when started_at is not a number.
CREATE TABLE IF NOT EXISTS sess (session_id TEXT PRIMARY KEY, started_at REAL, source TEXT,
                                 model TEXT, day INTEGER);
CREATE INDEX IF NOT EXISTS sess_day ON sess(day);
-- The same counts summed per day the sessions started (and per source for messages): a
-- period's panels add up a few thousand daily rows instead of every session's.
CREATE TABLE IF NOT EXISTS tools_day (day INTEGER, tool_name TEXT, results INTEGER,
                                      entries INTEGER, PRIMARY KEY (day, tool_name))
                                      WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hours_day (day INTEGER, dow INTEGER, hour INTEGER, n INTEGER,
                                      PRIMARY KEY (day, dow, hour)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS source_messages (source TEXT PRIMARY KEY, n INTEGER);
-- A period's panels group the daily rows by tool and by (weekday, hour): in these orders,
-- covering, they are added up as they are read instead of sorted first (4 ms → 1 ms a year).
CREATE INDEX IF NOT EXISTS tools_day_by_tool ON tools_day(tool_name, day, results, entries);
CREATE INDEX IF NOT EXISTS hours_day_by_cell ON hours_day(dow, hour, day, n);
"""
DAILY_TABLES = ("tools_day", "hours_day", "source_messages")


@dataclass
class Coverage:
    seen_max_id: int
    db_max_id: int
    messages: int
    auditing: bool = False  # some rows went away unexplained: every session is being checked

    @property
    def complete(self) -> bool:
        return self.seen_max_id >= self.db_max_id and not self.auditing


class Rollup:
    def __init__(self, reader: Reader, path: Path, read_limit_s: float = 5.0):
        self.r = reader
        self.path = path
        # Every read of state.db has this time limit (the app's query limit); a batch is
        # sized to take half of it at most.
        self.read_limit_s = read_limit_s
        self.read_target_s = min(READ_TARGET_S, read_limit_s / 2)
        self.lock = threading.Lock()
        self.has_tool_name = reader.schema.has("messages", "tool_name")
        self._local = threading.local()  # a connection shared by panels (reading())
        self._batch = FIRST_BATCH
        self.longest_read_s = 0.0  # the longest single read of state.db (a read transaction)
        self.warming = False  # the start-up pass is running: requests do not read batches
        self._fts = fts_record.index_table(reader)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=5, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")  # our own file: readers beside the refresher
        conn.execute("PRAGMA synchronous = NORMAL")  # a cache: a crash costs a recount, not data
        version = (
            conn.execute("SELECT value FROM main.meta WHERE key = 'version'").fetchone()
            if _has_meta(conn)
            else None
        )
        if version is not None and version[0] != VERSION:
            # A rollup of an older shape: start afresh (it is only a cache).
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            ).fetchall():
                conn.execute(f"DROP TABLE IF EXISTS main.{name}")
        conn.executescript(SCHEMA)
        # The state database, attached read-only, so panels join rollup rows to sessions.
        conn.execute(
            "ATTACH DATABASE ? AS st", (readonly_uri(self.r.opened.path, self.r.opened.immutable),)
        )
        return conn

    def _meta(self, conn: sqlite3.Connection) -> dict[str, str]:
        return dict(conn.execute("SELECT key, value FROM main.meta").fetchall())

    def _reset(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN")
        for table in (*PER_SESSION, "sess", "meta", *DAILY_TABLES):
            conn.execute(f"DELETE FROM main.{table}")
        conn.executemany(
            "INSERT INTO main.meta VALUES (?, ?)",
            [
                ("version", VERSION),
                ("max_id", "0"),
                ("counted", "0"),
                ("sess_rowid", "0"),
                ("sess_n", "0"),
                ("fts_base", "0"),
            ],
        )
        conn.execute("COMMIT")

    @staticmethod
    def _set(conn: sqlite3.Connection, **values: Any) -> None:
        conn.executemany(
            "INSERT OR REPLACE INTO main.meta VALUES (?, ?)",
            [(k, str(v)) for k, v in values.items()],
        )

    def coverage(self) -> Coverage:
        """How far the rollup has read, without waiting for a refresh that is under way."""
        conn = self._connect()
        try:
            meta = self._meta(conn)
        finally:
            conn.close()
        db_max = self.r.scalar("SELECT COALESCE(MAX(id), 0) FROM messages") or 0
        if meta.get("version") != VERSION:
            return Coverage(0, db_max, 0)
        return Coverage(int(meta["max_id"]), db_max, int(meta["counted"]), "audit_after" in meta)

    def warm(self, budget_s: float = 0.25, pause_s: float = 0.02) -> Coverage:
        """Read the whole history into the rollup in short steps (a background thread from
        start-up), so the first stats page finds it complete. Each step holds the lock for
        about ``budget_s``; the pause lets pages in between. A step that fails (the file
        locked for a moment, a read that ran out of time on a cold disk) is tried again after
        a pause that grows to a minute: the pass never gives up half way."""
        self.warming = True
        failures = 0
        try:
            while True:
                try:
                    cov = self.refresh(budget_s)
                    failures = 0
                except (LogbookDBError, sqlite3.Error) as exc:
                    failures += 1
                    self._batch = max(MIN_BATCH, self._batch // 4)  # a cold disk: smaller reads
                    if failures >= 20:
                        raise
                    log.warning("the stats rollup paused (%s); trying again", exc)
                    time.sleep(min(60.0, 0.5 * 2**failures))
                    continue
                if cov.complete:
                    return cov
                time.sleep(pause_s)
                threads.make_way(budget_s)  # pages first, while they are being answered
        finally:
            self.warming = False

    def refresh(self, budget_s: float = 0.4, wait: bool = True) -> Coverage:
        """Bring the rollup up to date, or as far as the budget allows. ``wait=False`` (a
        request): when another thread is refreshing, or the start-up pass is still running,
        return at once with how far it has got instead of queueing behind it."""
        if not wait and self.warming:
            return self.coverage()
        if not self.lock.acquire(blocking=wait):
            return self.coverage()
        try:
            return self._refresh(budget_s)
        finally:
            self.lock.release()

    def _refresh(self, budget_s: float) -> Coverage:
        deadline = time.monotonic() + budget_s
        conn = self._connect()
        try:
            meta = self._meta(conn)
            if meta.get("version") != VERSION:
                self._reset(conn)
                meta = self._meta(conn)
            self._follow_sessions(conn, meta)
            max_id = int(self._meta(conn)["max_id"])
            db_max = self.r.scalar("SELECT COALESCE(MAX(id), 0) FROM messages") or 0
            # At least one batch a refresh (sized to READ_TARGET_S), however small the budget.
            first = True
            while max_id < db_max and (first or time.monotonic() < deadline):
                first = False
                hi = min(max_id + self._batch, db_max)
                try:
                    self._add_range(conn, max_id, hi, last=hi == db_max)
                except QueryTimeout:
                    # A read that ran out of time (a cold disk, a tight limit) changed
                    # nothing: the next one is a quarter of the size.
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    if self._batch <= MIN_BATCH:
                        raise
                    self._batch = max(MIN_BATCH, self._batch // 4)
                    continue
                max_id = hi
            meta = self._meta(conn)
            if max_id >= db_max and "audit_after" not in meta and self._unexplained(conn, meta):
                log.info("messages went away unexplained: checking every session's count")
                self._set(conn, audit_after="")
                meta = self._meta(conn)
            while "audit_after" in meta and max_id >= db_max and time.monotonic() < deadline:
                self._audit_step(conn, meta)
                meta = self._meta(conn)
            return Coverage(max_id, db_max, int(meta["counted"]), "audit_after" in meta)
        finally:
            conn.close()

    # -- reading state.db ----------------------------------------------------------------

    def _read(
        self, statement: str, params: Sequence[Any] = (), raw: bool = False
    ) -> list[dict[str, Any]]:
        """One statement on state.db (its own read transaction), timed. ``raw``: values as
        SQLite gives them (an FTS record is a BLOB; rows for pages are coerced to their
        columns' types, webui.db.values)."""
        began = time.monotonic()
        if raw:

            def fetch(conn: sqlite3.Connection) -> list[dict[str, Any]]:
                cur = conn.execute(statement, tuple(params))
                names = [d[0] for d in cur.description]
                return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

            rows = self.r.run(fetch, time_limit_s=self.read_limit_s)
        else:
            rows = self.r.rows(statement, params, time_limit_s=self.read_limit_s)
        self.longest_read_s = max(self.longest_read_s, time.monotonic() - began)
        return rows

    def _unexplained(self, conn: sqlite3.Connection, meta: dict[str, str]) -> bool:
        """Did rows go away that no batch explained? Read once the rollup has caught up: the
        FTS index's row count against the messages counted, in a moment when no message is
        waiting to be read (a rewritten transcript's new rows, not read yet, would make its
        deleted ones look unexplained). The difference measured after an audit (an index out
        of step with the table) is the one expected from then on."""
        max_id, counted = int(meta["max_id"]), int(meta["counted"])
        row = self._read(
            f"SELECT {fts_record.averages_sql(self._fts)} AS avg, "
            "EXISTS (SELECT 1 FROM messages WHERE id > ?) AS waiting",
            [max_id],
            raw=True,
        )[0]
        total = fts_record.row_count(row["avg"])
        if total is None or row["waiting"]:
            return False
        return total - counted != int(meta.get("fts_base", 0))

    def _measure_base(self, conn: sqlite3.Connection) -> None:
        """After an audit the counts are exact: the index's difference from them, from now."""
        meta = self._meta(conn)
        row = self._read(
            f"SELECT {fts_record.averages_sql(self._fts)} AS avg, "
            "(SELECT COUNT(*) FROM messages WHERE id > ?) AS tail",
            [int(meta["max_id"])],
            raw=True,
        )[0]
        total = fts_record.row_count(row["avg"])
        if total is not None:
            self._set(conn, fts_base=total - row["tail"] - int(meta["counted"]))

    def _follow_sessions(self, conn: sqlite3.Connection, meta: dict[str, str]) -> None:
        """New sessions (rowids above the highest seen) into ``sess``; when the count says some
        went (or a rowid was reused), the lists are compared. One read gives both the count
        and the new rows, so they describe the same moment."""
        model = "model" if self.r.schema.has("sessions", "model") else "NULL"
        seen_rowid, seen_n = int(meta.get("sess_rowid", 0)), int(meta.get("sess_n", 0))
        added = 0
        # A first copy (200,000 sessions on ten million messages) in chunks, each its own
        # short read; the last part comes with the count.
        while True:
            rows = self._read(
                f"SELECT rowid AS rid, id, started_at, source, {model} AS model FROM sessions "
                "WHERE rowid > ? ORDER BY rowid LIMIT ?",
                [seen_rowid, SESSIONS_PER_READ],
            )
            if len(rows) < SESSIONS_PER_READ:
                break
            conn.execute("BEGIN")
            added += self._add_sessions(conn, rows)
            seen_rowid = rows[-1]["rid"]
            conn.execute("COMMIT")
        rows = self._read(
            "SELECT NULL AS rid, NULL AS id, NULL AS started_at, NULL AS source, NULL AS model, "
            "COUNT(*) AS n FROM sessions UNION ALL "
            f"SELECT rowid, id, started_at, source, {model}, NULL FROM sessions WHERE rowid > ?",
            [seen_rowid],
        )
        total, new = rows[0]["n"], rows[1:]
        if total == seen_n and not new and not added:
            return
        conn.execute("BEGIN")
        added += self._add_sessions(conn, new)
        top = max([seen_rowid, *(r["rid"] for r in new)])
        if total != seen_n + added:
            self._reconcile_sessions(conn)
        self._set(conn, sess_rowid=top, sess_n=total)
        conn.execute("COMMIT")

    def _add_sessions(self, conn: sqlite3.Connection, rows: Iterable[dict[str, Any]]) -> int:
        """Sessions into ``sess`` (those already there left alone); the counts rolled up for
        them before they were known go into the daily sums. Returns how many were new."""
        rows = list(rows)
        if not rows:
            return 0
        _pick(conn, (r["id"] for r in rows))
        conn.execute("DELETE FROM temp.pick WHERE session_id IN (SELECT session_id FROM main.sess)")
        new = conn.execute("SELECT COUNT(*) FROM temp.pick").fetchone()[0]
        conn.executemany(
            "INSERT INTO main.sess (session_id, started_at, source, model) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [(r["id"], r["started_at"], r["source"], r["model"]) for r in rows],
        )
        conn.execute(
            f"UPDATE main.sess SET day = {DAY_OF} "
            "WHERE session_id IN (SELECT session_id FROM temp.pick)"
        )
        self._daily(conn, +1)
        return new

    def _reconcile_sessions(self, conn: sqlite3.Connection) -> None:
        """Compare the sessions known with state.db's (one pass over the sessions' primary
        key): those gone leave every sum, those missing (a reused rowid) come in."""
        gone = [
            r[0]
            for r in conn.execute(
                "SELECT session_id FROM main.sess WHERE session_id NOT IN "
                "(SELECT id FROM st.sessions)"
            ).fetchall()
        ]
        if gone:
            self._drop(conn, gone, keep_session=False)
        model = "model" if self.r.schema.has("sessions", "model") else "NULL"
        missing = conn.execute(
            f"SELECT id, started_at, source, {model} FROM st.sessions WHERE id NOT IN "
            "(SELECT session_id FROM main.sess)"
        ).fetchall()
        self._add_sessions(
            conn,
            ({"id": m[0], "started_at": m[1], "source": m[2], "model": m[3]} for m in missing),
        )

    def _drop(self, conn: sqlite3.Connection, ids: Sequence[str], keep_session: bool) -> None:
        """Take these sessions' counts out of every sum (inside the caller's transaction)."""
        _pick(conn, ids)
        self._daily(conn, -1)
        n = conn.execute(
            "SELECT TOTAL(n) FROM main.roles WHERE session_id IN (SELECT session_id FROM temp.pick)"
        ).fetchone()[0]
        for table in PER_SESSION:
            conn.execute(
                f"DELETE FROM main.{table} WHERE session_id IN (SELECT session_id FROM temp.pick)"
            )
        if not keep_session:
            conn.execute(
                "DELETE FROM main.sess WHERE session_id IN (SELECT session_id FROM temp.pick)"
            )
        counted = int(self._meta(conn)["counted"]) - int(n)
        self._set(conn, counted=counted)

    def _daily(self, conn: sqlite3.Connection, sign: int) -> None:
        """Add (``sign`` +1) or take away (-1) the per-session rows of the sessions in
        temp.pick to or from the daily sums, by each session's day and source."""
        picked = "SELECT session_id FROM temp.pick"
        conn.execute(
            f"INSERT INTO main.tools_day SELECT s.day, t.tool_name, {sign} * SUM(t.n), 0 "
            f"FROM main.sess s JOIN main.tools t ON t.session_id = s.session_id "
            f"WHERE s.session_id IN ({picked}) AND s.day IS NOT NULL GROUP BY 1, 2 "
            "ON CONFLICT DO UPDATE SET results = results + excluded.results"
        )
        conn.execute(
            f"INSERT INTO main.tools_day SELECT s.day, c.tool_name, 0, {sign} * SUM(c.n) "
            f"FROM main.sess s JOIN main.calls c ON c.session_id = s.session_id "
            f"WHERE s.session_id IN ({picked}) AND s.day IS NOT NULL GROUP BY 1, 2 "
            "ON CONFLICT DO UPDATE SET entries = entries + excluded.entries"
        )
        conn.execute(
            f"INSERT INTO main.hours_day SELECT s.day, h.dow, h.hour, {sign} * SUM(h.n) "
            f"FROM main.sess s JOIN main.hours h ON h.session_id = s.session_id "
            f"WHERE s.session_id IN ({picked}) AND s.day IS NOT NULL AND h.dow IS NOT NULL "
            "AND h.hour IS NOT NULL GROUP BY 1, 2, 3 ON CONFLICT DO UPDATE SET n = n + excluded.n"
        )
        conn.execute(
            f"INSERT INTO main.source_messages SELECT IFNULL(s.source, '(none)'), {sign} * SUM(r.n) "
            f"FROM main.sess s JOIN main.roles r ON r.session_id = s.session_id "
            f"WHERE s.session_id IN ({picked}) GROUP BY 1 "
            "ON CONFLICT DO UPDATE SET n = n + excluded.n"
        )
        if sign < 0:
            conn.execute("DELETE FROM main.tools_day WHERE results = 0 AND entries = 0")
            conn.execute("DELETE FROM main.hours_day WHERE n = 0")

    # -- new messages ------------------------------------------------------------------

    def _add_range(self, conn: sqlite3.Connection, lo: int, hi: int, last: bool) -> int:
        """Messages with ids in (lo, hi]: counted into every sum, in one transaction of the
        rollup file. On the batch that catches up (``last``), the sessions that got some and
        were counted before are checked for rows that went away (a rewritten transcript) and
        counted again where they did; while catching up, sessions interleave over every
        batch and checking each would count them again and again: a rewrite then shows in
        the FTS index's count, and the audit finds it."""
        began = time.monotonic()
        rows = self._grouped("m.id > ? AND m.id <= ?", [lo, hi])
        middle = time.monotonic()
        calls = self._tool_call_entries("m.id > ? AND m.id <= ?", [lo, hi])
        # Each read has the time limit: the next batch is sized so that the slower of the
        # two takes about read_target_s.
        slowest = max(middle - began, time.monotonic() - middle)
        rate = (hi - lo) / max(slowest, 1e-4)
        self._batch = int(min(MAX_BATCH, max(MIN_BATCH, rate * self.read_target_s)))
        touched = {r["session_id"] for r in rows} | {k[0] for k in calls}
        rewritten = self._rewritten(conn, touched, lo) if last else []
        # Sessions not known yet are read while catching up; every session that got a
        # message is read again (a model switched) once caught up.
        known = self._known_sessions(touched if last else self._unknown(conn, touched))
        conn.execute("BEGIN")
        self._note_sessions(conn, known)
        for sid in rewritten:
            self._recount(conn, sid, lo)
        total = self._apply(conn, rows, calls)
        counted = int(self._meta(conn)["counted"]) + total
        self._set(conn, max_id=hi, counted=counted)
        conn.execute("COMMIT")
        return total

    def _grouped(self, where: str, params: list[Any]) -> list[dict[str, Any]]:
        tool = "m.tool_name" if self.has_tool_name else "NULL"
        return self._read(
            f"SELECT m.session_id AS session_id, m.role AS role, {tool} AS tool_name, "
            "CAST(strftime('%w', m.timestamp, 'unixepoch') AS INTEGER) AS dow, "
            "CAST(strftime('%H', m.timestamp, 'unixepoch') AS INTEGER) AS hour, "
            f"COUNT(*) AS n FROM messages m WHERE {where} GROUP BY 1, 2, 3, 4, 5",
            params,
        )

    def _rewritten(self, conn: sqlite3.Connection, touched: set[str], lo: int) -> list[str]:
        """Of the sessions that got new messages, those counted before whose rows up to ``lo``
        are fewer now than were counted (their transcript was rewritten)."""
        before: dict[str, int] = {}
        for chunk in _chunks(sorted(touched)):
            before.update(
                conn.execute(
                    "SELECT session_id, SUM(n) FROM main.roles WHERE session_id IN "
                    f"({sqlh.in_list(len(chunk))}) GROUP BY 1",
                    chunk,
                ).fetchall()
            )
        if not before or len(before) > REWRITE_CHECK_MAX:
            return []  # many at once (a catch-up): the FTS count and the audit cover them
        now: dict[str, int] = {}
        for chunk in _chunks(sorted(before)):
            now.update(
                (r["session_id"], r["n"])
                for r in self._read(
                    "SELECT session_id, COUNT(*) AS n FROM messages WHERE session_id IN "
                    f"({sqlh.in_list(len(chunk))}) AND id <= ? GROUP BY 1",
                    [*chunk, lo],
                )
            )
        return [sid for sid, n in before.items() if now.get(sid, 0) != n]

    def _unknown(self, conn: sqlite3.Connection, ids: set[str]) -> set[str]:
        _pick(conn, ids)
        return {
            r[0]
            for r in conn.execute(
                "SELECT session_id FROM temp.pick WHERE session_id NOT IN "
                "(SELECT session_id FROM main.sess)"
            )
        }

    def _known_sessions(self, ids: set[str]) -> list[dict[str, Any]]:
        """The filter columns of these sessions as state.db has them now."""
        model = "model" if self.r.schema.has("sessions", "model") else "NULL"
        out: list[dict[str, Any]] = []
        for chunk in _chunks(sorted(ids)):
            out += self._read(
                f"SELECT id, started_at, source, {model} AS model FROM sessions "
                f"WHERE id IN ({sqlh.in_list(len(chunk))})",
                chunk,
            )
        return out

    def _note_sessions(self, conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
        """Sessions that got messages: new ones into ``sess``; a model changed since is taken
        (a start or source changed moves their counts to the right day)."""
        if not rows:
            return
        self._add_sessions(conn, rows)
        _pick(conn, (r["id"] for r in rows))
        kept = {
            k[0]: k[1:]
            for k in conn.execute(
                "SELECT session_id, started_at, source, model FROM main.sess "
                "WHERE session_id IN (SELECT session_id FROM temp.pick)"
            )
        }
        moved = []
        for r in rows:
            old = kept.get(r["id"])
            if old is None:
                continue
            if (old[0], old[1]) != (r["started_at"], r["source"]):
                moved.append(r)
            elif old[2] != r["model"]:
                conn.execute(
                    "UPDATE main.sess SET model = ? WHERE session_id = ?", [r["model"], r["id"]]
                )
        if moved:
            _pick(conn, (r["id"] for r in moved))
            self._daily(conn, -1)
            conn.executemany(
                "UPDATE main.sess SET started_at = ?, source = ?, model = ? WHERE session_id = ?",
                [(r["started_at"], r["source"], r["model"], r["id"]) for r in moved],
            )
            conn.execute(
                f"UPDATE main.sess SET day = {DAY_OF} "
                "WHERE session_id IN (SELECT session_id FROM temp.pick)"
            )
            self._daily(conn, +1)

    def _recount(self, conn: sqlite3.Connection, session_id: str, upto: int) -> None:
        """One session's counts read again from its rows up to ``upto`` (through Hermes's
        (session_id, timestamp) index), inside the caller's transaction."""
        self._drop(conn, [session_id], keep_session=True)
        where, params = "m.session_id = ? AND m.id <= ?", [session_id, upto]
        total = self._apply(
            conn, self._grouped(where, params), self._tool_call_entries(where, params)
        )
        self._set(conn, counted=int(self._meta(conn)["counted"]) + total)

    def _apply(self, conn: sqlite3.Connection, rows: list[dict[str, Any]], calls: dict) -> int:
        roles: dict[tuple, int] = {}
        tools: dict[tuple, int] = {}
        hours: dict[tuple, int] = {}
        total = 0
        for r in rows:
            n = r["n"]
            total += n
            roles[(r["session_id"], r["role"])] = roles.get((r["session_id"], r["role"]), 0) + n
            if r["tool_name"] and r["role"] == "tool":
                k = (r["session_id"], r["tool_name"])
                tools[k] = tools.get(k, 0) + n
            k = (r["session_id"], r["dow"], r["hour"])
            hours[k] = hours.get(k, 0) + n
        conn.executemany(
            "INSERT INTO main.calls VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n",
            [(*k, v) for k, v in calls.items()],
        )
        conn.executemany(
            "INSERT INTO main.roles VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n",
            [(*k, v) for k, v in roles.items()],
        )
        conn.executemany(
            "INSERT INTO main.tools VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n",
            [(*k, v) for k, v in tools.items()],
        )
        conn.executemany(
            "INSERT INTO main.hours VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
            "n = n + excluded.n",
            [(*k, v) for k, v in hours.items()],
        )
        self._add_daily(conn, roles, tools, calls, hours)
        return total

    # -- the audit -------------------------------------------------------------------------

    def _audit_step(self, conn: sqlite3.Connection, meta: dict[str, str]) -> None:
        """The next SESSIONS_PER_AUDIT_STEP sessions' message counts (Hermes's session index,
        up to the highest id counted) against the rollup's; a session that differs is
        counted again. The last step ends the audit."""
        after, upto = meta["audit_after"], int(meta["max_id"])
        counts = {
            r["session_id"]: r["n"]
            for r in self._read(
                "SELECT session_id, COUNT(*) AS n FROM messages WHERE session_id > ? "
                "AND id <= ? GROUP BY session_id ORDER BY session_id LIMIT ?",
                [after, upto, SESSIONS_PER_AUDIT_STEP],
            )
        }
        last = max(counts) if len(counts) >= SESSIONS_PER_AUDIT_STEP else None
        bound = "AND session_id <= ?" if last is not None else ""
        mine = dict(
            conn.execute(
                f"SELECT session_id, SUM(n) FROM main.roles WHERE session_id > ? {bound} "
                "GROUP BY 1",
                [after, *([last] if last is not None else [])],
            ).fetchall()
        )
        differ = [sid for sid in set(counts) | set(mine) if counts.get(sid, 0) != mine.get(sid, 0)]
        conn.execute("BEGIN")
        for sid in differ:
            self._recount(conn, sid, upto)
        if last is None:
            conn.execute("DELETE FROM main.meta WHERE key = 'audit_after'")
        else:
            self._set(conn, audit_after=last)
        conn.execute("COMMIT")
        if last is None:
            self._measure_base(conn)

    def _add_daily(
        self, conn: sqlite3.Connection, roles: dict, tools: dict, calls: dict, hours: dict
    ) -> None:
        """Add a batch's per-session counts to the daily sums, by each session's day. A
        session not yet in ``sess`` is left out here: its counts join the sums when it is
        (_add_sessions)."""

        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS add_tools (session_id, tool_name, results, entries)"
        )
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS add_hours (session_id, dow, hour, n)")
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS add_roles (session_id, n)")
        for table in ("add_tools", "add_hours", "add_roles"):
            conn.execute(f"DELETE FROM temp.{table}")
        conn.executemany(
            "INSERT INTO temp.add_tools VALUES (?, ?, ?, 0)", [(*k, v) for k, v in tools.items()]
        )
        conn.executemany(
            "INSERT INTO temp.add_tools VALUES (?, ?, 0, ?)", [(*k, v) for k, v in calls.items()]
        )
        conn.executemany(
            "INSERT INTO temp.add_hours VALUES (?, ?, ?, ?)", [(*k, v) for k, v in hours.items()]
        )
        conn.executemany(
            "INSERT INTO temp.add_roles VALUES (?, ?)", [(k[0], v) for k, v in roles.items()]
        )
        conn.execute(
            "INSERT INTO main.tools_day SELECT s.day, a.tool_name, SUM(a.results), "
            "SUM(a.entries) FROM temp.add_tools a JOIN main.sess s ON s.session_id = a.session_id "
            "WHERE s.day IS NOT NULL GROUP BY 1, 2 ON CONFLICT DO UPDATE SET "
            "results = results + excluded.results, entries = entries + excluded.entries"
        )
        conn.execute(
            "INSERT INTO main.hours_day SELECT s.day, a.dow, a.hour, SUM(a.n) FROM temp.add_hours a "
            "JOIN main.sess s ON s.session_id = a.session_id WHERE s.day IS NOT NULL AND "
            "a.dow IS NOT NULL AND a.hour IS NOT NULL GROUP BY 1, 2, 3 "
            "ON CONFLICT DO UPDATE SET n = n + excluded.n"
        )
        conn.execute(
            "INSERT INTO main.source_messages SELECT IFNULL(s.source, '(none)'), SUM(a.n) "
            "FROM temp.add_roles a JOIN main.sess s ON s.session_id = a.session_id WHERE 1 "
            "GROUP BY 1 ON CONFLICT DO UPDATE SET n = n + excluded.n"
        )

    def _tool_call_entries(self, where: str, params: list[Any]) -> dict[tuple, int]:
        """Function names in assistants' tool_calls lists (Hermes's insights: each element's
        function.name counts once; a list that is not valid JSON counts nothing)."""
        if not self.r.schema.has("messages", "tool_calls"):
            return {}
        # NOT INDEXED for a range of ids: the batch's rowid range, not a walk of a whole index
        # the planner picks for GROUP BY; one session's rows come through its index.
        hint = "NOT INDEXED " if "m.id > ?" in where else ""
        rows = self._read(
            "SELECT m.session_id AS session_id, json_extract(j.value, '$.function.name') AS name, "
            f"COUNT(*) AS n FROM messages m {hint}, json_each(CASE WHEN json_valid(m.tool_calls) "
            "AND json_type(m.tool_calls) = 'array' THEN m.tool_calls ELSE '[]' END) j "
            f"WHERE {where} AND m.role = 'assistant' AND m.tool_calls IS NOT NULL "
            "AND json_type(j.value) = 'object' GROUP BY 1, 2",
            params,
        )
        return {(r["session_id"], r["name"]): r["n"] for r in rows if isinstance(r["name"], str)}

    @contextmanager
    def reading(self) -> Iterator[None]:
        """The panels' queries inside share one connection: opening one (the schema check
        and attaching the state database) costs ~0.8 ms, six times per stats report."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        self._local.conn = self._connect()
        try:
            yield
        finally:
            conn, self._local.conn = self._local.conn, None
            conn.close()

    def query(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        # No lock: readers of our own file run side by side (WAL); only refresh() serialises.
        shared = getattr(self._local, "conn", None)
        conn = shared or self._connect()
        try:
            deadline = time.monotonic() + self.r.time_limit_s
            conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
            cur = conn.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=False)) for r in cur.fetchall()]
        finally:
            conn.set_progress_handler(None, 0)
            if shared is None:
                conn.close()

    # -- panels ------------------------------------------------------------------------

    @staticmethod
    def _days(span: tuple[float | None, float | None]) -> tuple[str, list[Any], list[Any]]:
        """For a period [start, end): the condition on the daily sums (the days strictly
        inside it) and the days (first, last) whose sessions are counted one by one, with
        the exact time test; sessions with no day always are."""
        start, end = span
        first = None if start is None else math.floor(start / DAY_S)
        last = None if end is None else math.floor(end / DAY_S)
        clauses, params = ["1"], []
        if first is not None:
            clauses.append("day > ?")
            params.append(first)
        if last is not None:
            clauses.append("day < ?")
            params.append(last)
        return " AND ".join(clauses), params, [first, last]

    def tools(
        self,
        where: str,
        params: list[Any],
        span: tuple[float | None, float | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Per tool, as Hermes's analytics count it: the larger of its tool-result rows and
        its entries in assistants' tool_calls (both also given). ``span`` (start, end), when
        the only filter is the period: whole days come from the daily sums."""

        def per_tool(table: str, extra: str = "", extra_params: Sequence[Any] = ()) -> Counter:
            return Counter(
                {
                    r["tool"]: r["n"]
                    for r in self.query(
                        # CROSS JOIN keeps SQLite's order: the period's sessions first, then
                        # each one's rows by their primary key (not every row, then its session).
                        f"SELECT t.tool_name AS tool, SUM(t.n) AS n FROM main.sess s CROSS JOIN "
                        f"main.{table} t ON t.session_id = s.session_id WHERE {extra}({where}) "
                        "GROUP BY 1",
                        [*extra_params, *params],
                    )
                }
            )

        if span is None:
            results, entries = per_tool("tools"), per_tool("calls")
        else:
            inside, inside_params, edges = self._days(span)
            edge = "(s.day IS NULL OR s.day IN (?, ?)) AND "
            results, entries = per_tool("tools", edge, edges), per_tool("calls", edge, edges)
            for r in self.query(
                "SELECT tool_name AS tool, SUM(results) AS results, SUM(entries) AS entries "
                f"FROM main.tools_day WHERE {inside} GROUP BY 1",
                inside_params,
            ):
                results[r["tool"]] += r["results"]
                entries[r["tool"]] += r["entries"]
        out = [
            {
                "tool": name,
                "calls": max(results.get(name, 0), entries.get(name, 0)),
                "results": results.get(name, 0),
                "call_entries": entries.get(name, 0),
            }
            for name in set(results) | set(entries)
            if results.get(name, 0) or entries.get(name, 0)
        ]
        return sorted(out, key=lambda t: (-t["calls"], t["tool"]))

    def heatmap(
        self,
        where: str,
        params: list[Any],
        offset_s: int = 0,
        span: tuple[float | None, float | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Messages per weekday and hour, counted in UTC and shown in the reader's zone
        (shifted by its offset now: an hour off for the part of the year on the other side
        of a daylight-saving change). ``span`` as for :meth:`tools`."""
        shift = round(offset_s / 3600)
        per_session = (
            "SELECT h.dow AS dow, h.hour AS hour, SUM(h.n) AS messages FROM main.sess s CROSS "
            "JOIN main.hours h ON h.session_id = s.session_id WHERE {extra}({where}) GROUP BY 1, 2"
        )
        if span is None:
            rows = self.query(per_session.format(extra="", where=where), params)
        else:
            inside, inside_params, edges = self._days(span)
            cells: Counter = Counter()
            for r in self.query(
                per_session.format(extra="(s.day IS NULL OR s.day IN (?, ?)) AND ", where=where),
                [*edges, *params],
            ):
                cells[(r["dow"], r["hour"])] += r["messages"]
            for r in self.query(
                "SELECT dow, hour, SUM(n) AS messages FROM main.hours_day "
                f"WHERE {inside} GROUP BY 1, 2",
                inside_params,
            ):
                cells[(r["dow"], r["hour"])] += r["messages"]
            rows = [{"dow": d, "hour": h, "messages": n} for (d, h), n in cells.items()]
        out = []
        for r in rows:
            if r["dow"] is None or r["hour"] is None:  # a timestamp SQLite cannot read
                continue
            slot = (r["dow"] * 24 + r["hour"] + shift) % 168
            r["dow"], r["hour"] = divmod(slot, 24)
            out.append(r)
        return out

    def messages_by_source(self) -> list[dict[str, Any]]:
        return self.query(
            "SELECT source, n AS messages FROM main.source_messages WHERE n > 0 "
            "ORDER BY messages DESC, source",
            [],
        )


def _has_meta(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        is not None
    )


def _chunks(ids: Sequence[str]) -> Iterator[list[str]]:
    ids = list(ids)
    for i in range(0, len(ids), IN_CHUNK):
        yield ids[i : i + IN_CHUNK]


def _pick(conn: sqlite3.Connection, ids: Iterable[str]) -> None:
    """temp.pick: the sessions the next statements work on."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS pick (session_id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM temp.pick")
    conn.executemany("INSERT OR IGNORE INTO temp.pick VALUES (?)", ((i,) for i in ids))
