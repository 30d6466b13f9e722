"""An incremental rollup of the messages table, kept in the instance folder.

Tool usage, the activity heatmap and exact messages-per-source need every message; scanning a
million rows per page view would stall the page. The rollup stores per-session counts
(by role, by tool name, by weekday × hour) in its own SQLite file, keyed by the highest
message id it has seen. Each refresh reads only the new rows, in id-range batches, within a
time budget; if the budget runs out the page says how far the rollup got. Deletions (a prune,
a delete) are noticed because the number of messages up to that id drops, and the rollup is
then rebuilt. Nothing is ever written into state.db.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webui import threads
from webui.db.reader import Reader
from webui.db.schema import readonly_uri

BATCH = 100_000
VERSION = "4"  # 3: hours in UTC, tool-call entries counted beside tool results; 4: daily sums
DAY_S = 86400
# Sessions whose start SQLite cannot read as a number have no day (NULL): they are always
# counted through the per-session rows.
DAY_OF = (
    "CASE WHEN typeof(started_at) IN ('integer', 'real') "
    f"THEN CAST(started_at / {DAY_S} AS INTEGER) - (started_at < 0 AND started_at % {DAY_S} != 0) END"
)

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

    @property
    def complete(self) -> bool:
        return self.seen_max_id >= self.db_max_id


class Rollup:
    def __init__(self, reader: Reader, path: Path, recount_s: float = 5.0):
        self.r = reader
        self.path = path
        self.lock = threading.Lock()
        # Counting a million messages takes ~25 ms: done when the set of sessions changed
        # (how a prune or a delete shows) and otherwise at most every recount_s seconds
        # (messages deleted inside a session, rare: the panels follow within that time).
        self.recount_s = recount_s
        self._recounted: tuple[float, str] = (float("-inf"), "")
        self.has_tool_name = reader.schema.has("messages", "tool_name")
        self._local = threading.local()  # a connection shared by panels (reading())

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=5, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")  # our own file: readers beside the refresher
        sess_cols = {r[1] for r in conn.execute("PRAGMA main.table_info(sess)")}
        if sess_cols and "day" not in sess_cols:
            # A rollup from before version 4: start afresh (it is only a cache).
            conn.execute("DROP TABLE main.sess")
            conn.execute("DELETE FROM main.meta")
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
        for table in ("roles", "tools", "calls", "hours", "sess", "meta", *DAILY_TABLES):
            conn.execute(f"DELETE FROM main.{table}")
        conn.executemany(
            "INSERT INTO main.meta VALUES (?, ?)",
            [("version", VERSION), ("max_id", "0"), ("counted", "0"), ("sessions", "")],
        )
        conn.execute("COMMIT")

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
        return Coverage(int(meta["max_id"]), db_max, int(meta["counted"]))

    def warm(self, budget_s: float = 0.25, pause_s: float = 0.02) -> Coverage:
        """Read the whole history into the rollup in short steps (a background thread from
        start-up), so the first stats page finds it complete. Each step holds the lock for
        about ``budget_s``; the pause lets a request's own refresh in between."""
        while True:
            cov = self.refresh(budget_s)
            if cov.complete:
                return cov
            time.sleep(pause_s)
            threads.make_way(budget_s)  # pages first, while they are being answered

    def refresh(self, budget_s: float = 0.4, wait: bool = True) -> Coverage:
        """Bring the rollup up to date, or as far as the budget allows. ``wait=False``: when
        another thread (the start-up warmer) is refreshing, return at once with how far it
        has got instead of queueing behind it."""
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
            max_id, counted = int(meta["max_id"]), int(meta["counted"])
            # Rows that went away underneath (a prune, a delete) show as fewer messages up
            # to max_id. Counted as all minus the newer ones: two fast index counts.
            token = self._sessions_token()
            when, seen = self._recounted
            if max_id and (token != seen or time.monotonic() - when >= self.recount_s):
                self._recounted = (time.monotonic(), token)
                if (
                    self.r.scalar(
                        "SELECT (SELECT COUNT(*) FROM messages) - (SELECT COUNT(*) FROM "
                        "messages WHERE id > ?)",
                        [max_id],
                    )
                    != counted
                ):
                    self._reset(conn)
                    max_id = counted = 0
            self._sync_sessions(conn, self._meta(conn).get("sessions", ""), token)
            db_max = self.r.scalar("SELECT COALESCE(MAX(id), 0) FROM messages") or 0
            while max_id < db_max and time.monotonic() < deadline:
                hi = min(max_id + BATCH, db_max)
                counted += self._add_range(conn, max_id, hi)
                max_id = hi
                conn.execute("BEGIN")
                conn.executemany(
                    "INSERT OR REPLACE INTO main.meta VALUES (?, ?)",
                    [("max_id", str(max_id)), ("counted", str(counted))],
                )
                conn.execute("COMMIT")
            return Coverage(max_id, db_max, counted)
        finally:
            conn.close()

    def _sessions_token(self) -> str:
        """Changes when a session is added or removed (count, newest rowid, latest start)."""
        token = (
            self.r.one("SELECT COUNT(*) AS n, MAX(rowid) AS m, MAX(started_at) AS s FROM sessions")
            or {}
        )
        return f"{token.get('n')}-{token.get('m')}-{token.get('s')}"

    def _sync_sessions(self, conn: sqlite3.Connection, seen: str, token_s: str) -> None:
        """Copy the sessions' filter columns when the set of sessions changed (a new one, a
        deleted one). A model changed later inside an existing session shows here with the
        next change of the set."""
        model = "model" if self.r.schema.has("sessions", "model") else "NULL"
        if token_s == seen:
            return
        rows = self.r.rows(
            f"SELECT id, started_at, source, {model} AS model FROM sessions", time_limit_s=30
        )
        conn.execute("BEGIN")
        conn.execute("DELETE FROM main.sess")
        conn.executemany(
            "INSERT INTO main.sess (session_id, started_at, source, model) VALUES (?, ?, ?, ?)",
            [(r["id"], r["started_at"], r["source"], r["model"]) for r in rows],
        )
        conn.execute(f"UPDATE main.sess SET day = {DAY_OF}")
        # The daily sums follow the sessions' days: rebuilt from the per-session rows.
        for table in DAILY_TABLES:
            conn.execute(f"DELETE FROM main.{table}")
        conn.execute(
            "INSERT INTO main.tools_day SELECT s.day, t.tool_name, SUM(t.n), 0 FROM main.sess s "
            "JOIN main.tools t ON t.session_id = s.session_id WHERE s.day IS NOT NULL "
            "GROUP BY 1, 2"
        )
        conn.execute(
            "INSERT INTO main.tools_day SELECT s.day, c.tool_name, 0, SUM(c.n) FROM main.sess s "
            "JOIN main.calls c ON c.session_id = s.session_id WHERE s.day IS NOT NULL "
            "GROUP BY 1, 2 ON CONFLICT DO UPDATE SET entries = entries + excluded.entries"
        )
        conn.execute(
            "INSERT INTO main.hours_day SELECT s.day, h.dow, h.hour, SUM(h.n) FROM main.sess s "
            "JOIN main.hours h ON h.session_id = s.session_id WHERE s.day IS NOT NULL "
            "AND h.dow IS NOT NULL AND h.hour IS NOT NULL GROUP BY 1, 2, 3"
        )
        conn.execute(
            "INSERT INTO main.source_messages SELECT IFNULL(s.source, '(none)'), SUM(r.n) "
            "FROM main.sess s JOIN main.roles r ON r.session_id = s.session_id GROUP BY 1"
        )
        conn.execute("INSERT OR REPLACE INTO main.meta VALUES ('sessions', ?)", (token_s,))
        conn.execute("COMMIT")

    def _add_range(self, conn: sqlite3.Connection, lo: int, hi: int) -> int:
        tool = "tool_name" if self.has_tool_name else "NULL"
        rows = self.r.rows(
            f"SELECT session_id, role, {tool} AS tool_name, "
            "CAST(strftime('%w', timestamp, 'unixepoch') AS INTEGER) AS dow, "
            "CAST(strftime('%H', timestamp, 'unixepoch') AS INTEGER) AS hour, "
            "COUNT(*) AS n FROM messages WHERE id > ? AND id <= ? GROUP BY 1, 2, 3, 4, 5",
            [lo, hi],
            time_limit_s=30,
        )
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
        calls = self._tool_call_entries(lo, hi)
        conn.execute("BEGIN")
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
        conn.execute("COMMIT")
        return total

    def _add_daily(
        self, conn: sqlite3.Connection, roles: dict, tools: dict, calls: dict, hours: dict
    ) -> None:
        """Add a batch's per-session counts to the daily sums, by each session's day. A
        session not yet in ``sess`` (it began after the last copy) is left out here: the
        set of sessions changed, so the next refresh copies them and rebuilds the sums."""
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

    def _tool_call_entries(self, lo: int, hi: int) -> dict[tuple, int]:
        """Function names in assistants' tool_calls lists (Hermes's insights: each element's
        function.name counts once; a list that is not valid JSON counts nothing). NOT INDEXED:
        the batch's rowid range, not a walk of a whole index the planner picks for GROUP BY."""
        if not self.r.schema.has("messages", "tool_calls"):
            return {}
        rows = self.r.rows(
            "SELECT m.session_id AS session_id, json_extract(j.value, '$.function.name') AS name, "
            "COUNT(*) AS n FROM messages m NOT INDEXED, json_each(CASE WHEN json_valid(m.tool_calls) AND "
            "json_type(m.tool_calls) = 'array' THEN m.tool_calls ELSE '[]' END) j "
            "WHERE m.id > ? AND m.id <= ? AND m.role = 'assistant' AND m.tool_calls IS NOT NULL "
            "AND json_type(j.value) = 'object' GROUP BY 1, 2",
            [lo, hi],
            time_limit_s=30,
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
