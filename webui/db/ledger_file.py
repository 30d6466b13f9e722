"""A ledger's own file (the stats rollup's, the digest's: webui.db.following), kept in the
instance folder beside state.db: named by the database's path and inode, opened with its
schema made sure of and state.db attached read-only as ``st``, its ``meta`` keys (how far it
read: version, max_id, counted, sess_rowid, sess_n, fts_base, audit_after), and the small
helpers every part of a ledger uses."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webui.db import sql as sqlh
from webui.db.schema import OpenedDatabase, readonly_uri

IN_CHUNK = 500  # ids per IN (...) list


@dataclass
class Coverage:
    seen_max_id: int
    db_max_id: int
    messages: int
    auditing: bool = False  # some rows went away unexplained: every session is being checked

    @property
    def complete(self) -> bool:
        return self.seen_max_id >= self.db_max_id and not self.auditing

    @property
    def share(self) -> float:
        """How much of the messages (by id) has been read, 0..1."""
        if self.db_max_id <= 0:
            return 1.0
        return min(1.0, self.seen_max_id / self.db_max_id)

    def as_json(self) -> dict:
        return {
            "complete": self.complete,
            "messages_seen_up_to_id": self.seen_max_id,
            "newest_message_id": self.db_max_id,
            "messages_read": self.messages,
            "auditing": self.auditing,
        }


def has_meta(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        is not None
    )


def meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM main.meta").fetchall())


def set_meta(conn: sqlite3.Connection, **values: Any) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO main.meta VALUES (?, ?)",
        [(k, str(v)) for k, v in values.items()],
    )


def chunks(ids: Sequence, size: int = IN_CHUNK) -> Iterator[list]:
    ids = list(ids)
    for i in range(0, len(ids), size):
        yield ids[i : i + size]


def pick(conn: sqlite3.Connection, ids: Iterable[str]) -> None:
    """temp.pick: the sessions the next statements work on."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS pick (session_id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM temp.pick")
    conn.executemany("INSERT OR IGNORE INTO temp.pick VALUES (?)", ((i,) for i in ids))


def open_own_file(
    path: Path, opened: OpenedDatabase, version: str, schema: str
) -> sqlite3.Connection:
    """A connection to a ledger's file, state.db attached read-only as ``st`` (so its tables
    join to sessions). A file of another version is emptied (it is only a cache); the schema
    is made sure of at every opening, so an older file gains a new index (no write lock is
    taken where everything exists)."""
    conn = sqlite3.connect(path, timeout=5, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA synchronous = NORMAL")  # a cache: a crash costs a re-read, not data
    stored = (
        conn.execute("SELECT value FROM main.meta WHERE key = 'version'").fetchone()
        if has_meta(conn)
        else None
    )
    if stored is None or stored[0] != version:
        conn.execute("PRAGMA journal_mode = WAL")  # kept by the file: readers beside the pass
        if stored is not None:
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            ).fetchall():
                conn.execute(f"DROP TABLE IF EXISTS main.{name}")
    conn.executescript(schema)
    conn.execute("ATTACH DATABASE ? AS st", (readonly_uri(opened.path, opened.immutable),))
    return conn


def instance_file(folder: Path, prefix: str, opened_path: Path, key: str) -> Path:
    """``folder/<prefix>-<key>-<inode>.sqlite``: a ledger's file for this database, named by its
    path (``key``) and inode, so a file replaced by a backup gets one of its own; the older
    ones of the same path are removed (they describe a file that is gone)."""
    try:
        inode = opened_path.stat().st_ino
    except OSError:
        inode = 0
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = Path(tempfile.gettempdir())
    path = folder / f"{prefix}-{key}-{inode}.sqlite"
    for old in [*folder.glob(f"{prefix}-{key}-*.sqlite"), folder / f"{prefix}-{key}.sqlite"]:
        if old != path:
            for leftover in (
                old,
                old.with_name(old.name + "-wal"),
                old.with_name(old.name + "-shm"),
            ):
                try:
                    leftover.unlink(missing_ok=True)
                except OSError:
                    pass
    return path


def known(conn: sqlite3.Connection, ids: set[str]) -> set[str]:
    """Of these sessions, those a ledger knows (its ``sess``)."""
    have: set[str] = set()
    for part in chunks(sorted(ids)):
        have |= {
            r[0]
            for r in conn.execute(
                f"SELECT session_id FROM main.sess WHERE session_id IN ({sqlh.in_list(len(part))})",
                part,
            )
        }
    return have


def sessions_gone(conn: sqlite3.Connection) -> list[str]:
    """The sessions a ledger knows (its ``sess``) that state.db no longer has."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT session_id FROM main.sess WHERE session_id NOT IN (SELECT id FROM st.sessions)"
        ).fetchall()
    ]
