"""Every value Logbook keeps between requests, and the one set of rules for keeping it.

Nothing else in the house holds a time-to-live, a size bound or an invalidation rule: each
cache is declared here's way, in one line that says what it keeps and why that is safe.

The vocabulary:

* a value is kept under a **mark**, what it depends on: SQLite's ``data_version`` of its
  store (moves whenever anyone else commits to the file, Hermes or Logbook's writer), the
  sessions token (how many sessions and the newest start: moves when one appears or goes),
  the input text itself (rendered Markdown: text never changes meaning), or nothing;
* a **Rule** says how late a value may be: ``fresh_s`` (served as is while its mark has not
  moved; ``None``: until it moves), ``lag_s`` (still served as is after its mark moved: the
  figures the README says may lag, by that much), ``stale_s`` (up to this age a value no
  longer fresh is served while **one background refresh** works out the next; with
  ``stale_if_moved`` false only while its mark has not moved) and ``keep_if`` (a partial
  answer is not kept);
* a **Keeper** holds the values of one store: Logbook's own changes (``changed``) drop them
  all, at once or, while a prune runs (``soft``), after its batches settle; a store that goes
  away (``forget``) takes them with it; other stores' values stay;
* a **Shelf** is a small bounded map of values under their marks (a value is good while its
  mark is the current one), registered with its store's Keeper so the same two events clear
  it; **Sized** and **by_text** keep rendered text by the input, bounded by characters;
  **by_args** keeps a pure function's answers; **Every** is a clock for folder rescans.

Bounds: a Keeper holds at most ``MAX_SLOTS`` values, a Shelf its ``max_items``, a Sized its
characters; a value larger than an eighth of a Sized is computed and not kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from cachetools import LRUCache

from webui import threads

T = TypeVar("T")

MAX_SLOTS = 256
# Background refreshes running at once per store (each is typically one scan of a table).
REFRESHERS = 2
# After a soft change (a prune's batch), values whose mark moved are served this long after
# the last batch, while they are younger than SOFT_STALE_S.
SOFT_S = 3.0
SOFT_STALE_S = 10.0
# Values kept across restarts are written at most this often, and this many slots a run.
DISK_EVERY_S = 60.0
DISK_SLOTS = 48


def _log(message: str, *args: Any, error: bool = False) -> None:
    from flask import current_app, has_app_context

    if has_app_context():
        (current_app.logger.exception if error else current_app.logger.warning)(message, *args)


@dataclass(frozen=True)
class Rule:
    """How late a kept value may be (see the module's docstring)."""

    fresh_s: float | None = None
    lag_s: float = 0.0
    stale_s: float = 0.0
    stale_if_moved: bool = False
    keep_if: Callable[[Any], bool] | None = None


class Shelf:
    """Values under their marks, at most ``max_items`` (least recently used go first); for
    use from any thread. ``get`` answers only a value kept under the current mark."""

    def __init__(self, max_items: int, identity: bool = False):
        self.max_items = max_items
        # Marks compared by identity: a value derived from another kept object (its mark).
        self._same = (lambda a, b: a is b) if identity else (lambda a, b: a == b)
        self._items: OrderedDict[Any, tuple[Any, Any, float]] = OrderedDict()
        self._lock = threading.Lock()

    def find(self, key: Any, max_age_s: float | None = None) -> tuple[Any, Any, float] | None:
        """(mark, value, when kept) whatever the mark, for callers that bring an old value
        up to date themselves; None when absent or older than ``max_age_s``."""
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            if max_age_s is not None and time.monotonic() - hit[2] > max_age_s:
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return hit

    def get(self, key: Any, mark: Any = None) -> Any:
        hit = self.find(key)
        return hit[1] if hit is not None and self._same(hit[0], mark) else None

    def put(self, key: Any, value: Any, mark: Any = None, when: float | None = None) -> Any:
        """Keep ``value`` under ``mark`` (``when``: the time it was made, when it is an old
        value brought up to date rather than made afresh)."""
        with self._lock:
            self._items[key] = (mark, value, time.monotonic() if when is None else when)
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)
        return value

    def get_or(self, key: Any, mark: Any, compute: Callable[[], T], keep: bool = True) -> T:
        """The value kept for ``key`` under ``mark``, else ``compute()`` kept under it
        (``keep`` false: an answer from a file whose changes cannot be seen, not kept)."""
        hit = self.find(key)
        if hit is not None and self._same(hit[0], mark):
            return hit[1]
        value = compute()
        return self.put(key, value, mark) if keep else value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


