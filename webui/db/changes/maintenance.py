"""What `hermes sessions optimize` would gain: free pages a VACUUM would give back, and how
the full-text indexes are stored. Read only: Logbook never runs VACUUM or an FTS 'optimize'
on a database a gateway may be writing (both take the write lock for as long as they run)."""

from __future__ import annotations

from typing import Any

from webui.db.reader import Reader

FTS_TABLES = ("messages_fts", "messages_fts_trigram")


class Maintenance:
    def __init__(self, reader: Reader):
        self.r = reader

    def state(self) -> dict[str, Any]:
        page_size = self.r.scalar("PRAGMA page_size") or 0
        pages = self.r.scalar("PRAGMA page_count") or 0
        free = self.r.scalar("PRAGMA freelist_count") or 0
        fts = []
        for table in FTS_TABLES:
            if self.r.schema.has(f"{table}_data"):
                # The structure record (one row, id 10) says how many segments the index is
                # split into: what FTS5's 'optimize' merges into one. Counting the blocks
                # instead would read the whole table (seconds on a million messages).
                block = self.r.scalar(f"SELECT block FROM {table}_data WHERE id = 10")
                fts.append({"table": table, "segments": fts5_segments(block)})
        return {
            "page_size": page_size,
            "pages": pages,
            "free_pages": free,
            "reclaimable_bytes": free * page_size,
            "fts": fts,
        }


def fts5_segments(block: Any) -> int | None:
    """The segment count in an FTS5 structure record (fts5_index.c, fts5StructureDecode): a
    4-byte cookie, the version-2 marker on newer SQLite, then varints nLevel, nSegment.
    None when the record is missing or does not read as one."""
    if not isinstance(block, (bytes, bytearray, memoryview)):
        return None
    data = bytes(block)
    pos = 4
    if data[4:8] == b"\xff\x00\x00\x01":
        pos = 8
    values = []
    for _ in range(2):
        value, pos = _varint(data, pos)
        if value is None:
            return None
        values.append(value)
    levels, segments = values
    return segments if 0 < levels <= 64 and 0 <= segments <= 100_000 else None


def _varint(data: bytes, pos: int) -> tuple[int | None, int]:
    """SQLite's varint: big-endian groups of 7 bits, high bit set on all but the last (the
    ninth byte, if reached, gives 8 bits)."""
    value = 0
    for i in range(9):
        if pos >= len(data):
            return None, pos
        byte = data[pos]
        pos += 1
        if i == 8:
            return (value << 8) | byte, pos
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, pos
    return value, pos
