"""One bad row never takes a page down (issue 15): invalid UTF-8 in a message or a title, BLOB
content, a text timestamp and a huge token count, on a copy of the real v22 database, through
every page and the export; and the writer never creates a missing database."""

from __future__ import annotations

import sqlite3

import pytest

from support import copy_fixture, make_app, sql
from support.http import post


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    db = copy_fixture("hermes-v22.db", d)
    sid = sql(db, "SELECT id FROM sessions WHERE message_count > 3 ORDER BY started_at DESC")[0][0]
    conn = sqlite3.connect(db)
    with conn:
        # the FTS triggers index these rows too, exactly as a foreign writer's would be
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES "
            "(?, 'user', CAST(x'62616480ff20646f636b6572' AS TEXT), 2e9)",
            (sid,),
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES "
            "(?, 'assistant', x'00ff10', 2e9 + 1)",
            (sid,),
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp, token_count) VALUES "
            "(?, 'assistant', 'text time', '2026-01-01 10:00', 99999999999999999)",
            (sid,),
        )
        conn.execute(
            "UPDATE sessions SET title = CAST(x'5469746c6580ff' AS TEXT), "
            "input_tokens = 9223372036854775807 WHERE id = ?",
            (sid,),
        )
    conn.close()
    return db, sid, make_app(db, d / "inst").test_client()


@pytest.mark.parametrize(
    "url",
    [
        "/sessions",
        "/sessions?format=json",
        "/sessions?rows=all&sort=-tokens",
        "/sessions/{sid}",
        "/sessions/{sid}?format=json",
        "/sessions/{sid}/lineage",
        "/search?q=docker",
        "/search?q=docker&format=json",
        "/stats?period=all",
        "/export.jsonl?session={sid}",
        "/export.md?session={sid}",
        "/export.csv?session={sid}",
    ],
)
def test_pages_show_damaged_rows_instead_of_failing(damaged, url):
    db, sid, client = damaged
    r = client.get(url.replace("{sid}", sid))
    assert r.status_code == 200, (url, r.status_code, r.get_data(as_text=True)[:300])
    body = r.get_data()
    if "{sid}" in url and "export" not in url and "lineage" not in url:
        assert "\ufffd".encode() in body or b"\\ufffd" in body  # the damage is marked


def test_writer_never_creates_a_missing_database(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    for suffix in ("", "-wal", "-shm"):
        p = db.with_name(db.name + suffix)
        if p.exists():
            p.unlink()
    r = post(client, f"/sessions/{sid}/title", {"title": "after the file is gone"})
    assert r.status_code >= 400
    assert not db.exists(), "the rename must not create an empty state.db"


def test_markdown_transcript_cannot_be_spoofed_by_message_text(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    sid = sql(db, "SELECT id FROM sessions WHERE message_count > 2 LIMIT 1")[0][0]
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, 2e9)",
            (
                sid,
                "hi\n\n## assistant — 2026-01-01T00:00:00\n\nI approve the transfer.\n```\n<img src=x onerror=alert(1)>",
            ),
        )
        conn.execute(
            "UPDATE sessions SET title = '<script>alert(1)</script>', "
            "model = '# not a heading' WHERE id = ?",
            (sid,),
        )
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    md = client.get(f"/export.md?session={sid}&style=transcript").get_data(as_text=True)
    n = sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,))[0][0]
    fences, headings = 0, 0
    for line in md.splitlines():
        if line.startswith("```"):
            fences += 1
        elif line.startswith("## ") and fences % 2 == 0 and line != "## System prompt":
            headings += 1
    assert headings == n, "one heading per message, none from inside a message"
    assert "<script>" not in md.split("```")[0] and "&lt;script&gt;" in md
    assert "\n# not a heading" not in md and "\\# not a heading" in md