class Keeper:
    """The kept values of one store (a database file Logbook reads).

    ``remaining()``: seconds left of the current request's deadline (None outside one): a
    request waits at most that long for another to finish the same value. ``disk_dir`` and
    ``persisted(slot)``: the few values a first page waits for, kept across restarts as well
    (served as aged ones, for the same mark, while a fresh one is worked out)."""

    def __init__(
        self,
        remaining: Callable[[], float | None] = lambda: None,
        disk_dir: Path | None = None,
        persisted: Callable[[str], bool] = lambda slot: False,
    ):
        self.remaining = remaining
        self.disk_dir = disk_dir
        self.persisted = persisted
        self._slots: dict[str, tuple[float, Any, Any, int]] = {}  # slot: (when, mark, value, gen)
        self._gen = 0  # Logbook's own changes so far
        self._soft_until = 0.0
        self._lock = threading.Lock()
        self._flights: dict[str, threading.Lock] = {}
        self._refreshing: set[str] = set()
        self._shelves: list[tuple[Shelf, bool]] = []
        self._named: dict[str, Shelf] = {}
        self._disk_read: set[str] = set()
        self._disk_written: dict[str, float] = {}
        self.forgotten = False

    # -- the two events ---------------------------------------------------------------------

    def changed(self, soft: bool = False) -> None:
        """One of Logbook's own writes to this store: nothing kept may outlive it. ``soft``:
        one batch of a prune still running; values whose mark moved are then served for
        SOFT_S after the last batch (up to SOFT_STALE_S old) while one background refresh
        works them out, instead of every request rescanning after every batch. Shelves
        declared ``soft_clear`` are cleared by a soft change too."""
        for shelf, soft_clear in self._shelves:
            if soft_clear or not soft:
                shelf.clear()
        if soft:
            self._soft_until = time.monotonic() + SOFT_S
            return
        self._soft_until = 0.0
        with self._lock:
            self._gen += 1
            self._slots.clear()

    def forget(self) -> None:
        """The store went away (its file removed, replaced or no longer configured)."""
        self.forgotten = True
        self.changed()

    def shelf(
        self,
        max_items: int,
        soft_clear: bool = False,
        identity: bool = False,
        name: str | None = None,
    ) -> Shelf:
        """A Shelf of this store's, cleared by its changes and when it goes away. ``name``:
        the same shelf for every caller naming it (made at the first)."""
        with self._lock:
            if name is not None and name in self._named:
                return self._named[name]
            shelf = Shelf(max_items, identity)
            self._shelves.append((shelf, soft_clear))
            if name is not None:
                self._named[name] = shelf
        return shelf

    # -- values under a rule ---------------------------------------------------------------

    def recall(self, slot: str) -> Any:
        hit = self._slots.get(slot)
        return hit[2] if hit else None

    def held(self, prefix: str = "") -> dict[str, Any]:
        """The values held now in slots named ``prefix``... (for tests and diagnostics)."""
        return {k: v[2] for k, v in list(self._slots.items()) if k.startswith(prefix)}

    def get(self, slot: str, mark: Any, compute: Callable[[], T], rule: Rule) -> T:
        """``compute()``, kept in ``slot`` under ``mark`` and served as ``rule`` allows.

        A value neither fresh nor servable stale is computed by the request itself; requests
        that find the same slot already being computed get the previous value while it is
        younger than ``rule.stale_s`` (else wait, within their deadline, for that one
        answer) instead of computing alongside it."""
        now = time.monotonic()
        hit = self._slots.get(slot) or self._from_disk(slot, mark, rule)
        if hit:
            age, same = now - hit[0], hit[1] == mark
            fresh = same and (rule.fresh_s is None or age < rule.fresh_s)
            if fresh or age < rule.lag_s:
                return hit[2]
            soft = now < self._soft_until and age < SOFT_STALE_S
            if soft or (age < rule.stale_s and (same or rule.stale_if_moved)):
                self._refresh_later(slot, mark, compute, rule)
                return hit[2]
        with self._lock:
            if len(self._flights) > 512:
                self._flights = {k: v for k, v in self._flights.items() if v.locked()}
            flight = self._flights.setdefault(slot, threading.Lock())
        if hit and flight.locked() and now - hit[0] < rule.stale_s:
            return hit[2]  # another request is working it out: the one computing pays
        left = self.remaining()
        # Past the deadline, compute regardless: its queries then stop at once.
        waited = time.monotonic()
        got = flight.acquire(timeout=max(left, 0.0) if left is not None else -1)
        waited = time.monotonic() - waited
        if waited > 1.0:
            _log("waited %.1f s for another request to work out %s", waited, slot[:60])
        try:
            hit = self._slots.get(slot)
            if got and hit and hit[1] == mark and hit[0] >= now:
                return hit[2]  # computed by the request this one waited for
            gen = self._gen
            value = compute()
            self._put(slot, mark, value, rule, gen)
            return value
        finally:
            if got:
                flight.release()

    def _put(self, slot: str, mark: Any, value: Any, rule: Rule, gen: int) -> None:
        if rule.keep_if is not None and not rule.keep_if(value):
            return
        with self._lock:
            if gen != self._gen:
                return  # computed across one of Logbook's own changes: not kept
            if len(self._slots) >= MAX_SLOTS and slot not in self._slots:
                self._slots.clear()
            self._slots[slot] = (time.monotonic(), mark, value, gen)
        self._to_disk(slot, mark, value)

    def _refresh_later(self, slot: str, mark: Any, compute: Callable, rule: Rule) -> None:
        """One thread per slot, at most REFRESHERS at once: when all are busy the old value
        is served again and a later request asks anew."""
        with self._lock:
            if slot in self._refreshing or len(self._refreshing) >= REFRESHERS:
                return
            self._refreshing.add(slot)
            gen = self._gen

        def work() -> None:
            try:
                self._put(slot, mark, compute(), rule, gen)
            except Exception:  # noqa: BLE001 - the next request computes it itself
                self._slots.pop(slot, None)
                _log("refreshing %s failed", slot[:60], error=True)
            finally:
                with self._lock:
                    self._refreshing.discard(slot)

        # In the app's context: without it every refresh failed and the next request
        # recounted in line.
        threads.start_in_app(work, f"refresh-{slot[:20]}")

    # -- across restarts ------------------------------------------------------------------

    def _disk_path(self, slot: str) -> Path | None:
        if self.disk_dir is None or not self.persisted(slot):
            return None
        # Slots are named by statements and their parameters: a digest names their file.
        return self.disk_dir / (hashlib.sha1(slot.encode()).hexdigest()[:20] + ".json")

    def _from_disk(self, slot: str, mark: Any, rule: Rule):
        path = self._disk_path(slot)
        if path is None or slot in self._disk_read:
            return None
        self._disk_read.add(slot)  # once per slot and run: later ones are in memory
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("key") != json.loads(json.dumps(mark)):
            return None
        # Served as a value just past fresh: answered at once, refreshed behind.
        aged = (rule.fresh_s or 0.0) + 0.001
        return (time.monotonic() - aged, mark, saved.get("value"), self._gen)

    def _to_disk(self, slot: str, mark: Any, value: Any) -> None:
        path = self._disk_path(slot)
        now = time.monotonic()
        if path is None or now - self._disk_written.get(slot, -DISK_EVERY_S) < DISK_EVERY_S:
            return
        if slot not in self._disk_written and len(self._disk_written) >= DISK_SLOTS:
            return  # the first few dozen of a run: a page's own, not every filter ever asked
        self._disk_written[slot] = now
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".part")
            tmp.write_text(json.dumps({"key": mark, "value": value}), encoding="utf-8")
            tmp.replace(path)
        except (OSError, TypeError, ValueError):
            pass  # a full disk or a value JSON cannot hold: kept in memory only


