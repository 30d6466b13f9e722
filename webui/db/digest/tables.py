"""The digest's own file (in the instance folder, beside the stats rollup): its tables, its
version, the sizes of its reads, and the small helpers every part of it uses."""

from __future__ import annotations

from webui.db.daily_sums import DAY_S
from webui.db.following import Pace
from webui.db.ledger_file import Coverage, chunks, pick

__all__ = ["Coverage", "PACE", "SCHEMA", "VERSION", "chunks", "pick"]

VERSION = "2"  # 2: daily sums of tool use and turns, timeouts and exits per session
# Batches of new message ids (webui.db.following), each sized so that its reads take about the
# pace's read target; at most ~50 MB of argument heads in memory. A failure's pause grows to
# 8 s: the pass holds ONE_PASS, other stores' passes wait behind it.
PACE = Pace("the digest", first_batch=2_000, min_batch=50, max_batch=20_000,
            timeout_doublings=4, error_doublings=4)  # fmt: skip
# The full arguments of file-tool calls are fetched in chunks of at most this many characters,
# and a call's arguments longer than ARGS_MAX are read for their path only (memory bound).
ARGS_CHUNK = 8_000_000
ARGS_MAX = 4_000_000

# Per-session figures summed into bytes_month by the session's source and month.
SIZES = ("n", "text_b", "call_b", "tool_b", "reasoning_b", "other_b", "fts_b")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
-- Every session of state.db with what its messages hold: bytes by kind (lengths in bytes of
-- the stored text), its tool calls and their outcomes. month: 'YYYY-MM' (UTC) of its start.
CREATE TABLE IF NOT EXISTS sess (
    session_id TEXT PRIMARY KEY, started_at REAL, source TEXT, model TEXT, month TEXT,
    day INTEGER, workspace TEXT, cwd TEXT,
    n INTEGER DEFAULT 0, text_b INTEGER DEFAULT 0, call_b INTEGER DEFAULT 0,
    tool_b INTEGER DEFAULT 0, reasoning_b INTEGER DEFAULT 0, other_b INTEGER DEFAULT 0,
    fts_b INTEGER DEFAULT 0, all_b INTEGER DEFAULT 0,
    calls INTEGER DEFAULT 0, results INTEGER DEFAULT 0, failures INTEGER DEFAULT 0,
    timeouts INTEGER DEFAULT 0, exits INTEGER DEFAULT 0,
    turns INTEGER DEFAULT 0, failed_turns INTEGER DEFAULT 0);
CREATE INDEX IF NOT EXISTS sess_day ON sess(day);
CREATE INDEX IF NOT EXISTS sess_all_b ON sess(all_b);
CREATE INDEX IF NOT EXISTS sess_started ON sess(started_at);
-- The same sizes added up by (source, month): the storage page's breakdowns.
CREATE TABLE IF NOT EXISTS bytes_month (
    source TEXT, month TEXT, sessions INTEGER DEFAULT 0,
    n INTEGER DEFAULT 0, text_b INTEGER DEFAULT 0, call_b INTEGER DEFAULT 0,
    tool_b INTEGER DEFAULT 0, reasoning_b INTEGER DEFAULT 0, other_b INTEGER DEFAULT 0,
    fts_b INTEGER DEFAULT 0, PRIMARY KEY (source, month)) WITHOUT ROWID;
