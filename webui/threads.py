"""Background threads started at the server's own CPU priority.

On Linux a new thread inherits its creator's nice value, and the workers that run heavy
requests run at a lowered priority (webui.serve) that they cannot raise again. A prune started
by a request on such a worker would hold the database's write lock at that low priority: the
scheduler would prefer the search bombs' threads and the lock would be held longer than its
budget while Hermes's writer waits (priority inversion). Likewise the query watchdog must run
when its deadline passes, not when the busy cores let it. So threads that hold the write lock
or keep time are created by one launcher thread, started when this module is first imported
(at start-up, by the main thread), and inherit its priority instead of the request's."""

from __future__ import annotations

import queue
import threading
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


def start(target: Callable[[], object], name: str) -> threading.Thread:
    """Start ``target`` in a daemon thread at the launcher's priority; returns once it runs."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    started = threading.Event()
    _requests.put((thread, started))
    started.wait()
    return thread
