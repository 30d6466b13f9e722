"""No request can hold the server: one deadline per request for all its queries, and a cap on
how many heavy searches run at once so cheap pages always find a worker free."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from flask import Flask, current_app

from webui.db import DatabaseBusy
from webui.db import deadline as request_deadline


def init_app(app: Flask) -> None:
    seconds = float(
        app.config.get("LOGBOOK_REQUEST_DEADLINE") or app.config["LOGBOOK_QUERY_TIME_LIMIT"]
    )
    threads = int(app.config.get("LOGBOOK_THREADS") or 8)
    app.extensions["logbook_search_slots"] = threading.BoundedSemaphore(max(1, threads // 2))

    @app.before_request
    def open_deadline():
        request_deadline.begin(seconds)

    # The deadline covers the view; a streamed body (an export) runs after it with its own
    # per-batch budgets, so it ends before the body is sent.
    @app.after_request
    def close_deadline_early(response):
        request_deadline.end()
        return response

    @app.teardown_request
    def close_deadline(_exc):
        request_deadline.end()


@contextmanager
def search_slot(wait_s: float = 0.5) -> Iterator[None]:
    """At most half the workers search at once; the rest stay free for cheap pages."""
    slots: threading.BoundedSemaphore = current_app.extensions["logbook_search_slots"]
    if not slots.acquire(timeout=wait_s):
        raise DatabaseBusy("Logbook is busy with other searches right now. Try again in a moment.")
    try:
        yield
    finally:
        slots.release()
