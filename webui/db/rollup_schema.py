"""The rollup's own file: its tables, its version, the sizes of its reads, and the helpers
every part of it uses (webui.db.rollup)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

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


def meta_of(conn: sqlite3.Connection) -> dict[str, str]:
    """The rollup file's own notes (how far it read, what it counted)."""
    return dict(conn.execute("SELECT key, value FROM main.meta").fetchall())


def set_meta(conn: sqlite3.Connection, **values: Any) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO main.meta VALUES (?, ?)",
        [(k, str(v)) for k, v in values.items()],
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
