"""The live file's bytes by table and index.

Where the SQLite build has the ``dbstat`` virtual table (Python's own sqlite3 does on most
platforms: compiled with SQLITE_ENABLE_DBSTAT_VTAB), each table and index is measured by it,
one at a time, in the background: dbstat walks every page of a b-tree, so one object of a
60 GB file is a full read of its pages. Each object's walk is one read with a time limit
(LOGBOOK_STORAGE_READ_LIMIT, 20 s by default); an object whose walk does not finish in it is
estimated instead, as is everything on a build without dbstat: the used pages the measured
objects do not account for, shared out by what the digest read of the messages. The page says
which figures are measured and when, and which are estimates.

What belongs to what: an index to its table (``tbl_name``), an FTS5 index's shadow tables
(``X_data``, ``X_idx``, ``X_content``, ``X_docsize``, ``X_config``) to the index ``X``.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from webui.db.errors import LogbookDBError, QueryTimeout
from webui.db.reader import Reader

READ_LIMIT_S = 20.0
RESCAN_S = 3600.0  # measured again at most this often, and only when the file changed
FTS_SHADOWS = ("_data", "_idx", "_content", "_docsize", "_config")


class Objects:
    def __init__(
        self,
        reader: Reader,
        connect: Callable[[], sqlite3.Connection],
        read_limit_s: float = READ_LIMIT_S,
    ):
        self.r = reader
        self.connect = connect  # the digest's own file
        self.read_limit_s = read_limit_s
        self._has_dbstat: bool | None = None

    # -- the catalogue ----------------------------------------------------------------------

    def catalogue(self) -> list[dict[str, Any]]:
        """Every b-tree of the file: name, type (table, index, fts), the table it belongs to."""
        rows = self.r.rows(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE type IN ('table', 'index')"
        )
        virtual = {
            r["name"]
            for r in rows
            if r["type"] == "table" and (r["sql"] or "").upper().startswith("CREATE VIRTUAL TABLE")
        }
        out = [{"name": "sqlite_schema", "type": "table", "owner": "sqlite_schema"}]
        for r in rows:
            if r["name"] in virtual:
                continue
            owner = r["tbl_name"] or r["name"]
            kind = r["type"]
            for v in virtual:
                if r["name"] in (v + s for s in FTS_SHADOWS):
                    owner, kind = v, "fts"
            out.append({"name": r["name"], "type": kind, "owner": owner})
        return out

    def has_dbstat(self) -> bool:
        if self._has_dbstat is None:
            try:
                self.r.scalar("SELECT COUNT(*) FROM dbstat WHERE name = 'sqlite_schema'")
                self._has_dbstat = True
            except (LogbookDBError, sqlite3.Error):
                self._has_dbstat = False
        return self._has_dbstat

    def pages(self) -> dict[str, int]:
        """The file's page size, pages and free pages (O(1): the header), and its WAL's size."""

        def read(conn: sqlite3.Connection) -> dict[str, int]:
            return {
                "page_size": conn.execute("PRAGMA page_size").fetchone()[0],
                "page_count": conn.execute("PRAGMA page_count").fetchone()[0],
                "freelist_count": conn.execute("PRAGMA freelist_count").fetchone()[0],
            }

        out = self.r.run(read)
        try:
            out["wal_bytes"] = os.stat(f"{self.r.opened.path}-wal").st_size
        except OSError:
            out["wal_bytes"] = 0
        try:
            out["file_bytes"] = os.stat(self.r.opened.path).st_size
        except OSError:
            out["file_bytes"] = out["page_size"] * out["page_count"]
        return out

    # -- measuring ----------------------------------------------------------------------------

    def due(self, conn: sqlite3.Connection) -> list[str]:
        """Objects to measure now: never measured, or measured over RESCAN_S ago while the
        file's pages changed since."""
        if not self.has_dbstat():
            return []
        measured = {
            r[0]: (r[1], r[2])
            for r in conn.execute("SELECT name, measured_at, method FROM main.objects")
        }
        meta = dict(conn.execute("SELECT key, value FROM main.meta WHERE key LIKE 'objects_%'"))
        pages = self.pages()
        moved = meta.get("objects_pages") != f"{pages['page_count']}/{pages['freelist_count']}"
        now = time.time()
        out = []
        for o in self.catalogue():
            at = measured.get(o["name"])
            if at is None or (moved and now - (at[0] or 0) > RESCAN_S):
                out.append(o["name"])
        return out

    def step(self) -> bool:
        """Measure the next object that is due; False when none is."""
        conn = self.connect()
        try:
            names = self.due(conn)
            if not names:
                return False
            self.measure(conn, names[0])
            if len(names) == 1:
                pages = self.pages()
                conn.execute(
                    "INSERT OR REPLACE INTO main.meta VALUES ('objects_pages', ?)",
                    (f"{pages['page_count']}/{pages['freelist_count']}",),
                )
            return True
        finally:
            conn.close()

    def measure(self, conn: sqlite3.Connection, name: str) -> None:
        began = time.monotonic()
        try:
            row = self.r.one(
                "SELECT pageno AS pages, pgsize AS bytes, payload, unused FROM dbstat "
                "WHERE name = ? AND aggregate = 1",
                [name],
                time_limit_s=self.read_limit_s,
            )
            method = "dbstat"
        except QueryTimeout:
            row, method = None, "timeout"
        took = time.monotonic() - began
        row = row or {"pages": None, "bytes": None, "payload": None, "unused": None}
        conn.execute(
            "INSERT OR REPLACE INTO main.objects (name, pages, bytes, payload, unused, method, "
            "measured_at, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                name,
                row["pages"],
                row["bytes"],
                row["payload"],
                row["unused"],
                method,
                time.time(),
                round(took, 3),
            ),  # fmt: skip
        )

    def measure_all(self) -> None:
        """Every object now (tests, and a small file)."""
        while self.step():
            pass
