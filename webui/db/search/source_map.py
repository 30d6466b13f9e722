"""Each message's source (its session's platform), by message id, held in memory.

A search filtered by source must know, for every hit, which source its session has. Joining
each hit to its message row and then to its session costs ~1.3 µs a hit on a million messages
(the message rows are wide and scattered over the file), and a common prefix such as
``deploy*`` has tens of thousands of hits: 60 ms to count them, and as much again to rank them
all before filtering. With this map, a hit's source is one array lookup inside SQLite (a
function the search statement calls), and only the hits that pass are ranked
(webui.db.search.scope.Scoping.by_source).

Two bytes a message (a code per source; 2 MB for a million). It is read once in the
background (one statement per source, from the sources' index to Hermes's
``(session_id, timestamp)`` index: ~0.35 s for a million messages) and then follows the file
by reading only the messages above the highest id it has seen. It never needs correcting:

* message ids are AUTOINCREMENT (never reused, given in commit order), so every id up to the
  highest seen was mapped when it was read, and a deleted message simply has no hits any more;
* a session's source is set when Hermes creates it and never changes.

A file without AUTOINCREMENT ids, or replaced under us (another inode), gets no map, or a new
one. The rows a search shows are checked against the filters in SQL all the same; the map only
decides which hits are counted and ranked.
"""

from __future__ import annotations

import array
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from webui import threads
from webui.db.errors import LogbookDBError
from webui.db.reader import Reader
from webui.db.schema import connect_readonly

NONE = 0  # no session row (an orphan): such a message passes no source filter, as in SQL
BUILD_TIME_S = 120.0
# Ids taken from SQLite at a time while building: small batches leave no freed megabytes
# behind in the heap (10,000 at a time left ~8 MB more resident after the build).
BUILD_BATCH = 1_000
# At most this many new messages are mapped by a search before it runs; more (a large import
# since the last search) and that search takes the ordinary route while the background
# catches up.
CATCH_UP_MAX = 20_000
# A database with messages up to this id is mapped by the first search that needs it (~30 ms),
# a larger one in the background while the searches take the ordinary route.
BUILD_HERE_MAX = 50_000


@dataclass(frozen=True)
class Passing:
    """A source filter on the map. ``test(id)``: does the message pass? (Ids above ``top``,
    newer than the map, pass: the caller checks those in SQL.) ``share``: the share of the
    messages that pass, so how many of a query's hits should."""

    test: Callable[[int], bool]
    top: int
    share: float


