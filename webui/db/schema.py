"""What the state.db in front of us looks like.

Hermes adds columns and tables release after release (schema 8, 11, 22 are all in the wild)
and never drops them, so Logbook never assumes a column: it reads the catalogue once at
start-up and every query is built from what is really there.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from urllib.request import pathname2url

from webui.db.errors import StartupError

# The columns of the documented schema (v11). Anything else a newer Hermes adds is "extra"
# and shown in the viewer's metadata table rather than silently dropped.
KNOWN_SESSION_COLUMNS = (
    "id",
    "source",
    "user_id",
    "model",
    "model_config",
    "system_prompt",
    "parent_session_id",
    "started_at",
    "ended_at",
    "end_reason",
    "message_count",
    "tool_call_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "billing_provider",
    "billing_base_url",
    "billing_mode",
    "estimated_cost_usd",
    "actual_cost_usd",
    "cost_status",
    "cost_source",
    "pricing_version",
    "title",
    "api_call_count",
)
KNOWN_MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "timestamp",
    "token_count",
    "finish_reason",
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    "codex_reasoning_items",
    "codex_message_items",
)
REQUIRED = {
    "sessions": ("id", "source", "started_at"),
    "messages": ("id", "session_id", "role", "timestamp"),
}
# Newest schema version whose changes Logbook makes as its Hermes makes them (Hermes 0.22.2,
# schema 31: issue 44; every change on 23-31 follows its generation, webui.hermes.rules).
NEWEST_KNOWN_VERSION = 31
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Schema:
    version: int | None
    tables: frozenset[str]
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fts_sql: str = ""

    def has(self, table: str, column: str | None = None) -> bool:
        if column is None:
            return table in self.tables
        return column in self.columns.get(table, ())

    @property
    def session_columns(self) -> tuple[str, ...]:
        return self.columns.get("sessions", ())

    @property
    def message_columns(self) -> tuple[str, ...]:
        return self.columns.get("messages", ())

    @property
    def extra_session_columns(self) -> tuple[str, ...]:
        return tuple(c for c in self.session_columns if c not in KNOWN_SESSION_COLUMNS)

    @property
    def has_fts(self) -> bool:
        return "messages_fts" in self.tables

    @property
    def has_trigram(self) -> bool:
        return "messages_fts_trigram" in self.tables

    @property
    def fts_external_content(self) -> bool:
        """v8 indexes ``content`` only, as an external-content table."""
        return "content=messages" in self.fts_sql.replace(" ", "")

    @property
    def is_newer_than_known(self) -> bool:
        return self.version is not None and self.version > NEWEST_KNOWN_VERSION

    def as_dict(self) -> dict:
        return {
            "version": self.version,
            "tables": sorted(self.tables),
            "extra_session_columns": list(self.extra_session_columns),
            "fts": self.has_fts,
            "trigram": self.has_trigram,
        }


def readonly_uri(path: str | os.PathLike, immutable: bool = False) -> str:
    uri = "file:" + pathname2url(os.path.abspath(os.fspath(path))) + "?mode=ro"
    return uri + "&immutable=1" if immutable else uri


def connect_readonly(
    path: str | os.PathLike, *, immutable: bool = False, busy_timeout_s: float = 0.25
) -> sqlite3.Connection:
    """A read-only connection. ``query_only`` is a per-connection switch (not persisted) and a
    second guard: even a bug in our SQL cannot write through a page connection."""
    conn = sqlite3.connect(
        readonly_uri(path, immutable),
        uri=True,
        timeout=busy_timeout_s,
        check_same_thread=False,
        isolation_level=None,
    )
    conn.execute("PRAGMA query_only = 1")
    # One bad row must not take a page down: text that is not valid UTF-8 is shown with
    # replacement characters (U+FFFD marks the damage) instead of raising.
    conn.text_factory = decode_text
    return conn


def decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def inspect(conn: sqlite3.Connection) -> Schema:
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view')"
    ).fetchall()
    tables = frozenset(r[1] for r in rows)
    columns: dict[str, tuple[str, ...]] = {}
    for name in ("sessions", "messages", "session_model_usage"):
        if name in tables:
            columns[name] = tuple(r[1] for r in conn.execute(f"PRAGMA table_info({name})"))
    version = None
    if "schema_version" in tables:
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        version = row[0] if row and isinstance(row[0], int) else None
    fts_sql = next((r[2] or "" for r in rows if r[1] == "messages_fts"), "")
    return Schema(version=version, tables=tables, columns=columns, fts_sql=fts_sql)


@dataclass(frozen=True)
class OpenedDatabase:
    path: Path
    schema: Schema
    immutable: bool
    size_bytes: int


def file_size(path: Path) -> int:
    """The database's footprint on disk: the main file plus its write-ahead log."""
    total = 0
    for p in (path, Path(str(path) + "-wal")):
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


def check_database(path: str | os.PathLike, tried: list[str] | None = None) -> OpenedDatabase:
    """Open ``path`` the way pages will and prove it is a Hermes state.db, or raise
    StartupError with one message naming every path tried and what to do instead."""
    p = Path(os.path.expanduser(os.fspath(path)))
    tried_list = tried or [str(p)]

    def fail(why: str) -> StartupError:
        where = ", ".join(tried_list)
        return StartupError(
            f"{why} (tried: {where}). Run with --demo to explore a demo database, "
            f"or --db PATH to open another Hermes state.db."
        )

    if not p.exists():
        raise fail(f"no Hermes database at {p}")
    if not p.is_file():
        raise fail(f"{p} is not a file")
    try:
        with open(p, "rb") as fh:
            magic = fh.read(16)
    except OSError as exc:
        raise fail(f"cannot read {p}: {exc.strerror or exc}") from None
    if magic != SQLITE_MAGIC:
        raise fail(f"{p} is not an SQLite database")

    immutable = False
    try:
        conn = connect_readonly(p)
        try:
            schema = inspect(conn)
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        # A WAL database in a directory we may not write to (no -shm yet) cannot be opened
        # read-only; immutable mode reads it as a snapshot. No live writer can be there, since
        # a writer would have created the -wal and -shm files itself.
        if "unable to open" not in str(exc):
            raise fail(f"cannot open {p}: {exc}") from None
        immutable = True
        try:
            conn = connect_readonly(p, immutable=True)
            try:
                schema = inspect(conn)
            finally:
                conn.close()
        except sqlite3.Error as exc2:
            raise fail(f"cannot open {p}: {exc2}") from None
    except sqlite3.DatabaseError as exc:
        raise fail(f"{p} is corrupt or not a database ({exc})") from None

    missing = [f"{t}.{c}" for t, cols in REQUIRED.items() for c in cols if not schema.has(t, c)]
    if missing:
        raise fail(
            f"{p} is an SQLite file but not a Hermes state.db (missing {', '.join(missing)})"
        )
    return OpenedDatabase(path=p, schema=schema, immutable=immutable, size_bytes=file_size(p))


def default_candidates() -> list[Path]:
    """Where Hermes keeps its database: $HERMES_HOME/state.db, else ~/.hermes/state.db."""
    home = os.environ.get("HERMES_HOME")
    if home:
        return [Path(home).expanduser() / "state.db"]
    return [Path("~/.hermes/state.db").expanduser()]
