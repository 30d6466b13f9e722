"""Defects found in review, each pinned by a test."""

from __future__ import annotations

import base64
import json
import re
import sqlite3

import pytest

from support import copy_fixture, make_app, sql
from support.http import follow, post


@pytest.fixture
def env(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    return db, app, app.test_client()


def cursor(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def test_no_open_redirect_from_theme_or_login(env, tmp_path):
    _, _, client = env
    for nxt in ("/%09/evil.com", "//evil.com", "http://evil.com", "/\\evil.com", "%2F%2Fevil.com"):
        r = client.get(f"/theme?set=dark&next={nxt}")
        assert (
            r.headers["Location"] in ("/sessions", "/%2F%2Fevil.com")
            or r.headers["Location"].startswith("/")
            and not r.headers["Location"].startswith("//")
        )
    db = copy_fixture("hermes-v11.db", tmp_path / "r")
    remote = make_app(db, tmp_path / "r" / "inst", LOGBOOK_REMOTE=True, LOGBOOK_TOKEN="t")
    c = remote.test_client()
    import re

    html = c.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    r = c.post("/login", data={"token": "t", "csrf_token": token, "next": "/\t/evil.com"})
    assert r.headers["Location"] == "/sessions"


def test_rotating_the_token_logs_everyone_out(tmp_path):
    import re

    db = copy_fixture("hermes-v11.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_REMOTE=True, LOGBOOK_TOKEN="old")
    c = app.test_client()
    html = c.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    c.post("/login", data={"token": "old", "csrf_token": token})
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    assert post(c, f"/sessions/{sid}/title", {"title": "a"}).status_code == 200
    app.config["LOGBOOK_TOKEN"] = "new"
    assert post(c, f"/sessions/{sid}/title", {"title": "b"}).status_code == 403


def test_a_cookie_captured_before_logout_no_longer_works(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_REMOTE=True, LOGBOOK_TOKEN="t" * 20)
    c = app.test_client()
    html = c.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    c.post("/login", data={"token": "t" * 20, "csrf_token": csrf})
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    assert post(c, f"/sessions/{sid}/title", {"title": "before"}).status_code == 200
    captured = c.get_cookie("logbook_session").value
    assert post(c, "/logout", {}).status_code == 302
    thief = app.test_client()
    thief.set_cookie("logbook_session", captured)
    assert post(thief, f"/sessions/{sid}/title", {"title": "replayed"}).status_code == 403
    assert sql(db, "SELECT title FROM sessions WHERE id = ?", (sid,))[0][0] == "before"
    # the generation survives a restart of Logbook (kept in the instance folder)
    again = make_app(db, tmp_path / "inst", LOGBOOK_REMOTE=True, LOGBOOK_TOKEN="t" * 20)
    replay = again.test_client()
    replay.set_cookie("logbook_session", captured)
    assert post(replay, f"/sessions/{sid}/title", {"title": "replayed"}).status_code == 403


@pytest.mark.parametrize("q", ["busy:foo", "interrupted:foo", "locked:x", "disk:io"])
def test_words_in_fts_errors_are_not_mistaken_for_database_trouble(env, q):
    _, _, client = env
    r = client.get("/search", query_string={"q": q, "format": "json"})
    assert r.status_code == 200 and "as you typed it" in r.get_json()["notice"]


@pytest.mark.parametrize(
    "url",
    [
        "/prune?older_than=90&cutoff=inf&format=json",
        "/prune?older_than=90&cutoff=nan",
        "/prune?older_than=90&cutoff=99999999999",
        "/sessions?until=9999-12-31",
        "/sessions?since=0001-01-01",
        "/search?q=x&until=9999-12-31",
        "/stats?since=0001-01-01",
        "/export.csv?until=9999-12-31",
        "/sessions/{sid}?at=99999999999999999999999",
        "/sessions?after=" + cursor([10**30, "x"]),
        "/sessions?sort=-last_active&after=" + cursor([None, "x"]),
        "/sessions/{sid}?after=" + cursor([1, 10**30]),
    ],
)
def test_hostile_parameters_are_a_clear_400(env, url):
    db, _, client = env
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    r = client.get(url.replace("{sid}", sid))
    assert r.status_code == 400, (url, r.status_code)


@pytest.mark.parametrize(
    "url",
    [
        "/?_anchor=x",
        "/?_scheme=https",
        "/?_method=POST",
        "/?_external=1",
        "/sessions/{prefix}?_anchor=x",
    ],
)
def test_reserved_url_for_names_in_the_query_are_ignored(env, url):
    db, _, client = env
    prefix = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0][:-2]
    r = client.get(url.replace("{prefix}", prefix))
    assert r.status_code in (302, 300, 200)
    location = r.headers.get("Location", "")
    # url_for would honour them: an anchor (#x), another scheme or an absolute URL
    assert "#" not in location and "://" not in location and not location.startswith("https")


def test_deeply_nested_json_in_a_message(env):
    db, app, client = env
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    deep = "[" * 5000 + "]" * 5000
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) "
            "VALUES (?, 'tool', ?, ?, 1.0)",
            (sid, deep, deep),
        )
    assert client.get(f"/sessions/{sid}").status_code == 200
    md = client.get(f"/export.md?session={sid}&style=transcript")
    assert md.status_code == 200 and md.get_data(as_text=True).count("##") >= 1
    lines = client.get(f"/export.jsonl?session={sid}").get_data(as_text=True).splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["id"] == sid


