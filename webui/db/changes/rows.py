"""A conversation's rows between two Hermes files: what a conversation is, a digest of its rows
as stored (every column with its type, byte for byte), and rows carried from one connection to
another keeping every value's bytes and type.

Carrying rows through Python (instead of ``INSERT … SELECT`` over an attached file) is what
lets a move read from the one connection it checked — the archive file it opened and pinned —
even when the archive's path names another file by then: the rows come from the file the
connection holds, never from whatever the path names now."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence

from webui.db import sql as sqlbits
from webui.db.changes import prompts

# Tables whose rows belong to one session (besides sessions and messages): moved with it.
SESSION_TABLES = ("session_model_usage",)
# A batch carried at once is cut when its values pass this many bytes (a 10 MB tool result
# must not make one batch hold a gigabyte).
CARRY_BYTES = 8 << 20


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def columns(conn: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA {schema}.table_info({q(table)})")]


def tables(conn: sqlite3.Connection, schema: str = "main") -> set[str]:
    return {
        r[0] for r in conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")
    }


def session_tables(conn: sqlite3.Connection, schema: str = "main") -> list[str]:
    have = tables(conn, schema)
    return [t for t in SESSION_TABLES if t in have]


def conversation(conn: sqlite3.Connection, session_id: str, schema: str = "main") -> list[str]:
    """Every session of the conversation ``session_id`` belongs to, as the file holds it now:
    up its parent links to the first, then every session below that (compression
    continuations, branches, delegate children), parents before children. Empty when the
    session is not there."""
    s = f"{schema}.sessions"
    if conn.execute(f"SELECT 1 FROM {s} WHERE id = ?", (session_id,)).fetchone() is None:
        return []
    root, seen = session_id, {session_id}
    while True:
        row = conn.execute(f"SELECT parent_session_id FROM {s} WHERE id = ?", (root,)).fetchone()
        if row is None or not row[0] or row[0] in seen:
            break
        if not conn.execute(f"SELECT 1 FROM {s} WHERE id = ?", (row[0],)).fetchone():
            break
        seen.add(row[0])
        root = row[0]
    out, level, done = [root], [root], {root}
    while level:
        marks = sqlbits.in_list(len(level))
        level = [
            r[0]
            for r in conn.execute(
                f"SELECT id FROM {s} WHERE parent_session_id IN ({marks}) ORDER BY started_at, id",
                level,
            )
            if r[0] not in done
        ]
        done.update(level)
        out.extend(level)
    return out


def _where(table: str, ids: Sequence[str], key: str | None = None) -> str:
    key = key or ("id" if table == "sessions" else "session_id")
    return f"{key} IN ({sqlbits.in_list(len(ids))})"


def digest(
    conn: sqlite3.Connection, schema: str, ids: Sequence[str], upto: int | None = None
) -> dict[str, list]:
    """Per table (sessions, messages, the per-session tables the file has and the system
    prompts its sessions reference): how many rows the conversation has there and a SHA-256
    over every column of every row with its type, compared as stored (text as its bytes).
    ``upto``: messages up to that id only."""
    out: dict[str, list] = {}
    if not ids:
        return out
    shapes = {
        t: columns(conn, schema, t) for t in ("sessions", "messages", *session_tables(conn, schema))
    }
    hashes = prompts.referenced(conn, ids, schema)
    if hashes:
        shapes["system_prompts"] = columns(conn, schema, "system_prompts")
    previous = conn.text_factory
    conn.text_factory = bytes
    try:
        for table, cols in shapes.items():
            names = ", ".join(f"{q(c)}, typeof({q(c)})" for c in cols)
            cond, params = _where(table, ids), list(ids)
            if table == "system_prompts":
                cond, params = _where(table, hashes, "hash"), hashes
            if table == "messages" and upto is not None:
                cond, params = f"{cond} AND id <= ?", [*params, upto]
            # Sessions and messages by their key; another table by every column.
            order = (
                "id"
                if table in ("sessions", "messages")
                else "hash"
                if table == "system_prompts"
                else ", ".join(q(c) for c in cols)
            )
            h = hashlib.sha256()
            n = 0
            for row in conn.execute(
                f"SELECT {names} FROM {schema}.{q(table)} WHERE {cond} ORDER BY {order}", params
            ):
                h.update(repr(row).encode())
                n += 1
            out[table] = [n, h.hexdigest()]
    finally:
        conn.text_factory = previous
    return out


def newest(conn: sqlite3.Connection, schema: str, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """session -> (its newest message id, how many messages it has); (0, 0) for none."""
    found = dict.fromkeys(ids, (0, 0))
    if ids:
        for sid, top, n in conn.execute(
            f"SELECT session_id, MAX(id), COUNT(*) FROM {schema}.messages WHERE "
            f"{_where('messages', ids)} GROUP BY session_id",
            list(ids),
        ):
            found[sid] = (int(top), int(n))
    return found


# -- carrying rows -------------------------------------------------------------------------


def read(
    conn: sqlite3.Connection,
    table: str,
    ids: Sequence[str],
    *,
    after: int | None = None,
    limit: int | None = None,
    key: str | None = None,
) -> tuple[list[str], list[tuple]]:
    """Rows of the conversation ``ids`` in ``table`` of ``conn``'s main file as (value, type)
    pairs, text as its bytes; messages in id order after ``after``, at most ``limit`` of them
    and no more than CARRY_BYTES of values (at least one row). ``key``: the column ``ids``
    name (by default a session's)."""
    cols = columns(conn, "main", table)
    names = ", ".join(f"{q(c)}, typeof({q(c)})" for c in cols)
    cond, params = _where(table, ids, key), list(ids)
    order = ""
    if table == "messages":
        order = " ORDER BY id"
        if after is not None:
            cond, params = f"{cond} AND id > ?", [*params, after]
        if limit is not None:
            order += f" LIMIT {int(limit)}"
    previous = conn.text_factory
    conn.text_factory = bytes
    try:
        rows, size = [], 0
        for row in conn.execute(f"SELECT {names} FROM main.{q(table)} WHERE {cond}{order}", params):
            rows.append(row)
            if limit is not None:
                size += sum(len(v) for v in row[::2] if isinstance(v, bytes))
                if size > CARRY_BYTES:
                    break
        return cols, rows
    finally:
        conn.text_factory = previous


def write(
    conn: sqlite3.Connection, table: str, cols: list[str], rows: list[tuple], *, or_ignore: bool
) -> int:
    """``rows`` (from ``read``) into ``table`` of ``conn``: each value bound as what it was
    (an integer, a real, a blob or NULL), text bound as its bytes and cast back to text, so
    the stored bytes and types are those read."""
    if not rows:
        return 0
    values = ", ".join("CASE ? WHEN 'text' THEN CAST(? AS TEXT) ELSE ? END" for _ in cols)
    verb = "INSERT OR IGNORE" if or_ignore else "INSERT"
    stmt = f"{verb} INTO main.{q(table)} ({', '.join(q(c) for c in cols)}) VALUES ({values})"
    n = 0
    for row in rows:
        params: list = []
        for value, kind in zip(row[::2], row[1::2], strict=True):
            kind = kind.decode() if isinstance(kind, bytes) else kind
            params.extend((kind, value, value))
        n += conn.execute(stmt, params).rowcount
    return n


def message_ids(conn: sqlite3.Connection, schema: str, ids: Sequence[str]) -> Iterator[int]:
    if ids:
        for (mid,) in conn.execute(
            f"SELECT id FROM {schema}.messages WHERE {_where('messages', ids)} ORDER BY id",
            list(ids),
        ):
            yield int(mid)
