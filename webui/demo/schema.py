"""The exact Hermes v11 schema, as the demo generator writes it (same DDL text in
sqlite_master as Hermes leaves, inline FTS5 tables kept in sync by the six triggers)."""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = 11


# --------------------------------------------------------------------------------------------
# Schema: the statements exactly as Hermes v11 leaves them in sqlite_master (SQLite drops the
# "IF NOT EXISTS", so the stored text is identical to the fixture's).
# --------------------------------------------------------------------------------------------

_SCHEMA_STATEMENTS = (
    """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT,
    model TEXT,
    model_config TEXT,
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    billing_provider TEXT,
    billing_base_url TEXT,
    billing_mode TEXT,
    estimated_cost_usd REAL,
    actual_cost_usd REAL,
    cost_status TEXT,
    cost_source TEXT,
    pricing_version TEXT,
    title TEXT,
    api_call_count INTEGER DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
)""",
    """CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    finish_reason TEXT,
    reasoning TEXT,
    reasoning_content TEXT,
    reasoning_details TEXT,
    codex_reasoning_items TEXT,
    codex_message_items TEXT
)""",
    """CREATE TABLE IF NOT EXISTS state_meta (
    key TEXT PRIMARY KEY,
    value TEXT
)""",
    """CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source)""",
    """CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id)""",
    """CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC)""",
    """CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp)""",
    """CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique ON sessions(title) WHERE title IS NOT NULL""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    content
)""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
END""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    INSERT INTO messages_fts(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts_trigram USING fts5(
    content,
    tokenize='trigram'
)""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_trigram_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts_trigram(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_trigram_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts_trigram WHERE rowid = old.id;
END""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_trigram_update AFTER UPDATE ON messages BEGIN
    DELETE FROM messages_fts_trigram WHERE rowid = old.id;
    INSERT INTO messages_fts_trigram(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END""",
)


def create_schema(conn: sqlite3.Connection, version: int = SCHEMA_VERSION) -> None:
    """Create the exact Hermes schema ``version`` (11, 22: Hermes 0.19.0's, or 31: Hermes
    0.22.2's fresh layout) on ``conn`` and switch it to WAL.

    Writes the single ``schema_version`` row if the table is empty.  ``state_meta`` is
    created empty (Hermes' CLI adds ``ghost_session_prune_v1`` later; :func:`generate` does too).
    """
    from webui.demo import schema22 as demo_schema22
    from webui.demo import schema31 as demo_schema31

    statements = {
        SCHEMA_VERSION: _SCHEMA_STATEMENTS,
        22: demo_schema22.STATEMENTS,
        31: demo_schema31.STATEMENTS,
    }.get(version)
    if statements is None:
        raise ValueError(f"the demo writes schema 11, 22 or 31, not {version}")
    if conn.in_transaction:
        conn.commit()
    conn.execute("PRAGMA journal_mode=WAL")
    for stmt in statements:
        conn.execute(stmt)
    if conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == 0:
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    if conn.in_transaction:
        conn.commit()
