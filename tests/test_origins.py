"""Where conversations come from (schema 22): chats across resets, workspaces and people,
against independent SQL on a database Hermes 0.19 wrote; older schemas say what is missing."""

from __future__ import annotations

import sqlite3

import pytest

from support import copy_fixture, make_app, sql
from support.htmlcheck import assert_inert_page
from support.http import follow


@pytest.fixture
def v22(tmp_path):
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    return db, make_app(db, tmp_path / "inst").test_client()


@pytest.fixture(scope="module")
def origins(tmp_path_factory):
    """The schema-22 fixture whose origins Hermes 0.19's gateway code wrote (read-only)."""
    tmp = tmp_path_factory.mktemp("origins")
    db = copy_fixture("hermes-v22-origins.db", tmp)
    return db, make_app(db, tmp / "inst").test_client()


ALICE = "agent:main:telegram:dm:1001"  # a DM cut by daily and idle resets, /new, compression
COST = "COALESCE(actual_cost_usd, estimated_cost_usd, 0)"


def test_chats_are_session_keys_with_their_totals(v22):
    db, client = v22
    got = {c["session_key"]: c for c in follow(client, "/chats?format=json", "chats")}
    expected = sql(
        db,
        f"SELECT session_key, COUNT(*), SUM(message_count), SUM({COST}), MAX(display_name) "
        "|| COALESCE(' (thread ' || MAX(thread_id) || ')', '') "
        "FROM sessions WHERE session_key IS NOT NULL GROUP BY 1",
    )  # a chat's name: its display name, with the thread for a thread (hermes.origin.chat_name)
    assert sorted(got) == sorted(r[0] for r in expected) and len(expected) >= 2
    for key, n, msgs, cost, name in expected:
        assert (got[key]["sessions"], got[key]["messages"], got[key]["label"]) == (n, msgs, name)
        assert got[key]["cost"] == pytest.approx(cost)
    actives = [c["last_active"] for c in got.values()]
    assert [c["last_active"] for c in follow(client, "/chats?format=json", "chats")] == sorted(
        actives, reverse=True
    )


def test_a_chat_is_its_sessions_in_order_with_why_each_ended(origins):
    db, client = origins
    body = client.get(f"/chats/{ALICE}?format=json").get_json()
    expected = sql(
        db,
        "SELECT id, end_reason FROM sessions WHERE session_key = ? ORDER BY started_at, id",
        (ALICE,),
    )
    assert [(s["id"], s["end_reason"]) for s in body["sessions"]] == expected
    assert body["chat"]["sessions"] == len(expected) > 40
    reasons = {r for _, r in expected}
    # Hermes's own reset reasons, as its gateway wrote them
    assert {"daily", "idle", "session_reset", "compression", None} <= reasons
    html = client.get(f"/chats/{ALICE}").get_data(as_text=True)
    assert "automatically reset (daily schedule)" in html and "context compacted" in html
    assert client.get("/chats/agent:nope?format=json").status_code == 404


def test_chat_pages_reach_every_chat_once(v22, monkeypatch):
    import webui.db.sessions.origins as origins

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
        assert_inert_page(client.get(url))


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


# -- a chat's timeline, search and export ----------------------------------------------------


def _chat_messages(db, key):
    return sql(
        db,
        "SELECT m.session_id, m.id FROM messages m JOIN sessions s ON s.id = m.session_id "
        "WHERE s.session_key = ? AND m.active = 1 ORDER BY s.started_at, s.id, m.id",
        (key,),
    )


def _timeline(client, url):
    parts = []
    while url:
        body = client.get(url).get_json()
        parts += body["timeline"]
        url = body["timeline_next"]
    return parts


