"""Full-text tables whose tokenizer this process cannot load, and the changes they forbid.

Hermes 0.22 adds ``messages_fts_cjk`` (``tokenize='cjk_unicode61'``) when its tokenizer loads;
its three triggers on ``messages`` then write into it on every insert, delete and update of a
message. A connection without the tokenizer cannot run those triggers: any write to ``messages``
fails ("no such tokenizer"), and Logbook must not drop the triggers (Hermes does, marking the
index stale: a change of schema Logbook never makes). So on such a file every change that
writes messages (delete, prune, cold storage both ways) is refused with that reason, before it
begins — unless the tokenizer is found where Hermes looks for it (``$HERMES_FTS5_CJK_SO``, or
``lib/libfts5_cjk.so`` in the Hermes home, the database's folder) and this Python can load
SQLite extensions: then it is loaded into every connection that writes (``prepare``). Renames,
pins and archiving touch only ``sessions`` and stay allowed."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

ENV = "HERMES_FTS5_CJK_SO"


def can_load_extensions() -> bool:
    return hasattr(sqlite3.Connection, "enable_load_extension")


def candidates(db: Path) -> list[Path]:
    """Where Hermes looks for its CJK tokenizer, for the file ``db``."""
    found = []
    configured = os.environ.get(ENV, "").strip()
    if configured:
        found.append(Path(configured).expanduser())
    found.append(Path(db).parent / "lib" / "libfts5_cjk.so")
    return found


def load(conn: sqlite3.Connection, libraries: list[Path]) -> None:
    """The libraries into ``conn`` (per connection, nothing persists)."""
    if not libraries:
        return
    conn.enable_load_extension(True)
    try:
        for lib in libraries:
            conn.load_extension(str(lib))
    finally:
        conn.enable_load_extension(False)


def _written_by_triggers(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(virtual table, its SQL) for each FTS table a trigger on ``messages`` writes into."""
    triggers = " ".join(
        s or ""
        for (s,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'"
        )
    )
    out = []
    for name, sql in conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE "
        "'CREATE VIRTUAL TABLE%'"
    ):
        if re.search(r"\bINSERT\s+INTO\s+" + re.escape(name) + r"\b", triggers, re.IGNORECASE):
            out.append((name, sql or ""))
    return out


def _unopenable(conn: sqlite3.Connection, tables: list[tuple[str, str]]) -> tuple[str, str] | None:
    for name, _sql in tables:
        try:
            conn.execute(f'SELECT 1 FROM "{name}" LIMIT 0').fetchall()
        except sqlite3.Error as exc:
            return name, str(exc)
    return None


def check(conn: sqlite3.Connection, db: Path) -> tuple[str | None, list[Path]]:
    """(why messages cannot be written from this process, None when they can; the libraries
    every writing connection must load first). ``conn``: a fresh read connection on ``db``."""
    tables = _written_by_triggers(conn)
    problem = _unopenable(conn, tables)
    if problem is None:
        return None, []
    name, error = problem
    tokenizer = re.search(r"tokenize\s*=\s*'([^']+)'", dict(tables).get(name, ""))
    which = tokenizer.group(1) if tokenizer else "its tokenizer"
    libraries = [p for p in candidates(db) if p.is_file()]
    if libraries and can_load_extensions():
        for lib in libraries:
            try:
                load(conn, [lib])
            except sqlite3.Error:
                continue
            if _unopenable(conn, tables) is None:
                return None, [lib]
    if not can_load_extensions():
        how = "this Python's SQLite cannot load extensions"
    elif libraries:
        how = f"{libraries[0]} did not load as it"
    else:
        how = f"none was found (${ENV} or lib/libfts5_cjk.so in the Hermes home)"
    return (
        f"the file's search index {name} needs the {which} tokenizer Logbook cannot load "
        f"({how}; SQLite says: {error}), and every write to messages runs its triggers"
    ), []


# Libraries a Writer of this process found it needs: loaded into every connection a change
# opens on an archive file too (its copy of the index runs the same triggers).
NEEDED: list[Path] = []


def need(libraries: list[Path]) -> None:
    for lib in libraries:
        if lib not in NEEDED:
            NEEDED.append(lib)


def prepare(conn: sqlite3.Connection) -> None:
    """Load what this process's writers need into ``conn`` (nothing when none does)."""
    if NEEDED:
        load(conn, NEEDED)
