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
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from webui import threads
from webui.db import fts_record
from webui.db import sql as sqlh
from webui.db.errors import LogbookDBError, QueryTimeout
from webui.db.reader import Reader
from webui.db.rollup_follow import SessionFollowing, TimedReads
from webui.db.rollup_panels import Panels
from webui.db.rollup_schema import (
    DAILY_TABLES,
    FIRST_BATCH,
    MAX_BATCH,
    MIN_BATCH,
    PER_SESSION,
    READ_TARGET_S,
    REWRITE_CHECK_MAX,
    SCHEMA,
    SESSIONS_PER_AUDIT_STEP,
    VERSION,
    Coverage,
    _chunks,
    _has_meta,
    _pick,
    meta_of,
    set_meta,
)
from webui.db.schema import readonly_uri

log = logging.getLogger(__name__)


class Rollup:
    """The rollup file of one state.db: its timed reads of state.db (``reads``), how it follows
    the sessions table (``following``) and the panels read from it (``panels``)."""

    def __init__(self, reader: Reader, path: Path, read_limit_s: float = 5.0):
        self.r = reader
        self.path = path
        # Every read of state.db has this time limit (the app's query limit); a batch is
        # sized to take half of it at most.
        self.read_limit_s = read_limit_s
        self.reads = TimedReads(reader, read_limit_s)
        self._read = self.reads.read
        self.read_target_s = min(READ_TARGET_S, read_limit_s / 2)
        self.lock = threading.Lock()
        self.has_tool_name = reader.schema.has("messages", "tool_name")
        self._batch = FIRST_BATCH
        self.warming = False  # the start-up pass is running: requests do not read batches
        self._fts = fts_record.index_table(reader)
        self.following = SessionFollowing(self.reads, self._fts)
        self.panels = Panels(reader, self._connect)
        # The stats page's panels, read from the rollup file.
        self.reading = self.panels.reading
        self.tools = self.panels.tools
        self.heatmap = self.panels.heatmap
        self.messages_by_source = self.panels.messages_by_source

    @property
    def longest_read_s(self) -> float:
        """The longest single read of state.db (a read transaction)."""
        return self.reads.longest_read_s

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
        return meta_of(conn)

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

    _set = staticmethod(set_meta)

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
                    self.reads.patience = 1.0
                except (LogbookDBError, sqlite3.Error) as exc:
                    failures += 1
                    if isinstance(exc, QueryTimeout) and self._batch <= MIN_BATCH and failures >= 2:
                        # The smallest read did not fit twice: give reads more time (up to a
                        # minute) rather than retry the same read forever.
                        self.reads.patience = min(
                            self.reads.patience * 4, 60.0 / max(self.read_limit_s, 1e-3)
                        )
                    self._batch = max(MIN_BATCH, self._batch // 4)  # a cold disk: smaller reads
                    if failures >= 20:
                        raise
                    log.warning("the stats rollup paused (%s); trying again", exc)
                    time.sleep(
                        min(
                            60.0,
                            0.5 * 2 ** min(failures, 3)
                            if isinstance(exc, QueryTimeout)
                            else 0.5 * 2**failures,
                        )
                    )
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
            self.following.follow_sessions(conn, meta)
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
            if (
                max_id >= db_max
                and "audit_after" not in meta
                and self.following.unexplained(conn, meta)
            ):
                log.info("messages went away unexplained: checking every session's count")
                self._set(conn, audit_after="")
                meta = self._meta(conn)
            while "audit_after" in meta and max_id >= db_max and time.monotonic() < deadline:
                self._audit_step(conn, meta)
                meta = self._meta(conn)
            return Coverage(max_id, db_max, int(meta["counted"]), "audit_after" in meta)
        finally:
            conn.close()

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
        model = sqlh.col(self.r.schema, "model")
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
        self.following.add_sessions(conn, rows)
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
            self.following.daily(conn, -1)
            conn.executemany(
                "UPDATE main.sess SET started_at = ?, source = ?, model = ? WHERE session_id = ?",
                [(r["started_at"], r["source"], r["model"], r["id"]) for r in moved],
            )
            self.following.date_and_add_picked(conn)

    def _recount(self, conn: sqlite3.Connection, session_id: str, upto: int) -> None:
        """One session's counts read again from its rows up to ``upto`` (through Hermes's
        (session_id, timestamp) index), inside the caller's transaction."""
        self.following.drop(conn, [session_id], keep_session=True)
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
                tool = (r["session_id"], r["tool_name"])
                tools[tool] = tools.get(tool, 0) + n
            hour = (r["session_id"], r["dow"], r["hour"])
            hours[hour] = hours.get(hour, 0) + n
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
            self.following.measure_base(conn)

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
