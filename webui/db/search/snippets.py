"""Snippets for a page of search hits, made without a second pass over the big index.

``snippet()`` needs its row to be a match of the query in the table it is called on. Asked of
the 50 rows of a page ("rowid IN (…)"), FTS5 evaluates the query once per row, and a prefix
query (``deploy*``) expands its prefix over the whole index each time: 95 ms for a page of
``deploy*`` in one source on a million messages. But a snippet depends only on the row's own
text, the query and the tokenizer, never on the other rows (it scores the matches' positions
in that row; bm25 is not involved). So the page's stored text is copied into a private
in-memory FTS5 table declared like the real one (same columns, tokenizer and options, minus
where its content lives) and ``snippet()`` runs there: the same snippets, for ~1 ms.

The mirror belongs to one thread and is emptied after each page; nothing is written to the
shared database (its read connections stay ``query_only``).
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from webui.db import deadline as request_deadline
from webui.db.search import snippet_source as source

_local = threading.local()
# Options that say where an FTS5 table's content lives: the mirror keeps its own copy.
_CONTENT_OPTION = re.compile(
    r"""\b(content|content_rowid|contentless_delete|contentless_unindexed)\s*=\s*"""
    r"""('(?:[^']|'')*'|"(?:[^"]|"")*"|[^,\s]+)\s*(?:,|\Z)""",
    re.IGNORECASE,
)
_USING = re.compile(r"\bUSING\s+fts5\s*\((.*)\)\s*;?\s*$", re.IGNORECASE | re.DOTALL)


def mirror_declaration(create_sql: str) -> str | None:
    """The argument list of a mirror for the FTS5 table ``create_sql`` declares, or None
    when it is not an FTS5 declaration this can copy."""
    found = _USING.search(create_sql or "")
    if not found:
        return None
    args = _CONTENT_OPTION.sub("", found.group(1)).strip().rstrip(",").strip()
    return args or None


def _connection() -> sqlite3.Connection:
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.set_progress_handler(_past_deadline, 1_000)
        _local.conn = conn
        _local.tables = {}
    return conn


def _past_deadline() -> bool:
    left = request_deadline.remaining()
    return left is not None and left <= 0


def _table(conn: sqlite3.Connection, declaration: str) -> str:
    tables: dict[str, str] = _local.tables
    name = tables.get(declaration)
    if name is None:
        name = f"mirror{len(tables)}"
        conn.execute(f"CREATE VIRTUAL TABLE {name} USING fts5({declaration})")
        tables[declaration] = name
    return name


def snippets(
    declaration: str,
    docs: Sequence[dict],
    expression: str,
    marks: tuple[str, str],
    tokens: int,
    column: int = 0,
) -> dict[int, str]:
    """rowid -> snippet of ``docs`` (each {"id": rowid, <column>: text, …}, the columns in the
    table's order) for ``expression``, as snippet(table, column, *marks, '...', tokens) gives
    them on the real table; a row whose matches may be many is cut first (pieces,
    webui.db.search.snippet_source) and its snippet comes from its first piece that matches. Raises
    sqlite3.Error when the mirror cannot be made or asked."""
    if not docs:
        return {}
    conn = _connection()
    name = _table(conn, declaration)
    columns = [k for k in docs[0] if k != "id"]
    # The column whose size decides how a row is cut (-1, "the best column", cuts the first).
    key = columns[column] if 0 <= column < len(columns) else (columns[0] if columns else None)
    words = source.query_words(expression)
    light, heavy = [], []
    for d in docs:
        text = d.get(key) if key is not None else None
        if isinstance(text, str) and not source.whole(text, words):
            heavy.append(d)
        else:
            light.append(d)
    quoted = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    insert = f"INSERT INTO {name}(rowid, {quoted}) VALUES (?{', ?' * len(columns)})"
    ask = f"SELECT rowid, snippet({name}, ?, ?, ?, '...', ?) FROM {name} WHERE {name} MATCH ?"
    args = [column, marks[0], marks[1], tokens, expression]
    try:
        with _watched(conn):
            out: dict[int, str] = {}
            if light:
                conn.executemany(insert, [[d["id"], *(d[c] for c in columns)] for d in light])
                out.update(conn.execute(ask, args).fetchall())
                conn.execute(f"DELETE FROM {name}")
            for d in heavy:
                out[d["id"]] = _from_pieces(conn, name, insert, ask, args, columns, key, d, words)
            return out
    finally:
        try:
            conn.execute(f"DELETE FROM {name}")
        except sqlite3.Error:  # interrupted at the deadline: start afresh next time
            _local.conn = None
            conn.close()


# Pieces are put into the mirror this many at a time, and the mirror asked whether one
# matches, until one does: a row whose first match comes early costs little.
PIECES_PER_BATCH = 64


def _from_pieces(conn, name, insert, ask, args, columns, key, doc, words) -> str:
    """The snippet of one large or match-dense row: from its first piece that matches the
    query; failing that (the query's words lie far apart, or outside what is scanned), one
    made from the words where they appear (source.literal_snippet)."""
    text: str = doc[key]
    blank = dict.fromkeys(columns)
    found = None
    batch: list[tuple[int, str]] = []
    for offset, piece in source.pieces(text):
        batch.append((offset, piece))
        if len(batch) == PIECES_PER_BATCH:
            found = _first_match(conn, name, insert, args, columns, key, blank, batch)
            batch = []
            if found is not None:
                break
    if found is None and batch:
        found = _first_match(conn, name, insert, args, columns, key, blank, batch)
    if found is not None:
        conn.execute(f"DELETE FROM {name}")
        conn.execute(insert, [0, *({**blank, key: found}[c] for c in columns)])
        row = conn.execute(ask, args).fetchone()
        if row is not None:
            return row[1]
    marks = (args[1], args[2])
    return source.literal_snippet(text, words, marks, args[3])


def _first_match(conn, name, insert, args, columns, key, blank, batch) -> str | None:
    conn.execute(f"DELETE FROM {name}")
    conn.executemany(
        insert,
        [[n, *({**blank, key: piece}[c] for c in columns)] for n, (_, piece) in enumerate(batch)],
    )
    row = conn.execute(
        f"SELECT rowid FROM {name} WHERE {name} MATCH ? ORDER BY rowid LIMIT 1", [args[-1]]
    ).fetchone()
    return batch[row[0]][1] if row is not None else None


@contextmanager
def _watched(conn: sqlite3.Connection) -> Iterator[None]:
    """Under the request's deadline, also for a step the progress handler does not reach."""
    left = request_deadline.remaining()
    if left is None:
        yield
        return
    with request_deadline.WATCHDOG.watch(conn, time.monotonic() + max(left, 0.0) + 0.05):
        yield
