"""Export slots go to readers that read (issue 49, point 8): two clients reading a large export
at 100 KB/s (above the floor that cuts a trickle) used to hold both slots for as long as their
exports lasted, and every other export was answered 503. While others wait for a slot, the
slowest reader under the contended rate gives its slot up. Real sockets, real waitress."""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from support import WAIT_BOUND_S, make_app, sql
from support.browser import LiveServer

pytestmark = pytest.mark.slow

SPOOL = 256 * 1024  # a small spool, so that a large export waits for its reader


@pytest.fixture(scope="module")
def big_db(tmp_path_factory):
    """About 12 MB of JSONL: far more than the spool and the loopback socket buffers."""
    from webui.demo import generate

    path = tmp_path_factory.mktemp("big") / "state.db"
    generate(path, sessions=600, seed=5)
    return path


class SlowReader(threading.Thread):
    """Asks for the whole export and reads it at about ``rate`` bytes a second."""

    def __init__(self, url: str, source: str, rate: int):
        super().__init__(daemon=True)
        host, port = url.removeprefix("http://").split(":")
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        self.sock.bind((source, 0))
        self.sock.connect((host, int(port)))
        self.sock.sendall(f"GET /export.jsonl HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        self.rate, self.got, self.cut = rate, 0, False
        self.stop = threading.Event()

    def run(self):
        step = self.rate // 10
        self.sock.settimeout(WAIT_BOUND_S)
        while not self.stop.is_set():
            try:
                chunk = self.sock.recv(step)
            except (ConnectionResetError, TimeoutError, OSError):
                self.cut = True
                return
            if not chunk:
                self.cut = True
                return
            self.got += len(chunk)
            time.sleep(0.1)

    def close(self):
        self.stop.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes a recv waiting for data
        except OSError:
            pass
        self.join(WAIT_BOUND_S)
        self.sock.close()


def _until(check) -> bool:
    """Wait for ``check()`` (a bound for a hang, never a speed target)."""
    deadline = time.monotonic() + WAIT_BOUND_S
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _export(url: str, source: str, path: str) -> tuple[int, bytes]:
    handler = urllib.request.HTTPHandler()
    opener = urllib.request.build_opener(handler)
    host, port = url.removeprefix("http://").split(":")
    conn_factory = _bound(source)
    handler.http_open = lambda req: handler.do_open(conn_factory, req)  # type: ignore[method-assign]
    try:
        with opener.open(url + path, timeout=WAIT_BOUND_S) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _bound(source: str):
    import http.client

    def factory(host, timeout=None, **kw):
        return http.client.HTTPConnection(host, timeout=timeout, source_address=(source, 0))

    return factory


def test_slow_readers_give_their_slots_to_exports_waiting_for_one(big_db, tmp_path):
    app = make_app(
        big_db,
        tmp_path / "inst",
        LOGBOOK_THREADS=8,
        LOGBOOK_EXPORT_SLOTS=2,
        LOGBOOK_EXPORT_STALL_SECONDS=30.0,  # silence never cuts them here
        LOGBOOK_EXPORT_CONTENDED_WINDOW=2.0,
    )
    srv = LiveServer(app, threads=8, outbuf_high_watermark=SPOOL)
    slots = app.extensions["logbook_export_slots"]
    slow = [SlowReader(srv.url, f"127.0.0.{20 + i}", rate=100 * 1024) for i in range(2)]
    try:
        for reader in slow:
            reader.start()
        # Both hold a slot, and both have been read from long enough to be judged.
        assert _until(lambda: slots.running() == 2 and len(slots.rated()) == 2)
        assert all(r.got > 0 and not r.cut for r in slow)
        sid = sql(big_db, "SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1")[0][0]
        answers = [
            _export(srv.url, f"127.0.0.{40 + i}", f"/export.jsonl?session={sid}") for i in range(5)
        ]
        assert [status for status, _ in answers] == [200] * 5, answers
        assert all(body.count(b"\n") == 1 and sid.encode() in body for _, body in answers)
        # The first newcomer took a slow reader's slot; the others found it free after.
        assert slots.taken_over >= 1
        assert _until(lambda: any(r.cut for r in slow)), "the cut export ends cut, never whole"
    finally:
        for reader in slow:
            reader.close()
        srv.close()


def test_a_reader_that_reads_keeps_its_slot(big_db, tmp_path):
    """A fast reader is never cut for a newcomer: the newcomer is told to wait (503)."""
    app = make_app(
        big_db,
        tmp_path / "inst",
        LOGBOOK_THREADS=8,
        LOGBOOK_EXPORT_SLOTS=1,
        LOGBOOK_EXPORT_CONTENDED_WINDOW=2.0,
        LOGBOOK_EXPORT_CONTENDED_RATE=1024,  # 1 KB/s: the reader below is far faster
    )
    srv = LiveServer(app, threads=8, outbuf_high_watermark=SPOOL)
    slots = app.extensions["logbook_export_slots"]
    reader = SlowReader(srv.url, "127.0.0.30", rate=200 * 1024)
    try:
        reader.start()
        assert _until(lambda: slots.running() == 1 and len(slots.rated()) == 1)
        status, _ = _export(srv.url, "127.0.0.31", "/export.jsonl?source=cli")
        assert status == 503 and slots.taken_over == 0 and not reader.cut
    finally:
        reader.close()
        srv.close()
