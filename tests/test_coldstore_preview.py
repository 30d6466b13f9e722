"""Cold storage says before what it will do (issue 45, point 6): the preview names the
conversations that will stay and why — a session that never ended, or one Hermes would still
continue by its own rules (webui/hermes/continuing.py) — and the move leaves exactly those; a
moved conversation can no longer be continued by Hermes until it is moved back; the free space
it reports is the live file's free pages after the move, what a VACUUM gives back for certain."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from support import copy_fixture, make_app, sql
from support.http import post
from support.oracle import Hermes, ensure_venv
from support.whole import assert_whole_once, sessions


def _home(tmp_path: Path, name: str = "hermes-v22-origins.db") -> Path:
    db = copy_fixture(name, tmp_path)
    return db.rename(tmp_path / "state.db")


def _month(instance: Path) -> Path:
    return instance / "archives" / time.strftime("hermes-archive-%Y-%m.db")


def _conversation_of(db: Path, sid: str) -> set[str]:
    parent = dict(sql(db, "SELECT id, parent_session_id FROM sessions"))
    root = sid
    while parent.get(root) in parent:
        root = parent[root]
    out, todo = set(), [root]
    while todo:
        here = todo.pop()
        out.add(here)
        todo.extend(c for c, p in parent.items() if p == here and c not in out)
    return out


def _latest_cli(db: Path) -> str:
    """The session `hermes -c` continues on a schema-22 file (Hermes 0.19: the CLI session
    with the newest activity), read here with plain SQL."""
    return sql(
        db,
        "SELECT s.id FROM sessions s WHERE s.source = 'cli' ORDER BY "
        "COALESCE((SELECT MAX(timestamp) FROM messages m WHERE m.session_id = s.id), "
        "s.started_at) DESC, s.started_at DESC, s.id DESC LIMIT 1",
    )[0][0]


def _route(db: Path, home: Path) -> tuple[str, str]:
    """Two gateway chats whose current sessions are ended ones: one named in Hermes's routing
    table, one in the sessions.json mirror beside the database."""
    ended = [
        r[0]
        for r in sql(
            db,
            "SELECT id FROM sessions WHERE ended_at IS NOT NULL AND source = 'telegram' "
            "AND end_reason NOT IN ('agent_close') ORDER BY started_at",
        )
    ]
    table, mirror = ended[0], ended[-1]
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO gateway_routing (scope, session_key, entry_json, updated_at) "
            "VALUES ('', 'agent:main:telegram:dm:42', ?, 1.0)",
            (json.dumps({"session_key": "agent:main:telegram:dm:42", "session_id": table}),),
        )
    conn.close()
    (home / "sessions").mkdir(exist_ok=True)
    (home / "sessions" / "sessions.json").write_text(
        json.dumps({"_README": "mirror", "agent:main:telegram:dm:7": {"session_id": mirror}})
    )
    return table, mirror


def _reopen_a_child(db: Path) -> str:
    """A child session reopened as Hermes's reopen_session does (ended_at and end_reason
    cleared): its ended parent's conversation now has a session that never ended."""
    child = sql(
        db,
        "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
        "WHERE c.ended_at IS NOT NULL AND p.ended_at IS NOT NULL ORDER BY c.started_at LIMIT 1",
    )[0][0]
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", (child,)
        )
    conn.close()
    return child


@pytest.mark.slow  # moves whole conversations to cold storage, one unit of work each
def test_the_preview_names_what_stays_and_why_and_the_move_agrees(tmp_path):
    db = _home(tmp_path)
    table, mirror = _route(db, tmp_path)
    reopened = _reopen_a_child(db)
    client = make_app(db, tmp_path / "inst").test_client()
    preview = client.get("/coldstore?older_than=0&format=json").get_json()
    stays = {s["conversation"]: s for s in preview["stays"]}
    kinds = {s["kind"] for s in stays.values()}
    assert kinds == {"running", "resumable"}
    by_session = {sid: s for s in stays.values() for sid in s["sessions"]}
    # A session that never ended keeps its conversation, and only it is named as such.
    running = {r[0] for r in sql(db, "SELECT id FROM sessions WHERE ended_at IS NULL")}
    for s in stays.values():
        if s["kind"] == "running":
            assert set(s["sessions"]) <= running and s["why"][0].endswith("never ended")
    assert by_session[reopened]["why"] == [f"{reopened} never ended"]
    # Hermes's own reasons to continue one, each named in its words.
    accident = sql(db, "SELECT id FROM sessions WHERE end_reason = 'agent_close'")[0][0]
    assert "“agent_close”, which Hermes's gateway reopens" in " ".join(by_session[accident]["why"])
    assert "current session of the chat agent:main:telegram:dm:42" in " ".join(
        by_session[table]["why"]
    )
    assert "current session of the chat agent:main:telegram:dm:7" in " ".join(
        by_session[mirror]["why"]
    )
    latest = _latest_cli(db)
    if latest not in running:
        assert "`hermes -c` continues" in " ".join(by_session[latest]["why"])
    assert preview["conversations_to_move"] == preview["conversations"] - len(stays)
    page = client.get("/coldstore?older_than=0").get_data(as_text=True)
    assert (
        "will stay" in page and "never ended" in page and "Hermes would still continue it" in page
    )
    assert "Hermes cannot continue a moved conversation" in page

    before = sessions(db)
    job = post(
        client, "/coldstore", {"older_than": "0", "confirm": "yes", "format": "json"}
    ).get_json()
    assert job["error"] is None, job
    # The move left exactly what the preview said would stay, for the reasons it gave.
    assert {(s["conversation"], s["kind"]) for s in job["stayed"]} == {
        (c, s["kind"]) for c, s in stays.items()
    }
    assert set(job["skipped_active"]) <= running
    assert job["conversations_moved"] == preview["conversations_to_move"]
    where = assert_whole_once(before, [db, _month(tmp_path / "inst")])
    for conversation in stays:
        assert all(where[m] == db.name for m in _conversation_of(db, conversation))
    page = client.get(f"/coldstore/jobs/{job['id']}").get_data(as_text=True)
    assert "Hermes would still continue" in page and "a session never ended" in page


