"""A request line as scripts send it (issue 47, point 7): ``curl 'http://…/search?q=数据库迁移'``
puts the UTF-8 bytes on the wire unencoded. Logbook answers it as if they were percent-encoded
(as browsers send them), and a request line nobody can read gets waitress's 400 — never a
closed socket with no answer. On real sockets, through the server Logbook runs in."""

from __future__ import annotations

import socket

import pytest

from support import copy_fixture, make_app, sql
from support.browser import LiveServer


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("raw-line")
    db = copy_fixture("hermes-v22.db", tmp)
    srv = LiveServer(make_app(db, tmp / "inst"))
    yield srv, db
    srv.close()


def exchange(url: str, request: bytes) -> bytes:
    """Send ``request`` as is on a new connection; everything the server answers."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def get(url: str, target: str) -> bytes:
    return exchange(
        url,
        f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode(),
    )


def status(answer: bytes) -> int:
    assert answer, "the server closed the connection without an answer"
    return int(answer.split(b" ", 2)[1])


def test_raw_utf8_in_the_query_is_searched_as_if_percent_encoded(live):
    srv, _db = live
    raw = get(srv.url, "/search?q=数据库迁移&format=json")
    encoded = get(srv.url, "/search?q=%E6%95%B0%E6%8D%AE%E5%BA%93%E8%BF%81%E7%A7%BB&format=json")
    assert status(raw) == 200
    body = raw.split(b"\r\n\r\n", 1)[1]
    assert "数据库迁移".encode() in body or b"\\u6570" in body  # the query, as it was typed
    # The same answer as the percent-encoded request (the page itself, without its date).
    assert body == encoded.split(b"\r\n\r\n", 1)[1]


def test_raw_utf8_in_a_page_request_and_in_the_path(live):
    srv, db = live
    page = get(srv.url, "/search?q=数据库迁移")
    assert status(page) == 200
    assert 'value="数据库迁移"'.encode() in page  # the search box says what was searched
    # A path with raw UTF-8: the session page's clear 404, not silence.
    assert status(get(srv.url, "/sessions/会话")) == 404
    # A title with raw UTF-8 through /t/<title>: found as its percent-encoded twin is.
    title = sql(db, "SELECT title FROM sessions WHERE title IS NOT NULL LIMIT 1")[0][0]
    assert status(get(srv.url, f"/t/{title}".replace(" ", "%20"))) in (200, 302)


def test_raw_latin1_bytes_get_an_answer_too(live):
    """Bytes that are not UTF-8 (an old script's Latin-1 é) are read as a replacement
    character: an answer, never a dropped connection."""
    srv, _db = live
    answer = exchange(
        srv.url, b"GET /search?q=caf\xe9 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    assert status(answer) == 200


def test_an_unreadable_request_line_is_answered_400(live):
    srv, _db = live
    answer = exchange(
        srv.url, b"GET /a b c HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    assert status(answer) == 400


def test_pipelined_requests_with_raw_bytes_each_get_their_answer(live):
    srv, _db = live
    one = "GET /search?q=数据库&format=json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    two = "GET /search?q=迁移&format=json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    answer = exchange(srv.url, (one + two).encode())
    assert answer.count(b"HTTP/1.1 200 ") == 2, answer[:400]
