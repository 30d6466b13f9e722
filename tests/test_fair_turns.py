"""Pages cost what they are, and clients take turns (issue 49, point 9 / N-7): a costly page
that counted as cheap (``/sessions?limit=500``) flooded the page workers; 64 connections from
two addresses pushed every other page to 4-5 s; requests pipelined on a connection and never
read held workers for good. Real waitress, real sockets; the routes named ``/probe-*`` are the
tests' own, so what runs when can be seen from inside."""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from support import WAIT_BOUND_S, copy_fixture, make_app
from support.browser import LiveServer
from webui.door.turns import Turns, forwarded_client
from webui.door.workclass import work_class

# -- the rules, alone -------------------------------------------------------------------------


def test_lines_take_turns_and_each_line_keeps_its_order():
    t = Turns()
    for i in range(5):
        t.put("flood", f"f{i}")
    t.put("other", "o0")
    t.put("flood", "f5")
    t.put("third", "t0")
    taken = [t.take() for _ in range(len(t))]
    assert taken == ["f0", "o0", "t0", "f1", "f2", "f3", "f4", "f5"]
    assert t.take() is None and len(t) == 0


def test_a_line_whose_head_may_not_run_is_passed_over_without_losing_its_turn():
    t = Turns()
    t.put("a", ("dear", 1))
    t.put("b", ("cheap", 2))
    t.put("a", ("cheap", 3))
    assert t.take(lambda item: item[0] != "dear") == ("cheap", 2)
    assert t.take() == ("dear", 1)  # "a" kept its place at the front
    oldest = t.oldest(key=lambda item: item[1])
    t.remove(oldest)
    assert len(t) == 0


@pytest.mark.parametrize(
    "path,query,kind",
    [
        ("/sessions", "", "cheap"),
        ("/sessions", "limit=100", "cheap"),
        ("/sessions", "limit=101", "dear"),
        ("/sessions", "limit=500&format=json", "dear"),
        ("/sessions", "limit=50&limit=500", "dear"),  # the largest counts
        ("/chats", "limit=400", "dear"),
        ("/search", "q=docker", "cheap"),
        ("/search", "q=docker&page=20", "cheap"),
        ("/search", "q=docker&page=21", "dear"),
        ("/export.jsonl", "", "heavy"),
        ("/search", "q=a*", "heavy"),
    ],
)
def test_a_page_is_classed_by_what_it_will_cost(path, query, kind):
    assert work_class(path, query) == kind


@pytest.mark.parametrize(
    "peer,header,trusted,client",
    [
        ("10.0.0.9", "203.0.113.5", None, "10.0.0.9"),  # no proxy trusted: the peer
        ("10.0.0.9", "203.0.113.5", "127.0.0.1", "10.0.0.9"),  # not from the proxy
        ("127.0.0.1", "203.0.113.5", "127.0.0.1", "203.0.113.5"),
        ("127.0.0.1", "198.51.100.1, 203.0.113.5", "127.0.0.1", "203.0.113.5"),  # the right
        ("127.0.0.1", "203.0.113.5:4711", "127.0.0.1", "203.0.113.5"),
        ("127.0.0.1", "[2001:db8::1]:443", "127.0.0.1", "2001:db8::1"),
        ("127.0.0.1", "not-an-address", "127.0.0.1", "127.0.0.1"),
        ("127.0.0.1", None, "127.0.0.1", "127.0.0.1"),
    ],
)
def test_the_client_behind_a_trusted_proxy_is_read_from_the_right(peer, header, trusted, client):
    assert forwarded_client(peer, header, trusted) == client


# -- on the real server ----------------------------------------------------------------------


def _get(url: str, source: str = "127.0.0.1", timeout: float = WAIT_BOUND_S) -> int:
    import http.client

    host, port = url.removeprefix("http://").split("/", 1)[0].split(":")
    path = "/" + url.removeprefix("http://").split("/", 1)[1]
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout, source_address=(source, 0))
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