@pytest.mark.slow  # moves whole conversations to cold storage, one unit of work each
def test_conversations_hermes_would_continue_move_only_when_included(tmp_path):
    db = _home(tmp_path)
    table, _mirror = _route(db, tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    preview = client.get("/coldstore?older_than=0&resumable=include&format=json").get_json()
    assert preview["include_resumable"] and not preview["stays"]
    assert preview["conversations_to_move"] == preview["conversations"]
    job = post(
        client,
        "/coldstore",
        {"older_than": "0", "resumable": "include", "confirm": "yes", "format": "json"},
    ).get_json()
    assert job["error"] is None and job["include_resumable"] and not job["stayed"]
    assert job["conversations_moved"] == preview["conversations"]
    assert not sql(db, "SELECT 1 FROM sessions WHERE id = ?", (table,))
    assert sql(_month(tmp_path / "inst"), "SELECT 1 FROM sessions WHERE id = ?", (table,))


@pytest.mark.slow  # moves whole conversations to cold storage, one unit of work each
def test_the_free_space_after_a_move_is_the_live_files_free_pages(tmp_path):
    """The figure is freelist pages × page size of the live file after the move, read fresh;
    a VACUUM (what `hermes sessions optimize` runs, the gateway stopped) of a copy gives back
    at least that much."""
    db = _home(tmp_path, "hermes-v22.db")
    client = make_app(db, tmp_path / "inst").test_client()
    job = post(
        client,
        "/coldstore",
        {"older_than": "0", "resumable": "include", "confirm": "yes", "format": "json"},
    ).get_json()
    assert job["error"] is None and job["conversations_moved"] > 10
    free, size = sql(db, "PRAGMA freelist_count")[0][0], sql(db, "PRAGMA page_size")[0][0]
    assert (job["free_pages"], job["page_size"]) == (free, size) and free > 0
    assert job["free_bytes"] == free * size
    copy = tmp_path / "copy.db"
    src, dst = sqlite3.connect(db), sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    before = copy.stat().st_size
    dst.execute("VACUUM")
    dst.close()
    assert before - copy.stat().st_size >= job["free_bytes"]
    page = client.get(f"/coldstore/jobs/{job['id']}").get_data(as_text=True)
    assert "gives back for certain" in page


@pytest.mark.oracle
def test_a_moved_conversation_cannot_be_continued_by_hermes_until_it_is_moved_back(tmp_path):
    """Hermes 0.19's own SessionDB: appending to a moved session fails (it is no longer in the
    file); after the move back it succeeds again."""
    venv = ensure_venv()
    db = _home(tmp_path, "hermes-v22.db")
    client = make_app(db, tmp_path / "inst").test_client()
    sid = sql(
        db,
        "SELECT id FROM sessions s WHERE ended_at IS NOT NULL AND source = 'cli' AND NOT EXISTS "
        "(SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id) AND parent_session_id IS "
        "NULL AND end_reason = 'cli_close' LIMIT 1",
    )[0][0]
    hermes = Hermes(venv, tmp_path)
    job = post(
        client,
        "/coldstore",
        {"session": sid, "resumable": "include", "confirm": "yes", "format": "json"},
    ).get_json()
    assert job["conversations_moved"] == 1, job
    moved = hermes.call("append", session_id=sid)
    assert moved["ok"] is False and moved["session"] is None, moved
    back = post(
        client,
        "/coldstore",
        {
            "from": time.strftime("archive %Y-%m"),
            "back": "1",
            "session": sid,
            "confirm": "yes",
            "format": "json",
        },
    ).get_json()
    assert back["error"] is None and back["conversations_moved"] == 1, back
    again = hermes.call("append", session_id=sid)
    assert again["ok"] is True and again["session"] == sid, again