-- Per session and tool: calls (entries in assistants' tool_calls), results (tool rows) and
-- the results Hermes's rule counts as failures, of which timeouts and non-zero exits.
CREATE TABLE IF NOT EXISTS tool_use (
    session_id TEXT, tool TEXT, calls INTEGER DEFAULT 0, results INTEGER DEFAULT 0,
    failures INTEGER DEFAULT 0, timeouts INTEGER DEFAULT 0, exits INTEGER DEFAULT 0,
    PRIMARY KEY (session_id, tool)) WITHOUT ROWID;
-- The same per day the sessions started (UTC, days since 1970): a period's figures add up
-- whole days here and read only its first and last day session by session (as the stats
-- rollup does).
CREATE TABLE IF NOT EXISTS tool_day (day INTEGER, tool TEXT, calls INTEGER DEFAULT 0,
    results INTEGER DEFAULT 0, failures INTEGER DEFAULT 0, timeouts INTEGER DEFAULT 0,
    exits INTEGER DEFAULT 0, PRIMARY KEY (day, tool)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS model_day (day INTEGER, model TEXT, turns INTEGER DEFAULT 0,
    failed_turns INTEGER DEFAULT 0, results INTEGER DEFAULT 0, failures INTEGER DEFAULT 0,
    PRIMARY KEY (day, model)) WITHOUT ROWID;
-- Assistant messages (turns) at least one of whose calls failed.
CREATE TABLE IF NOT EXISTS failed_turns (session_id TEXT, message_id INTEGER,
    PRIMARY KEY (session_id, message_id)) WITHOUT ROWID;
-- Calls whose result has not been read yet (its tool, its turn).
CREATE TABLE IF NOT EXISTS pending (session_id TEXT, call_id TEXT, message_id INTEGER,
    tool TEXT, PRIMARY KEY (session_id, call_id)) WITHOUT ROWID;
-- Each session's last run of calls of one tool with near-same arguments.
CREATE TABLE IF NOT EXISTS runs (session_id TEXT PRIMARY KEY, tool TEXT, sig TEXT,
    length INTEGER, first_message INTEGER, last_message INTEGER, loop_id INTEGER);
CREATE TABLE IF NOT EXISTS loops (id INTEGER PRIMARY KEY, session_id TEXT, tool TEXT,
    first_message INTEGER, last_message INTEGER, calls INTEGER, failures INTEGER DEFAULT 0,
    sample TEXT);
CREATE INDEX IF NOT EXISTS loops_session ON loops(session_id);
-- Every file a tool call wrote or changed (webui.hermes.file_changes): where in the database
-- the call is (message, place in its tool_calls, place among the call's changes), the path as
-- resolved, its workspace and its path there. failed: the call's result says it did not land
-- (NULL: no result read).
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY, session_id TEXT, message_id INTEGER, call_index INTEGER,
    change_index INTEGER, call_id TEXT, tool TEXT, action TEXT, via TEXT, path TEXT,
    workspace TEXT, rel TEXT, timestamp REAL, full INTEGER, size INTEGER, other TEXT,
    failed INTEGER);
CREATE INDEX IF NOT EXISTS changes_path ON changes(path, timestamp);
CREATE INDEX IF NOT EXISTS changes_time ON changes(timestamp, id);
CREATE INDEX IF NOT EXISTS changes_workspace ON changes(workspace, timestamp, id);
CREATE INDEX IF NOT EXISTS changes_session ON changes(session_id, message_id);
CREATE INDEX IF NOT EXISTS changes_other ON changes(other, timestamp) WHERE other IS NOT NULL;
-- The file's bytes by table and index: dbstat's measure, or an estimate that says so.
CREATE TABLE IF NOT EXISTS objects (name TEXT PRIMARY KEY, type TEXT, tbl_name TEXT,
    pages INTEGER, bytes INTEGER, payload INTEGER, unused INTEGER, method TEXT,
    measured_at REAL, seconds REAL);
"""
PER_SESSION = ("tool_use", "failed_turns", "pending", "runs", "loops", "changes")


LATEST = 253402300799.0  # the last second a calendar shows (9999-12-31)


def day_of(started_at) -> int | None:
    """The UTC day a session started (days since 1970); None when it is no time."""
    if not isinstance(started_at, (int, float)) or isinstance(started_at, bool):
        return None
    if not -LATEST <= started_at <= LATEST:  # no calendar day (and no 64-bit integer)
        return None
    return int(started_at // DAY_S)


NO_MODEL = "(none)"


def month_of(started_at) -> str | None:
    """'YYYY-MM' (UTC) of a session's start; None when it is no time."""
    import datetime as dt

    if not isinstance(started_at, (int, float)) or isinstance(started_at, bool):
        return None
    try:
        return dt.datetime.fromtimestamp(started_at, dt.UTC).strftime("%Y-%m")
    except (OverflowError, OSError, ValueError):
        return None
