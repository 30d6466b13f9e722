"""The digest (webui/db/digest) follows the file by what changed, never by reading it again:
after every kind of change Hermes makes (appends with tool calls and results, a new session,
a transcript rewritten in place, a session deleted, a model switched, a start moved to another
month, a reused rowid) and one it does not (rows deleted from a session that gets nothing new),
the digest that followed along holds exactly what one built from scratch holds. It resumes
after a restart, and it completes, small read by small read, on a file too big to read within
the query limit while pages answer partial."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from support import copy_fixture, following, make_app, sql
from webui.db.digest import Digest
from webui.web.logbooks import get_logbook

COMPARED = {
    "sess": "*",
    "bytes_month": "* WHERE sessions != 0 OR n != 0",
    "tool_use": "* WHERE calls + results != 0",
    "tool_day": "* WHERE calls != 0 OR results != 0 OR failures != 0",
    "model_day": "* WHERE turns != 0 OR results != 0 OR failed_turns != 0",
    "failed_turns": "*",
    "pending": "*",
    "runs": "session_id, tool, sig, length, first_message, last_message",
    "loops": "session_id, tool, first_message, last_message, calls, sample",
    "changes": "session_id, message_id, call_index, change_index, call_id, tool, action, via, path, "
    "workspace, rel, timestamp, full, size, other, failed",
}


def dump(d: Digest, db) -> dict:
    statements = {}
    for table, cols in COMPARED.items():
        what, _, where = cols.partition(" WHERE ")
        statements[table] = f"SELECT {what} FROM main.{table}" + (
            f" WHERE {where}" if where else ""
        )
    summed = {"bytes_month", "tool_day", "model_day"}  # by day or month: no session to check
    return following.ledger_rows(d.connect, db, statements, set(COMPARED) - summed)


def complete(d: Digest) -> None:
    following.refresh_to_the_end(d, tries=500)


def _turn(conn, sid, n, start, tool="terminal", fail=False):
    """An assistant turn calling ``tool`` and its result, ``n`` times (as run_agent stores
    them: the call's id in tool_calls, the result's tool_call_id and tool_name)."""
    for i in range(n):
        cid = f"c_{sid}_{start}_{i}"
        args = (
            {"command": f"echo {i} > out{i}.txt"}
            if tool == "terminal"
            else {"path": "a.py", "content": "x"}
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES (?, 'assistant', 'calling', ?, ?)",
            (
                sid,
                json.dumps(
                    [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {"name": tool, "arguments": json.dumps(args)},
                        }
                    ]
                ),
                start + 2 * i,
            ),  # fmt: skip
        )
        result = (
            {"output": "", "exit_code": 1 if fail else 0, "error": None}
            if tool == "terminal"
            else {"bytes_written": 1}
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, timestamp) "
            "VALUES (?, 'tool', ?, ?, ?, ?)",
            (sid, json.dumps(result), cid, tool, start + 2 * i + 1),
        )


def _busiest(conn, offset=0):
    return conn.execute(
        "SELECT session_id FROM messages GROUP BY 1 ORDER BY COUNT(*) DESC, 1 LIMIT 1 OFFSET ?",
        (offset,),
    ).fetchone()[0]


def _append(conn):
    sid = conn.execute("SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    _turn(conn, sid, 3, 1.95e9, fail=True)  # also a retry loop, carried on from before


def _new_session(conn):
    conn.execute(
        "INSERT INTO sessions (id, source, model, started_at) VALUES ('fresh_one', 'cron', 'probe', 1.9e9)"
    )
    _turn(conn, "fresh_one", 2, 1.9e9 + 5, tool="write_file")


def _rewrite(conn):
    """Hermes's replace_messages (/retry, /undo, /compress): every row deleted, the new
    transcript inserted."""
    sid = _busiest(conn)
    conn.execute("DELETE FROM messages WHERE session_id = ?", (sid,))
    _turn(conn, sid, 2, 1.96e9)


def _delete_session(conn):
    following.delete_session(conn, _busiest(conn, 1))


def _delete_rows_only(conn):
    sid = _busiest(conn, 2)
    conn.execute(
        "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT 3)",
        (sid,),
    )


def _switch_model_and_month(conn):
    a, b = _busiest(conn, 3), _busiest(conn, 4)
    conn.execute("UPDATE sessions SET model = 'switched-model' WHERE id = ?", (a,))
    conn.execute("UPDATE sessions SET started_at = started_at - 40 * 86400 WHERE id = ?", (b,))
    _turn(conn, a, 1, 1.97e9)
    _turn(conn, b, 1, 1.97e9)


def _reuse_a_rowid(conn):
    rowid, sid = conn.execute(
        "SELECT rowid, id FROM sessions ORDER BY rowid DESC LIMIT 1"
    ).fetchone()
    following.delete_session(conn, sid)
    # SQLite gives a new row max(rowid) + 1: the same rowid when the newest row went
    conn.execute(
        "INSERT INTO sessions (rowid, id, source, started_at) VALUES (?, 'reused_rowid', 'discord', 1.91e9)",
        (rowid,),
    )
    _turn(conn, "reused_rowid", 2, 1.91e9 + 1)


CHANGES = [_append, _new_session, _rewrite, _delete_session, _delete_rows_only,
           _switch_model_and_month, _reuse_a_rowid]  # fmt: skip


@pytest.mark.parametrize("name", ["hermes-v22-tools.db", "hermes-v31-tools.db", "hermes-v11.db"])
def test_a_followed_digest_holds_what_a_fresh_one_does(tmp_path, name):
    db = copy_fixture(name, tmp_path)
    truth = "SELECT COUNT(*) FROM messages WHERE session_id IN (SELECT id FROM sessions)"
    following.follow_every_change(db, tmp_path, Digest, complete, dump, CHANGES, truth)


def test_pages_see_a_change_at_once(tmp_path):
    """A page reads what was written since the last one (within its budget): a new failing
    call is in the next /stats, a new file in the next /files (with no lag allowed: beside a
    gateway the figures may be LOGBOOK_STATS_REUSE_S old, as the statistics may)."""
    db = copy_fixture("hermes-v22-tools.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_STATS_REUSE_S=0)  # no lag allowed here
    c = app.test_client()
    before = c.get("/stats?format=json&period=all").get_json()["reliability"]["totals"]
    conn = sqlite3.connect(db)
    with conn:
        _turn(conn, "tools_notes", 2, 1.95e9, fail=True)
    conn.close()
    after = c.get("/stats?format=json&period=all").get_json()["reliability"]["totals"]
    assert after["failures"] == before["failures"] + 2 and after["results"] == before["results"] + 2
    paths = {
        r["path"]
        for r in c.get("/files?format=json&workspace=/home/ana/notes").get_json()["changes"]
    }
    assert {"/home/ana/notes/out0.txt", "/home/ana/notes/out1.txt"} <= paths


def test_a_digest_left_half_way_resumes(tmp_path):
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    with app.app_context():
        reader = get_logbook().reader
        following.stopped_after_one_batch(Digest, reader, tmp_path / "kept.sqlite", db)
        again = Digest(reader, tmp_path / "kept.sqlite")
        complete(again)
        whole = Digest(reader, tmp_path / "whole.sqlite")
        complete(whole)
        assert dump(again, db) == dump(whole, db)


def _grow(db, turns: int) -> None:
    """``turns`` tool turns (a call and its result: every fourth fails) over 500 new sessions,
    through Hermes's own triggers."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 499) "
            "INSERT INTO sessions (id, source, started_at) SELECT 'grown_' || i, 'cli', 1.8e9 + i * 3600 FROM k"
        )
        conn.execute(
            "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ? - 1) "
            "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, tool_name, timestamp) "
            "SELECT 'grown_' || (i / 2 % 500), CASE i % 2 WHEN 0 THEN 'assistant' ELSE 'tool' END, "
            "CASE i % 2 WHEN 0 THEN 'calling' ELSE json_object('output', 'x', 'exit_code', "
            "CASE WHEN i % 8 = 1 THEN 1 ELSE 0 END) END, "
            "CASE i % 2 WHEN 0 THEN json_array(json_object('id', 'g' || (i / 2), 'type', 'function', "
            "'function', json_object('name', 'terminal', 'arguments', json_object('command', 'ls ' || i)))) END, "
            "CASE i % 2 WHEN 1 THEN 'g' || (i / 2) END, CASE i % 2 WHEN 1 THEN 'terminal' END, 1.8e9 + i FROM k",
            (2 * turns,),
        )
    conn.close()


