"""Writes a generated demo database: batches of session and message rows into a new file,
built beside the target under a temporary name and linked into place only when complete."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable

from webui.db.schema import KNOWN_MESSAGE_COLUMNS, KNOWN_SESSION_COLUMNS
from webui.demo.schema import create_schema

# Schema 11's session columns by name: a schema-22 table has more, which keep their defaults.
_INSERT_SESSION = (
    f"INSERT INTO sessions ({', '.join(KNOWN_SESSION_COLUMNS)}) "
    f"VALUES ({','.join('?' * len(KNOWN_SESSION_COLUMNS))})"
)
_INSERT_MESSAGE = (
    f"INSERT INTO messages ({', '.join(KNOWN_MESSAGE_COLUMNS[1:])}) "
    f"VALUES ({','.join('?' * (len(KNOWN_MESSAGE_COLUMNS) - 1))})"
)
# Batches go in as one JSON array per statement: SQLite then runs the whole batch (and both FTS
# indexes) in a single step with the GIL released, so text generation overlaps with it.  SQLite's
# JSON functions cut strings at a NUL, so multimodal rows ("\x00json:...") are bound directly.
# Schema 11's message columns after the id, in table order.
_MESSAGE_COLS = KNOWN_MESSAGE_COLUMNS[1:]
_INSERT_MESSAGES_JSON = (
    "INSERT INTO messages ("
    + ", ".join(_MESSAGE_COLS)
    + ") SELECT "
    + ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(_MESSAGE_COLS)))
    + " FROM json_each(?)"
)
_COMMIT_EVERY = 50_000
# Schema 31 (Hermes 0.22.2) mints a uid per message (``message_uid``): bound here, derived
# from the row's place, so the same arguments still give the same file.
_MESSAGE_COLS_31 = (*_MESSAGE_COLS, "message_uid")
_INSERT_MESSAGE_31 = (
    f"INSERT INTO messages ({', '.join(_MESSAGE_COLS_31)}) "
    f"VALUES ({','.join('?' * len(_MESSAGE_COLS_31))})"
)
_INSERT_MESSAGES_JSON_31 = (
    "INSERT INTO messages ("
    + ", ".join(_MESSAGE_COLS_31)
    + ") SELECT "
    + ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(_MESSAGE_COLS_31)))
    + " FROM json_each(?)"
)


def _remove_quietly(p: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(p + suffix)
        except FileNotFoundError:
            pass


def _insert_messages(conn: sqlite3.Connection, rows: list, uid_from: int | None = None) -> None:
    """Insert a batch; with ``uid_from`` (schema 31) each row gets its ``message_uid``."""
    one, many = _INSERT_MESSAGE, _INSERT_MESSAGES_JSON
    if uid_from is not None:
        one, many = _INSERT_MESSAGE_31, _INSERT_MESSAGES_JSON_31
        rows = [[*row, _uid(uid_from + n)] for n, row in enumerate(rows)]
    start = 0
    for i, row in enumerate(rows):
        if row[2] is not None and "\x00" in row[2]:
            if i > start:
                conn.execute(many, (json.dumps(rows[start:i], ensure_ascii=False),))
            conn.execute(one, row)
            start = i + 1
    if start < len(rows):
        conn.execute(many, (json.dumps(rows[start:], ensure_ascii=False),))


def _uid(n: int) -> str:
    """A message uid in Hermes's form (32 lower-case hex digits), the n-th of the file."""
    return hashlib.blake2b(n.to_bytes(8, "big"), digest_size=16).hexdigest()


