"""An idle Logbook holds nothing open on the live database.

Hermes 0.22 refuses its own maintenance (``hermes sessions prune``, ``optimize``) while
another process holds ``state.db`` or its ``-wal``/``-shm`` sidecars, and names that process
(reference: hermes-022-behaviour.md). A Logbook left running in a terminal kept its pool of
read connections open for good, so a user's prune was refused for as long as it ran (issue 44,
point 4).

So once no request has been answered for ``LOGBOOK_IDLE_RELEASE_S`` (60 s; the environment's
``HERMES_LOGBOOK_IDLE_S`` wins), with none in progress and no export being sent, every live
database's connections are closed (the pool's and the data_version watcher's: Reader.let_go,
profiles included). Background work (the stats rollup's pass, the search's map of sources,
kept figures refreshed behind the requests) reads through the same pool: a connection it has
checked out is never closed under it (the release waits for the next quiet moment), and
between its statements it holds none. A page left open polls (``/changes`` every 8 s, an
active session's tail every 4 s): polls are not activity, and one answered while Logbook is
idle lets go again at once, so an open tab holds the file for milliseconds every few seconds,
never for good. The next request, or the next step of background work,
opens what it needs again, transparently: the pool opens connections on demand, and values
kept under the file's data_version are checked afresh (a new connection's data_version is never
compared with an old one's)."""

from __future__ import annotations

import os
import threading
import time
import weakref

from flask import Flask, g, request

from webui import threads

IDLE_S = 60.0
ENV = "HERMES_LOGBOOK_IDLE_S"
# What a page left open asks for by itself, every few seconds (static/app.js): not activity.
POLLS = frozenset({"ui.changes", "sessions.tail"})


def idle_seconds(app: Flask) -> float | None:
    """The configured idle time (None or 0: never let go)."""
    raw = os.environ.get(ENV)
    value = raw if raw is not None else app.config.get("LOGBOOK_IDLE_RELEASE_S", IDLE_S)
    try:
        seconds = float(value) if value not in (None, "") else 0.0
    except (TypeError, ValueError):
        seconds = IDLE_S
    return seconds if seconds > 0 else None


class IdleRelease:
    """Counts requests in progress and when the last ended; a thread lets the files go once
    the app has been idle long enough, and again after each later busy spell."""

    def __init__(self, app: Flask, idle_s: float):
        self.idle_s = idle_s
        self._app = weakref.ref(app)  # the thread must not keep a discarded app alive
        self._lock = threading.Lock()
        self._in_flight = 0
        self._last = time.monotonic()
        self._released = False
        self._spell = 0  # busy spells begun: one that begins during a release is not missed
        self.releases = 0  # times every connection was let go (tests, logs)
        self.looks = 0  # times the thread looked whether to let go (tests)
        threads.start(self._run, "logbook-idle-release")

    def enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._released = False
            self._spell += 1

    def leave(self) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
            self._last = time.monotonic()

    def idle(self) -> bool:
        """Has nothing but polls come for the idle time?"""
        with self._lock:
            return not self._in_flight and time.monotonic() - self._last >= self.idle_s

    def _run(self) -> None:
        period = max(0.05, min(self.idle_s / 4, 5.0))
        while True:
            time.sleep(period)
            app = self._app()
            if app is None:
                return
            with self._lock:
                quiet = time.monotonic() - self._last
                due = not self._in_flight and quiet >= self.idle_s
                released_before = self._released
                spell = self._spell
            self.looks += 1
            try:
                with app.app_context():
                    # Once let go, again only if background work (the rollup's or the
                    # digest's pass) opened a connection since: it holds none between its
                    # statements, but the pool keeps what it opened.
                    again = not released_before or self.holding(app)
                    released = due and again and self.release(app)
            except Exception:  # noqa: BLE001 - the thread outlives any one failure
                app.logger.exception("letting the live database go while idle failed")
                released = False
            if released:
                with self._lock:
                    self._released = spell == self._spell  # else a request came in meanwhile
            del app

    @staticmethod
    def _books(app: Flask) -> list:
        books = [app.extensions["logbook"]]
        profiles = app.extensions.get("profiles")
        if profiles is not None:
            books += [b for b in profiles.loaded() if b is not books[0]]
        return books

    def holding(self, app: Flask) -> bool:
        """Does any live database have a connection open?"""
        return any(book.reader.holds_connections() for book in self._books(app))

    def release(self, app: Flask) -> bool:
        """Close every live database's connections if nothing uses one right now."""
        slots = app.extensions.get("logbook_export_slots")
        if slots is not None and slots.running():
            return False
        books = self._books(app)
        done = True
        for book in books:
            done = book.reader.let_go_if_unused() and done
        if done:
            self.releases += 1
            app.logger.debug("idle: every connection to the live database closed")
        return done


def init_app(app: Flask) -> None:
    seconds = idle_seconds(app)
    if seconds is None:
        return
    idle = app.extensions["logbook_idle"] = IdleRelease(app, seconds)

    @app.before_request
    def busy():
        g.idle_poll = request.endpoint in POLLS
        if not g.idle_poll:
            idle.enter()

    @app.teardown_request
    def done(_exc):
        if not g.get("idle_poll", True):
            idle.leave()
        elif idle.idle():
            idle.release(app)  # a poll while idle: its connection goes with its answer
