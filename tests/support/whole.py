"""Where every session is, and whether it is whole: the check behind every test of changes to
files (webui/db/changes). A session is whole in a file when the file has its row (every column
as it was, but the parent link, which a delete of its parent clears as Hermes does) and every
one of its messages, byte for byte with their types, and the file's search indexes agree with
its messages. Read straight from the files, through connections of their own."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from support.http import fts_consistent


def _conn(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.text_factory = bytes
    return conn


def sessions(db: Path) -> dict[str, tuple[str, int]]:
    """session id -> (a digest of its row and its messages, how many messages)."""
    if not Path(db).exists():
        return {}
    conn = _conn(db)
    try:
        cols = [r[1].decode() for r in conn.execute("PRAGMA table_info(sessions)")]
        mcols = [r[1].decode() for r in conn.execute("PRAGMA table_info(messages)")]
        keep = [c for c in cols if c != "parent_session_id"]
        pick = ", ".join(f'"{c}", typeof("{c}")' for c in keep)
        mpick = ", ".join(f'"{c}", typeof("{c}")' for c in mcols)
        out: dict[str, tuple[str, int]] = {}
        msgs: dict[bytes, list] = {}
        for row in conn.execute(f"SELECT session_id, {mpick} FROM messages ORDER BY id"):
            msgs.setdefault(row[0], []).append(row[1:])
        for row in conn.execute(f"SELECT id, {pick} FROM sessions"):
            mine = msgs.pop(row[0], [])
            h = hashlib.sha256(repr(row[1:]).encode())
            h.update(repr(mine).encode())
            out[row[0].decode()] = (h.hexdigest(), len(mine))
        orphans = sum(len(v) for v in msgs.values())
        assert orphans == 0, f"{db.name}: {orphans} messages owned by no session"
        return out
    finally:
        conn.close()


def assert_whole_once(
    before: dict[str, tuple[str, int]], files: list[Path], gone_ok: set[str] | None = None
) -> dict[str, str | None]:
    """Each session of ``before`` is whole in exactly one of ``files`` — or in none, if it is
    in ``gone_ok`` (deleted on purpose). Returns where each one is (the file's name, or None).
    Every file's search indexes are checked too."""
    held = {f: sessions(f) for f in files}
    for f in files:
        if Path(f).exists():
            fts_consistent(f)
    where: dict[str, str | None] = {}
    for sid, (digest, n) in before.items():
        places = [f for f in files if sid in held[f]]
        assert len(places) <= 1, f"{sid} is in {len(places)} files: {[p.name for p in places]}"
        if not places:
            assert gone_ok is not None and sid in gone_ok, f"{sid} ({n} messages) is lost"
            where[sid] = None
            continue
        got = held[places[0]][sid]
        assert got == (digest, n), (
            f"{sid} is not whole in {places[0].name}: {got[1]} of its {n} messages, "
            f"or its rows differ"
        )
        where[sid] = places[0].name
    return where