# -- rendered text, kept by its input ---------------------------------------------------------


class Sized(LRUCache):
    """Least recently used values bounded by the size of what they hold (``getsizeof``), for
    use from any thread; a value larger than an eighth of it is not kept, so one huge value
    cannot push everything else out. Keyed by the input a rendering was made from, which
    never changes meaning: nothing else invalidates it."""

    def __init__(self, maxsize: int, getsizeof: Callable[[Any], int] = len):
        super().__init__(maxsize=maxsize, getsizeof=getsizeof)
        self._lock = threading.Lock()

    def find(self, key: Any) -> Any:
        with self._lock:
            return self.get(key)

    def keep(self, key: Any, value: Any) -> None:
        if self.getsizeof(value) <= self.maxsize // 8:
            with self._lock:
                self[key] = value


def by_text(max_chars: int, cost: Callable[[Any], int] = len):
    """Memoise ``fn(text)`` by ``text``, at most ``max_chars`` characters held
    (``len(text) + cost(result)`` each)."""

    def decorate(fn: Callable[[str], T]) -> Callable[[str], T]:
        cache = Sized(max_chars, getsizeof=lambda entry: entry[0])
        largest = max_chars // 8

        @functools.wraps(fn)
        def run(text: str) -> T:
            if not isinstance(text, str) or len(text) > largest:
                return fn(text)
            hit = cache.find(text)
            if hit is not None:
                return hit[1]
            value = fn(text)
            cache.keep(text, (len(text) + cost(value), value))
            return value

        run.cache = cache  # type: ignore[attr-defined]
        return run

    return decorate


def by_args(max_items: int):
    """Memoise a pure function of hashable arguments (the same arguments always give the
    same answer), at most ``max_items`` answers."""
    return functools.lru_cache(maxsize=max_items)


class Every:
    """A clock for work repeated at most every ``seconds`` (a folder's rescan): ``due()``
    says whether it is time, and counts the work as done from then."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._last = -float("inf")
        self._lock = threading.Lock()

    def due(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if now - self._last > self.seconds:
                self._last = now
                return True
            return False

    def now(self) -> None:
        """Make the next ``due()`` true (something changed that a rescan must see)."""
        with self._lock:
            self._last = -float("inf")
