"""Long responses that no client can use to hold the server.

An export is produced by a waitress worker thread. Waitress spools what the worker writes (to a
temporary file past 1 MB) and sends it as the client reads; only when a connection's spool
passes ``SPOOL_BYTES`` (webui.door.serve) does the worker wait for the client. So:

* most exports are written whole into the spool and the worker is free again at once; a client
  that then reads nothing is dropped by waitress after ``channel_timeout`` of silence;
* a larger export waits for its client, but one that takes nothing for ``STALL_SECONDS``, or
  reads slower than ``MIN_RATE_BYTES_S`` over ``RATE_WINDOW_S`` while data waits for it (a
  reader trickling 4 KB every few seconds is never silent), is abandoned: a watchdog closes
  its connection, which wakes the worker and ends the export. The body then ends without
  HTTP's last chunk, so the client sees a cut, never a short file that looks complete;
* at most ``total`` exports are produced at once (a quarter of the workers) and ``per_client``
  per address; the others are answered 503/429 with Retry-After at once;
* slots go to readers that read: while every slot is taken and another export asks for one,
  the slowest export whose reader took less than ``CONTENDED_RATE_BYTES_S`` over the last
  ``CONTENDED_WINDOW_S`` while data waited for it is cut (as a stalled one is) and the newcomer
  gets its slot. Two readers at 100 KB/s used to hold both slots for as long as their exports
  lasted, every other export answered 503 (issue 49, point 8).
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from typing import Any

from flask import Flask, current_app, request

from webui import threads
from webui.db import LogbookDBError
from webui.door.gate import unacknowledged

log = logging.getLogger("webui")

STALL_SECONDS = 10.0
# A reader slower than this, measured over the window while the export waits for it, is
# dropped: 32 KB/s is a 256 kbit/s link; a trickle of 4 KB every 8 s is 0.5 KB/s.
MIN_RATE_BYTES_S = 32 * 1024
RATE_WINDOW_S = 20.0
# While others wait for a slot, a reader must take 1 MB/s (8 Mbit/s) over 5 s to keep it.
CONTENDED_RATE_BYTES_S = 1024 * 1024
CONTENDED_WINDOW_S = 5.0
CONTENDED_SEEN_S = 1.5
# How long a newcomer waits for the slot of the export cut for it (its worker lets go as soon
# as the loop has closed the connection: milliseconds).
TAKEOVER_WAIT_S = 2.0


class ExportsBusy(LogbookDBError):
    """Every export slot (or this client's) is taken."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class ExportSlots:
    """How many exports run, in total and per client, and the watchdog over their clients."""

    def __init__(
        self,
        total: int,
        per_client: int,
        stall_s: float,
        min_rate: float = MIN_RATE_BYTES_S,
        rate_window_s: float = RATE_WINDOW_S,
        contended_rate: float = CONTENDED_RATE_BYTES_S,
        contended_window_s: float = CONTENDED_WINDOW_S,
    ):
        self.total, self.per_client, self.stall_s = total, per_client, stall_s
        self.min_rate, self.rate_window_s = min_rate, rate_window_s
        self.contended_rate, self.contended_window_s = contended_rate, contended_window_s
        self._lock = threading.Lock()
        self._by_client: Counter[str] = Counter()
        self._streams: set[GuardedStream] = set()
        self._watchdog: threading.Thread | None = None
        self.abandoned = 0  # exports cut because their client stopped reading (for tests, logs)
        self.taken_over = 0  # exports cut to give their slot to another (for tests, logs)

    @property
    def keep_s(self) -> float:
        """How long a stream keeps its read samples: the longer of the two windows."""
        return max(self.rate_window_s, self.contended_window_s) + 1.0

    def running(self) -> int:
        with self._lock:
            return sum(self._by_client.values())

    def take(self, client: str) -> None:
        if self._try_take(client):
            return
        # Every slot taken: one whose reader is slow is given to this export instead.
        slow = self._slowest_below(self.contended_rate, self.contended_window_s)
        if slow is not None:
            stream, rate = slow
            self.taken_over += 1
            log.warning(
                "export to %s cut for another: its client read %.0f KB/s over %.0f s (less than "
                "%.0f KB/s) while others waited for a slot",
                stream.client,
                rate / 1024,
                self.contended_window_s,
                self.contended_rate / 1024,
            )
            stream.abandon()
            deadline = time.monotonic() + TAKEOVER_WAIT_S
            while time.monotonic() < deadline:
                time.sleep(0.02)
                if self._try_take(client):
                    return
        raise ExportsBusy(
            f"{self.total} exports are being produced right now, the most Logbook runs "
            "at once so that pages stay quick. Try again in a moment.",
            503,
        )

    def _try_take(self, client: str) -> bool:
        """Take a slot if one is free (True); 429 when this client has its share."""
        with self._lock:
            if self._by_client[client] >= self.per_client:
                raise ExportsBusy(
                    "An export for you is still being produced; Logbook makes one at a time per "
                    "client. Wait for it to finish (or cancel it) and try again.",
                    429,
                )
            if sum(self._by_client.values()) >= self.total:
                return False
            self._by_client[client] += 1
            return True

    def rated(self) -> list[tuple[GuardedStream, float]]:
        """(stream, rate) of the running exports whose readers can be judged under
        contention: each one's rate over the contended window while data waited for it. A
        reader that just (re)connected is judged after CONTENDED_SEEN_S: one cut for being
        slow must not hold its slot again for a whole window by asking anew."""
        now, window = time.monotonic(), self.contended_window_s
        with self._lock:
            streams = list(self._streams)
        seen = min(window * 0.9, CONTENDED_SEEN_S)
        return [(s, r) for s in streams if (r := s.rate_over(now, window, seen)) is not None]

    def _slowest_below(self, rate: float, window: float):
        """(stream, its rate) of the running export whose reader took least over the
        contended window while data waited for it, if that is under ``rate``; else None."""
        slowest = min(self.rated(), key=lambda pair: pair[1], default=None)
        return slowest if slowest is not None and slowest[1] < rate else None

    def give_back(self, client: str) -> None:
        with self._lock:
            self._by_client[client] -= 1
            if self._by_client[client] <= 0:
                del self._by_client[client]

    def watch(self, stream: GuardedStream) -> None:
        with self._lock:
            self._streams.add(stream)
            if self._watchdog is None or not self._watchdog.is_alive():
                self._watchdog = threads.start(self._watch, "logbook-export-watchdog")

    def unwatch(self, stream: GuardedStream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def _watch(self) -> None:
        period = min(0.5, self.stall_s / 4)
        while True:
            time.sleep(period)
            now = time.monotonic()
            with self._lock:
                if not self._streams:
                    self._watchdog = None
                    return
                streams = list(self._streams)
            for stream in streams:
                if stream.stalled_for(now) > self.stall_s:
                    why = f"the client read nothing for {self.stall_s:.0f} s"
                else:
                    rate = stream.read_rate(now, self.rate_window_s)
                    if rate is None or rate >= self.min_rate:
                        continue
                    why = (
                        f"the client read {rate / 1024:.1f} KB/s over {self.rate_window_s:.0f} s "
                        f"(less than {self.min_rate / 1024:.0f} KB/s) while data waited for it"
                    )
                self.abandoned += 1
                log.warning("export to %s abandoned: %s", stream.client, why)
                try:
                    stream.abandon()
                except Exception:  # noqa: BLE001 - the watchdog outlives any one stream
                    log.exception("abandoning the export to %s failed", stream.client)


class GuardedStream:
    """An export body: holds its slot until it ends, however it ends (finished, cut by the
    watchdog, the client gone, or never started), and tells the watchdog how long waitress has
    been holding its last chunk."""

    def __init__(self, chunks: Iterable[Any], slots: ExportSlots, client: str, environ: dict):
        self._chunks = iter(chunks)
        self._slots, self.client = slots, client
        # waitress.client_disconnected is a bound method of the connection's channel; through it
        # the watchdog can close a connection whose reader stalled.
        self._channel = getattr(environ.get("waitress.client_disconnected"), "__self__", None)
        self._handed_at: float | None = None
        self._closed = False
        self.produced = 0  # bytes handed to waitress
        # (when, bytes the client had taken) samples, while data waited for it.
        self._reads: deque[tuple[float, int]] = deque()
        slots.watch(self)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        self._handed_at = None  # waitress took the last chunk: the client is reading
        try:
            chunk = next(self._chunks)
        except BaseException:
            self.close()
            raise
        self._handed_at = time.monotonic()
        self.produced += len(chunk) if isinstance(chunk, (bytes, str)) else 0
        return chunk

    def stalled_for(self, now: float) -> float:
        handed = self._handed_at
        return 0.0 if handed is None else now - handed

    def read_rate(self, now: float, window: float) -> float | None:
        """Bytes a second the client took over the last ``window`` seconds, counted only while
        some of the export was waiting for it (else the export, not the client, is slow);
        None until a whole window has been seen that way. Takes a sample (the watchdog
        calls it every half second)."""
        channel = self._channel
        waiting = getattr(channel, "total_outbufs_len", 0) if channel is not None else 0
        # What the kernel holds unacknowledged counts as waiting too: waitress hands it big
        # bursts whenever the socket's buffer drains, so its own outbuf alone makes a steady
        # reader look silent for seconds, then fast.
        waiting += unacknowledged(getattr(channel, "socket", None))
        if not waiting:
            self._reads.clear()
            return None
        taken = self.produced - waiting
        self._reads.append((now, taken))
        # Keep one sample from before the longest window's start, so it is seen whole.
        keep = max(window, self._slots.keep_s)
        while len(self._reads) > 1 and self._reads[1][0] <= now - keep:
            self._reads.popleft()
        return self.rate_over(now, window)

    def rate_over(self, now: float, window: float, seen: float | None = None) -> float | None:
        """The rate over the last ``window`` seconds from the samples taken (read_rate), or
        None until ``seen`` seconds (default: nearly the whole window) have been seen while
        data waited for the client."""
        reads = list(self._reads)
        if len(reads) < 2:
            return None
        start = None
        for sample in reads:  # the last sample at or before the window's start
            if sample[0] <= now - window:
                start = sample
            else:
                break
        if start is None:
            start = reads[0]
            if now - start[0] < (window * 0.9 if seen is None else seen):
                return None
        last_at, last_taken = reads[-1]
        if last_at <= start[0]:
            return None
        return (last_taken - start[1]) / (last_at - start[0])

    def abandon(self) -> None:
        channel = self._channel
        self._handed_at = None
        if channel is None:
            return
        # Shut the socket down (not close it: waitress's loop may be selecting on it) and let
        # the loop, which owns it, close the connection. Closing wakes the worker waiting for
        # room in the spool, which then stops producing the export.
        channel.will_close = True
        # The loop may have closed the connection meanwhile (its socket is then None): the
        # reader is gone already, and the watchdog must live on for the other exports.
        sock = channel.socket
        if sock is None:
            return
        try:
            # Reset, not a polite close: what the kernel still holds for a trickling reader
            # would otherwise take hours to reach it, and it must see the cut now.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already gone
        channel.server.pull_trigger()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._handed_at = None
        self._slots.unwatch(self)
        self._slots.give_back(self.client)
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


def init_app(app: Flask) -> None:
    workers = int(app.config.get("LOGBOOK_THREADS") or 8)
    total = int(app.config.get("LOGBOOK_EXPORT_SLOTS") or max(1, workers // 4))
    app.extensions["logbook_export_slots"] = ExportSlots(
        total=total,
        per_client=int(app.config.get("LOGBOOK_EXPORTS_PER_CLIENT") or 1),
        stall_s=float(app.config.get("LOGBOOK_EXPORT_STALL_SECONDS") or STALL_SECONDS),
        min_rate=float(app.config.get("LOGBOOK_EXPORT_MIN_RATE") or MIN_RATE_BYTES_S),
        rate_window_s=float(app.config.get("LOGBOOK_EXPORT_RATE_WINDOW") or RATE_WINDOW_S),
        contended_rate=float(
            app.config.get("LOGBOOK_EXPORT_CONTENDED_RATE") or CONTENDED_RATE_BYTES_S
        ),
        contended_window_s=float(
            app.config.get("LOGBOOK_EXPORT_CONTENDED_WINDOW") or CONTENDED_WINDOW_S
        ),
    )


def guarded(chunks: Iterable[Any]) -> GuardedStream:
    """Take an export slot for this request's client (or refuse with 503/429) and return the
    body that gives it back."""
    slots: ExportSlots = current_app.extensions["logbook_export_slots"]
    client = request.remote_addr or "?"
    slots.take(client)
    try:
        return GuardedStream(chunks, slots, client, request.environ)
    except BaseException:
        slots.give_back(client)
        raise