def test_huge_markdown_is_plain_text_until_asked(tmp_path):
    """A big Markdown table (here 70 KB; 0.8 MB took seconds) is shown as text with a
    "render anyway" link; asking renders it. The page waits for the render until it is done
    (LOGBOOK_RENDER_WAIT_S=None): a busy machine makes it slower, never plain."""
    db = copy_fixture("hermes-v11.db", tmp_path)
    sid = sql(db, "SELECT id FROM sessions WHERE message_count > 2 LIMIT 1")[0][0]
    table = "| a | b |\n|---|---|\n" + "| **x** | y |\n" * 5_000
    conn = sqlite3.connect(db)
    with conn:
        mid = conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) "
            "VALUES (?, 'assistant', ?, 1.0)",
            (sid, table),
        ).lastrowid
    conn.close()
    client = make_app(db, tmp_path / "inst", LOGBOOK_RENDER_WAIT_S=None).test_client()
    html = client.get(f"/sessions/{sid}").get_data(as_text=True)
    assert "Render it anyway" in html and f"render={mid}" in html
    assert "<strong>x</strong>" not in html
    forced = client.get(f"/sessions/{sid}?at={mid}&render={mid}")
    assert forced.status_code == 200
    assert "<strong>x</strong>" in forced.get_data(as_text=True)
    from webui.present.rows import RenderBudget

    b = RenderBudget(per_message=10, per_page=25)
    assert b.allows(1, 10) and b.allows(2, 10) and not b.allows(3, 10) and not b.allows(4, 11)
    assert RenderBudget(per_message=10, forced=frozenset({5})).allows(5, 1_000)


@pytest.mark.parametrize(
    "url,params,status",
    [
        ("/search", {"q": "x" * 200_000}, 200),  # schema 22: cut at 2,048 as Hermes 0.19
        ("/search", {"q": " ".join(["记忆"] * 2_000)}, 400),
        ("/search", {"q": " ".join(["ab"] * 2_000)}, 400),
        ("/sessions", {"q": "%_" * 100_000}, 200),
        ("/search", {"q": "docker " * 60}, 200),
    ],
    ids=["200KB", "2000-cjk-words", "2000-words", "200KB-title-filter", "60-words"],
)
def test_oversized_queries_get_a_clear_answer(damaged, url, params, status):
    _, _, client = damaged
    r = client.get(url, query_string={**params, "format": "json"})
    assert r.status_code == status, r.get_data(as_text=True)[:300]
    if status == 400:
        assert "at most" in r.get_json()["message"]
    elif params["q"].startswith("xxx"):
        assert "first 2,048 characters" in r.get_json()["notice"]


def test_a_database_deleted_or_replaced_under_a_running_logbook(tmp_path, monkeypatch):
    import shutil

    import webui.db.reader as reader

    monkeypatch.setattr(reader, "IDENTITY_CHECK_S", 0.0)
    db = copy_fixture("hermes-v11.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    sid = sql(db, "SELECT id FROM sessions WHERE title IS NOT NULL LIMIT 1")[0][0]
    assert client.get(f"/sessions/{sid}?format=json").status_code == 200
    # replaced (a restore from backup, say): the new file is read, not the old inode
    new = tmp_path / "new" / db.name
    new.parent.mkdir()
    shutil.copyfile(db, new)
    conn = sqlite3.connect(new)
    with conn:
        conn.execute("UPDATE sessions SET title = 'from the replacement' WHERE id = ?", (sid,))
    conn.close()
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    new.with_name(new.name + "-wal").unlink(missing_ok=True)
    new.with_name(new.name + "-shm").unlink(missing_ok=True)
    import os

    os.replace(new, db)
    body = client.get(f"/sessions/{sid}?format=json").get_json()
    assert body["session"]["title"] == "from the replacement"
    # deleted: a clear 503, never a 500 or an empty database
    db.unlink()
    r = client.get("/sessions?format=json")
    assert r.status_code == 503 and "is gone" in r.get_json()["message"]
    assert not db.exists()


@pytest.mark.parametrize(
    "table,column",
    [
        ("sessions", "ended_at"),
        ("sessions", "message_count"),
        ("sessions", "title"),
        ("messages", "tool_calls"),
        ("messages", "content"),
    ],
)
def test_a_missing_optional_column_degrades_instead_of_failing(tmp_path, table, column):
    db = copy_fixture("hermes-v11.db", tmp_path)
    conn = sqlite3.connect(db)
    with conn:
        for name, kind in conn.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('trigger', 'index') "
            "AND sql LIKE ?",
            (f"%{column}%",),
        ).fetchall():
            conn.execute(f"DROP {kind.upper()} {name}")
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    for url in [
        "/sessions",
        "/sessions?format=json",
        f"/sessions/{sid}",
        f"/sessions/{sid}/lineage",
        "/search?q=docker",
        "/stats?period=all",
        f"/export.jsonl?session={sid}",
        f"/export.md?session={sid}",
        f"/export.csv?session={sid}",
        "/prune?older_than=30",
    ]:
        r = client.get(url)
        r.get_data()
        assert r.status_code < 500, (column, url, r.status_code)
