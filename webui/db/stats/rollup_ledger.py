"""The stats rollup's tables as a ledger the following engine (webui.db.following) keeps up
to date: per-session counts by role, by tool name, by tool-call entry and by weekday x hour,
the sessions' filter columns (``sess``), and the same counts summed per day and per source.
What a batch of messages adds to them, what a session that went takes out, and how a
session is counted again."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from webui.db import sql
from webui.db.following import Reads
from webui.db.ledger_file import meta, open_own_file, pick, sessions_gone, set_meta
from webui.db.reader import Reader
from webui.db.stats.rollup_schema import DAILY_TABLES, DAY_OF, PER_SESSION, SCHEMA, VERSION


class RollupLedger:
    version = VERSION
    tables = (*PER_SESSION, "sess", "meta", *DAILY_TABLES)
    raw = False  # its reads of state.db take values as pages show them

    def __init__(self, reader: Reader, path: Path, reads: Reads):
        self.r = reader
        self.path = path
        self._read = reads

    def connect(self) -> sqlite3.Connection:
        return open_own_file(self.path, self.r.opened, VERSION, SCHEMA)

    # -- sessions -----------------------------------------------------------------------------

    def session_columns(self) -> list[tuple[str, str]]:
        model = sql.col(self.r.schema, "model")
        return [("id", "id"), ("started_at", "started_at"), ("source", "source"), ("model", model)]

    def add_sessions(self, conn: sqlite3.Connection, rows: Iterable[dict[str, Any]]) -> int:
        """Sessions into ``sess`` (those already there left alone); the counts rolled up for
        them before they were known go into the daily sums. Returns how many were new."""
        rows = list(rows)
        if not rows:
            return 0
        pick(conn, (r["id"] for r in rows))
        conn.execute("DELETE FROM temp.pick WHERE session_id IN (SELECT session_id FROM main.sess)")
        new = conn.execute("SELECT COUNT(*) FROM temp.pick").fetchone()[0]
        conn.executemany(
            "INSERT INTO main.sess (session_id, started_at, source, model) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [(r["id"], r["started_at"], r["source"], r["model"]) for r in rows],
        )
        self._date_and_add_picked(conn)
        return new

    def reconcile(self, conn: sqlite3.Connection) -> None:
        """Compare the sessions known with state.db's (one pass over the sessions' primary
        key): those gone leave every sum, those missing (a reused rowid) come in."""
        gone = sessions_gone(conn)
        if gone:
            self._drop(conn, gone, keep_session=False)
        model = sql.col(self.r.schema, "model")
        missing = conn.execute(
            f"SELECT id, started_at, source, {model} FROM st.sessions WHERE id NOT IN "
            "(SELECT session_id FROM main.sess)"
        ).fetchall()
        self.add_sessions(
            conn,
            ({"id": m[0], "started_at": m[1], "source": m[2], "model": m[3]} for m in missing),
        )

    def note_sessions(self, conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
        """Sessions that got messages: new ones into ``sess``; a model changed since is taken
        (a start or source changed moves their counts to the right day)."""
        if not rows:
            return
        self.add_sessions(conn, rows)
        pick(conn, (r["id"] for r in rows))
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
            pick(conn, (r["id"] for r in moved))
            self._daily(conn, -1)
            conn.executemany(
                "UPDATE main.sess SET started_at = ?, source = ?, model = ? WHERE session_id = ?",
                [(r["started_at"], r["source"], r["model"], r["id"]) for r in moved],
            )
            self._date_and_add_picked(conn)

    def recount(self, conn: sqlite3.Connection, session_id: str, upto: int) -> None:
        """One session's counts read again from its rows up to ``upto`` (through Hermes's
        (session_id, timestamp) index), inside the caller's transaction."""
        self._drop(conn, [session_id], keep_session=True)
        where, params = "m.session_id = ? AND m.id <= ?", [session_id, upto]
        total = self._apply(
            conn, self._grouped(where, params), self._tool_call_entries(where, params)
        )
        set_meta(conn, counted=int(meta(conn)["counted"]) + total)

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
            cell = (r["session_id"], r["dow"], r["hour"])
            hours[cell] = hours.get(cell, 0) + n
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

    def _drop(self, conn: sqlite3.Connection, ids: Sequence[str], keep_session: bool) -> None:
        """Take these sessions' counts out of every sum (inside the caller's transaction)."""
        pick(conn, ids)
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
        counted = int(meta(conn)["counted"]) - int(n)
        set_meta(conn, counted=counted)

    def _date_and_add_picked(self, conn: sqlite3.Connection) -> None:
        """The sessions in temp.pick, their start just written: each one's day worked out
        from it, then their per-session rows added to the daily sums."""
        conn.execute(
            f"UPDATE main.sess SET day = {DAY_OF} "
            "WHERE session_id IN (SELECT session_id FROM temp.pick)"
        )
        self._daily(conn, +1)

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

    # -- messages ---------------------------------------------------------------------------

    def read_range(self, lo: int, hi: int) -> tuple[tuple, set[str], float]:
        """Messages with ids in (lo, hi]: grouped counts and tool-call entries, the sessions
        they touch, and the slower of the two reads (each has the time limit)."""
        began = time.monotonic()
        rows = self._grouped("m.id > ? AND m.id <= ?", [lo, hi])
        middle = time.monotonic()
        calls = self._tool_call_entries("m.id > ? AND m.id <= ?", [lo, hi])
        slowest = max(middle - began, time.monotonic() - middle)
        touched = {r["session_id"] for r in rows} | {k[0] for k in calls}
        return (rows, calls), touched, slowest

    def apply(self, conn: sqlite3.Connection, read: tuple) -> int:
        rows, calls = read
        return self._apply(conn, rows, calls)

    def counts(self, conn: sqlite3.Connection, where: str, params: list) -> dict[str, int]:
        """Messages counted per session, of the sessions ``where`` picks."""
        return dict(
            conn.execute(
                f"SELECT session_id, SUM(n) FROM main.roles WHERE {where} GROUP BY 1", params
            ).fetchall()
        )

    def kept(self, conn: sqlite3.Connection, ids: set[str]) -> set[str]:
        """Every session's messages are counted (known to ``sess`` or not yet)."""
        return ids

    def _grouped(self, where: str, params: list[Any]) -> list[dict[str, Any]]:
        tool = sql.col(self.r.schema, "tool_name", "m", table="messages")
        return self._read(
            f"SELECT m.session_id AS session_id, m.role AS role, {tool} AS tool_name, "
            "CAST(strftime('%w', m.timestamp, 'unixepoch') AS INTEGER) AS dow, "
            "CAST(strftime('%H', m.timestamp, 'unixepoch') AS INTEGER) AS hour, "
            f"COUNT(*) AS n FROM messages m WHERE {where} GROUP BY 1, 2, 3, 4, 5",
            params,
        )

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
