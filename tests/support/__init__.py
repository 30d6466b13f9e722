"""Test support: where the project's own test data lives, and the small helpers every test
module shares (a private copy of a real Hermes database, the app over it, ground-truth SQL).

The real Hermes databases and the reference tables are copies kept in ``tests/data`` (see its
README): a clone of the repository alone has everything its tests need."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
FIXTURES = DATA / "fixtures"
REFERENCE = DATA / "reference"
FIXTURE_NAMES = (
    "hermes-v8.db",
    "hermes-v11.db",
    "hermes-v22.db",
    "hermes-v22-extended.db",
    "hermes-v22-origins.db",
)
BUILD = ROOT / "build" / "test-artifacts"  # untracked: screenshots and other test output
# How long a test waits for background work (another thread or process) before calling it
# lost: a bound for a hang, far beyond any machine's slowness; never a speed target.
WAIT_BOUND_S = 120


def copy_fixture(name: str, dest: Path) -> Path:
    """A private, writable copy of one of the real Hermes databases."""
    src = FIXTURES / name
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / name
    shutil.copyfile(src, target)
    target.chmod(0o644)
    return target


# A functional test's outcome must not depend on the machine's speed: its queries get a minute
# (a busy machine runs the default 5 s limit out), and the tests of time limits set their own.
PATIENT = {"LOGBOOK_QUERY_TIME_LIMIT": 60.0}


def make_app(db_path: Path, instance: Path, **config):
    from webui import create_app

    return create_app(
        {"LOGBOOK_DB": str(db_path), "TESTING": True, **PATIENT, **config},
        instance_path=str(instance),
    )


def minimal_db(path: Path, script: str) -> Path:
    """A database with only the columns every Hermes schema has (no FTS, no triggers, ids
    without AUTOINCREMENT), then ``script``: for what Logbook must survive beyond real files."""
    conn = sqlite3.connect(path)
    try:
        conn.executescript(
            """
            CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL,
                                   started_at REAL NOT NULL);
            CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,
                                   role TEXT NOT NULL, content TEXT, timestamp REAL NOT NULL);
            """
            + script
        )
    finally:
        conn.close()
    return path


def sql(db: Path, query: str, params=()) -> list[tuple]:
    """Ground truth: a separate read-only connection straight to the file."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.close()


def plant_tool_call_hit(db: Path) -> str:
    """Add to the newest session an assistant message calling ``web_search`` for "zebrafish
    migration patterns" and its JSON result mentioning zebrafish (Hermes's own triggers index
    both): a search hit inside a tool call and one inside a tool result. Returns the session."""
    import json

    sid = sql(db, "SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1")[0][0]
    calls = [
        {
            "id": "call_1556abc",
            "type": "function",
            "function": {
                "name": "web_search",
                "arguments": json.dumps({"query": "zebrafish migration patterns", "limit": 5}),
            },
        }
    ]
    result = {"results": [{"title": "Fish", "snippet": "Zebrafish swim upstream in spring"}]}
    conn = sqlite3.connect(db)
    try:
        with conn:
            t = sql(db, "SELECT MAX(timestamp) FROM messages")[0][0] + 1
            conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) "
                "VALUES (?, 'assistant', 'Let me look at the docker setup first.', ?, ?)",
                (sid, json.dumps(calls), t),
            )
            conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, "
                "timestamp) VALUES (?, 'tool', ?, 'call_1556abc', 'web_search', ?)",
                (sid, json.dumps(result), t + 1),
            )
    finally:
        conn.close()
    return sid


def patch_search_limit(monkeypatch, name: str, value) -> None:
    """One of search's limits changed for one test, in every search module that reads it."""
    import importlib

    for mod in (
        "search.store",
        "search.basics",
        "search.fts",
        "search.limits",
        "search.scope",
        "search.substring",
        "search.reading",
    ):
        module = importlib.import_module(f"webui.db.{mod}")
        if hasattr(module, name):
            monkeypatch.setattr(module, name, value)
