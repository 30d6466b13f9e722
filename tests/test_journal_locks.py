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

from test_coldstore import CHAIN, _month_file, _rows, home, move_chain_back  # noqa: F401

from support import sql
from support.http import fts_consistent, post
from webui.db import get_logbook
from webui.db.journal import TMP_STALE_S, Journal

ROOT = Path(__file__).resolve().parents[1]


def _pending(folder) -> list[str]:
    with Journal(folder).pending() as entries:
        return [e.what for e in entries]


def test_an_entry_being_worked_on_is_not_resumed_in_this_process(tmp_path):
    mine = Journal(tmp_path)
    entry = mine.open("delete", {"a": 7})
    assert _pending(tmp_path) == []  # another thread's resume: work in progress
    assert Journal(tmp_path).held_sessions([]) == {"a"}
    mine.release(entry)  # stopped part way (a lock): cut short now
    assert _pending(tmp_path) == ["delete"]
    assert Journal(tmp_path).held_sessions([]) == set()
    with Journal(tmp_path).pending() as (claimed,):
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


def test_a_move_back_cut_short_earlier_is_undone_before_the_conversation_comes_back(home):  # noqa: F811
    """What a lock that stopped a move back part way leaves: some of the conversation's
    messages in the live file, owned by no session, and a released "return" entry. Moving it
    back again first takes those out (not the ones it copies), then brings it in whole."""
    live, folder, app, client = home
    before = _rows(live, CHAIN)
    job = post(client, "/coldstore", {"session": CHAIN[0], "confirm": "yes", "format": "json"})
    assert job.get_json()["conversations_moved"] == 1
    archive = _month_file(folder / "inst")
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
    assert _rows(live, CHAIN) == before and _rows(archive, CHAIN)["messages"] == []
    assert sql(
        live, "SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)"
    ) == [(0,)]
    fts_consistent(live)
    with app.app_context():
        said = " ".join(get_logbook().actions.recovered)
    assert "the 5 messages it had copied into the live file were taken out again" in said
    assert not list((folder / "inst").glob("removals-*/*.json"))
