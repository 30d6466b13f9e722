"""The lane (webui/db/changes): one unit of work at a time per live file, across threads and
processes; whatever the journal holds is replayed before the next unit begins; entries are read
as untrusted files (issue 49, point 5: a FIFO, an endless or huge entry never blocks a delete or
the start, and is set aside and named); the journal of the Logbook before the lane is still
replayed."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from support import copy_fixture, make_app, sql
from support.http import fts_consistent, post
from support.lane_worker import run
from webui.db.errors import DatabaseBusy
from webui.web.logbooks import get_logbook

TESTS = Path(__file__).parent
LONG = "20251007_090818_9b787bc8"  # 207 messages in hermes-v22.db: trimmed before its row goes


def _home(tmp_path: Path) -> Path:
    db = copy_fixture("hermes-v22.db", tmp_path)
    return db.rename(tmp_path / "state.db")


def _journal(instance: Path) -> Path:
    (found,) = instance.glob("changes-*")
    return found


def _messages(db: Path, sid: str) -> int:
    return sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,))[0][0]


def test_a_unit_waits_for_another_process_and_a_kill_sets_it_free(tmp_path):
    """Two Logbooks on one instance folder never run units at once: the second waits for the
    first's flock, and gets it the moment the first is killed."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    app = make_app(db, instance)
    child = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(TESTS)!r})
        from support import make_app
        from webui.web.logbooks import get_logbook
        app = make_app({str(db)!r}, {str(instance)!r})
        with app.app_context(), get_logbook().actions.lane.unit("hold"):
            print("held", flush=True)
            time.sleep(120)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with app.app_context():
            lane = get_logbook().actions.lane
            with (
                pytest.raises(DatabaseBusy, match="Another change to this database"),
                lane.unit("delete", wait_s=0.3),
            ):
                pass
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            with lane.unit("delete", wait_s=10):
                pass  # free as soon as the holder died
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_a_change_cut_short_is_replayed_before_the_next_one_begins(tmp_path):
    """A delete killed after its first batches (another process): the next change of any kind,
    here a rename in this running Logbook, first finishes it, and says so."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    app = make_app(db, instance)  # started before the cut: its start replayed nothing
    before = _messages(db, LONG)
    killed, _ = run(db, instance, {"op": "delete", "ids": [LONG]}, kill_at=3)
    assert killed
    left = _messages(db, LONG)
    assert 0 < left < before, "the kill came before the first batch or after the last"
    assert len(list(_journal(instance).glob("*.jsonl"))) == 1
    other = sql(db, "SELECT id FROM sessions WHERE id <> ? LIMIT 1", (LONG,))[0][0]
    with app.app_context():
        actions = get_logbook().actions
        actions.rename(other, "renamed after the cut")
        said = " ".join(actions.recovered)
    assert _messages(db, LONG) == 0 and not sql(db, "SELECT 1 FROM sessions WHERE id = ?", (LONG,))
    assert f"its removal of 1 session ({LONG}) is now complete" in said
    assert not list(_journal(instance).glob("*.jsonl"))
    fts_consistent(db)


def test_the_journal_of_the_logbook_before_the_lane_is_replayed(tmp_path):
    """An entry of the removal journal that the lane replaced (``removals-*``, one JSON object)
    is finished at the next start, as it would have been."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    make_app(db, instance)
    digest = _journal(instance).name.removeprefix("changes-")
    assert digest == hashlib.sha1(str(db).encode()).hexdigest()[:12]
    newest = sql(db, "SELECT MAX(id) FROM messages WHERE session_id = ?", (LONG,))[0][0]
    conn = sqlite3.connect(db)
    with conn:  # what the cut delete had done: its first batch
        conn.execute(
            "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE session_id = ? "
            "ORDER BY id DESC LIMIT 50)",
            (LONG,),
        )
    conn.close()
    old = instance / f"removals-{digest}"
    old.mkdir()
    (old / "20260101-000000-000000000-abcd1234.json").write_text(
        json.dumps({"what": "delete", "sessions": {LONG: newest}, "started": time.time()})
    )
    app = make_app(db, instance)
    assert _messages(db, LONG) == 0
    assert not list(old.glob("*.json"))
    with app.app_context():
        assert "is now complete" in " ".join(get_logbook().actions.recovered)


