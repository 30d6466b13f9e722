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
from collections.abc import Sequence

from webui.db import deadline as request_deadline

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
    them on the real table. Raises sqlite3.Error when the mirror cannot be made or asked."""
    if not docs:
        return {}
    conn = _connection()
    name = _table(conn, declaration)
    columns = [k for k in docs[0] if k != "id"]
    quoted = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    try:
        conn.executemany(
            f"INSERT INTO {name}(rowid, {quoted}) VALUES (?{', ?' * len(columns)})",
            [[d["id"], *(d[c] for c in columns)] for d in docs],
        )
        return dict(
            conn.execute(
                f"SELECT rowid, snippet({name}, ?, ?, ?, '...', ?) FROM {name} "
                f"WHERE {name} MATCH ?",
                [column, marks[0], marks[1], tokens, expression],
            ).fetchall()
        )
    finally:
        try:
            conn.execute(f"DELETE FROM {name}")
        except sqlite3.Error:  # interrupted at the deadline: start afresh next time
            _local.conn = None
            conn.close()
