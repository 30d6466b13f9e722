"""A client that left stops its work (issue 49, point 6): the server's loop keeps reading a
connection while its request is answered, so it sees the client close it, and the request's
queries stop there instead of running to their deadline for nobody. (Ten one-shot search
bombs used to keep every page slow for two minutes after their clients had gone.)"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from support import WAIT_BOUND_S, copy_fixture, make_app
from support.browser import LiveServer
from webui.db import QueryTimeout
from webui.db import deadline as request_deadline

# A statement that runs for as long as it is allowed to (a long recursive count).
SPIN = (
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
    "SELECT COUNT(*) FROM (SELECT n FROM c LIMIT 400000000000)"
)
# Far beyond the wait below: only the client's leaving can stop the query in time.
DEADLINE = 10 * WAIT_BOUND_S


def test_a_query_stops_when_its_requests_client_has_gone(tmp_path):
    app = make_app(copy_fixture("hermes-v22.db", tmp_path), tmp_path / "inst")
    reader = app.extensions["logbook"].reader
    gone = threading.Event()
    threading.Timer(0.3, gone.set).start()
    with app.test_request_context("/"):
        request_deadline.begin(DEADLINE, gone=gone.is_set)
        try:
            with pytest.raises(QueryTimeout):
                reader.scalar(SPIN)
            assert request_deadline.remaining() == 0.0  # nothing more runs for it
        finally:
            request_deadline.end()
    assert gone.is_set()


def test_the_server_stops_a_request_whose_client_closed_the_connection(tmp_path):
    app = make_app(
        copy_fixture("hermes-v22.db", tmp_path),
        tmp_path / "inst",
        LOGBOOK_REQUEST_DEADLINE=DEADLINE,
        LOGBOOK_QUERY_TIME_LIMIT=DEADLINE,
    )
    running, ended = threading.Event(), threading.Event()
    outcome: dict = {}

    def spin():
        reader = app.extensions["logbook"].reader
        began = time.monotonic()
        running.set()
        try:
            reader.scalar(SPIN)
            outcome["what"] = "finished"
        except QueryTimeout:
            outcome["what"] = "stopped"
        finally:
            outcome["after"] = time.monotonic() - began
            ended.set()
        return "done"

    app.add_url_rule("/probe-spin", "probe_spin", spin)
    live = LiveServer(app, threads=2)
    try:
        host, port = live.url.removeprefix("http://").split(":")
        s = socket.create_connection((host, int(port)))
        s.sendall(f"GET /probe-spin HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        assert running.wait(WAIT_BOUND_S)
        s.close()  # the client leaves
        # Its deadline is twenty minutes away: only the client's leaving stops it this soon.
        assert ended.wait(WAIT_BOUND_S), "the query ran on for a client that had gone"
        assert outcome["what"] == "stopped" and outcome["after"] < DEADLINE, outcome
    finally:
        live.close()
