"""No request can hold the server: one deadline per request for all its queries, and a cap on
how many heavy searches run at once so cheap pages always find a worker free."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from flask import Flask, current_app, request

from webui.db import DatabaseBusy
from webui.db import deadline as request_deadline


def init_app(app: Flask) -> None:
    seconds = float(
        app.config.get("LOGBOOK_REQUEST_DEADLINE") or app.config["LOGBOOK_QUERY_TIME_LIMIT"]
    )
    threads = int(app.config.get("LOGBOOK_THREADS") or 8)
    # An eighth of the workers run heavy searches at once, a quarter exports (webui.web.streams);
    # the server's dispatcher runs both on workers of their own, never on the pages'.
    app.extensions["logbook_search_slots"] = threading.BoundedSemaphore(max(1, threads // 8))

    @app.before_request
    def open_deadline():
        # webui.door.serve's dispatcher stamps when the request arrived (and whether it waited too
        # long for a worker): the time in the queue counts against the request's deadline.
        queued = request.environ.get("HTTP_X_LOGBOOK_QUEUE", "")
        arrived, _, shed = queued.partition(" ")
        if shed == "shed":
            raise DatabaseBusy(
                "Logbook is busy with other searches and exports right now (this one waited "
                "too long for its turn). Try again in a moment."
            )
        waited = 0.0
        if arrived:
            try:
                waited = min(max(time.time() - float(arrived), 0.0), seconds)
            except ValueError:
                waited = 0.0
        # waitress's check of the connection (the loop reads on while a request is answered,
        # webui.door.serve): a client that leaves stops its request's queries.
        request_deadline.open_memo()
        request_deadline.begin(
            seconds - waited, gone=request.environ.get("waitress.client_disconnected")
        )

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
def search_slot(wait_s: float = 0.25, heavy: bool = True) -> Iterator[None]:
    """At most an eighth of the workers run a heavy search at once (one of 8: on two cores a
    second would take the CPU the pages need); the rest stay free for cheap pages."""
    if not heavy:
        yield
        return
    slots: threading.BoundedSemaphore = current_app.extensions["logbook_search_slots"]
    if not slots.acquire(timeout=wait_s):
        raise DatabaseBusy("Logbook is busy with other searches right now. Try again in a moment.")
    try:
        yield
    finally:
        slots.release()