@pytest.mark.parametrize("page", [100, 7, 1])
def test_the_timeline_is_every_message_of_the_chat_in_order(origins, monkeypatch, page):
    import webui.db.sessions.origins as store

    monkeypatch.setattr(store, "TIMELINE_MESSAGES", page)
    db, client = origins
    parts = _timeline(client, f"/chats/{ALICE}?format=json")
    got = [(p["session_id"], m["id"]) for p in parts for m in p["messages"]]
    assert got == [tuple(r) for r in _chat_messages(db, ALICE)]
    # every session is in it once per page it spans, in order, with why it ended
    sessions = sql(
        db,
        "SELECT id, end_reason FROM sessions WHERE session_key = ? ORDER BY started_at, id",
        (ALICE,),
    )
    seen = list(dict.fromkeys((p["session_id"], p["end_reason"]) for p in parts))
    assert seen == [tuple(r) for r in sessions]


def test_a_timeline_page_can_start_at_any_session_of_the_chat(origins):
    db, client = origins
    ids = [
        r[0]
        for r in sql(
            db, "SELECT id FROM sessions WHERE session_key = ? ORDER BY started_at, id", (ALICE,)
        )
    ]
    body = client.get(f"/chats/{ALICE}?format=json&from={ids[-3]}").get_json()
    assert [p["session_id"] for p in body["timeline"]] == ids[-3:]
    other = sql(db, "SELECT id FROM sessions WHERE session_key != ? LIMIT 1", (ALICE,))[0][0]
    r = client.get(f"/chats/{ALICE}?from={other}")
    assert r.status_code == 400 and "not part of this chat" in r.get_data(as_text=True)
    html = client.get(f"/chats/{ALICE}").get_data(as_text=True)
    assert f'from={ids[-1]}' in html  # "jump to the latest session"


def test_search_within_a_chat_finds_its_hits_in_every_session(origins):
    db, client = origins
    found = follow(client, f"/search?q=kubernetes&session_key={ALICE}&format=json", "results")
    expected = sql(
        db,
        "SELECT m.id, m.session_id FROM messages_fts f JOIN messages m ON m.id = f.rowid "
        "JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH 'kubernetes' "
        "AND s.session_key = ? AND m.active = 1",
        (ALICE,),
    )
    assert sorted(r["message_id"] for r in found) == sorted(r[0] for r in expected)
    assert len({r[1] for r in expected}) > 3  # hits in many sessions, not the first only
    assert {r["origin"] for r in found} == {"telegram · DM · Alice"}
    everywhere = client.get("/search?q=kubernetes&format=json").get_json()["total"]
    assert everywhere > len(found)
    html = client.get(f"/search?q=kubernetes&session_key={ALICE}").get_data(as_text=True)
    assert "in the chat" in html and "telegram · DM · Alice" in html


def test_a_chat_exports_as_one_transcript_oldest_first(origins):
    db, client = origins
    text = client.get(
        f"/export.md?style=transcript&session_key={ALICE}&rows=all&archived=include&sort=started"
    ).get_data(as_text=True)
    ids = [
        r[0]
        for r in sql(
            db, "SELECT id FROM sessions WHERE session_key = ? ORDER BY started_at, id", (ALICE,)
        )
    ]
    positions = [text.index(f"- **id**: {sid}\n") for sid in ids]
    assert positions == sorted(positions)
    records = client.get(f"/export.jsonl?session_key={ALICE}&rows=all").get_data(as_text=True)
    assert len(records.splitlines()) == len(ids)


def test_origin_facets_equal_sql(origins):
    db, client = origins
    facets = client.get("/sessions?format=json").get_json()["facets"]
    for name, column in (
        ("chat_type", "chat_type"),
        ("session_key", "session_key"),
        ("user", "user_id"),
        ("workspace", "COALESCE(NULLIF(TRIM(git_repo_root), ''), NULLIF(TRIM(cwd), ''))"),
    ):
        expected = dict(
            sql(
                db,
                f"SELECT {column} AS k, COUNT(*) FROM sessions "
                "WHERE k IS NOT NULL AND k != '' GROUP BY k",
            )
        )
        assert facets[name] == expected, name
    # each value filters the list to exactly its sessions
    for name, value in (("chat_type", "thread"), ("session_key", ALICE), ("user", "d-501")):
        rows = follow(client, f"/sessions?format=json&rows=all&{name}={value}", "sessions")
        assert len(rows) == facets[name][value]
    html = client.get("/sessions?chat_type=thread").get_data(as_text=True)
    assert '<option value="thread" selected>' in html