@pytest.mark.slow  # 120,000 messages added, then read as the pages watch
def test_the_digest_completes_on_a_file_too_big_to_read_in_time(tmp_path):
    """Its reads get a time limit below what one read of the new rows takes: the background
    pass completes in reads sized to the limit, pages answer meanwhile (partial, saying how far
    it got, always forward), and the figures are the file's."""
    db = copy_fixture("hermes-v22.db", tmp_path)
    _grow(db, 60_000)
    conn = sqlite3.connect(db)
    began = time.perf_counter()
    conn.execute(
        "SELECT TOTAL(length(CAST(content AS BLOB))), COUNT(json_valid(content)) FROM messages"
    ).fetchone()
    whole = time.perf_counter() - began
    conn.close()
    limit = whole / 3
    # the premise: one read of everything does not fit
    everything = (
        "SELECT TOTAL(length(CAST(content AS BLOB))), COUNT(json_valid(content)) FROM messages"
    )
    app, client, lb = following.app_reading_within(db, tmp_path, limit, too_long=everything)

    def look():
        body = client.get("/files?format=json").get_json()
        assert client.get("/sessions?format=json").status_code == 200
        return [(c.get("complete"), c.get("messages_seen_up_to_id")) for c in body["coverage"]]

    seen = following.watch_while(app, lambda: lb.digest.warm(budget_s=0.05), look, bound_s=300)
    rel = client.get("/stats?format=json&period=all").get_json()["reliability"]
    terminal = next(t for t in rel["tools"] if t["tool"] == "terminal")
    truth = sql(db, "SELECT COUNT(*) FROM messages WHERE role = 'tool' AND tool_name = 'terminal' "
                "AND json_extract(content, '$.exit_code') != 0")[0][0]  # fmt: skip
    assert terminal["failures"] == truth and truth >= 60_000 // 4
    following.moved_forward(seen)
