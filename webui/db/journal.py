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
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Entry:
    path: Path
    what: str  # "delete", "prune" or "return" (a move back from cold storage)
    sessions: dict[str, int]  # id -> newest message id when the removal began
    started: float


class Journal:
    def __init__(self, folder: Path):
        self.folder = folder
        # Entries this process holds open are work in progress, not cut short: a resume
        # running beside them (another delete's) must not finish or undo them.
        self._open: set[Path] = set()

    def open(self, what: str, sessions: dict[str, int]) -> Entry:
        """Record a removal before its first batch; durable when this returns."""
        self.folder.mkdir(parents=True, exist_ok=True)
        entry = Entry(
            self.folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}.json",
            what,
            dict(sessions),
            time.time(),
        )
        tmp = entry.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"what": what, "sessions": entry.sessions, "started": entry.started}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, entry.path)
        _sync_dir(self.folder)
        self._open.add(entry.path)
        return entry

    def release(self, entry: Entry) -> None:
        """The work failed part way in this process (not killed): the entry becomes cut short,
        for the next resume to finish or undo."""
        self._open.discard(entry.path)

    def close(self, entry: Entry) -> None:
        """The removal committed whole: forget it."""
        self._open.discard(entry.path)
        try:
            entry.path.unlink()
        except FileNotFoundError:
            pass
        _sync_dir(self.folder)

    def pending(self) -> list[Entry]:
        """Removals begun and not finished, oldest first. A file that cannot be read (cut while
        being written) is a removal that never began: its batches start only after the file is
        complete."""
        if not self.folder.is_dir():
            return []
        found = []
        for path in sorted(self.folder.glob("*.json")):
            if path in self._open:
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                sessions = {str(k): int(v) for k, v in data["sessions"].items()}
                found.append(Entry(path, str(data["what"]), sessions, float(data["started"])))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                path.unlink(missing_ok=True)
        for tmp in self.folder.glob("*.tmp"):
            tmp.unlink(missing_ok=True)
        return found


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
