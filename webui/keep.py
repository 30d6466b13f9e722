"""The caches that hold every value Logbook keeps between requests, built on ``cachetools``,
and the policies they serve them by. What each one holds, how long it may lag and what drops
it: webui.keep_inventory (mirrored by the README's "What may lag" table).

The terms are the field's:

* a value is cached under a **key** and a **version**, its validator (as an HTTP ETag is):
  SQLite's ``data_version`` of its store (it moves whenever anyone else commits to the file),
  the sessions token (how many sessions and the newest start), a file's signature, or none;
* a **Policy** says how long a value may be served: ``ttl`` (fresh while its version stands
  and it is younger than this; ``None``: until the version moves), ``max_lag`` (served as is
  even after its version moved, this long: the figures the README says may lag),
  ``stale_while_revalidate`` (up to this age a value no longer fresh is served at once while
  **one background refresh** works out the next, RFC 5861's rule; with ``stale_if_changed``
  false only while its version stands) and ``cacheable`` (a partial answer is not cached);
* a **StoreCache** holds one store's values (an LRU bounded by ``MAXSIZE`` entries, evicting
  one at a time, each entry expiring when no policy can serve it any more). Logbook's own
  changes **invalidate** it: a new generation, every value dropped at once, and a value
  computed across the change is not cached. While a prune runs, each batch is a **soft
  purge** (Varnish's word): values whose version moved are served for a short grace while
  one refresh works them out. A store that goes away **closes** its cache;
* a **VersionedCache** is a small LRU of values with their versions (a hit is a value cached
  under the version asked for), attached to its store's cache so the same events clear it;
* a **SizedCache** is an LRU bounded by the size of what it holds (``getsizeof``), with an
  admission limit: a value over an eighth of it is not cached, so one huge rendering cannot
  push everything else out. ``memoize_text`` memoises a rendering by its input text (which
  never changes meaning: nothing invalidates it) and ``memoize`` a pure function;
* a **Throttle** says when a periodic task (a folder's rescan) is due.

Each object takes its **clock** (``time.monotonic`` by default; tests pass their own) and a
StoreCache the way it **starts** its background refreshes; no value leaves a cache but by
expiry, eviction of the least recently used one, invalidation or closing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from cachetools import LRUCache, TLRUCache, TTLCache

from webui import threads

T = TypeVar("T")
Clock = Callable[[], float]

# Entries of one store's cache: past it, the least recently used one goes (never all at once).
MAXSIZE = 256
# Background refreshes running at once per store (each is typically one scan of a table).
REFRESHERS = 2
# After a soft purge (a prune's batch), values whose version moved are served this long after
# the last batch, while they are younger than SOFT_MAX_AGE_S.
SOFT_GRACE_S = 3.0
SOFT_MAX_AGE_S = 10.0
# Values persisted across restarts are written at most this often, and this many keys a run.
PERSIST_EVERY_S = 60.0
PERSIST_KEYS = 48
# Single-flight locks held per store before the idle ones are let go.
FLIGHTS = 512


def _log(message: str, *args: Any, error: bool = False) -> None:
    from flask import current_app, has_app_context

    if has_app_context():
        (current_app.logger.exception if error else current_app.logger.warning)(message, *args)


@dataclass(frozen=True)
class Policy:
    """How long a cached value may be served (see the module's docstring)."""

    ttl: float | None = None
    max_lag: float = 0.0
    stale_while_revalidate: float = 0.0
    stale_if_changed: bool = False
    cacheable: Callable[[Any], bool] | None = None

    def lifetime(self) -> float:
        """Seconds after which no rule of this policy (nor a soft purge's grace) serves it."""
        ttl = math.inf if self.ttl is None else self.ttl
        return max(ttl, self.max_lag, self.stale_while_revalidate, SOFT_MAX_AGE_S)


# Figures that read every session row (counts, menus, facets), under the sessions token:
# in-place edits by others (a title, an end) show within ``ttl``; one up to
# ``stale_while_revalidate`` old is served while one background refresh works out the next.
SHARED_FIGURES = Policy(ttl=10.0, stale_while_revalidate=60.0)
# Hermes's compression chains: a new session or an end moves the sessions token at once.
CHAINS = Policy(ttl=5.0, stale_while_revalidate=60.0)
# The ids of hidden and rewound messages a search leaves out of its total.
HIDDEN_IDS = Policy(ttl=10.0, stale_while_revalidate=60.0)
# The sizes behind an export's estimate: a sample's averages.
EXPORT_SIZES = Policy(ttl=300.0)


def reused(config: Mapping[str, Any], cacheable: Callable[[Any], bool] | None = None) -> Policy:
    """The statistics' policy (and the digest's pages'), under the file's data_version:
    reused as is for LOGBOOK_STATS_REUSE_S even beside a writing gateway, then served stale up
    to LOGBOOK_STATS_STALE_S while one background thread works out the next."""
    reuse_s = float(config["LOGBOOK_STATS_REUSE_S"])
    return Policy(
        max_lag=reuse_s,
        stale_while_revalidate=float(config["LOGBOOK_STATS_STALE_S"]) if reuse_s > 0 else 0.0,
        stale_if_changed=True,
        cacheable=cacheable,
    )


class Versioned(NamedTuple):
    version: Any
    value: Any
    created: float


class VersionedCache:
    """Values with their versions, at most ``maxsize`` (least recently used go first); for use
    from any thread. ``get`` answers only a value cached under the version asked for
    (``identity``: versions compared with ``is``, for values derived from another cached
    object)."""

    def __init__(self, maxsize: int, identity: bool = False, clock: Clock = time.monotonic):
        self.maxsize = maxsize
        self.clock = clock
        self._same = (lambda a, b: a is b) if identity else (lambda a, b: a == b)
        self._lru: LRUCache = LRUCache(maxsize=maxsize)
        self._lock = threading.Lock()

    def peek(self, key: Any, max_age: float | None = None) -> Versioned | None:
        """The entry whatever its version (for callers that bring an old value up to date
        themselves); None when absent or older than ``max_age``."""
        with self._lock:
            hit = self._lru.get(key)
            if hit is not None and max_age is not None and self.clock() - hit.created > max_age:
                del self._lru[key]
                return None
            return hit

    def get(self, key: Any, version: Any = None) -> Any:
        hit = self.peek(key)
        return hit.value if hit is not None and self._same(hit.version, version) else None

    def set(self, key: Any, value: Any, version: Any = None, created: float | None = None) -> Any:
        """Cache ``value`` under ``version`` (``created``: when it was made, for an old value
        brought up to date rather than made afresh)."""
        with self._lock:
            self._lru[key] = Versioned(version, value, self.clock() if created is None else created)
        return value

    def get_or_set(self, key: Any, version: Any, compute: Callable[[], T], cacheable=True) -> T:
        """The value cached for ``key`` under ``version``, else ``compute()`` cached under it
        (``cacheable`` false: an answer from a file whose changes cannot be seen)."""
        hit = self.peek(key)
        if hit is not None and self._same(hit.version, version):
            return hit.value
        value = compute()
        return self.set(key, value, version) if cacheable else value

    def clear(self) -> None:
        with self._lock:
            self._lru.clear()

    def __len__(self) -> int:
        return len(self._lru)


class StoreCache:
    """The cached values of one store (a database file Logbook reads).

    ``deadline_left()``: seconds left of the current request's deadline (None outside one): a
    request waits at most that long for another computing the same key (single flight).
    ``start(work, name)``: how a background refresh is started. ``persist_dir`` and
    ``persisted(key)``: the few values a first page waits for, kept across restarts as well
    (served as stale ones, for the same version, while a fresh one is worked out)."""

    def __init__(
        self,
        deadline_left: Callable[[], float | None] = lambda: None,
        persist_dir: Path | None = None,
        persisted: Callable[[str], bool] = lambda key: False,
        clock: Clock = time.monotonic,
        start: Callable[[Callable[[], None], str], Any] = threads.start_in_app,
        maxsize: int = MAXSIZE,
    ):
        self.deadline_left = deadline_left
        self.persist_dir = persist_dir
        self.persisted = persisted
        self.clock = clock
        self.start = start
        # Entry: (created, version, value, policy); each expires when its policy lets go.
        self._lru: TLRUCache = TLRUCache(maxsize, ttu=self._expires, timer=clock)
        self.generation = 0  # Logbook's own changes so far
        self._soft_until = -math.inf
        self._lock = threading.Lock()
        self._flights: dict[str, threading.Lock] = {}
        self._refreshing: set[str] = set()
        self._attached: list[tuple[VersionedCache, bool]] = []
        self._named: dict[str, VersionedCache] = {}
        self._read_from_disk: set[str] = set()
        self._written_to_disk: dict[str, float] = {}
        self.closed = False

    @staticmethod
    def _expires(_key: str, entry: tuple, _now: float) -> float:
        return entry[0] + entry[3].lifetime()

    # -- invalidation ------------------------------------------------------------------------

    def invalidate(self, soft: bool = False) -> None:
        """One of Logbook's own writes to this store: nothing cached may outlive it (a new
        generation). ``soft``: one batch of a prune still running; values whose version moved
        are then served for SOFT_GRACE_S after the last batch (up to SOFT_MAX_AGE_S old) while
        one background refresh works them out, instead of every request rescanning after
        every batch. Attached caches with ``purge_on_soft`` are cleared by a soft purge too."""
        for cache, purge_on_soft in list(self._attached):
            if purge_on_soft or not soft:
                cache.clear()
        if soft:
            self._soft_until = self.clock() + SOFT_GRACE_S
            return
        self._soft_until = -math.inf
        with self._lock:
            self.generation += 1
            self._lru.clear()

    def close(self) -> None:
        """The store went away (its file removed, replaced or no longer configured)."""
        self.closed = True
        self.invalidate()

    def versioned(
        self,
        maxsize: int,
        purge_on_soft: bool = False,
        identity: bool = False,
        name: str | None = None,
    ) -> VersionedCache:
        """A VersionedCache attached to this store's (cleared when it is invalidated or
        closed), on its clock. ``name``: the same cache for every caller naming it."""
        with self._lock:
            if name is not None and name in self._named:
                return self._named[name]
            cache = VersionedCache(maxsize, identity, self.clock)
            self._attached.append((cache, purge_on_soft))
            if name is not None:
                self._named[name] = cache
        return cache

    # -- values under a policy ---------------------------------------------------------------

    def _entry(self, key: str) -> tuple | None:
        with self._lock:
            return self._lru.get(key)

    def peek(self, key: str) -> Any:
        hit = self._entry(key)
        return hit[2] if hit else None

    def snapshot(self, prefix: str = "") -> dict[str, Any]:
        """The values cached now under keys starting with ``prefix`` (tests, diagnostics)."""
        with self._lock:
            self._lru.expire()
            return {k: e[2] for k, e in self._lru.items() if k.startswith(prefix)}

    def fetch(self, key: str, version: Any, compute: Callable[[], T], policy: Policy) -> T:
        """``compute()``, cached under ``key`` and ``version`` and served as ``policy`` allows.

        A value neither fresh nor servable stale is computed by the request itself; requests
        that find the same key being computed get the previous value while it is younger than
        ``policy.stale_while_revalidate`` (else wait, within their deadline, for that one
        answer) instead of computing alongside it."""
        now = self.clock()
        hit = self._entry(key) or self._from_disk(key, version, policy)
        if hit:
            age, same = now - hit[0], hit[1] == version
            fresh = same and (policy.ttl is None or age < policy.ttl)
            if fresh or age < policy.max_lag:
                return hit[2]
            graced = now < self._soft_until and age < SOFT_MAX_AGE_S
            swr = age < policy.stale_while_revalidate and (same or policy.stale_if_changed)
            if graced or swr:
                self._refresh_later(key, version, compute, policy)
                return hit[2]
        with self._lock:
            if len(self._flights) > FLIGHTS:
                self._flights = {k: v for k, v in self._flights.items() if v.locked()}
            flight = self._flights.setdefault(key, threading.Lock())
        if hit and flight.locked() and now - hit[0] < policy.stale_while_revalidate:
            return hit[2]  # another request is working it out: the one computing pays
        left = self.deadline_left()
        # Past the deadline, compute regardless: its queries then stop at once.
        waited = time.monotonic()
        got = flight.acquire(timeout=max(left, 0.0) if left is not None else -1)
        waited = time.monotonic() - waited
        if waited > 1.0:
            _log("waited %.1f s for another request to work out %s", waited, key[:60])
        try:
            hit = self._entry(key)
            if got and hit and hit[1] == version and hit[0] >= now:
                return hit[2]  # computed by the request this one waited for
            generation = self.generation
            value = compute()
            self._set(key, version, value, policy, generation)
            return value
        finally:
            if got:
                flight.release()

    def _set(self, key: str, version: Any, value: Any, policy: Policy, generation: int) -> None:
        if policy.cacheable is not None and not policy.cacheable(value):
            return
        with self._lock:
            if generation != self.generation:
                return  # computed across one of Logbook's own changes: not cached
            self._lru[key] = (self.clock(), version, value, policy)
        self._to_disk(key, version, value)

    def _refresh_later(self, key: str, version: Any, compute: Callable, policy: Policy) -> None:
        """One background refresh per key, at most REFRESHERS at once: when all are busy the
        stale value is served again and a later request asks anew."""
        with self._lock:
            if key in self._refreshing or len(self._refreshing) >= REFRESHERS:
                return
            self._refreshing.add(key)
            generation = self.generation

        def work() -> None:
            try:
                self._set(key, version, compute(), policy, generation)
            except Exception:  # noqa: BLE001 - the next request computes it itself
                with self._lock:
                    self._lru.pop(key, None)
                _log("refreshing %s failed", key[:60], error=True)
            finally:
                with self._lock:
                    self._refreshing.discard(key)

        # In the app's context (threads.start_in_app): without it every refresh failed and
        # the next request recounted in line.
        self.start(work, f"refresh-{key[:20]}")

    # -- across restarts ---------------------------------------------------------------------

    def _disk_path(self, key: str) -> Path | None:
        if self.persist_dir is None or not self.persisted(key):
            return None
        # Keys are named by statements and their parameters: a digest names their file.
        return self.persist_dir / (hashlib.sha1(key.encode()).hexdigest()[:20] + ".json")

    def _from_disk(self, key: str, version: Any, policy: Policy) -> tuple | None:
        path = self._disk_path(key)
        if path is None or key in self._read_from_disk:
            return None
        self._read_from_disk.add(key)  # once per key and run: later ones are in memory
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("key") != json.loads(json.dumps(version)):
            return None
        # Served as a value just past fresh: answered at once, refreshed behind.
        aged = (policy.ttl or 0.0) + 0.001
        return (self.clock() - aged, version, saved.get("value"), policy)

    def _to_disk(self, key: str, version: Any, value: Any) -> None:
        path = self._disk_path(key)
        now = self.clock()
        if path is None or now - self._written_to_disk.get(key, -math.inf) < PERSIST_EVERY_S:
            return
        if key not in self._written_to_disk and len(self._written_to_disk) >= PERSIST_KEYS:
            return  # the first few dozen of a run: a page's own, not every filter ever asked
        self._written_to_disk[key] = now
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".part")
            tmp.write_text(json.dumps({"key": version, "value": value}), encoding="utf-8")
            tmp.replace(path)
        except (OSError, TypeError, ValueError):
            pass  # a full disk or a value JSON cannot hold: cached in memory only


