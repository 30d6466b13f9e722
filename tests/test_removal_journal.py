"""A session is removed whole or not at all, even across kill -9 (issue 15, point 7): a long
transcript goes in short batches, so the removal is journaled in the instance folder first and
finished (or reported, when the session changed since) on the next try or start."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from support import make_app, sql
from support.http import fts_consistent, post
from webui.web.logbooks import get_logbook

LONG = 12_000  # messages: 30 batches of 400, each followed by a pause, so a kill lands mid-way

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def long_db(tmp_path_factory):
    from webui.demo import generate

    path = tmp_path_factory.mktemp("long") / "state.db"
    info = generate(path, sessions=30, seed=3, long_session_messages=LONG)
    return path, info.long_session_id


def _copy(src: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / "state.db"
    conn = sqlite3.connect(src)
    out = sqlite3.connect(target)
    conn.backup(out)
    out.close()
    conn.close()
    return target


def _messages(db: Path, sid: str) -> int:
    return sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,))[0][0]


def _exists(db: Path, sid: str) -> bool:
    return bool(sql(db, "SELECT 1 FROM sessions WHERE id = ?", (sid,)))


DELETE = "get_logbook().actions.delete({sid!r})"
PRUNE = (
    "get_logbook().actions.run_prune(selection_from_args("
    "{{'min_messages': '1000', 'older_than': '0'}}, command='prune'))"
)


def _kill_mid_delete(db: Path, instance: Path, sid: str, action: str = DELETE) -> int:
    """Run ``action`` (a delete of ``sid``, or a prune that takes it) in a child process and
    kill -9 it once some batches committed; returns how many messages were left."""
    tests = Path(__file__).parent
    action = action.format(sid=sid)
    child = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tests)!r})
        from support import make_app
        from webui.web.logbooks import get_logbook
        from webui.hermes.selection import selection_from_args
        app = make_app({str(db)!r}, {str(instance)!r})
        with app.app_context():
            print("ready", flush=True)
            {action}
        print("finished", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        left = _messages(db, sid)
        if 0 < left < LONG - 1200:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait(timeout=10)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, "the delete finished before it could be killed"
    return _messages(db, sid)


def test_a_killed_delete_is_finished_at_the_next_start(long_db, tmp_path):
    db = _copy(long_db[0], tmp_path / "db")
    sid = long_db[1]
    instance = tmp_path / "inst"
    before = sql(db, "SELECT COUNT(*) FROM messages")[0][0]
    left = _kill_mid_delete(db, instance, sid)
    assert 0 < left < LONG and _exists(db, sid)  # cut mid-way: a partial transcript
    journal = list(instance.glob("changes-*/*.jsonl"))
    assert len(journal) == 1

    app = make_app(db, instance)  # the next start finishes the removal
    assert not _exists(db, sid) and _messages(db, sid) == 0
    assert sql(db, "SELECT COUNT(*) FROM messages")[0][0] == before - LONG
    assert not list(instance.glob("changes-*/*.jsonl"))
    fts_consistent(db)
    with app.app_context():
        notes = get_logbook().actions.recovered
    assert len(notes) == 1 and sid in notes[0] and "now complete" in notes[0]
    page = app.test_client().get("/sessions").get_data(as_text=True)
    assert "had been cut short" in page and sid in page


def test_a_killed_prune_is_finished_at_the_next_start(long_db, tmp_path):
    db = _copy(long_db[0], tmp_path / "db")
    sid = long_db[1]
    instance = tmp_path / "inst"
    assert sql(db, "SELECT ended_at IS NOT NULL FROM sessions WHERE id = ?", (sid,)) == [(1,)]
    left = _kill_mid_delete(db, instance, sid, PRUNE)
    assert 0 < left < LONG and _exists(db, sid)
    app = make_app(db, instance)
    assert not _exists(db, sid) and _messages(db, sid) == 0
    fts_consistent(db)
    with app.app_context():
        (note,) = get_logbook().actions.recovered
    assert note.startswith("A prune begun") and sid in note


def test_a_session_that_got_a_message_since_is_kept_and_named(long_db, tmp_path):
    db = _copy(long_db[0], tmp_path / "db")
    sid = long_db[1]
    instance = tmp_path / "inst"
    left = _kill_mid_delete(db, instance, sid)
    conn = sqlite3.connect(db)
    with conn:  # the gateway writes to the session after the removal began
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
            (sid, "user", "still here", time.time()),
        )
    conn.close()
    app = make_app(db, instance)
    assert _exists(db, sid) and _messages(db, sid) == left + 1
    assert not list(instance.glob("changes-*/*.jsonl"))
    with app.app_context():
        (note,) = get_logbook().actions.recovered
    assert "Kept" in note and sid in note


def _hold_lock(db: Path, started: threading.Event, seconds: float) -> None:
    conn = sqlite3.connect(db, isolation_level=None, timeout=10)
    conn.execute("BEGIN IMMEDIATE")
    started.set()
    time.sleep(seconds)
    conn.execute("ROLLBACK")
    conn.close()


def test_a_delete_cut_by_a_lock_says_exactly_what_went_and_finishes_on_retry(long_db, tmp_path):
    db = _copy(long_db[0], tmp_path / "db")
    sid = long_db[1]
    app = make_app(db, tmp_path / "inst")
    client = app.test_client()
    locked = threading.Event()

    def lock_after_first_batches():
        while _messages(db, sid) > LONG - 800:
            time.sleep(0.002)
        _hold_lock(db, locked, 8.0)  # longer than the writer's retries

    holder = threading.Thread(target=lock_after_first_batches)
    holder.start()
    r = post(client, f"/sessions/{sid}/delete", {"confirm": "yes"}, headers={"Accept": "*/*"})
    holder.join()
    assert locked.is_set()
    left = _messages(db, sid)
    gone = LONG - left
    assert r.status_code == 503
    text = r.get_data(as_text=True)
    assert "nothing was changed" not in text.lower()
    assert f"{gone:,} of its messages are gone" in text and "still listed" in text
    assert _exists(db, sid)

    r = post(client, f"/sessions/{sid}/delete", {"confirm": "yes"})  # the lock is gone now
    assert r.status_code in (200, 303)
    assert not _exists(db, sid) and _messages(db, sid) == 0
    assert not list((tmp_path / "inst").glob("changes-*/*.jsonl"))
    fts_consistent(db)
