"""Every real database in tests/data/fixtures (schemas 8, 11 and 22, written by Hermes's own
code): each page renders, and what it shows equals SQL over the same file."""

from __future__ import annotations

import pytest

from support import copy_fixture, sql
from support.http import follow


def visible_where(db) -> str:
    cols = {r[1] for r in sql(db, "PRAGMA table_info(sessions)")}
    return "COALESCE(archived, 0) = 0" if "archived" in cols else "1"


def test_list_pages_render(fixture_client):
    r = fixture_client.get("/")
    assert r.status_code == 302 and r.headers["Location"].endswith("/sessions")
    r = fixture_client.get("/sessions")
    assert r.status_code == 200
    assert b"<table class=\"sessions\">" in r.data


def test_list_json_follows_next_to_every_session_once(fixture_client, fixture_db):
    got = [s["id"] for s in follow(fixture_client, "/sessions?rows=all&format=json", "sessions")]
    expected = [
        r[0]
        for r in sql(
            fixture_db,
            f"SELECT id FROM sessions WHERE "
            f"{visible_where(fixture_db)} ORDER BY started_at DESC, id DESC",
        )
    ]
    assert got == expected
    assert len(set(got)) == len(got)


def test_archived_sessions_hidden_unless_asked(fixture_client, fixture_db):
    everything = {
        s["id"]
        for s in follow(fixture_client, "/sessions?rows=all&format=json&archived=1", "sessions")
    }
    assert everything == {r[0] for r in sql(fixture_db, "SELECT id FROM sessions")}


def test_source_filter_returns_exactly_that_source(fixture_client, fixture_db):
    where = visible_where(fixture_db)
    for source, count in sql(
        fixture_db, f"SELECT source, COUNT(*) FROM sessions WHERE {where} GROUP BY source"
    ):
        got = follow(fixture_client, f"/sessions?rows=all&format=json&source={source}", "sessions")
        assert len(got) == count
        assert {s["source"] for s in got} == {source}


def test_facets_equal_sql(fixture_client, fixture_db):
    body = fixture_client.get("/sessions?rows=all&format=json").get_json()
    where = visible_where(fixture_db)
    expected = dict(
        sql(fixture_db, f"SELECT source, COUNT(*) FROM sessions WHERE {where} GROUP BY source")
    )
    assert {k: v for k, v in body["facets"]["source"].items() if v} == expected


def test_list_row_values_equal_sql(fixture_client, fixture_db):
    body = fixture_client.get("/sessions?rows=all&format=json&sort=-messages").get_json()
    for s in body["sessions"]:
        (row,) = sql(
            fixture_db,
            "SELECT source, model, message_count, input_tokens, "
            "output_tokens, parent_session_id, started_at, ended_at "
            "FROM sessions WHERE id = ?",
            (s["id"],),
        )
        assert (
            s["source"],
            s["model"],
            s["message_count"],
            s["input_tokens"],
            s["output_tokens"],
            s["parent_session_id"],
            s["started_at"],
            s["ended_at"],
        ) == row
        (last,) = sql(
            fixture_db,
            "SELECT COALESCE(MAX(m.timestamp), s.started_at) FROM sessions s "
            "LEFT JOIN messages m ON m.session_id = s.id WHERE s.id = ?",
            (s["id"],),
        )
        assert s["last_active"] == last[0]


@pytest.mark.slow
def test_every_session_viewer_renders_and_json_has_all_messages(fixture_client, fixture_db):
    ids = [r[0] for r in sql(fixture_db, "SELECT id FROM sessions")]
    for sid in ids:
        r = fixture_client.get(f"/sessions/{sid}")
        assert r.status_code == 200, (sid, r.data[:500])
        got = follow(fixture_client, f"/sessions/{sid}?format=json", "messages")
        expected = [
            x[0]
            for x in sql(
                fixture_db,
                "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id",
                (sid,),
            )
        ]
        assert [m["id"] for m in got] == expected, sid


def test_viewer_json_session_has_every_column(fixture_client, fixture_db):
    cols = [r[1] for r in sql(fixture_db, "PRAGMA table_info(sessions)")]
    sid = sql(fixture_db, "SELECT id FROM sessions LIMIT 1")[0][0]
    body = fixture_client.get(f"/sessions/{sid}?format=json").get_json()
    assert list(body["session"].keys()) == cols


@pytest.mark.parametrize(
    "sort",
    [
        "started",
        "-started",
        "last_active",
        "-last_active",
        "messages",
        "-messages",
        "tokens",
        "-tokens",
        "cost",
        "-cost",
    ],
)
def test_every_sort_order_pages_through_all_sessions_in_sql_order(fixture_client, fixture_db, sort):
    key = {
        "started": "started_at",
        "last_active": "COALESCE((SELECT MAX(timestamp) FROM messages m WHERE m.session_id = "
        "s.id), started_at)",
        "messages": "COALESCE(message_count, 0)",
        "tokens": "COALESCE(input_tokens,0)+COALESCE(output_tokens,0)+"
        "COALESCE(cache_read_tokens,0)+COALESCE(cache_write_tokens,0)",
        "cost": "COALESCE(actual_cost_usd, estimated_cost_usd, 0)",
    }[sort.lstrip("-")]
    d = "DESC" if sort.startswith("-") else "ASC"
    expected = [
        r[0]
        for r in sql(
            fixture_db,
            f"SELECT id FROM sessions s WHERE "
            f"{visible_where(fixture_db)} ORDER BY {key} {d}, "
            f"id {d}",
        )
    ]
    got = [
        s["id"]
        for s in follow(fixture_client, f"/sessions?rows=all&format=json&sort={sort}", "sessions")
    ]
    assert got == expected


def test_schema_22_export_leaves_rewound_messages_out_unless_asked(tmp_path):
    import json

    from support import make_app

    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    rec = json.loads(client.get("/export.jsonl?session=x_rewound").get_data(as_text=True))
    active = [
        r[0]
        for r in sql(
            db, "SELECT id FROM messages WHERE session_id = 'x_rewound' AND active = 1 ORDER BY id"
        )
    ]
    every = [
        r[0] for r in sql(db, "SELECT id FROM messages WHERE session_id = 'x_rewound' ORDER BY id")
    ]
    assert len(every) > len(active) > 0
    assert [m["id"] for m in rec["messages"]] == active
    assert all(m["tool_calls"] is None for m in rec["messages"])  # NULL stays null
    rec = json.loads(client.get("/export.jsonl?session=x_rewound&rewound=1").get_data(as_text=True))
    assert [m["id"] for m in rec["messages"]] == every


def test_json_twin_gives_tool_calls_and_multimodal_content_as_json(fixture_client, fixture_db):
    sid = sql(
        fixture_db,
        "SELECT session_id FROM messages WHERE tool_calls LIKE '[%' GROUP BY 1 LIMIT 1",
    )[0][0]
    msgs = fixture_client.get(f"/sessions/{sid}?format=json&rewound=1").get_json()["messages"]
    calls = [m["tool_calls"] for m in msgs if m.get("tool_calls")]
    assert calls and all(isinstance(c, list) for c in calls)
    assert all(
        not (isinstance(m["content"], str) and m["content"].startswith("\x00json:")) for m in msgs
    )
