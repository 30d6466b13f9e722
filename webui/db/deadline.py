"""One deadline per request, shared by every query it runs, and a watchdog that enforces it.

The web layer opens a deadline when a request starts (``begin``) and closes it when it ends.
Each user-driven query gets what is left of it, not a fresh limit, so a page of many queries
cannot run many times the limit. SQLite's progress handler stops ordinary statements within a
few milliseconds; some work (an FTS5 prefix expansion, a large sort step) runs inside one VM
instruction where no handler is called, so a watchdog thread also calls
``Connection.interrupt()`` once the deadline has passed.

A request whose client has gone (the server's loop saw its connection close: waitress's
``client_disconnected``) has no time left either: its remaining queries are not run, and the
one running is stopped by the progress handler (``client_gone``)."""

from __future__ import annotations

import heapq
import itertools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from webui import threads

_deadline: ContextVar[float | None] = ContextVar("logbook_request_deadline", default=None)
_gone: ContextVar[Callable[[], bool] | None] = ContextVar("logbook_client_gone", default=None)
# Values read once per request and shared by its queries (a page's side threads run in a copy
# of its context, so they share the same dict): see ``memo``.
_memo: ContextVar[dict[str, Any] | None] = ContextVar("logbook_request_memo", default=None)


def begin(seconds: float, gone: Callable[[], bool] | None = None) -> None:
    """This request's deadline, and how to tell that its client left (None: never asked)."""
    _deadline.set(time.monotonic() + seconds)
    _gone.set(gone)


def end() -> None:
    # Set, not reset: a streamed response may end in another context than it began.
    _deadline.set(None)
    _gone.set(None)
    _memo.set(None)


def open_memo() -> None:
    """A request starts: an empty memo of what its queries read once (``memo``)."""
    _memo.set({})


def memo() -> dict[str, Any] | None:
    """This request's memo (values its queries read once and share), or None outside a
    request: then nothing is remembered."""
    return _memo.get()


@contextmanager
def suspended() -> Iterator[None]:
    """Long work a request runs on purpose (a synchronous prune) has its own budgets, and
    goes on if its client leaves."""
    token = _deadline.set(None)
    gone = _gone.set(None)
    try:
        yield
    finally:
        _deadline.reset(token)
        _gone.reset(gone)


def client_gone() -> bool:
    """Has this request's client left? (False outside a request, or when nobody can tell.)"""
    check = _gone.get()
    if check is None:
        return False
    try:
        return bool(check())
    except Exception:  # noqa: BLE001 - a connection torn down under us: it is gone
        return True


def gone_check() -> Callable[[], bool] | None:
    """The request's own check, for a progress handler to call (None outside a request)."""
    return _gone.get()


def remaining() -> float | None:
    """Seconds left for this request's queries (none once its client left), or None outside
    a request."""
    at = _deadline.get()
    if at is None:
        return None
    return 0.0 if client_gone() else at - time.monotonic()


# A page over many stores stops asking them when less than this is left of its deadline: the
# rest is for its own last queries (the live file's menus, the rendering). The history and
# search services take ``short_of_time`` as an argument (a test or a background job gives its
# own); this one is the request deadline's.
RESERVE_S = 1.0

OUT_OF_TIME = "not asked: this page ran out of time (the other stores answered)"


def short_of_time() -> bool:
    """Is this request's deadline too close to ask one more store?"""
    left = remaining()
    return left is not None and left < RESERVE_S


class Watchdog:
    """A single daemon thread holding (deadline, connection) pairs; it interrupts each
    connection still registered when its deadline passes."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, sqlite3.Connection]] = []
        self._live: set[int] = set()
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    @contextmanager
    def watch(self, conn: sqlite3.Connection, deadline: float) -> Iterator[None]:
        key = next(self._seq)
        with self._cond:
            self._live.add(key)
            heapq.heappush(self._heap, (deadline, key, conn))
            if self._thread is None:
                self._thread = threads.start(self._run, "logbook-watchdog")
            self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._live.discard(key)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][1] not in self._live:
                    heapq.heappop(self._heap)  # finished in time: forget it
                if not self._heap:
                    self._cond.wait()
                    continue
                at, key, conn = self._heap[0]
                wait = at - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                if key in self._live:
                    try:
                        conn.interrupt()
                    except sqlite3.Error:
                        pass


WATCHDOG = Watchdog()
