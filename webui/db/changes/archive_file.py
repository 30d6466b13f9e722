"""The archive file a move writes to or reads from, held to be the file it checked.

Archive folders are places other programs write to (sync tools, backups, people): the file at
a path may be deleted, replaced (``os.replace``), turned into a link to the live database, or
given a trigger of someone else's between two steps of a move. So:

* cold storage writes only into a file it made itself (recorded by device and inode in the
  lane's folder) and finds, each time, to hold exactly the live file's schema as its
  ``sqlite_master`` states it (no trigger, view, index or table Hermes did not make): an
  existing file of this month's name that is not that gets a new name, and one that is a link
  (symbolic or hard) or is the live file or another store's file is refused;
* a connection is opened by path only between two ``stat`` calls that agree, so it is known to
  hold the file of that identity (``open_checked``);
* before each removal from the live file the path must still name that file, and its ``-wal``
  must hold nothing written since (``Identity.still_at``)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.request import pathname2url

from webui.db import sql
from webui.db.changes import tokenizer
from webui.db.errors import LogbookDBError

# Small tables copied whole when an archive file is created: what says which Hermes wrote it.
META_TABLES = ("schema_version", "state_meta")
# Keys of state_meta that name the live file itself (0.22: its store and its generation stamp):
# an archive is another store, and must never pass for the live file.
IDENTITY_KEYS = ("store_instance_id", "store_created_at_utc", "db_file_generation")
# FTS5 makes these beside each of its tables; their text is SQLite's own, not Hermes's.
FTS_SHADOWS = ("_data", "_idx", "_content", "_docsize", "_config")
MAX_NAMES = 50  # this month's file, then -2 … -50


class ColdStoreError(LogbookDBError):
    status = 409


class ArchiveChanged(ColdStoreError):
    """The archive's path no longer names the file the move checked (deleted, replaced, its
    -wal written by someone else)."""


@dataclass(frozen=True)
class Identity:
    dev: int
    ino: int

    @staticmethod
    def of(path: Path) -> Identity | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return Identity(st.st_dev, st.st_ino)

    def facts(self) -> dict[str, int]:
        return {"dev": self.dev, "ino": self.ino}

    def still_at(self, path: Path, wal: tuple | None = None, *, check_wal: bool = True) -> bool:
        """Does ``path`` still name this file, with its -wal as it was (``wal_state``) or
        empty?"""
        if Identity.of(path) != self or link_problem(path):
            return False
        if not check_wal:
            return True
        now = wal_state(path)
        return now is None or now[2] == 0 or now == (tuple(wal) if wal is not None else None)


def wal_state(path: Path) -> tuple[int, int, int] | None:
    """(device, inode, size) of the file's -wal, None when it has none."""
    try:
        st = os.stat(path.with_name(path.name + "-wal"))
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size)


def _uri(path: Path, mode: str) -> str:
    return "file:" + pathname2url(os.path.abspath(path)) + f"?mode={mode}"


def open_checked(path: Path, ident: Identity, mode: str = "rw") -> sqlite3.Connection:
    """A new connection on ``path`` that is known to hold the file ``ident`` (a stat before and
    after the open agree with it; never a link), or ArchiveChanged."""
    problem = link_problem(path)
    if problem or Identity.of(path) != ident:
        raise ArchiveChanged(problem or f"{path} is no longer the archive file the move checked")
    conn = sqlite3.connect(
        _uri(path, mode), uri=True, isolation_level=None, timeout=30, check_same_thread=False
    )
    if Identity.of(path) != ident:
        conn.close()
        raise ArchiveChanged(f"{path} was replaced while it was opened")
    tokenizer.prepare(conn)  # its search index runs the live file's triggers
    conn.execute("PRAGMA foreign_keys = OFF")  # per connection: the archive's rows, as they are
    return conn