@pytest.fixture
def probed(tmp_path):
    """A server with two page workers and one heavy one, and the tests' probe routes."""
    from flask import request

    app = make_app(copy_fixture("hermes-v22.db", tmp_path), tmp_path / "inst")
    started: list[str] = []
    running = {"dear": 0, "dear_max": 0}
    lock = threading.Lock()
    hold = threading.Event()  # the flood's requests wait for it, once started

    def turn():
        with lock:
            started.append(request.remote_addr)
        if request.remote_addr == FLOOD:
            hold.wait(WAIT_BOUND_S)
        return "ok"

    def dear():  # classed dear by its limit, as /sessions?limit=500 is
        with lock:
            running["dear"] += 1
            running["dear_max"] = max(running["dear_max"], running["dear"])
        time.sleep(0.2)
        with lock:
            running["dear"] -= 1
        return "ok"

    def big():
        return "x" * (512 * 1024)

    app.add_url_rule("/probe-turn", "probe_turn", turn)
    app.add_url_rule("/probe-dear", "probe_dear", dear)
    app.add_url_rule("/probe-big", "probe_big", big)
    live = LiveServer(app, threads=2, outbuf_high_watermark=256 * 1024)
    live.started, live.running, live.hold = started, running, hold
    yield live
    live.close()


FLOOD, NEWCOMER = "127.0.0.5", "127.0.0.6"


def _until(check) -> bool:
    deadline = time.monotonic() + WAIT_BOUND_S
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_client_with_many_requests_waiting_does_not_go_before_a_newcomer(probed):
    """24 requests from one client: the three workers take three (held there), 21 wait; a
    newcomer's one request arrives; then the workers are let go."""
    flood = [
        threading.Thread(target=_get, args=(probed.url + "/probe-turn", FLOOD)) for _ in range(24)
    ]
    for t in flood:
        t.start()
    dispatcher = probed.server.task_dispatcher
    assert _until(lambda: len(dispatcher.cheap) == 21 and len(probed.started) == 3)
    newcomer = threading.Thread(target=_get, args=(probed.url + "/probe-turn", NEWCOMER))
    newcomer.start()
    assert _until(lambda: NEWCOMER in dispatcher.cheap.clients())
    probed.hold.set()
    for t in [*flood, newcomer]:
        t.join(WAIT_BOUND_S)
    # The three held, then at most one more of the flood (its line was first), then the
    # newcomer: first come, first served put it after all 21.
    assert probed.started.index(NEWCOMER) <= 3 + 1, probed.started


def test_dear_pages_run_one_at_a_time_beside_cheap_ones(probed):
    results: list[int] = []

    def ask():
        results.append(_get(probed.url + "/probe-dear?limit=500", "127.0.0.7"))

    flood = [threading.Thread(target=ask) for _ in range(6)]
    for t in flood:
        t.start()
    cheap = [_get(probed.url + "/probe-turn", "127.0.0.8") for _ in range(3)]
    for t in flood:
        t.join(WAIT_BOUND_S)
    assert cheap == [200] * 3
    assert probed.running["dear_max"] == 1
    assert set(results) <= {200, 503} and 200 in results
    # The worker counts its dear page done just after the answer went out.
    dispatcher = probed.server.task_dispatcher
    deadline = time.monotonic() + WAIT_BOUND_S
    while dispatcher.dear_running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert dispatcher.dear_running == 0


def _pipeline(url: str, source: str, path: str, n: int) -> socket.socket:
    """``n`` requests for ``path`` sent at once on one connection, never read."""
    host, port = url.removeprefix("http://").split(":")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((source, 0))
    s.connect((host, int(port)))
    one = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    s.sendall(one * n)
    return s


def test_requests_pipelined_and_never_read_hold_no_worker(probed):
    pipelined = [_pipeline(probed.url, f"127.0.0.{30 + i}", "/probe-big", 20) for i in range(4)]
    try:
        # Each has had a response it does not read; their next requests wait for them.
        server = probed.server
        deadline = time.monotonic() + WAIT_BOUND_S
        while server.parked_total < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.parked_total >= 4
        answers = []
        for _ in range(10):
            try:
                answers.append(_get(probed.url + "/probe-turn", "127.0.0.9"))
            except (TimeoutError, OSError, urllib.error.URLError) as exc:
                answers.append(repr(exc))
        assert answers == [200] * 10, answers
    finally:
        for s in pipelined:
            s.close()
