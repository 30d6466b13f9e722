"""The lane: units of work on one live file, one at a time, each journaled, replayed first.

``with lane.unit(kind) as unit:`` takes the file's lock (webui.db.changes.lock), replays every
entry the journal holds (webui.db.changes.journal: they were all cut short, since only the lock
holder writes entries), then runs the unit's own work: it writes its intent before its first
change (``unit.intend``), marks the points that change what a replay does (``unit.mark``), and
its entry goes when the block ends. A unit that fails after changing something keeps its entry
for the next replay; one that failed before any change loses it (there is nothing to finish,
and nothing must be finished behind the user's back). Every write to the live file goes
through the Writer, which refuses to run outside a unit."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from webui.db.changes import transcripts as transcript_files
from webui.db.changes.jobs import Job
from webui.db.changes.journal import Entry, Journal
from webui.db.changes.lock import LaneLock
from webui.db.errors import DatabaseBusy

# A change asked for by a request waits this long for the unit before it (a conversation being
# moved, a prune batch) to end; a job waits as long as it takes, saying so on its page.
REQUEST_WAIT_S = 20.0

# Called with a label at every point where a unit has changed something durable (a journal
# line, a commit to either file, a transcript file moved). Tests set it to kill the process
# there (kill -9), to prove every such point is safe; nothing else sets it.
STEP: Callable[[str], None] | None = None


def step(label: str) -> None:
    if STEP is not None:
        STEP(label)


class Unit:
    """One unit of work under way (the lane's lock held)."""

    def __init__(self, lane: Lane, kind: str, replayed: list[str]):
        self.lane = lane
        self.kind = kind
        self.replayed = replayed  # sessions the replay before it removed
        self.entry: Entry | None = None
        self.changed = False  # something durable changed since the intent

    def intend(self, sessions: dict[str, int], **facts: Any) -> Entry:
        if self.entry is not None:
            raise RuntimeError("a unit has one intent")
        self.entry = self.lane.journal.write(self.kind, sessions, **facts)
        step(f"{self.kind}: intent")
        return self.entry

    def mark(self, name: str, **facts: Any) -> None:
        assert self.entry is not None
        self.lane.journal.mark(self.entry, name, **facts)
        step(f"{self.kind}: {name}")

    def touched(self, label: str) -> None:
        """A change outside the live file (the archive, a transcript file) is durable."""
        self.changed = True
        step(f"{self.kind}: {label}")

    def finish(self) -> None:
        """Done (or nothing to do): the entry goes now."""
        if self.entry is not None:
            self.lane.journal.close(self.entry)
            self.entry = None
            step(f"{self.kind}: closed")


class Lane:
    def __init__(
        self,
        folder: Path,
        writer,
        reader,
        *,
        rules: Callable[[], Any],
        replay_entry: Callable[[Lane, Entry], tuple[str, list[str]]],
        on_change: Callable[..., None] = lambda soft=False: None,
        legacy: tuple[Path, ...] = (),
    ):
        self.folder = folder
        self.w = writer
        self.r = reader
        self.rules = rules
        self.replay_entry = replay_entry  # webui.db.changes.replaying: one entry, by its kind
        self.on_change = on_change
        self.journal = Journal(folder, legacy)
        self.lock = LaneLock(folder / "lock")
        self.recovered: list[str] = []  # sentences for the pages: what replays did
        self._local = threading.local()
        writer.on_commit.append(self._committed)
        writer.require_lane = self._require

    # -- units ----------------------------------------------------------------------------

    @contextmanager
    def unit(
        self, kind: str, *, wait_s: float | None = REQUEST_WAIT_S, job: Job | None = None
    ) -> Iterator[Unit]:
        """The lock, the replay, then the caller's work as one unit (see the module)."""
        self._take(wait_s, job)
        try:
            removed = self._replay()
            unit = Unit(self, kind, removed)
            self._local.unit = unit
            try:
                yield unit
            except BaseException:
                if unit.entry is not None and not unit.changed:
                    unit.finish()  # it changed nothing: nothing to finish later
                raise
            unit.finish()
        finally:
            self._local.unit = None
            self.lock.release()

    def replay(self, wait_s: float | None = REQUEST_WAIT_S) -> list[str]:
        """Replay what the journal holds now (at start-up): the sentences saying what was done."""
        before = len(self.recovered)
        with self.unit("replay", wait_s=wait_s):
            pass
        return self.recovered[before:]

    def held(self) -> bool:
        return self.lock.held_by_me()

    def _take(self, wait_s: float | None, job: Job | None) -> None:
        def waiting(now: bool) -> None:
            if job is not None:
                job.wait("another change to this database (one at a time)" if now else None)

        if not self.lock.acquire(wait_s, waiting):
            raise DatabaseBusy(
                "Another change to this database is under way (a delete, a prune batch or a "
                "conversation moving to or from cold storage); nothing was changed. Try again "
                "in a moment."
            )

    def _require(self) -> None:
        if not self.lock.held_by_me():
            raise RuntimeError("a write to the live file outside the lane (webui.db.changes)")

    def _committed(self) -> None:
        unit = getattr(self._local, "unit", None)
        if unit is not None:
            unit.changed = True
        step("live commit")

    # -- replay ---------------------------------------------------------------------------

    def _replay(self) -> list[str]:
        """Every entry cut short, oldest first, finished or undone (the lock is held). An
        error leaves the entry for the next try and stops the unit that wanted to begin: no
        unit runs beside work left half done."""
        entries, notes = self.journal.pending()
        removed: list[str] = []
        changed = False
        for entry in entries:
            note, gone = self.replay_entry(self, entry)
            self.journal.close(entry)
            step("replayed")
            notes.append(note)
            removed.extend(gone)
            changed = True
        if changed:
            self.on_change()
        self.recovered.extend(notes)
        return removed

    # -- what replays need of the Hermes home -------------------------------------------

    def removes_transcripts(self) -> bool:
        return bool(self.rules().removes_transcripts)

    def transcript_files(self, session_id: str) -> list[Path]:
        return transcript_files.home_files(
            self.r.opened.path, session_id, self.rules().transcripts_include_snapshot
        )

    def remove_transcripts(self, session_id: str) -> int:
        return transcript_files.remove(self.transcript_files(session_id))
