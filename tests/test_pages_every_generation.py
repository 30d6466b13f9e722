"""Issue 44 point 5 for the pages that read one conversation or its neighbours: on every fixture
written by Hermes 0.19, 0.20 and 0.22 (tests/data/fixtures/README.md), every session's viewer
(Hermes's view and every stored row), its JSON twin, its lineage page and JSON, every chat, the
people, workspaces and live pages answer 200 with no trace of an error. And what each page
says holds together: the JSON twin's rows are the stored rows (each once), the rows Hermes
shows are in order, and a hidden row is never painted."""

from __future__ import annotations

import sqlite3
from urllib.parse import quote

import pytest
from oracle import cases as oracle_cases

from support import copy_fixture, make_app
from support.http import follow

FIXTURES = list(oracle_cases.FIXTURES)


@pytest.fixture(scope="module", params=FIXTURES)
def site(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pages")
    db = copy_fixture(request.param, tmp)
    return request.param, db, make_app(db, tmp / "inst").test_client()


def _rows(db, query, params=()):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.close()


def _ok(client, url: str, quoted: bool = False):
    """A 200 with no trace of an error (``quoted``: the stored text itself holds one, as an
    agent's history can: then no more of them than the text holds)."""
    r = client.get(url, follow_redirects=True)
    body = r.get_data(as_text=True)
    assert r.status_code == 200, (url, r.status_code, body[:300])
    if not quoted:
        assert "Traceback" not in body, url
    return r


def test_every_session_opens_in_each_view_and_its_twin(site):
    fixture, db, client = site
    sessions = [r[0] for r in _rows(db, "SELECT id FROM sessions ORDER BY id")]
    assert sessions
    for sid in sessions:
        q = quote(sid, safe="")
        stored = [r[0] for r in _rows(db, "SELECT id FROM messages WHERE session_id = ?", (sid,))]
        hidden = (
            {
                r[0]
                for r in _rows(
                    db,
                    "SELECT id FROM messages WHERE session_id = ? AND display_kind = 'hidden'",
                    (sid,),
                )
            }
            if "display_kind" in {r[1] for r in _rows(db, "PRAGMA table_info(messages)")}
            else set()
        )
        quoted = bool(
            _rows(
                db,
                "SELECT 1 FROM messages WHERE session_id = ? AND content LIKE '%Traceback%'",
                (sid,),
            )
        )
        for url in (f"/sessions/{q}", f"/sessions/{q}?rewound=1", f"/sessions/{q}/lineage"):
            html = _ok(client, url, quoted).get_data(as_text=True)
            assert not any(f'id="m-{i}"' in html for i in hidden), (fixture, url)
        _ok(client, f"/sessions/{q}/lineage?format=json")
        # The twin: every stored row once, whatever Hermes shows of them.
        twin = follow(client, f"/sessions/{q}?format=json", "messages")
        assert sorted(m["id"] for m in twin) == sorted(stored), (fixture, sid)
        assert all(m["painted"] == (m["id"] not in hidden) for m in twin), (fixture, sid)
        shown = follow(client, f"/sessions/{q}?format=json&rewound=0", "messages")
        assert [m["id"] for m in shown] == [m["id"] for m in twin if m["hermes_shows"]], (
            fixture,
            sid,
        )
        assert all(m["hermes_shows"] for m in shown) and all(
            "not_shown" in m for m in twin if not m["hermes_shows"]
        ), (fixture, sid)


def test_chats_people_workspaces_and_live_answer(site):
    fixture, db, client = site
    quoted = bool(_rows(db, "SELECT 1 FROM messages WHERE content LIKE '%Traceback%'"))
    for url in ("/chats", "/people", "/workspaces", "/live"):
        _ok(client, url)
        _ok(client, url + "?format=json")
    keys = [
        r[0]
        for r in _rows(
            db, "SELECT DISTINCT session_key FROM sessions WHERE session_key IS NOT NULL"
        )
    ]
    for key in keys:
        _ok(client, f"/chats/{quote(key, safe='')}", quoted)
        data = _ok(client, f"/chats/{quote(key, safe='')}?format=json").get_json()
        assert data["chat"]["session_key"] == key, fixture
