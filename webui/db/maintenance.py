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
                # Each row of the %_data table is a segment leaf (or the structure record):
                # many rows from many small segments is what FTS5's 'optimize' merges.
                rows = self.r.scalar(f"SELECT COUNT(*) FROM {table}_data")
                fts.append({"table": table, "data_rows": rows})
        return {
            "page_size": page_size,
            "pages": pages,
            "free_pages": free,
            "reclaimable_bytes": free * page_size,
            "fts": fts,
        }
