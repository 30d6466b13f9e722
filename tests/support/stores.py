"""Building the files of a history of several stores for tests: Hermes's schema-22 files
(empty ones from the generator, which writes Hermes 0.19's exact schema with its FTS
triggers), sessions written into them, a real file split between stores the way cold
storage splits it (whole rows, message ids kept), and damage done to one."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

_BLANK: dict[int, Path] = {}


def blank(path: Path, folder: Path, schema: int = 22) -> Path:
    """An empty Hermes database of this schema at ``path`` (a copy of one made once)."""
    if schema not in _BLANK or not _BLANK[schema].exists():
        from webui.demo import generate

        folder.mkdir(parents=True, exist_ok=True)
        made = folder / f"blank-{schema}.db"
        if not made.exists():
            generate(made, sessions=0, schema=schema)
        _checkpoint(made)
        _BLANK[schema] = made
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_BLANK[schema], path)
    return path


def _checkpoint(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def put_sessions(db: Path, rows: list[dict], messages: int = 2) -> None:
    """Sessions (dicts of columns) and ``messages`` messages each (a user question and an
    answer, then more of the same), through Hermes's own FTS triggers."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            for r in rows:
                cols = list(r)
                conn.execute(
                    f"INSERT INTO sessions ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    [r[c] for c in cols],
                )
                for i in range(messages):
                    conn.execute(
                        "INSERT INTO messages (session_id, role, content, timestamp) "
                        "VALUES (?, ?, ?, ?)",
                        (
                            r["id"],
                            "user" if i % 2 == 0 else "assistant",
                            f"message {i} of {r['id']} about {r.get('title') or 'things'}",
                            r["started_at"] + i,
                        ),
                    )
                conn.execute(
                    "UPDATE sessions SET message_count = ? WHERE id = ?", (messages, r["id"])
                )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def keep_only(db: Path, keep: set[str]) -> None:
    """Remove every session (and its messages, through Hermes's triggers) but ``keep``."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        with conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM sessions")]
            gone = [i for i in ids if i not in keep]
            for i in range(0, len(gone), 500):
                chunk = gone[i : i + 500]
                marks = ",".join("?" * len(chunk))
                conn.execute(f"DELETE FROM messages WHERE session_id IN ({marks})", chunk)
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
                if "session_model_usage" in tables:
                    conn.execute(
                        f"DELETE FROM session_model_usage WHERE session_id IN ({marks})", chunk
                    )
                conn.execute(f"DELETE FROM sessions WHERE id IN ({marks})", chunk)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def split(src: Path, parts: dict[Path, set[str]]) -> None:
    """Copies of ``src``, each keeping only its sessions (the rest of the file's rows gone as
    cold storage removes them: the message ids, and so the search index's rowids, kept)."""
    for path, ids in parts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, path)
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        keep_only(path, ids)


def damage_overflow(db: Path, table: str = "messages", every: int = 5) -> int:
    """A long tool result (30 KB) added to every ``every``-th session, then the table's
    overflow pages (where long values spill) overwritten with garbage: the file opens and its
    catalogue, counts and timestamps read, but those sessions' messages cannot. Returns the
    number of pages damaged."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            sessions = [r[0] for r in conn.execute("SELECT id FROM sessions ORDER BY id")]
            for sid in sessions[::every]:
                conn.execute(
                    "INSERT INTO messages (session_id, role, content, timestamp) VALUES "
                    "(?, 'tool', ?, (SELECT COALESCE(MAX(timestamp), 0) + 1 FROM messages "
                    "WHERE session_id = ?))",
                    (sid, "log line of a long tool result\n" * 1000, sid),
                )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [
            r[0]
            for r in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'overflow'", (table,)
            )
        ]
    finally:
        conn.close()
    with open(db, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * page_size)
            fh.write(b"\xff\x13" * (page_size // 2))
    return len(pages)


def ids(db: Path, where: str = "1", params=()) -> set[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute(f"SELECT id FROM sessions WHERE {where}", params)}
    finally:
        conn.close()
