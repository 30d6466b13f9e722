"""Connections to the stores beside the live file (archives, replicas' copies): opened on
demand, a few kept open between queries, closed when idle.

Each SQLite connection holds a file descriptor (three for a file in WAL mode: the database,
its ``-wal`` and its ``-shm``). Kept open per store, a folder of hundreds of archive files
held thousands of descriptors, and waitress's ``select()`` loop dies at 1,024. Here every
non-live store's queries borrow a connection from one pool for the whole process: at most
``max_idle`` connections wait between queries (least recently used closed first), one idle
for ``idle_s`` is closed, and a store whose file changed (``dispose``) never gets an old one
back. Connections in use are bounded by the worker threads (a request reads one store at a
time), so the pool's descriptors are at most ``max_idle`` plus about three per worker,
however many stores there are. The live file keeps its own pool (webui.db.reader)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from webui import threads

MAX_IDLE = 8
IDLE_S = 20.0


class _Raw:
    """What the Reader reads of SQLAlchemy's checkout: ``.connection.driver_connection``."""

    def __init__(self, conn: sqlite3.Connection):
        self.driver_connection = conn


class _Checkout:
    def __init__(self, pool: StorePool, key: tuple, conn: sqlite3.Connection, gen: int):
        self._pool, self._key, self._gen = pool, key, gen
        self.connection = _Raw(conn)

    def __enter__(self) -> _Checkout:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._pool._give_back(self._key, self.connection.driver_connection, self._gen)


class PoolEngine:
    """The part of an SQLAlchemy Engine a Reader uses (``connect`` and ``dispose``), for one
    store's file, over the shared pool."""

    def __init__(self, pool: StorePool, path: Path, opener: Callable[[], sqlite3.Connection]):
        self.pool = pool
        self.key = (str(path), id(self))
        self.opener = opener

    def connect(self) -> _Checkout:
        return self.pool._take(self.key, self.opener)

    def dispose(self) -> None:
        self.pool.dispose(self.key)


class StorePool:
    def __init__(self, max_idle: int = MAX_IDLE, idle_s: float = IDLE_S):
        self.max_idle = max_idle
        self.idle_s = idle_s
        self._idle: OrderedDict[int, tuple[tuple, sqlite3.Connection, float]] = OrderedDict()
        self._gens: dict[tuple, int] = {}
        self._lock = threading.Lock()
        self._reaping = False  # the thread closing idle connections runs
        self.opened = 0  # connections opened so far (for tests and diagnostics)
        self.in_use = 0

    def engine(self, path: Path, opener: Callable[[], sqlite3.Connection]) -> PoolEngine:
        return PoolEngine(self, path, opener)

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def _take(self, key: tuple, opener: Callable[[], sqlite3.Connection]) -> _Checkout:
        with self._lock:
            gen = self._gens.get(key, 0)
            for token, (k, conn, _since) in reversed(self._idle.items()):
                if k == key:
                    del self._idle[token]
                    self.in_use += 1
                    return _Checkout(self, key, conn, gen)
        conn = opener()  # outside the lock: opening a file may take a moment
        with self._lock:
            self.opened += 1
            self.in_use += 1
        return _Checkout(self, key, conn, gen)

    def _give_back(self, key: tuple, conn: sqlite3.Connection, gen: int) -> None:
        close: list[sqlite3.Connection] = []
        with self._lock:
            self.in_use -= 1
            if self._gens.get(key, 0) != gen or conn.in_transaction:
                close.append(conn)
            else:
                self._idle[id(conn)] = (key, conn, time.monotonic())
                while len(self._idle) > self.max_idle:
                    _token, (_k, old, _s) = self._idle.popitem(last=False)
                    close.append(old)
            start = not self._reaping and bool(self._idle)
            self._reaping = self._reaping or start
        for c in close:
            _close(c)
        if start:
            threads.start(self._reap, "logbook-store-pool")

    def dispose(self, key: tuple | None = None) -> None:
        """Close the idle connections of one store (its file changed) or of all; the ones in
        use are closed when they come back."""
        with self._lock:
            if key is None:
                for k in list(self._gens):
                    self._gens[k] += 1
                gone = list(self._idle.values())
                self._idle.clear()
            else:
                self._gens[key] = self._gens.get(key, 0) + 1
                gone = [v for v in self._idle.values() if v[0] == key]
                for token in [t for t, v in self._idle.items() if v[0] == key]:
                    del self._idle[token]
        for _k, conn, _s in gone:
            _close(conn)

    def _reap(self) -> None:
        while True:
            time.sleep(min(5.0, self.idle_s / 2))
            now = time.monotonic()
            with self._lock:
                old = [t for t, (_k, _c, since) in self._idle.items() if now - since > self.idle_s]
                gone = [self._idle.pop(t)[1] for t in old]
            for conn in gone:
                _close(conn)


def _close(conn: sqlite3.Connection) -> None:
    try:
        conn.close()
    except sqlite3.Error:
        pass
