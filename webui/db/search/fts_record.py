"""What Hermes's FTS5 index knows about the messages, read from its records in O(1).

FTS5 keeps, in record 1 of its ``%_data`` table (the "averages" record, rewritten on every
insert and delete), the number of rows it holds followed by per-column token totals. Hermes's
triggers put every message into the index (schemas 8, 11 and 22 alike), so that number is the
number of messages, read in one row instead of counting ten million.
"""

from __future__ import annotations

import sqlite3

from webui.db.reader import Reader

# The index tables whose records are read, in order of preference.
INDEXES = ("messages_fts", "messages_fts_trigram")


def row_count(block: bytes | None) -> int | None:
    """The number of rows from an averages record: it starts with that number as an SQLite
    varint (7 bits a byte, high bit set on all but the last; a ninth byte gives 8 bits)."""
    if not isinstance(block, (bytes, bytearray)) or not block:
        return None
    value = 0
    for i, byte in enumerate(block[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return None


def index_table(reader: Reader) -> str | None:
    """The FTS table whose record is read (None: the file has no FTS5 index)."""
    return next((n for n in INDEXES if reader.schema.has(f"{n}_data")), None)


def averages_sql(table: str | None) -> str:
    """An expression giving the averages record (NULL without an index), for a statement
    that must read it in the same snapshot as other figures."""
    return f"(SELECT block FROM {table}_data WHERE id = 1)" if table else "NULL"


def indexed_messages(reader: Reader) -> int | None:
    """The number of messages the index holds (None without one, or an unreadable record)."""
    table = index_table(reader)
    if table is None:
        return None

    def read(conn: sqlite3.Connection):
        row = conn.execute(f"SELECT {averages_sql(table)}").fetchone()
        return row[0] if row else None

    return row_count(reader.run(read))
