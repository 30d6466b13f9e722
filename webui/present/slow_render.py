"""Formatting a user asked for on purpose ("render it anyway"): a message too large for a
page's budget (a 0.8 MB Markdown table takes seconds to render).

Such a render runs in a process of its own, at the lowest CPU priority, one at a time: it
cannot hold the server's interpreter lock or its cores while pages are answered. A request
waits for it only as long as its own deadline allows; if it is not done by then, the page
shows the message as plain text saying the render continues, and the render goes on. Once
made, a render is kept (by the text's digest), so asking again, or reloading, costs nothing:
a client that loops on the link gets the same running job, then the kept result.

How long a page waits is the caller's to say (``render(..., wait_s=)``, from the app's
``LOGBOOK_RENDER_WAIT_S``): the machine's speed decides only how soon a render is done, never
what a test that asks for the rendered page sees.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import hashlib
import multiprocessing
import os
import threading
from typing import Any

from webui import keep
from webui.db import deadline

# Every kept render together, input and output counted; one render may hold an eighth of it
# (a 0.8 MB table and its HTML fit).
KEPT_CHARS = 64_000_000
# Distinct renders waiting at once; past it, a request shows the text plain and says so.
MAX_PENDING = 4
WAIT_AT_MOST_S = 4.0  # by default a page waits at most this for a render, whatever is left
SPARE_S = 0.5  # left of the request's deadline for the rest of the page

_kept = keep.SizedCache(KEPT_CHARS, getsizeof=lambda entry: entry[0])
_running: dict[tuple[str, bytes], concurrent.futures.Future] = {}
_lock = threading.Lock()
_idle = threading.Condition(_lock)  # notified whenever a render ends
_pool: concurrent.futures.ProcessPoolExecutor | None = None


def _lowest_priority() -> None:
    try:
        os.nice(19)
    except OSError:
        pass


def _executor() -> concurrent.futures.ProcessPoolExecutor:
    global _pool
    if _pool is None:
        # spawn: a fresh interpreter, not a fork of a threaded server.
        _pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_lowest_priority,
        )
        atexit.register(_pool.shutdown, wait=False, cancel_futures=True)
    return _pool


def _work(kind: str, text: str) -> Any:
    """In the render process: what the page would have made inline."""
    from webui.present.json_view import json_result
    from webui.present.markdown import markdown

    if kind == "markdown":
        return str(markdown(text))
    code, texts = json_result(text)
    return str(code), texts


def _size(kind: str, text: str, value: Any) -> int:
    if kind == "markdown":
        return len(text) + len(value)
    return len(text) + len(value[0]) + sum(len(t.get("text", "")) for t in value[1])


class Outcome:
    """What a page shows: the result, or why the text stays plain for now."""

    def __init__(self, value: Any = None, pending: str | None = None):
        self.value = value
        self.pending = pending  # None: done


def patience(wait_s: float, left: float | None) -> float:
    """How long a page waits for a render: at most ``wait_s``, and never into the last
    ``SPARE_S`` of the request's deadline (``left``; None outside a request)."""
    return max(0.0, wait_s if left is None else min(wait_s, left - SPARE_S))


def render(kind: str, text: str, wait_s: float | None = WAIT_AT_MOST_S) -> Outcome:
    """``kind``: "markdown" (HTML) or "json" (highlighted code and lifted strings).
    ``wait_s``: how long to wait for it at most (see ``patience``); None: until it is done,
    whatever the deadline (for tests and scripts that want the page rendered, not the
    machine's speed, to decide what they get)."""
    key = (kind, hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    hit = _kept.get(key)
    if hit is not None:
        return Outcome(hit[1])
    with _lock:
        job = _running.get(key)
        if job is None:
            # Looked at again under the lock: a render that ended since is kept by now (it is
            # kept before it leaves _running), so it is never made twice.
            hit = _kept.get(key)
            if hit is not None:
                return Outcome(hit[1])
            if len(_running) >= MAX_PENDING:
                return Outcome(pending="busy")
            job = _executor().submit(_work, kind, text)
            _running[key] = job
            job.add_done_callback(lambda done: _finished(key, kind, text, done))
    left = deadline.remaining()
    try:
        if wait_s is None:
            # Waiting until it is done: the wait is not the request's queries' time, so they
            # get what was left of the deadline before it.
            value = job.result()
            if left is not None:
                deadline.begin(left)
            return Outcome(value)
        return Outcome(job.result(timeout=patience(wait_s, left)))
    except concurrent.futures.TimeoutError:
        return Outcome(pending="running")
    except Exception:  # noqa: BLE001 - the process died or the text defeated the renderer
        return Outcome(pending="failed")


def _finished(key, kind: str, text: str, job: concurrent.futures.Future) -> None:
    try:
        if not job.cancelled() and job.exception() is None:
            value = job.result()
            _kept.set(key, (_size(kind, text, value), value))
    finally:
        with _lock:
            _running.pop(key, None)
            _idle.notify_all()


def running() -> int:
    """How many renders are under way."""
    with _lock:
        return len(_running)


def wait_idle(timeout: float) -> bool:
    """Wait until no render is under way (at most ``timeout`` seconds); True if none is."""
    with _lock:
        return _idle.wait_for(lambda: not _running, timeout)