# -- renderings, cached by their input ----------------------------------------------------------


class SizedCache:
    """An LRU bounded by the size of what it holds (``getsizeof``), for use from any thread;
    a value larger than an eighth of it is not admitted. Keyed by the input a rendering was
    made from, which never changes meaning: nothing invalidates it."""

    def __init__(self, maxsize: int, getsizeof: Callable[[Any], int] = len):
        self._lru: LRUCache = LRUCache(maxsize=maxsize, getsizeof=getsizeof)
        self.getsizeof = getsizeof
        self._lock = threading.Lock()

    @property
    def maxsize(self) -> int:
        return self._lru.maxsize

    @property
    def currsize(self) -> int:
        return self._lru.currsize

    def get(self, key: Any) -> Any:
        with self._lock:
            return self._lru.get(key)

    def set(self, key: Any, value: Any) -> None:
        if self.getsizeof(value) <= self.maxsize // 8:
            with self._lock:
                self._lru[key] = value

    def __contains__(self, key: Any) -> bool:
        return key in self._lru

    def __len__(self) -> int:
        return len(self._lru)

    def values(self) -> list[Any]:
        """What it holds now, least recently used first (a copy: for tests and reports)."""
        with self._lock:
            return list(self._lru.values())


def memoize_text(max_chars: int, cost: Callable[[Any], int] = len):
    """Memoise ``fn(text)`` by ``text``, at most ``max_chars`` characters held
    (``len(text) + cost(result)`` each); ``fn.cache`` is its SizedCache."""

    def decorate(fn: Callable[[str], T]) -> Callable[[str], T]:
        cache = SizedCache(max_chars, getsizeof=lambda entry: entry[0])
        largest = max_chars // 8

        @functools.wraps(fn)
        def run(text: str) -> T:
            if not isinstance(text, str) or len(text) > largest:
                return fn(text)
            hit = cache.get(text)
            if hit is not None:
                return hit[1]
            value = fn(text)
            cache.set(text, (len(text) + cost(value), value))
            return value

        run.cache = cache  # type: ignore[attr-defined]
        return run

    return decorate


def memoize(maxsize: int):
    """Memoise a pure function of hashable arguments (the same arguments always give the
    same answer), at most ``maxsize`` answers: the standard library's LRU, in C, for the
    functions a page calls thousands of times."""
    return functools.lru_cache(maxsize=maxsize)


class Throttle:
    """When periodic work (a folder's rescan) is due: ``due()`` is true at most once every
    ``interval`` seconds (a one-entry TTLCache on ``clock``), and counts the work as done from
    then; ``reset()`` makes the next ``due()`` true (something changed a rescan must see)."""

    def __init__(self, interval: float, clock: Clock = time.monotonic):
        self.interval = interval
        self._done: TTLCache = TTLCache(maxsize=1, ttl=interval, timer=clock)
        self._lock = threading.Lock()

    def due(self) -> bool:
        with self._lock:
            if "done" in self._done:
                return False
            self._done["done"] = True
            return True

    def reset(self) -> None:
        with self._lock:
            self._done.clear()