def write_database(
    path: str,
    batches: Iterable[tuple[list, list]],
    total: int,
    progress: Callable[[int, int], None] | None,
    schema: int = 11,
    origins: Callable[[list[dict]], list[dict]] | None = None,
) -> int:
    """Create ``path`` (which must not exist) from ``batches`` of (session rows, message rows);
    returns the number of messages written. Built beside the target under a unique name, so a
    half-built database never has the final name."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(
        directory,
        f".{os.path.basename(path)}.{os.getpid()}-{threading.get_ident()}-"
        f"{os.urandom(4).hex()}.building",
    )
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        create_schema(conn, schema)
        conn.execute("INSERT INTO state_meta (key, value) VALUES ('ghost_session_prune_v1', '1')")
        # build-time only settings (not persistent); the file is a temp file until it is complete
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-262144")
        conn.execute("PRAGMA temp_store=MEMORY")
        done = _write_all(conn, batches, total, progress, uids=schema >= 31)
        if origins is not None:
            write_origins(conn, origins(_session_outline(conn)))
        if schema >= 22:
            write_usage_rows(conn)
        if schema >= 31:
            write_as_022(conn)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        conn = None
        for suffix in ("-wal", "-shm"):
            if os.path.exists(tmp + suffix):
                os.remove(tmp + suffix)
        try:
            os.link(tmp, path)  # atomic and never overwrites
            os.remove(tmp)
        except FileExistsError:
            raise ValueError(f"refusing to overwrite existing file: {path}") from None
        except OSError:
            if os.path.lexists(path):
                raise ValueError(f"refusing to overwrite existing file: {path}") from None
            os.replace(tmp, path)
    except BaseException:
        if conn is not None:
            conn.close()
        _remove_quietly(tmp)
        raise
    return done


def _write_all(
    conn: sqlite3.Connection,
    batches: Iterable[tuple[list, list]],
    total: int,
    progress: Callable[[int, int], None] | None,
    uids: bool = False,
) -> int:
    """Insert everything.  Text is generated in a producer thread while SQLite (which releases the
    GIL while it works, mostly on the two FTS indexes) inserts the previous batch."""
    q: queue.Queue = queue.Queue(maxsize=6)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in batches:
                if not put(item):
                    return
            put(None)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            put(exc)

    worker = threading.Thread(target=produce, name="hermes-generator", daemon=True)
    worker.start()
    done = since_commit = 0
    try:
        conn.execute("BEGIN")
        while True:
            item = q.get()
            if item is None:
                break
            if isinstance(item, BaseException):
                raise item
            sess, msgs = item
            if sess:
                conn.executemany(_INSERT_SESSION, sess)
            if msgs:
                _insert_messages(conn, msgs, done if uids else None)
                done += len(msgs)
                since_commit += len(msgs)
            if since_commit >= _COMMIT_EVERY:
                conn.execute("COMMIT")
                conn.execute("BEGIN")
                since_commit = 0
            if progress is not None and done < total:
                progress(done, total)
        conn.execute("COMMIT")
    finally:
        stop.set()
        worker.join()
    if progress is not None:
        progress(done, total)
    return done


# -- origins (schema 22) ----------------------------------------------------------------------

ORIGIN_FIELDS = (
    "session_key",
    "user_id",
    "chat_id",
    "chat_type",
    "thread_id",
    "display_name",
    "origin_json",
    "cwd",
    "git_branch",
    "git_repo_root",
    "end_reason",
)


def _session_outline(conn: sqlite3.Connection) -> list[dict]:
    """What an origins plan needs of each session, oldest first."""
    conn.row_factory = sqlite3.Row
    try:
        return [
            dict(r)
            for r in conn.execute(
                "SELECT id, source, parent_session_id, started_at, ended_at, end_reason "
                "FROM sessions ORDER BY started_at, id"
            )
        ]
    finally:
        conn.row_factory = None


def write_origins(conn: sqlite3.Connection, plan: list[dict]) -> None:
    """The columns Hermes 0.19's record_gateway_session_peer and update_session_cwd set (and
    a chat's reset reasons), one UPDATE per planned session."""
    conn.execute("BEGIN")
    for row in plan:
        fields = [f for f in ORIGIN_FIELDS if f in row]
        conn.execute(
            f"UPDATE sessions SET {', '.join(f'{f} = ?' for f in fields)} WHERE id = ?",
            [*(row[f] for f in fields), row["id"]],
        )
    conn.execute("COMMIT")


# -- schema 31 (Hermes 0.22.2) -----------------------------------------------------------------

_USAGE_COLUMNS = (
    "session_id, model, billing_provider, billing_base_url, billing_mode, task, api_call_count, "
    "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, "
    "estimated_cost_usd, actual_cost_usd, cost_status, cost_source, first_seen, last_seen"
)


def write_usage_rows(conn: sqlite3.Connection) -> None:
    """The token accounting per model Hermes 0.19+ keeps in ``session_model_usage``: one row
    per session that made API calls, task '' (the session's own calls), its totals."""
    conn.execute("BEGIN")
    conn.execute(
        f"INSERT INTO session_model_usage ({_USAGE_COLUMNS}) SELECT id, model, "
        "COALESCE(billing_provider, ''), COALESCE(billing_base_url, ''), "
        "COALESCE(billing_mode, ''), '', api_call_count, COALESCE(input_tokens, 0), "
        "COALESCE(output_tokens, 0), COALESCE(cache_read_tokens, 0), "
        "COALESCE(cache_write_tokens, 0), COALESCE(reasoning_tokens, 0), "
        "COALESCE(estimated_cost_usd, 0), COALESCE(actual_cost_usd, 0), cost_status, "
        "cost_source, started_at, COALESCE(ended_at, started_at) FROM sessions "
        "WHERE model IS NOT NULL AND COALESCE(api_call_count, 0) > 0"
    )
    conn.execute("COMMIT")


def write_as_022(conn: sqlite3.Connection) -> None:
    """What Hermes 0.22.2 keeps differently from the same history: each session's system
    prompt once in ``system_prompts`` under its sha256 (``sessions.system_prompt_hash``; the old
    column left NULL)."""
    conn.execute("BEGIN")
    prompts = [r[0] for r in conn.execute(
        "SELECT DISTINCT system_prompt FROM sessions WHERE system_prompt IS NOT NULL"
    )]  # fmt: skip
    for prompt in prompts:
        digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
        conn.execute(
            "INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)", (digest, prompt)
        )
        conn.execute(
            "UPDATE sessions SET system_prompt_hash = ?, system_prompt = NULL "
            "WHERE system_prompt = ?",
            (digest, prompt),
        )
    conn.execute("COMMIT")
