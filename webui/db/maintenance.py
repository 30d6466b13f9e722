"""What `hermes sessions optimize` would gain: free pages a VACUUM would give back, and how
the full-text indexes are stored. Read only: Logbook never runs VACUUM or an FTS 'optimize'
on a database a gateway may be writing (both take the write lock for as long as they run)."""

from __future__ import annotations

import time
from typing import Any

from webui.db.reader import Reader

FTS_TABLES = ("messages_fts", "messages_fts_trigram")


# Counting an FTS table's blocks reads the whole table (0.2 s on a million messages): shared
# this long. The page and free-page counts are read every time (they cost nothing).
FTS_TTL_S = 300.0


class Maintenance:
    def __init__(self, reader: Reader):
        self.r = reader
        self._fts: tuple[float, list[dict[str, Any]]] | None = None

    def state(self) -> dict[str, Any]:
        page_size = self.r.scalar("PRAGMA page_size") or 0
        pages = self.r.scalar("PRAGMA page_count") or 0
        free = self.r.scalar("PRAGMA freelist_count") or 0
        return {
            "page_size": page_size,
            "pages": pages,
            "free_pages": free,
            "reclaimable_bytes": free * page_size,
            "fts": self._fts_blocks(),
        }

    def _fts_blocks(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        if self._fts and now - self._fts[0] < FTS_TTL_S:
            return self._fts[1]
        fts = []
        for table in FTS_TABLES:
            if self.r.schema.has(f"{table}_data"):
                # Each row of the %_data table is a segment leaf (or the structure record):
                # many rows from many small segments is what FTS5's 'optimize' merges.
                rows = self.r.scalar(f"SELECT COUNT(*) FROM {table}_data")
                fts.append({"table": table, "data_rows": rows})
        self._fts = (now, fts)
        return fts
