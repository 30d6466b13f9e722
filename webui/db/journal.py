"""The removal journal: a session is removed whole or not at all, even across ``kill -9``.

Hermes deletes a session in one transaction. A long transcript cannot go that way beside a live
gateway (our transactions stay short), so its messages go in batches first and the session row
last. Before the first batch, the removal is written here (one small JSON file per removal,
fsynced, in the instance folder); after the last transaction commits, the file goes. A removal
cut short (killed, power cut, the database locked for too long) is therefore known: it is
finished on the next try and at the next start, or reported when the session changed since
(a new message arrived: then nothing more of it is removed).

Each entry maps session id -> the newest message id it had when the removal began.

A move back from cold storage ("return") is journaled the same way the other way round: its
messages enter the live file in short transactions before the session rows, so one cut short
leaves messages no session owns. The entry names the conversation; the next start takes those
messages out again (the archive still holds them whole, it loses them only after the copy in
the live file is verified)."""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: entries are not locked, a resume may meet work in progress
    fcntl = None


@dataclass
class Entry:
    path: Path
    what: str  # "delete", "prune" or "return" (a move back from cold storage)
    sessions: dict[str, int]  # id -> newest message id when the removal began
    started: float
    fd: int | None = field(default=None, repr=False)  # holds the entry's lock while worked on


# An entry's file is locked (flock, exclusive) by whoever works on it: the action that wrote
# it, or a resume finishing it. Another thread or another Logbook process on the same
# instance folder skips a locked entry (work in progress, not cut short); a kill -9 drops
# the lock with the process, so what it cut short is free for the next resume.
TMP_STALE_S = 60.0  # a .tmp older than this was cut while being written


class Journal:
    def __init__(self, folder: Path):
        self.folder = folder

    def open(self, what: str, sessions: dict[str, int]) -> Entry:
        """Record a removal before its first batch; durable when this returns, and locked by
        the caller until it is closed or released."""
        self.folder.mkdir(parents=True, exist_ok=True)
        # Named so that names sort as the entries began (to the nanosecond): the oldest first.
        stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 10**9:09d}"
        entry = Entry(
            self.folder / f"{stamp}-{uuid.uuid4().hex[:8]}.json", what, dict(sessions), time.time()
        )
        tmp = entry.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            _lock(fd, exclusive=True, wait=True)  # locked before anyone sees it under its name
            body = {"what": what, "sessions": entry.sessions, "started": entry.started}
            os.write(fd, json.dumps(body).encode())
            os.fsync(fd)
            os.replace(tmp, entry.path)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        entry.fd = fd
        _sync_dir(self.folder)
        return entry

    def release(self, entry: Entry) -> None:
        """Stop working on the entry without finishing it (a lock, an error): it is cut short
        now, for the next resume to finish or undo."""
        if entry.fd is not None:
            fd, entry.fd = entry.fd, None
            os.close(fd)

    def close(self, entry: Entry) -> None:
        """The removal committed whole: forget it."""
        try:
            entry.path.unlink(missing_ok=True)
        finally:
            self.release(entry)
        _sync_dir(self.folder)

    def candidates(self) -> list[Path]:
        """Entries on disk, oldest first, to be claimed one at a time. A ``.tmp`` nobody
        holds and older than TMP_STALE_S was cut while being written: removed."""
        if not self.folder.is_dir():
            return []
        for tmp in self.folder.glob("*.tmp"):
            try:
                if time.time() - tmp.stat().st_mtime <= TMP_STALE_S:
                    continue
                fd = os.open(tmp, os.O_RDONLY)
                try:
                    if _lock(fd, exclusive=True, wait=False):
                        tmp.unlink(missing_ok=True)
                finally:
                    os.close(fd)
            except OSError:
                pass
        return sorted(self.folder.glob("*.json"))

    def claim(self, path: Path) -> Entry | None:
        """The entry at ``path`` locked for the caller (close or release it), or None when
        someone else holds it or it is gone. One that cannot be read (cut while being
        written) is a removal that never began: removed."""
        return _claim(path)

    def others_of(self, sessions: set[str], own: Entry) -> list[Path]:
        """Entries other than ``own`` that name any of ``sessions``, oldest first, read
        without their locks."""
        found = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            if path == own.path:
                continue
            try:
                if sessions & set(json.loads(path.read_bytes())["sessions"]):
                    found.append(path)
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return found

    def held_sessions(self, mine: list[Entry]) -> set[str]:
        """The sessions of entries someone is working on right now (locked), other than the
        caller's own ``mine``."""
        skip = {e.path for e in mine}
        held: set[str] = set()
        for path in self.folder.glob("*.json") if self.folder.is_dir() else []:
            if path in skip:
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                if not _lock(fd, exclusive=False, wait=False):
                    held.update(json.loads(_read_all(fd))["sessions"])
            except (OSError, ValueError, KeyError, TypeError):
                pass
            finally:
                os.close(fd)
        return held


def _claim(path: Path) -> Entry | None:
    """The entry at ``path``, locked for the caller; None when someone else holds it, it is
    gone, or it cannot be read (then it is removed)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        if not _lock(fd, exclusive=True, wait=False) or not path.exists():
            # Held elsewhere, or closed by its owner between our open and our lock.
            os.close(fd)
            return None
        try:
            data = json.loads(_read_all(fd))
            sessions = {str(k): int(v) for k, v in data["sessions"].items()}
            return Entry(path, str(data["what"]), sessions, float(data["started"]), fd)
        except (ValueError, KeyError, TypeError, AttributeError):
            path.unlink(missing_ok=True)
            os.close(fd)
            return None
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _lock(fd: int, exclusive: bool, wait: bool) -> bool:
    """flock ``fd``; False when someone else holds it and ``wait`` is off."""
    if fcntl is None:
        return True
    flags = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB)
    try:
        fcntl.flock(fd, flags)
    except BlockingIOError:
        return False
    return True


def _sync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
