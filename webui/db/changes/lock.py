"""The lane's lock: one per live file, held for one unit of work.

Inside this process the threads that want it queue in the order they asked (a prune between
its batches cannot starve a delete that waits); the thread at the head then takes an ``flock``
on a file in the journal's folder, so another Logbook process on the same instance folder
waits too. A process killed with ``kill -9`` drops its ``flock`` with it: what it left half
done is in the journal, and the next holder replays it before anything else."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: the lock holds within this process only
    fcntl = None

POLL_S = 0.02  # how often a waiter tries the other process's flock again


class _Queue:
    """The threads of this process waiting for one lock file, first come first served."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.waiting: deque[object] = deque()
        self.holder: int | None = None  # thread id


_QUEUES: dict[str, _Queue] = {}
_QUEUES_LOCK = threading.Lock()


def _queue(path: Path) -> _Queue:
    key = os.path.abspath(path)
    with _QUEUES_LOCK:
        return _QUEUES.setdefault(key, _Queue())


class LaneLock:
    """``acquire``/``release`` of one file's lane. Not re-entrant: a unit never starts
    another unit (that would be a bug, and it is refused)."""

    def __init__(self, path: Path):
        self.path = path
        self._q = _queue(path)
        self._fd: int | None = None

    def held_by_me(self) -> bool:
        return self._q.holder == threading.get_ident()

    def acquire(self, timeout: float | None, waiting: Callable[[bool], None] | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: for as long as it takes). ``waiting(True)``
        is called once the caller has to wait, ``waiting(False)`` when it stops waiting."""
        me = threading.get_ident()
        if self._q.holder == me:
            raise RuntimeError("a unit of work started inside another one")
        gives_up = None if timeout is None else time.monotonic() + timeout
        ticket = object()
        said = False
        q = self._q
        with q.cond:
            q.waiting.append(ticket)
            try:
                while q.waiting[0] is not ticket or q.holder is not None:
                    if waiting and not said:
                        waiting(True)
                        said = True
                    left = None if gives_up is None else gives_up - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    q.cond.wait(left if left is not None else 1.0)
                q.holder = me
            finally:
                q.waiting.remove(ticket)
                q.cond.notify_all()
        # First in this process: now the other processes' lock, polled.
        try:
            while not self._flock():
                if waiting and not said:
                    waiting(True)
                    said = True
                if gives_up is not None and time.monotonic() >= gives_up:
                    self._let_go()
                    return False
                time.sleep(POLL_S)
        except BaseException:
            self._let_go()
            raise
        finally:
            if said and waiting:
                waiting(False)
        return True

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor drops the flock
        self._let_go()

    def _let_go(self) -> None:
        with self._q.cond:
            if self._q.holder == threading.get_ident():
                self._q.holder = None
            self._q.cond.notify_all()

    def _flock(self) -> bool:
        if fcntl is None:
            return True
        if self._fd is None:
            self._fd = _open_lock_file(self.path)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def _open_lock_file(path: Path) -> int:
    """The lock file, opened without following a link or blocking on a FIFO; anything but a
    regular file at its name (planted, or left by something else) is moved aside first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    for _ in range(3):
        try:
            fd = os.open(path, flags, 0o600)
        except OSError:
            _aside(path)
            continue
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
        os.close(fd)
        _aside(path)
    raise OSError(f"the lock file {path} cannot be made")


def _aside(path: Path) -> None:
    try:
        os.replace(path, path.with_name(f"{path.name}.set-aside-{time.time_ns()}"))
    except OSError:
        pass