def test_the_live_view_defaults_to_active_now(origins):
    _, client = origins
    r = client.get("/live")
    assert r.status_code == 302 and "active=60" in r.location and "sort=-last_active" in r.location
    assert "active=5" in client.get("/live?active=5").location


def test_lineage_and_search_hits_say_where_it_came_from(origins):
    db, client = origins
    child = sql(db, "SELECT id FROM sessions WHERE parent_session_id IS NOT NULL LIMIT 1")[0][0]
    nodes = client.get(f"/sessions/{child}/lineage?format=json").get_json()["nodes"]
    assert {n["origin"] for n in nodes} == {"telegram · DM · Alice"}
    assert "telegram · DM · Alice" in client.get(f"/sessions/{child}/lineage").get_data(
        as_text=True
    )
    hits = client.get("/search?q=status&format=json").get_json()["results"]
    assert any(h["origin"] and h["origin"].startswith("cli · /home/ana/") for h in hits)


def test_reset_words_and_origin_names_are_pure_rules():
    from webui.hermes.origin import end_reason_words, origin_label

    assert end_reason_words("daily") == "session automatically reset (daily schedule)"
    assert end_reason_words("session_reset") == "session reset by /new or /reset: starting fresh"
    assert end_reason_words("some_new_reason") == "some new reason"
    assert end_reason_words(None) is None
    # the gateway's origin_json is SessionSource.to_dict(): chat_name, not label
    assert (
        origin_label(
            {"source": "slack", "chat_type": "thread", "origin_json": '{"chat_name": "#deploys"}'}
        )
        == "slack · thread · #deploys"
    )
    assert origin_label({"source": "x", "origin_json": '{"chat_name": ["not", "text"]}'}) is None
    assert origin_label({"source": "x", "origin_json": "[1, 2]"}) is None


def test_hostile_origins_stay_text(origins):
    db, client = origins
    for url in (
        "/chats",
        "/people",
        "/sessions?rows=all",
        "/sessions?chat_type=dm",
        "/search?q=script",
    ):
        assert_inert_page(client.get(url))
    # a direct chat is named by the person (the gateway's user_name): shown as text
    assert "&lt;b&gt;mallory&lt;/b&gt;" in client.get("/chats").get_data(as_text=True)
    signal = "agent:main:signal:dm:+15550002"  # its origin_json is cut-off JSON
    assert client.get(f"/chats/{signal}?format=json").get_json()["chat"]["label"] == "+15550002"


def test_each_workspace_has_its_branches_sessions_and_cost(origins):
    db, client = origins
    ws = {w["workspace"]: w for w in client.get("/workspaces?format=json").get_json()["workspaces"]}
    expected = sql(
        db,
        f"SELECT COALESCE(NULLIF(TRIM(git_repo_root), ''), NULLIF(TRIM(cwd), '')) AS k, "
        f"git_branch, COUNT(*), TOTAL({COST}) FROM sessions WHERE k IS NOT NULL AND "
        "git_branch IS NOT NULL GROUP BY 1, 2",
    )
    got = [
        (k, b["branch"], b["sessions"], pytest.approx(b["cost"]))
        for k, w in ws.items()
        for b in w["branch_figures"]
    ]
    assert sorted(got, key=lambda r: r[:2]) == sorted(expected, key=lambda r: r[:2])
    assert len(ws) == 5 and len(ws["/home/ana/src/atlas"]["branch_figures"]) == 3
    # a worktree and a sub-folder count for their repository, as Hermes's workspace_key
    assert (
        ws["/home/ana/src/atlas"]["sessions"]
        == sql(db, "SELECT COUNT(*) FROM sessions WHERE git_repo_root = '/home/ana/src/atlas'")[0][
            0
        ]
    )
