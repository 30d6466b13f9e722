"""The removal journal tells work in progress from work cut short (webui/db/journal.py): an
entry is locked by whoever works on it, in this process or another, and a kill drops the lock.
A resume (every delete starts with one) never finishes or undoes work that is still running,
and a move back first undoes an earlier one of the same conversation that was cut short."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from support import sql
from support.coldstore import CHAIN, make_home, month_file, move_chain_back, rows_of
from support.http import fts_consistent, post
from webui.db import get_logbook
from webui.db.journal import TMP_STALE_S, Journal

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def home(tmp_path):
    return make_home(tmp_path)


def _pending(folder) -> list[str]:
    """What a resume would take up now: the entries nobody holds (claimed, then let go)."""
    journal, found = Journal(folder), []
    for path in journal.candidates():
        entry = journal.claim(path)
        if entry is not None:
            found.append(entry.what)
            journal.release(entry)
    return found


def test_an_entry_being_worked_on_is_not_resumed_in_this_process(tmp_path):
    mine = Journal(tmp_path)
    entry = mine.open("delete", {"a": 7})
    assert _pending(tmp_path) == []  # another thread's resume: work in progress
    assert Journal(tmp_path).held_sessions([]) == {"a"}
    mine.release(entry)  # stopped part way (a lock): cut short now
    assert _pending(tmp_path) == ["delete"]
    assert Journal(tmp_path).held_sessions([]) == set()
    claimed = Journal(tmp_path).claim(entry.path)
    assert _pending(tmp_path) == []  # one resume at a time works on it
    Journal(tmp_path).close(claimed)
    assert _pending(tmp_path) == [] and not list(tmp_path.glob("*.json"))


def test_an_entry_of_another_process_is_left_until_that_process_dies(tmp_path):
    child = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from webui.db.journal import Journal
        Journal(__import__("pathlib").Path({str(tmp_path)!r})).open("return", {{"s": 0}})
        print("open", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "open"
        assert _pending(tmp_path) == [] and Journal(tmp_path).held_sessions([]) == {"s"}
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
    assert _pending(tmp_path) == ["return"]  # killed: its lock went with it


def test_a_file_being_written_is_left_alone_and_a_stale_one_removed(tmp_path):
    fresh, stale = tmp_path / "a.tmp", tmp_path / "b.tmp"
    fresh.write_text("{")
    stale.write_text("{")
    old = time.time() - TMP_STALE_S - 5
    os.utime(stale, (old, old))
    assert _pending(tmp_path) == []
    assert fresh.exists() and not stale.exists()


def test_a_move_back_cut_short_earlier_is_undone_before_the_conversation_comes_back(home):
    """What a lock that stopped a move back part way leaves: some of the conversation's
    messages in the live file, owned by no session, and a released "return" entry. Moving it
    back again first takes those out (not the ones it copies), then brings it in whole."""
    live, folder, app, client = home
    before = rows_of(live, CHAIN)
    job = post(client, "/coldstore", {"session": CHAIN[0], "confirm": "yes", "format": "json"})
    assert job.get_json()["conversations_moved"] == 1
    archive = month_file(folder / "inst")
    conn = sqlite3.connect(live)
    conn.execute("ATTACH DATABASE ? AS arch", (str(archive),))
    with conn:
        copied = conn.execute(
            "INSERT INTO messages SELECT * FROM arch.messages WHERE session_id = ? "
            "ORDER BY id LIMIT 5",
            (CHAIN[0],),
        ).rowcount
    conn.close()
    assert copied == 5
    with app.app_context():
        actions = get_logbook().actions
        actions.journal.release(actions.journal.open("return", dict.fromkeys(CHAIN, 0)))
    move_chain_back(client)
    assert rows_of(live, CHAIN) == before and rows_of(archive, CHAIN)["messages"] == []
    assert sql(
        live, "SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)"
    ) == [(0,)]
    fts_consistent(live)
    with app.app_context():
        said = " ".join(get_logbook().actions.recovered)
    assert "the 5 messages it had copied into the live file were taken out again" in said
    assert not list((folder / "inst").glob("removals-*/*.json"))


def test_a_move_back_finishes_a_removal_of_its_sessions_cut_short_before_copying(home):
    """A move out killed while deleting the moved sessions from the live file leaves a
    journaled removal and what was not yet deleted. Moving the conversation back first
    finishes that removal (the archive holds the verified copy), then brings it in whole:
    left for a later resume, the removal would delete the sessions after the archive gave
    them up."""
    live, folder, app, client = home
    before = rows_of(live, CHAIN)
    job = post(client, "/coldstore", {"session": CHAIN[0], "confirm": "yes", "format": "json"})
    assert job.get_json()["conversations_moved"] == 1
    archive = month_file(folder / "inst")
    cut = CHAIN[2]
    conn = sqlite3.connect(live)
    conn.execute("ATTACH DATABASE ? AS arch", (str(archive),))
    with conn:  # what the cut-short delete had not removed yet: the row and a few messages
        conn.execute("INSERT INTO sessions SELECT * FROM arch.sessions WHERE id = ?", (cut,))
        conn.execute(
            "INSERT INTO messages SELECT * FROM arch.messages WHERE session_id = ? "
            "ORDER BY id LIMIT 4",
            (cut,),
        )
    newest = conn.execute(
        "SELECT MAX(id) FROM arch.messages WHERE session_id = ?", (cut,)
    ).fetchone()[0]
    conn.close()
    with app.app_context():
        actions = get_logbook().actions
        actions.journal.release(actions.journal.open("delete", {cut: newest}))
    move_chain_back(client)
    with app.app_context():
        actions = get_logbook().actions
        actions.resume_interrupted()  # what the next delete or start would run
        said = " ".join(actions.recovered)
    assert f"its removal of 1 session ({cut}) is now complete" in said
    assert rows_of(live, CHAIN) == before, "the conversation is whole in the live file"
    assert rows_of(archive, CHAIN) == {"sessions": [], "messages": []}
    assert not list((folder / "inst").glob("removals-*/*.json"))
    fts_consistent(live)


def test_two_moves_of_one_conversation_do_not_wait_on_each_other(home, monkeypatch):
    """Only older work on the same sessions is waited for: the newer of two moves under way
    waits (and gives up, saying so, having copied nothing), the older goes on at once."""
    from webui.db import resuming
    from webui.db.errors import DatabaseBusy

    _live, _folder, app, _client = home
    monkeypatch.setattr(resuming, "SETTLE_WAIT_S", 0.3)
    with app.app_context():
        actions = get_logbook().actions
        first = actions.journal.open("return", {CHAIN[0]: 0})
        second = actions.journal.open("return", {CHAIN[0]: 0})
        assert first.path.name < second.path.name  # names sort as the entries began
        actions.settle_before_return(first)  # the newer move is not waited for (no raise)
        try:
            actions.settle_before_return(second)
            raise AssertionError("the newer move went on while the older one works")
        except DatabaseBusy as exc:
            assert "still under way; nothing was moved" in exc.message
        actions.journal.close(first)
        actions.settle_before_return(second)  # the older one ended: nothing left to wait for
        actions.journal.close(second)
