"""Where conversations come from (schema 22): chats across resets, workspaces and people,
against independent SQL on a database Hermes 0.19 wrote; older schemas say what is missing."""

from __future__ import annotations

import sqlite3

import pytest

from support import copy_fixture, make_app, sql
from support.htmlcheck import assert_inert
from support.http import follow


@pytest.fixture
def v22(tmp_path):
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    return db, make_app(db, tmp_path / "inst").test_client()


COST = "COALESCE(actual_cost_usd, estimated_cost_usd, 0)"


def test_chats_are_session_keys_with_their_totals(v22):
    db, client = v22
    got = {c["session_key"]: c for c in follow(client, "/chats?format=json", "chats")}
    expected = sql(
        db,
        f"SELECT session_key, COUNT(*), SUM(message_count), SUM({COST}), MAX(display_name) "
        "FROM sessions WHERE session_key IS NOT NULL GROUP BY 1",
    )
    assert sorted(got) == sorted(r[0] for r in expected) and len(expected) >= 2
    for key, n, msgs, cost, name in expected:
        assert (got[key]["sessions"], got[key]["messages"], got[key]["label"]) == (n, msgs, name)
        assert got[key]["cost"] == pytest.approx(cost)
    actives = [c["last_active"] for c in got.values()]
    assert [c["last_active"] for c in follow(client, "/chats?format=json", "chats")] == sorted(
        actives, reverse=True
    )


def test_a_chat_is_its_sessions_in_order_with_why_each_ended(v22):
    db, client = v22
    key = "agent:main:telegram:dm:4242"
    body = client.get(f"/chats/{key}?format=json").get_json()
    expected = sql(
        db,
        "SELECT id, end_reason FROM sessions WHERE session_key = ? ORDER BY started_at, id",
        (key,),
    )
    assert [(s["id"], s["end_reason"]) for s in body["sessions"]] == expected
    assert body["chat"]["sessions"] == len(expected) == 3
    html = client.get(f"/chats/{key}").get_data(as_text=True)
    assert "daily reset" in html and "idle reset" in html and "not ended" in html
    assert client.get("/chats/agent:nope?format=json").status_code == 404


def test_chat_pages_reach_every_chat_once(v22, monkeypatch):
    import webui.db.origins as origins

    monkeypatch.setattr(origins, "PAGE", 1)
    db, client = v22
    keys = [c["session_key"] for c in follow(client, "/chats?format=json", "chats")]
    assert sorted(keys) == sorted(
        r[0]
        for r in sql(db, "SELECT DISTINCT session_key FROM sessions WHERE session_key IS NOT NULL")
    )
    assert len(set(keys)) == len(keys)


def test_workspaces_and_people_equal_sql(v22):
    db, client = v22
    ws = client.get("/workspaces?format=json").get_json()["workspaces"]
    expected = sql(
        db,
        "SELECT COALESCE(NULLIF(TRIM(git_repo_root), ''), NULLIF(TRIM(cwd), '')) AS k, COUNT(*) "
        "FROM sessions WHERE k IS NOT NULL GROUP BY k",
    )
    assert sorted((w["workspace"], w["sessions"]) for w in ws) == sorted(expected)
    people = {p["user_id"]: p for p in client.get("/people?format=json").get_json()["people"]}
    expected = dict(
        sql(db, "SELECT user_id, COUNT(*) FROM sessions WHERE user_id != '' GROUP BY 1")
    )
    assert {u: p["sessions"] for u, p in people.items()} == expected
    assert people["tg:4242"]["names"] == ["Alice"] and people["tg:4242"]["sources"] == ["telegram"]


def test_origin_text_is_untrusted(v22):
    db, client = v22
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE sessions SET display_name = '<img src=x onerror=alert(1)>', "
            "cwd = '/tmp/<script>alert(2)</script>' WHERE id = 'x_tg_dm_0'"
        )
    for url in ("/chats", "/chats/agent:main:telegram:dm:4242", "/workspaces", "/people"):
        html = client.get(url).get_data(as_text=True)
        assert_inert(html)


def test_older_schemas_say_what_they_lack(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    body = client.get("/chats?format=json").get_json()
    assert body["chats"] == [] and "schema 11" in body["notice"]
    assert "does not record where sessions come from" in client.get("/workspaces").get_data(
        as_text=True
    )


def test_every_row_and_the_viewer_say_where_it_came_from(v22):
    db, client = v22
    rows = {r["id"]: r for r in follow(client, "/sessions?format=json&rows=all", "sessions")}
    assert rows["x_tg_dm_2"]["origin"] == "telegram · DM · Alice"
    assert rows["x_dc_thread"]["origin"] == "discord · channel · #ops"
    assert rows["x_chain_root"]["origin"] == "cli · /home/ana/src/atlas"
    html = client.get("/sessions/x_tg_dm_1").get_data(as_text=True)
    assert "telegram · DM · Alice</a>" in html
    assert 'href="/chats/agent:main:telegram:dm:4242"' in html


def test_origin_words_are_pure_rules():
    from webui.hermes.origin import origin_label

    assert (
        origin_label({"source": "cli", "cwd": "/home/u/src/x", "git_branch": "main"}, "/home/u")
        == "cli · ~/src/x @ main"
    )
    assert origin_label({"source": "cli", "git_repo_root": "/r", "cwd": "/r/sub"}) == "cli · /r"
    assert (
        origin_label({"source": "slack", "origin_json": '{"label": "#general"}'})
        == "slack · #general"
    )
    assert origin_label({"source": "slack", "origin_json": "{not json"}) is None
    assert origin_label({"source": "cli"}) is None


def test_active_in_the_last_minutes(v22):
    import time

    db, client = v22
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES "
            "('x_dc_thread', 'user', 'still there?', ?)",
            (time.time() - 120,),
        )
    ids = {r["id"] for r in follow(client, "/sessions?format=json&rows=all&active=5", "sessions")}
    expected = {
        r[0]
        for r in sql(
            db,
            "SELECT s.id FROM sessions s WHERE COALESCE(s.archived, 0) = 0 AND COALESCE((SELECT "
            "MAX(timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) >= ?",
            (time.time() - 300,),
        )
    }
    assert "x_dc_thread" in ids and ids == expected
    assert client.get("/sessions?active=0").status_code == 400
    assert client.get("/sessions?active=abc&format=json").status_code == 400