def test_a_fifo_in_the_journal_never_blocks_a_delete_and_is_named(tmp_path):
    """Issue 49: a FIFO among the entries made every delete answer 500 and blocked the others.
    Now it is set aside (renamed), the page names it, and the delete goes through."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    app = make_app(db, instance)
    fifo = _journal(instance) / "00000000000000000001-fifo0000-delete.jsonl"
    os.mkfifo(fifo)
    client = app.test_client()
    victim = sql(db, "SELECT id FROM sessions WHERE ended_at IS NOT NULL LIMIT 1")[0][0]
    r = post(client, f"/sessions/{victim}/delete", {"confirm": "yes"})
    assert r.status_code in (200, 303), r.get_data(as_text=True)[:500]
    assert not sql(db, "SELECT 1 FROM sessions WHERE id = ?", (victim,))
    assert not fifo.exists() and fifo.with_name(fifo.name + ".set-aside").exists()
    page = client.get("/sessions").get_data(as_text=True)
    assert fifo.name in page and "could not be read (not a regular file)" in page


def test_an_endless_huge_or_foreign_entry_never_stops_the_start(tmp_path):
    """Issue 49: an entry that is a link to /dev/zero stopped the server from starting (a
    MemoryError). Each such entry is set aside and named; the start ends normally, no
    traceback; a readable entry beside them is still replayed."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    make_app(db, instance)
    folder = _journal(instance)
    (folder / "00000000000000000001-aaaaaaaa-delete.jsonl").symlink_to("/dev/zero")
    (folder / "00000000000000000002-bbbbbbbb-delete.jsonl").write_bytes(b"{" + b" " * (5 << 20))
    (folder / "00000000000000000003-cccccccc-delete.jsonl").write_text("not json at all\n")
    (folder / "00000000000000000004-dddddddd-delete.jsonl").mkdir()
    good = sql(db, "SELECT id FROM sessions WHERE ended_at IS NOT NULL LIMIT 1")[0][0]
    (folder / "00000000000000000005-eeeeeeee-delete.jsonl").write_text(
        json.dumps({"kind": "delete", "sessions": {good: 1 << 40}, "started": 1.0}) + "\n"
    )
    child = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from support import make_app
        app = make_app({str(db)!r}, {str(instance)!r})
        for note in app.extensions["logbook"].actions.recovered:
            print(note)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    for name, why in (
        ("00000000000000000001-aaaaaaaa-delete.jsonl", "a link, or not readable"),
        ("00000000000000000002-bbbbbbbb-delete.jsonl", "larger than 4 MB"),
        ("00000000000000000003-cccccccc-delete.jsonl", "not an entry Logbook wrote"),
        ("00000000000000000004-dddddddd-delete.jsonl", "not a regular file"),
    ):
        assert f"{name}, could not be read ({why})" in done.stdout, done.stdout
        assert (folder / f"{name}.set-aside").exists() or (
            folder / f"{name}.set-aside"
        ).is_symlink()
    assert "is now complete" in done.stdout
    assert not sql(db, "SELECT 1 FROM sessions WHERE id = ?", (good,))
    assert not list(folder.glob("*.jsonl"))


CHAIN = ["20251216_225305_346aef", "20251216_230519_71eb5c", "20251216_231538_b523c0"]


def _chain_rows(db: Path) -> dict[str, list]:
    marks = ",".join("?" * len(CHAIN))
    return {
        "sessions": sql(db, f"SELECT * FROM sessions WHERE id IN ({marks}) ORDER BY id", CHAIN),
        "messages": sql(
            db, f"SELECT * FROM messages WHERE session_id IN ({marks}) ORDER BY id", CHAIN
        ),
    }


def _back(client) -> dict:
    r = post(
        client,
        "/coldstore",
        {
            "from": time.strftime("archive %Y-%m"),
            "back": "1",
            "session": CHAIN[0],
            "confirm": "yes",
            "format": "json",
        },
    )
    job = r.get_json()
    assert r.status_code == 200 and job["error"] is None and job["sessions_moved"] == 3, job
    return job


def test_a_move_back_cut_short_earlier_is_undone_before_the_conversation_comes_back(tmp_path):
    """A move back killed after some of the conversation's messages entered the live file
    (owned by no session there): the next move back first takes those out (its replay), then
    brings the conversation in whole."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    app = make_app(db, instance)
    client = app.test_client()
    before = _chain_rows(db)
    job = post(
        client,
        "/coldstore",
        {"session": CHAIN[0], "resumable": "include", "confirm": "yes", "format": "json"},
    ).get_json()
    assert job["conversations_moved"] == 1, job
    archive = Path(job["archive"])
    killed, _ = run(db, instance, {"op": "start"})  # nothing to replay: a clean start
    assert not killed
    killed, _ = run(
        db,
        instance,
        {"op": "back-from", "ids": [CHAIN[0]], "archive": str(archive)},
        kill_at="live commit+0",
    )
    assert killed
    orphans = sql(
        db, "SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)"
    )[0][0]
    assert orphans > 0
    _back(client)
    assert _chain_rows(db) == before and _chain_rows(archive)["messages"] == []
    with app.app_context():
        said = " ".join(get_logbook().actions.recovered)
    assert f"the {orphans} messages it had copied into the live file were taken out again" in said
    assert not list(_journal(instance).glob("*.jsonl"))
    fts_consistent(db)


def test_a_move_out_cut_while_removing_is_finished_before_a_move_back(tmp_path):
    """A move to cold storage killed after its copy was verified, part way through removing the
    conversation from the live file: the next change (here a move back of that conversation)
    first finishes the removal — the archive holds the verified copy — then brings it back
    whole. Left for later, the removal would delete it again after the archive gave it up."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    app = make_app(db, instance)
    client = app.test_client()
    before = _chain_rows(db)
    killed, _ = run(
        db,
        instance,
        {"op": "out-to", "ids": [CHAIN[0]], "archive": str(_month_file(instance))},
        kill_at="out: verified+1",
    )
    assert killed
    left = _chain_rows(db)
    assert left["sessions"] and len(left["sessions"]) < 3, "the kill missed the removal"
    _back(client)
    assert _chain_rows(db) == before
    assert _chain_rows(_month_file(instance)) == {"sessions": [], "messages": []}
    with app.app_context():
        said = " ".join(get_logbook().actions.recovered)
    assert "had been cut short; it is now complete (3 sessions" in said
    fts_consistent(db)


def _month_file(instance: Path) -> Path:
    return instance / "archives" / time.strftime("hermes-archive-%Y-%m.db")