def link_problem(path: Path) -> str | None:
    """Why ``path`` is not a plain file cold storage may use (a symbolic link, a hard link,
    not a regular file), or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a link (to {os.readlink(path)})"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if st.st_nlink > 1:
        return f"{path} has {st.st_nlink} names (a hard link to another file)"
    return None


# -- the schema ------------------------------------------------------------------------------


def _entries(conn: sqlite3.Connection, schema: str) -> list[tuple[str, str, str]]:
    return [
        (t, n, s)
        for t, n, s in conn.execute(
            f"SELECT type, name, sql FROM {schema}.sqlite_master WHERE sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        )
    ]


def _shape(entries: list[tuple[str, str, str]]) -> dict[tuple[str, str], str]:
    """Each object by (type, name) with its SQL, spaces folded; an FTS5 shadow table by name
    only (SQLite writes its text, which differs between versions)."""
    vtabs = {n for t, n, s in entries if t == "table" and s.upper().startswith("CREATE VIRTUAL")}
    shadows = {v + suffix for v in vtabs for suffix in FTS_SHADOWS}
    return {(t, n): "" if n in shadows else re.sub(r"\s+", " ", s.strip()) for t, n, s in entries}


def schema_problem(
    conn: sqlite3.Connection, archive: str, live: str, *, strict: bool = True
) -> str | None:
    """Why the archive's schema is not exactly the live file's (an object Hermes did not make,
    one missing, one different), or None. Both attached to ``conn``. Not ``strict``: only a
    trigger or view the live file does not have (a file of an older schema may be read from,
    and its rows deleted, as long as nothing of someone else's runs when they are)."""
    have, want = _shape(_entries(conn, archive)), _shape(_entries(conn, live))
    if not strict:
        own = sorted(k for k in have if k[0] in ("trigger", "view") and want.get(k) != have[k])
        return f"it holds a {own[0][0]} “{own[0][1]}” of its own" if own else None
    extra = sorted(set(have) - set(want))
    if extra:
        t, n = extra[0]
        return f"it holds a {t} “{n}” that the live database does not have"
    missing = sorted(set(want) - set(have))
    if missing:
        t, n = missing[0]
        return f"it lacks the {t} “{n}” of the live database"
    differ = sorted(k for k in want if have[k] != want[k])
    if differ:
        t, n = differ[0]
        return f"its {t} “{n}” is not the live database's"
    return None


def create_like(live_path: Path, path: Path) -> Identity:
    """A new archive file with the live file's schema as its ``sqlite_master`` states it:
    full-text tables first (they make their own shadow tables), then the other tables, their
    indexes and triggers, and the rows that say which schema it is. Made under a temporary
    name and linked to ``path`` only if nothing is there (never over another file). In
    rollback-journal mode: a reader leaves no ``-wal``/``-shm`` beside it."""
    src = sqlite3.connect(_uri(live_path, "ro"), uri=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:6]}.part")
    out = sqlite3.connect(tmp, isolation_level=None)
    try:
        tokenizer.prepare(out)
        entries = _entries(src, "main")
        out.execute("PRAGMA journal_mode = DELETE")
        with sql.transaction(out, immediate=False):
            for _t, _n, s in entries:
                if _t == "table" and s.upper().startswith("CREATE VIRTUAL"):
                    out.execute(s)
            made = {r[0] for r in out.execute("SELECT name FROM sqlite_master")}
            for kind in ("table", "index", "view", "trigger"):
                for t, n, s in entries:
                    if t == kind and n not in made:
                        out.execute(s)
                        made.add(n)
            for table in META_TABLES:
                if table in made:
                    cur = src.execute(f'SELECT * FROM "{table}"')
                    names = [d[0] for d in cur.description]
                    cols = ", ".join(f'"{n}"' for n in names)
                    marks = sql.in_list(len(names))
                    got = cur.fetchall()
                    if table == "state_meta" and "key" in names:
                        at = names.index("key")
                        got = [r for r in got if r[at] not in IDENTITY_KEYS]
                    out.executemany(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', got)
        out.close()
        os.link(tmp, path)  # FileExistsError: someone else's file appeared there; not ours
    finally:
        out.close()
        src.close()
        tmp.unlink(missing_ok=True)
    ident = Identity.of(path)
    if ident is None:
        raise ArchiveChanged(f"{path} vanished as it was made")
    return ident


# -- which file ------------------------------------------------------------------------------


class Made:
    """The archive files this lane made (path -> device and inode), kept in its folder: cold
    storage writes only into those."""

    def __init__(self, folder: Path):
        self.path = folder / "archives-made.json"

    def _read(self) -> dict[str, list[int]]:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
        except OSError:
            return {}
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return {}
            data = json.loads(os.read(fd, 1 << 20) or b"{}")
            return {str(k): [int(v[0]), int(v[1])] for k, v in data.items()}
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
            return {}
        finally:
            os.close(fd)

    def ours(self, path: Path) -> Identity | None:
        """The identity recorded for ``path`` if the file there now is that one."""
        found = self._read().get(os.path.abspath(path))
        ident = Identity.of(path)
        return ident if found and ident == Identity(*found) else None

    def add(self, path: Path, ident: Identity) -> None:
        data = self._read()
        data[os.path.abspath(path)] = [ident.dev, ident.ino]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{uuid.uuid4().hex[:6]}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.path)


def choose(
    first: Path, live_path: Path, made: Made, forbidden: list[Path]
) -> tuple[Path, Identity, list[str]]:
    """The file a move writes into: ``first`` (this month's ``hermes-archive-YYYY-MM.db``) if
    cold storage made it and it still has the live file's schema, else the first free or
    fitting ``…-N.db`` beside it. Returns it with why names were passed over. Raises
    ColdStoreError for a name that is a link, or the live file or another store's file."""
    folder, stem = first.parent, first.stem
    avoid = {i for i in (Identity.of(p) for p in [live_path, *forbidden]) if i is not None}
    passed: list[str] = []
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(1, MAX_NAMES + 1):
        path = first if n == 1 else folder / f"{stem}-{n}{first.suffix}"
        problem = link_problem(path)
        ident = Identity.of(path)
        if problem or (ident is not None and ident in avoid):
            raise ColdStoreError(
                f"Nothing was moved: {problem or f'{path} is the live database or a store Logbook reads'}. "
                "Cold storage writes only into a plain file it made; remove that name or give "
                "another archives folder."
            )
        if ident is None:
            try:
                ident = create_like(live_path, path)
            except FileExistsError:
                continue
            made.add(path, ident)
            return path, ident, passed
        if made.ours(path) is None:
            passed.append(f"{path.name}: not made by Logbook's cold storage")
            continue
        why = inspect(path, ident, live_path)
        if why:
            passed.append(f"{path.name}: {why}")
            continue
        return path, ident, passed
    raise ColdStoreError(f"Nothing was moved: no usable archive file name is left in {folder}.")


def inspect(path: Path, ident: Identity, live_path: Path) -> str | None:
    """Why the file is not one to write into (its schema), or None."""
    try:
        conn = open_checked(path, ident, "ro")
    except ArchiveChanged as exc:
        return exc.message
    except sqlite3.Error as exc:
        return f"it cannot be opened ({exc})"
    try:
        conn.execute("ATTACH DATABASE ? AS live", (_uri(live_path, "ro"),))
        return schema_problem(conn, "main", "live")
    except sqlite3.Error as exc:
        return f"it cannot be read ({exc})"
    finally:
        conn.close()
