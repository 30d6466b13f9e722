"""The server's loop survives descriptors numbered past 1,024 (issue 49, point 3 / B-2):
waitress's default loop uses select(), which cannot watch them, and the first connection to
get such a number killed the process (``ValueError: filedescriptor out of range in
select()``): 500 archive files, or 260 plus an idle-socket flood, were enough. The loop now
polls. Here the server's process holds 1,100 other descriptors (as stores and journals would)
and still answers, while a flood of idle sockets comes and goes."""

from __future__ import annotations

import os
import socket
import urllib.request

import pytest

from support import WAIT_BOUND_S, copy_fixture, make_app
from support.browser import LiveServer

HELD = 1_100


@pytest.fixture
def crowded(tmp_path):
    """A live server in this process, and 1,100 descriptors held beside it."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < HELD + 400:
        pytest.skip(f"this machine allows {hard} descriptors a process")
    app = make_app(copy_fixture("hermes-v22.db", tmp_path), tmp_path / "inst")
    live = LiveServer(app, threads=4)  # make_server raises the soft limit as far as allowed
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(HELD)]
    try:
        yield live
    finally:
        for fd in held:
            os.close(fd)
        live.close()


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=WAIT_BOUND_S) as r:
        r.read()
        return r.status


def test_connections_numbered_past_1024_are_served(crowded):
    probe = socket.socket()  # the server's next connection gets a number like this one
    try:
        assert probe.fileno() > 1024
    finally:
        probe.close()
    for path in ("/sessions", "/search?q=docker", "/stats", "/sessions?format=json"):
        assert _get(crowded.url + path) == 200, path


def test_an_idle_socket_flood_beside_them_leaves_the_pages_answering(crowded):
    host, port = crowded.url.removeprefix("http://").split(":")
    flood = []
    try:
        for i in range(200):
            s = socket.socket()
            s.bind((f"127.0.0.{10 + i % 20}", 0))
            s.connect((host, int(port)))
            flood.append(s)
        assert _get(crowded.url + "/sessions") == 200
        assert crowded.thread.is_alive()  # the loop lives on, accepting
    finally:
        for s in flood:
            s.close()
    assert _get(crowded.url + "/sessions") == 200