class SourceMap:
    def __init__(self, reader: Reader):
        self.r = reader
        self._lock = threading.Lock()
        self._codes = array.array("H")
        self._code_of: dict[str, int] = {}
        # Messages per code (deleted ones still counted: only for estimates).
        self._counts: Counter[int] = Counter()
        self._top = -1  # every message with id <= _top is mapped; -1: not built
        self._inode: int | None = None
        self._building = False  # a background build was started and has not ended
        self._build_lock = threading.Lock()
        self._usable: bool | None = None  # learnt on first use (needs the app's engine)

    @property
    def usable(self) -> bool:
        if self._usable is None:
            try:
                declared = self.r.scalar(
                    "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'messages'"
                )
            except LogbookDBError:
                return False
            self._usable = "AUTOINCREMENT" in (declared or "").upper()
        return self._usable

    # -- reading it -------------------------------------------------------------------------

    def ready(self) -> bool:
        return self._top >= 0

    def keep(self, sources: Iterable[str], exclude: Iterable[str]) -> Passing:
        """The test for ``source IN (sources)`` (when given) and ``source NOT IN (exclude)``,
        by message id, on the map as it is now."""
        sources, exclude = list(sources), list(exclude)
        codes, top = self._codes, self._top
        wanted = set(range(1, len(self._code_of) + 1))
        if sources:
            wanted &= {self._code_of[s] for s in sources if s in self._code_of}
        wanted -= {self._code_of[s] for s in exclude if s in self._code_of}
        frozen = frozenset(wanted)
        counts = self._counts

        def test(message_id: int) -> bool:
            if message_id > top:
                return True
            return codes[message_id] in frozen

        return Passing(test, top, sum(counts[c] for c in frozen) / max(1, counts.total()))

    # -- keeping it up to date --------------------------------------------------------------

    def current(self) -> bool:
        """Bring the map up to the file's newest message, cheaply; False when it is not
        built (a background build is started), belongs to another file, or is too far
        behind for a request to catch up (then the background does)."""
        if not self.usable:
            return False
        try:
            inode = os.stat(self.r.opened.path).st_ino
        except OSError:
            return False
        if self._top < 0 or inode != self._inode:
            newest = self.r.scalar("SELECT COALESCE(MAX(id), 0) FROM messages") or 0
            if newest > BUILD_HERE_MAX:
                self.start_build()
                return False
            try:
                self.build(wait=False)  # a small database: at once (a few ms), in the request
            except (LogbookDBError, OSError):
                return False
            if self._top < 0:
                return False
        with self._lock:
            try:
                caught_up = self._catch_up(CATCH_UP_MAX)
            except LogbookDBError:
                return False
        if caught_up is None:
            self.start_build()
        return bool(caught_up)

    def start_build(self) -> None:
        with self._lock:
            if self._building:
                return
            self._building = True
        threads.start_in_app(self._build_quietly, "source-map")

    def _build_quietly(self) -> None:
        try:
            self.build(wait=False)
        except (LogbookDBError, OSError):
            pass  # the next filtered search starts another
        finally:
            self._building = False

    def build(self, wait: bool = True) -> None:
        """Read the whole map afresh (~0.35 s for a million messages). ``wait=False``: not
        when another build is under way."""
        if not self.usable or not self._build_lock.acquire(blocking=wait):
            return
        try:
            self._build()
        finally:
            self._build_lock.release()

    def _build(self) -> None:
        inode = os.stat(self.r.opened.path).st_ino
        top = self.r.scalar("SELECT COALESCE(MAX(id), 0) FROM messages", time_limit_s=30) or 0
        codes = array.array("H", bytes(2 * (top + 1)))
        code_of: dict[str, int] = {}
        # Read after the highest id: every session holding a message up to it is there. One
        # statement per source, through the sources' index and Hermes's (session_id,
        # timestamp) index, giving ids alone (no session ids held in Python: ~2 MB less).
        sources = [
            r["source"]
            for r in self.r.rows("SELECT DISTINCT source FROM sessions", time_limit_s=30)
        ]
        if len(sources) >= 0xFFFF:
            self._usable = False  # more sources than codes: no map (never met in practice)
            return
        # On a connection of its own, closed after: its page cache (the index pages of a
        # million messages pass through it) is given back whole instead of staying in a
        # pooled connection.
        conn = connect_readonly(self.r.opened.path, immutable=self.r.opened.immutable)
        deadline = time.monotonic() + BUILD_TIME_S
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
        try:
            for source in sources:
                code = self._code(code_of, source)
                cur = conn.execute(
                    "SELECT m.id FROM sessions s CROSS JOIN messages m ON m.session_id = s.id "
                    "WHERE s.source IS ? AND m.id <= ?",
                    (source, top),
                )
                while batch := cur.fetchmany(BUILD_BATCH):
                    for (mid,) in batch:
                        codes[mid] = code
                threads.make_way()  # pages first
        except sqlite3.Error:
            return  # the next filtered search tries again
        finally:
            conn.close()
        counts = Counter(codes)
        counts.pop(NONE, None)
        with self._lock:
            self._codes, self._code_of, self._top, self._inode = codes, code_of, top, inode
            self._counts = counts
            self._catch_up(None)

    @staticmethod
    def _code(code_of: dict[str, int], source: str | None) -> int:
        if source is None:
            return NONE
        code = code_of.get(source)
        if code is None:
            code = code_of[source] = len(code_of) + 1
        return code

    def _catch_up(self, most: int | None) -> bool | None:
        """Map the messages above the highest id seen (under the lock). One statement, one
        snapshot: the ids it returns are every id up to the last of them. None when more than
        ``most`` are new (a background build catches up instead)."""
        rows = self.r.rows(
            "SELECT m.id AS id, s.source AS source FROM messages m LEFT JOIN sessions s ON "
            "s.id = m.session_id WHERE m.id > ? ORDER BY m.id"
            + ("" if most is None else f" LIMIT {most + 1}"),
            [self._top],
            time_limit_s=None if most is not None else BUILD_TIME_S,
        )
        if most is not None and len(rows) > most:
            return None
        if not rows:
            return True
        last = rows[-1]["id"]
        if len(self._code_of) + len({r["source"] for r in rows}) >= 0xFFFF:
            self._usable = False  # more sources than codes: no map (never met in practice)
            return False
        codes = self._codes
        codes.extend(bytes(2 * (last - self._top)))
        for r in rows:
            code = codes[r["id"]] = self._code(self._code_of, r["source"])
            self._counts[code] += 1
        self._top = last
        return True
