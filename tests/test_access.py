"""The access model: local, remote (--insecure), private, read-only; login and its rate limit
(the fuzz of every route is tests/test_fuzz.py)."""

from __future__ import annotations

import re

import pytest

from support import copy_fixture, make_app, sql
from support.http import post


@pytest.fixture
def db(tmp_path):
    return copy_fixture("hermes-v11.db", tmp_path)


def remote(db, tmp_path, **cfg):
    return make_app(
        db, tmp_path / "inst", LOGBOOK_REMOTE=True, LOGBOOK_HOST="0.0.0.0", **cfg
    ).test_client()


def login(client, token):
    html = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    return client.post("/login", data={"token": token, "csrf_token": csrf})


def test_remote_mode_views_without_token_and_changes_are_off(db, tmp_path):
    client = remote(db, tmp_path)
    sid, title = sql(db, "SELECT id, title FROM sessions WHERE title IS NOT NULL LIMIT 1")[0]
    # an address is accepted in remote mode; a foreign name is not (DNS rebinding)
    assert client.get("/sessions", headers={"Host": "192.168.1.20:9130"}).status_code == 200
    assert client.get("/sessions", headers={"Host": "logbook.lan:9130"}).status_code == 400
    assert client.get(f"/sessions/{sid}").status_code == 200
    assert client.get("/stats").status_code == 200
    r = post(client, f"/sessions/{sid}/title", {"title": "x"})
    assert r.status_code == 403 and "without an admin token" in r.get_data(as_text=True)
    assert 'class="title-edit"' not in client.get(f"/sessions/{sid}").get_data(as_text=True)


def test_remote_mode_with_token_needs_login_to_change(db, tmp_path):
    client = remote(db, tmp_path, LOGBOOK_TOKEN="s3cret-token")
    sid = sql(db, "SELECT id FROM sessions WHERE title IS NOT NULL LIMIT 1")[0][0]
    assert post(client, f"/sessions/{sid}/title", {"title": "renamed"}).status_code == 403
    assert login(client, "wrong").status_code == 401
    r = login(client, "s3cret-token")
    assert r.status_code == 302
    cookie = r.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert post(client, f"/sessions/{sid}/title", {"title": "renamed"}).status_code == 200
    assert sql(db, "SELECT title FROM sessions WHERE id = ?", (sid,))[0][0] == "renamed"


def test_private_mode_needs_the_token_to_view(db, tmp_path):
    client = remote(db, tmp_path, LOGBOOK_TOKEN="tok", LOGBOOK_PRIVATE=True)
    r = client.get("/sessions")
    assert r.status_code == 302 and "/login" in r.headers["Location"]
    assert client.get("/sessions?format=json").status_code == 401
    assert client.get("/export.jsonl").status_code == 302
    assert login(client, "tok").status_code == 302
    assert client.get("/sessions").status_code == 200


def test_local_mode_needs_no_login_but_refuses_foreign_hosts(db, tmp_path):
    client = make_app(db, tmp_path / "inst").test_client()
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    assert post(client, f"/sessions/{sid}/title", {"title": "local ok"}).status_code == 200
    for host in ("evil.example", "127.0.0.1.nip.io", "localhost.evil.example:9130"):
        assert client.get("/sessions", headers={"Host": host}).status_code == 400, host
    for host in ("localhost:9130", "127.0.0.1", "[::1]:9130"):
        assert client.get("/sessions", headers={"Host": host}).status_code == 200, host


def test_login_attempts_are_rate_limited(db, tmp_path):
    client = remote(db, tmp_path, LOGBOOK_TOKEN="tok")
    codes = [login(client, f"guess{i}").status_code for i in range(7)]
    assert codes[:5] == [401] * 5 and 429 in codes[5:]
    assert login(client, "tok").status_code == 429  # even the right one, until the window ends


def test_login_next_cannot_redirect_elsewhere(db, tmp_path):
    client = remote(db, tmp_path, LOGBOOK_TOKEN="tok")
    html = client.get("/login?next=//evil.example/x").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    r = client.post("/login", data={"token": "tok", "csrf_token": csrf, "next": "//evil.example/x"})
    assert r.headers["Location"] == "/sessions"


def test_error_pages_leak_nothing(db, tmp_path):
    client = make_app(db, tmp_path / "inst", LOGBOOK_TOKEN="supersecret").test_client()
    for url in (
        "/sessions/nope",
        "/sessions?after=%%%",
        "/search?q=x&page=-1",
        "/stats?period=x",
        "/nope",
    ):
        text = client.get(url).get_data(as_text=True)
        assert "Traceback" not in text and "SELECT" not in text and "supersecret" not in text
        assert "/work/" not in text.replace(str(db), "")


def test_remote_mode_answers_only_to_addresses_its_names_and_allowed_hosts(tmp_path):
    """DNS rebinding in remote mode: a foreign name is refused, with the option that allows it."""
    import socket

    db = copy_fixture("hermes-v11.db", tmp_path)
    app = make_app(
        db, tmp_path / "inst", LOGBOOK_REMOTE=True, LOGBOOK_ALLOWED_HOSTS=["logbook.lan"]
    )
    client = app.test_client()
    r = client.get("/sessions", headers={"Host": "evil.example"})
    assert r.status_code == 400 and "--allow-host evil.example" in r.get_data(as_text=True)
    assert client.get("/export.jsonl", headers={"Host": "evil.example:9130"}).status_code == 400
    for host in (
        "192.168.1.5:9130",
        "[fe80::1]:9130",
        "127.0.0.1:9130",
        "logbook.lan",
        "LOGBOOK.LAN:9130",
        socket.gethostname(),
    ):
        assert client.get("/sessions", headers={"Host": host}).status_code == 200, host
