"""Background threads started at the server's own CPU priority.

On Linux a new thread inherits its creator's nice value, and the workers that run heavy
requests run at a lowered priority (webui.door.serve) that they cannot raise again. A prune started
by a request on such a worker would hold the database's write lock at that low priority: the
scheduler would prefer the search bombs' threads and the lock would be held longer than its
budget while Hermes's writer waits (priority inversion). Likewise the query watchdog must run
when its deadline passes, not when the busy cores let it. So threads that hold the write lock
or keep time are created by one launcher thread, started when this module is first imported
(at start-up, by the main thread), and inherit its priority instead of the request's."""

from __future__ import annotations

import contextvars
import os
import queue
import threading
import time
from collections.abc import Callable

_requests: queue.SimpleQueue[tuple[threading.Thread, threading.Event]] = queue.SimpleQueue()


def _launch() -> None:
    while True:
        thread, started = _requests.get()
        try:
            thread.start()
        finally:
            started.set()


_launcher = threading.Thread(target=_launch, name="logbook-launcher", daemon=True)
_launcher.start()


def _launcher_after_fork() -> None:
    """A child forked from a process that runs Logbook (a fork server, a test's worker) has
    only the forking thread: it gets a launcher of its own, or every ``start`` would wait."""
    global _launcher, _requests
    _requests = queue.SimpleQueue()
    _launcher = threading.Thread(target=_launch, name="logbook-launcher", daemon=True)
    _launcher.start()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_launcher_after_fork)


def start(target: Callable[[], object], name: str) -> threading.Thread:
    """Start ``target`` in a daemon thread at the launcher's priority; returns once it runs."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    started = threading.Event()
    _requests.put((thread, started))
    started.wait()
    return thread


def start_in_app(target: Callable[[], object], name: str) -> threading.Thread:
    """``start`` with the caller's Flask app context and profile: Logbook's queries need the
    app (its engine) and the request's profile, which a new thread has neither of. Outside
    an app (a script, a test) ``target`` runs as it is."""
    from flask import current_app, g, has_app_context

    if not has_app_context():
        return start(target, name)
    app = current_app._get_current_object()
    profile = g.get("profile")

    def run() -> None:
        with app.app_context():
            g.profile = profile
            target()

    return start(run, name)


# Pages being answered right now (set by the server's dispatcher). Background Python work (an
# export producing into its buffer, the rollup's warm-up) checks it between batches and steps
# aside for a moment: a Python process runs one thread's Python at a time, so a batch loop that
# keeps it busy makes every page wait for its turn. Measured beside stalled exports, which
# produce 32 MB each for a client that reads nothing, they held the interpreter a quarter of
# the time.
_pages = 0
_pages_lock = threading.Lock()
MAKE_WAY_MAX_S = 0.05


def page_started() -> None:
    global _pages
    with _pages_lock:
        _pages += 1


def page_ended() -> None:
    global _pages
    with _pages_lock:
        _pages -= 1


def pages_in_flight() -> int:
    return _pages


def make_way(max_s: float = MAKE_WAY_MAX_S) -> float:
    """Sleep while pages are being answered, at most ``max_s``: background work calls this
    between batches. Returns the time given away."""
    if not _pages:
        return 0.0
    started = time.monotonic()
    while _pages and time.monotonic() - started < max_s:
        time.sleep(0.002)
    return time.monotonic() - started


# -- work beside a request --------------------------------------------------------------------
# A page whose statements split into independent halves (a stats report: the session panels
# on one connection, the usage and series panels on another) may run one half on a second
# core. A few threads, started by the launcher (full priority, like the pages' own workers);
# when they are all busy, or the machine has one core, the half runs in the caller's thread
# when its result is asked for, so nothing ever queues behind another request's half.
BESIDE_THREADS = 2


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _BesidePool:
    def __init__(self, size: int) -> None:
        self.size = size
        self.free = threading.BoundedSemaphore(size) if size else None
        self.work: queue.SimpleQueue[Beside] = queue.SimpleQueue()
        self.started = False
        self.lock = threading.Lock()

    def take(self) -> bool:
        if self.free is None or not self.free.acquire(blocking=False):
            return False
        with self.lock:
            if not self.started:
                for i in range(self.size):
                    start(self._serve, f"logbook-beside-{i}")
                self.started = True
        return True

    def _serve(self) -> None:
        while True:
            job = self.work.get()
            try:
                job._run()
            finally:
                self.free.release()  # type: ignore[union-attr]


class Beside:
    """``fn()`` started now on a free side thread, in a copy of the caller's context (its
    Flask app and request, its request deadline: every query of both halves shares it);
    ``result()`` waits for it and returns its value or raises its error. Without a free
    thread, ``result()`` runs ``fn`` itself."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self._fn = fn
        self._ctx = contextvars.copy_context()
        self._done = threading.Event()
        self._value: object = None
        self._error: BaseException | None = None
        self.beside = _pool.take()
        if self.beside:
            _pool.work.put(self)

    def _run(self) -> None:
        try:
            self._value = self._ctx.run(self._fn)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> object:
        if not self.beside:
            return self._fn()
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


_pool = _BesidePool(BESIDE_THREADS if cores() > 1 else 0)
