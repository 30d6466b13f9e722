"""The journal: a plain log of intents, one small file per unit of work, in the instance folder.

A unit writes its intent (what it is about to change) before its first change, durably
(written under a temporary name, fsynced, renamed, the folder fsynced); it may append marks as
it passes points that change what a replay must do (``verified``, ``arrived``), each line
fsynced; and it removes the file once its last change is done. Only the holder of the lane's
lock writes or reads entries, so every entry someone else finds was cut short: there is no
entry "in progress" to tell apart, no per-entry lock and no age rule.

Entries are read defensively: the instance folder is a place others can write to. Only
regular files are read (never a link, a FIFO or a device), at most ENTRY_CAP bytes; an entry
that cannot be read or does not parse is set aside (renamed, and named to the user), never
blocking the others or the next change. A last line cut while being appended (a kill in the
middle of a mark) is ignored: that mark was not made."""

from __future__ import annotations

import json
import os
import stat
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENTRY_CAP = 4 << 20  # bytes: an intent names at most a conversation's or a batch's sessions
SUFFIX = ".jsonl"
LEGACY_SUFFIX = ".json"  # entries of the journal before the lane (one JSON object, no marks)
KINDS = ("delete", "prune", "out", "back")


class Unreadable(Exception):
    """An entry that cannot be taken as one: why, in words."""


@dataclass
class Entry:
    path: Path
    kind: str  # delete, prune, out (to cold storage), back (from cold storage)
    sessions: dict[str, int]  # id -> newest message id it may lose (removals); 0 for moves
    started: float
    facts: dict[str, Any] = field(default_factory=dict)  # what else the kind needs
    marks: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> its facts


class Journal:
    def __init__(self, folder: Path, legacy: tuple[Path, ...] = ()):
        self.folder = folder
        # Folders of the journal this one replaced (``removals-*``): read, never written.
        self.legacy = legacy
        self._set_aside: set[Path] = set()  # could not be renamed either: skipped

    # -- writing (the lane's lock holder only) ------------------------------------------

    def write(self, kind: str, sessions: dict[str, int], **facts: Any) -> Entry:
        """The intent, durable when this returns."""
        self.folder.mkdir(parents=True, exist_ok=True)
        entry = Entry(
            self.folder / f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}-{kind}{SUFFIX}",
            kind,
            {str(k): int(v) for k, v in sessions.items()},
            time.time(),
            dict(facts),
        )
        line = {"kind": kind, "sessions": entry.sessions, "started": entry.started, **facts}
        tmp = entry.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, entry.path)
        _sync_dir(self.folder)
        return entry

    def mark(self, entry: Entry, name: str, **facts: Any) -> None:
        """A point passed, appended to the entry and fsynced."""
        fd = os.open(entry.path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.write(fd, (json.dumps({"mark": name, **facts}) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        entry.marks[name] = dict(facts)

    def close(self, entry: Entry) -> None:
        """The unit is done (or changed nothing): forgotten."""
        entry.path.unlink(missing_ok=True)
        _sync_dir(entry.path.parent)

    # -- reading (the lane's lock holder only) -------------------------------------------

    def pending(self) -> tuple[list[Entry], list[str]]:
        """The entries cut short, oldest first, and a sentence for each one set aside. A
        ``.tmp`` is an intent cut while being written: its unit changed nothing; removed."""
        found: list[tuple[str, Path]] = []
        notes: list[str] = []
        for folder in (*self.legacy, self.folder):
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            for name in names:
                path = folder / name
                if name.endswith(".tmp"):
                    try:
                        path.unlink()
                    except OSError:
                        pass
                elif path not in self._set_aside and (
                    name.endswith(SUFFIX)
                    or (folder in self.legacy and name.endswith(LEGACY_SUFFIX))
                ):
                    found.append((name, path))
        entries = []
        for _name, path in sorted(found, key=lambda f: (f[1].parent != self.folder, f[0])):
            try:
                entries.append(read(path))
            except Unreadable as why:
                notes.append(self._put_aside(path, str(why)))
        return entries, notes

    def _put_aside(self, path: Path, why: str) -> str:
        aside = path.with_name(f"{path.name}.set-aside")
        try:
            os.replace(path, aside)
            where = f"it was set aside as {aside.name}"
        except OSError:
            self._set_aside.add(path)
            where = "it is skipped"
        return (
            f"A change journal entry, {path.name}, could not be read ({why}); {where} in "
            f"{path.parent}. If a change was cut short there, the sessions it named may need "
            "another look."
        )


def read(path: Path) -> Entry:
    """One entry: a regular file of at most ENTRY_CAP bytes, its first line the intent."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise Unreadable("a link, or not readable" if exc.errno else str(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable("not a regular file")
        if st.st_size > ENTRY_CAP:
            raise Unreadable(f"larger than {ENTRY_CAP >> 20} MB")
        chunks, size = [], 0
        while size <= ENTRY_CAP and (chunk := os.read(fd, 1 << 16)):
            chunks.append(chunk)
            size += len(chunk)
        if size > ENTRY_CAP:
            raise Unreadable(f"larger than {ENTRY_CAP >> 20} MB")
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    lines = b"".join(chunks).split(b"\n")
    try:
        head = json.loads(lines[0])
        legacy = "kind" not in head and "what" in head
        kind = (
            {"return": "back"}.get(head.get("what"), head.get("what")) if legacy else head["kind"]
        )
        if kind not in KINDS:
            raise ValueError(kind)
        sessions = {str(k): int(v) for k, v in head["sessions"].items()}
        started = float(head.get("started") or 0.0)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        raise Unreadable("not an entry Logbook wrote") from None
    facts = {k: v for k, v in head.items() if k not in ("kind", "what", "sessions", "started")}
    entry = Entry(path, kind, sessions, started, facts)
    for raw in lines[1:]:
        try:
            mark = json.loads(raw)
            entry.marks[str(mark.pop("mark"))] = mark
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            continue  # a mark cut while it was appended (the last line): not made
    return entry


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
