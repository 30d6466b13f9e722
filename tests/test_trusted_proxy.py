"""Remote mode behind a reverse proxy (issue 49, point 8): with ``--trusted-proxy`` the login
throttle counts the clients the proxy forwards for (the last X-Forwarded-For entry, the one the
proxy wrote), so a guesser behind the same proxy never locks the admin out; from any other
peer the header proves nothing and is ignored. Real HTTP through waitress, from several
loopback source addresses (one of them plays the proxy)."""

from __future__ import annotations

import http.client
import re
from urllib.parse import urlencode

import pytest

from support import copy_fixture, make_app
from support.browser import LiveServer

TOKEN = "the-right-token-for-this-test"
PROXY = "127.0.0.2"
WRONG_TRIES = 30  # past the per-address (5) and the overall (20) budgets


class Visitor:
    """One HTTP client on one source address, keeping its cookies."""

    def __init__(self, url: str, source: str, forwarded_for: str | None = None):
        host, port = url.removeprefix("http://").split(":")
        self.host, self.port, self.source = host, int(port), source
        self.forwarded_for = forwarded_for
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: dict | None = None):
        conn = http.client.HTTPConnection(
            self.host, self.port, timeout=30, source_address=(self.source, 0)
        )
        headers = {"Host": f"{self.host}:{self.port}"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if self.forwarded_for is not None:
            headers["X-Forwarded-For"] = self.forwarded_for
        data = None
        if body is not None:
            data = urlencode(body)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            text = r.read().decode("utf-8", "replace")
            for value in r.headers.get_all("Set-Cookie") or []:
                name, _, rest = value.partition("=")
                self.cookies[name] = rest.split(";")[0]
            return r.status, text
        finally:
            conn.close()

    def login(self, token: str) -> int:
        _status, html = self.request("GET", "/login")
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
        status, _ = self.request("POST", "/login", {"token": token, "csrf_token": csrf})
        return status


def _server(tmp_path, **config):
    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(
        db,
        tmp_path / "inst",
        LOGBOOK_REMOTE=True,
        LOGBOOK_HOST="0.0.0.0",
        LOGBOOK_TOKEN=TOKEN,
        **config,
    )
    return LiveServer(app, threads=4)


@pytest.fixture
def behind_proxy(tmp_path):
    live = _server(tmp_path, LOGBOOK_TRUSTED_PROXY=PROXY)
    yield live
    live.close()


def test_a_guesser_behind_the_trusted_proxy_never_locks_the_admin_out(behind_proxy):
    guesser = Visitor(behind_proxy.url, PROXY, forwarded_for="203.0.113.5")
    answers = [guesser.login(f"wrong-guess-number-{i:04d}") for i in range(WRONG_TRIES)]
    assert answers[:5] == [401] * 5 and answers[-1] == 429, answers
    # The admin, through the same proxy, from another address: let in at once.
    admin = Visitor(behind_proxy.url, PROXY, forwarded_for="198.51.100.7")
    assert admin.login(TOKEN) == 302
    # Read from the right: what a client wrote further left proves nothing.
    spoofing = Visitor(behind_proxy.url, PROXY, forwarded_for="198.51.100.7, 203.0.113.5")
    assert spoofing.login(TOKEN) == 429  # counted as 203.0.113.5, which is throttled


def test_the_header_is_ignored_from_peers_other_than_the_proxy(behind_proxy):
    direct = "127.0.0.3"
    tried = [
        Visitor(behind_proxy.url, direct, forwarded_for=f"192.0.2.{i}").login(f"bad-guess-{i}")
        for i in range(6)
    ]
    # Each claimed a new forwarded address, but all came from one peer: counted as one.
    assert tried[:5] == [401] * 5 and tried[5] == 429, tried


def test_without_the_option_the_proxy_is_one_client(tmp_path):
    """What the option is for: the proxy's address is everyone's, so 5 wrong tokens lock the
    admin out (and a forwarded address from the proxy changes nothing)."""
    live = _server(tmp_path)
    try:
        for i in range(5):
            assert Visitor(live.url, PROXY, "203.0.113.5").login(f"wrong-{i}") == 401
        assert Visitor(live.url, PROXY, "198.51.100.7").login(TOKEN) == 429
    finally:
        live.close()


def test_a_browser_that_logged_in_before_is_never_locked_out_by_guessers_beside_it(tmp_path):
    """Without the option (or behind a NAT), guessers share the admin's address: the browser
    that logged in with the token before still gets in; a fresh one waits, as it should."""
    live = _server(tmp_path)
    try:
        admin = Visitor(live.url, PROXY)
        assert admin.login(TOKEN) == 302
        mark = {"logbook_known": admin.cookies["logbook_known"]}
        for i in range(WRONG_TRIES):
            Visitor(live.url, PROXY).login(f"wrong-guess-{i:04d}")
        assert Visitor(live.url, PROXY).login(TOKEN) == 429  # a fresh browser: throttled
        returning = Visitor(live.url, PROXY)
        returning.cookies.update(mark)  # the mark alone: logged out since, session gone
        assert returning.login(TOKEN) == 302
        # The mark lets nobody in by itself, and a wrong token with it still counts.
        forged = Visitor(live.url, PROXY)
        forged.cookies["logbook_known"] = "0" * 64
        assert forged.login(TOKEN) == 429
        assert returning.login("still-not-the-token") == 401
    finally:
        live.close()