def test_download_names_are_ascii(env):
    db, _, client = env
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('会话-1', 'cli', 1.0)")
    r = client.get("/export.jsonl?session=会话-1")
    assert r.status_code == 200
    disposition = r.headers["Content-Disposition"]
    assert disposition.isascii()
    assert re.fullmatch(
        r'attachment; filename="hermes-[A-Za-z0-9_-]+-\d{8}-\d{6}\.jsonl"', disposition
    ), disposition


def test_last_activity_order_never_shows_a_stale_match(env):
    db, _, client = env
    sid = sql(db, "SELECT id FROM sessions WHERE title IS NOT NULL LIMIT 1")[0][0]
    assert (
        client.get("/sessions?sort=-last_active&q=Zebra+Unique&format=json").get_json()["sessions"]
        == []
    )
    post(client, f"/sessions/{sid}/title", {"title": "Zebra Unique"})
    got = client.get("/sessions?sort=-last_active&q=Zebra+Unique&format=json").get_json()
    assert [s["id"] for s in got["sessions"]] == [sid]
    # ended behind our back: the list re-checks the filter
    active = [r[0] for r in sql(db, "SELECT id FROM sessions WHERE ended_at IS NULL")]
    assert len(
        follow(client, "/sessions?rows=all&state=active&sort=-last_active&format=json", "sessions")
    ) == len(active)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET ended_at = started_at + 1 WHERE id = ?", (active[0],))
    ids = [
        s["id"]
        for s in follow(
            client, "/sessions?rows=all&state=active&sort=-last_active&format=json", "sessions"
        )
    ]
    assert active[0] not in ids


def test_private_login_page_shows_nothing_about_the_database(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(
        db, tmp_path / "inst", LOGBOOK_REMOTE=True, LOGBOOK_PRIVATE=True, LOGBOOK_TOKEN="p" * 20
    )
    html = app.test_client().get("/login").get_data(as_text=True)
    assert db.name not in html and str(db.parent) not in html
    assert "schema v" not in html and " MB" not in html


def test_failed_logins_are_throttled_for_everyone_together(tmp_path):
    """Rotating over many addresses gives one guess per address a minute once the overall
    budget is spent; logging in is not a guess; and the right token from an address that has
    not failed gets in during the flood (issue 37, point 6)."""
    db = copy_fixture("hermes-v11.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_REMOTE=True, LOGBOOK_TOKEN="r" * 20)
    throttle = app.extensions["login_throttle"]

    def attempt(address: str, token: str) -> int:
        c = app.test_client()
        c.environ_base["REMOTE_ADDR"] = address
        html = c.get("/login").get_data(as_text=True)
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
        return c.post("/login", data={"token": token, "csrf_token": csrf}).status_code

    try:
        first = [attempt(f"127.0.0.{i + 2}", f"guess{i}") for i in range(25)]
        assert first == [401] * 25, "each address's first guess is checked (and wrong)"
        again = [attempt(f"127.0.0.{i + 2}", f"guess{i}b") for i in range(25)]
        assert set(again) == {429}, "past the overall budget, no address that failed guesses again"
        assert attempt("127.0.0.200", "r" * 20) == 302, "the right token gets in"
        assert attempt("127.0.0.2", "r" * 20) == 429, "(not from an address that guessed)"
        # IPv6 guessers count by their /64: rotating inside it is one address.
        v6 = [attempt(f"2001:db8::{i:x}", "x") for i in range(1, 8)]
        assert v6[:1] == [401] and set(v6[1:]) == {429}
    finally:
        throttle.reset()
    ok = app.test_client()
    for _ in range(8):  # successful logins never use up the allowance
        html = ok.get("/login").get_data(as_text=True)
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
        assert ok.post("/login", data={"token": "r" * 20, "csrf_token": csrf}).status_code == 302
    throttle.reset()
