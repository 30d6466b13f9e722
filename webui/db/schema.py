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
    # Search indexes this SQLite cannot read (their module is missing, their records are
    # damaged): searched by substring instead, and said so (webui.db.schema.probe_fts).
    unusable: dict[str, str] = field(default_factory=dict)

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
        return "messages_fts" in self.tables and "messages_fts" not in self.unusable

    @property
    def has_trigram(self) -> bool:
        return "messages_fts_trigram" in self.tables and "messages_fts_trigram" not in self.unusable

    @property
    def fts_external_content(self) -> bool:
        """v8 indexes ``content`` only, as an external-content table."""
        return "content=messages" in self.fts_sql.replace(" ", "")

    @property
    def is_newer_than_known(self) -> bool:
        return self.version is not None and self.version > NEWEST_KNOWN_VERSION


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


FTS_INDEXES = ("messages_fts", "messages_fts_trigram")


def inspect(conn: sqlite3.Connection) -> Schema:
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view')"
    ).fetchall()
    views = {r[1] for r in rows if r[0] == "view"}
    for name in ("sessions", "messages"):
        if name in views:
            # Hermes's tables are tables; a view in their place (a file that is not what it
            # claims to be) could run for ever under every page that reads it.
            raise NotHermes(f"its {name} is a view, not Hermes's table")
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
    unusable = {t: why for t in FTS_INDEXES if t in tables and (why := probe_fts(conn, t))}
    return Schema(
        version=version, tables=tables, columns=columns, fts_sql=fts_sql, unusable=unusable
    )


class NotHermes(sqlite3.DatabaseError):
    """An SQLite file whose shape rules it out as a Hermes database."""


def probe_fts(conn: sqlite3.Connection, table: str) -> str:
    """Why this search index cannot be read here ("" when it can): an FTS5 table made with a
    module this SQLite lacks, or whose records are damaged, fails every search with an error;
    found once when the file is opened, the file is then searched by substring."""
    try:
        conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH 'logbook' LIMIT 1").fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            raise
        return str(exc)
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return ""


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


def check_database(
    path: str | os.PathLike,
    tried: list[str] | None = None,
    *,
    time_limit_s: float | None = None,
    read_only_file: bool = False,
) -> OpenedDatabase:
    """Open ``path`` the way pages will and prove it is a Hermes state.db, or raise
    StartupError with one message naming every path tried and what to do instead.

    ``time_limit_s``: the reading of its catalogue stops then (a file whose schema_version is
    a view that never ends must not hang whoever opens it): StoreStalled. ``read_only_file``:
    a file only ever read (an archive): opened as an immutable snapshot when no write-ahead
    log or rollback journal lies beside it, so reading it leaves no -wal/-shm pair behind."""
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

    immutable = read_only_file and not has_log(p)
    try:
        conn = connect_readonly(p, immutable=immutable)
        try:
            schema = _inspect_within(conn, time_limit_s)
        finally:
            conn.close()
    except NotHermes as exc:
        raise fail(f"{p} is an SQLite file but not a Hermes state.db ({exc})") from None
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            raise StoreStalled(
                f"{p} did not answer within {time_limit_s:g} s while its catalogue was read "
                "(a view that never ends?)"
            ) from None
        # A WAL database in a directory we may not write to (no -shm yet) cannot be opened
        # read-only; immutable mode reads it as a snapshot. No live writer can be there, since
        # a writer would have created the -wal and -shm files itself.
        if "unable to open" not in str(exc):
            raise fail(f"cannot open {p}: {exc}") from None
        immutable = True
        try:
            conn = connect_readonly(p, immutable=True)
            try:
                schema = _inspect_within(conn, time_limit_s)
            finally:
                conn.close()
        except NotHermes as exc2:
            raise fail(f"{p} is an SQLite file but not a Hermes state.db ({exc2})") from None
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


class StoreStalled(StartupError):
    """Reading a file's catalogue ran past its time limit."""


def has_log(path: Path) -> bool:
    """A write-ahead log with content, or a rollback journal, lies beside the file: someone
    writes (or wrote and did not finish), and the file alone is not the whole database."""
    for suffix in ("-wal", "-journal"):
        try:
            if os.path.getsize(f"{path}{suffix}") > 0:
                return True
        except OSError:
            pass
    return False


def _inspect_within(conn: sqlite3.Connection, time_limit_s: float | None) -> Schema:
    if time_limit_s is None:
        return inspect(conn)
    import time

    deadline = time.monotonic() + time_limit_s
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
    try:
        return inspect(conn)
    finally:
        conn.set_progress_handler(None, 0)


def default_candidates() -> list[Path]:
    """Where Hermes keeps its database: $HERMES_HOME/state.db, else ~/.hermes/state.db."""
    home = os.environ.get("HERMES_HOME")
    if home:
        return [Path(home).expanduser() / "state.db"]
    return [Path("~/.hermes/state.db").expanduser()]
