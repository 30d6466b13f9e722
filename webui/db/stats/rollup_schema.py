"""The rollup's own file: its tables, its version and the sizes of its reads
(webui.db.stats.rollup)."""

from __future__ import annotations

from webui.db.daily_sums import DAY_S
from webui.db.following import Pace
from webui.db.ledger_file import Coverage

__all__ = [
    "VERSION",
    "Coverage",
    "DAY_S",
    "DAY_OF",
    "DAILY_TABLES",
    "PACE",
    "PER_SESSION",
    "SCHEMA",
]

VERSION = "5"  # 3: hours in UTC, tool-call entries; 4: daily sums; 5: followed by what changed
# The batches of new ids (webui.db.following): each sized so that reading it takes about
# the pace's read target (its read transaction that long at most: Hermes's checkpoints wait for no
# reader longer).
PACE = Pace("the stats rollup", first_batch=20_000, min_batch=100, max_batch=200_000)
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
