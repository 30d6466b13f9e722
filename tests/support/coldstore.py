"""Cold storage's test scene, shared by tests/test_coldstore.py and tests/test_journal_locks.py:
a copy of the real v22 database with a compression chain of three sessions (CHAIN) and their
transcript files, the app over it, and the chain's move back from this month's archive."""

from __future__ import annotations

import time
from pathlib import Path

from support import copy_fixture, make_app, sql
from support.http import post

CHAIN = ["20251216_225305_346aef", "20251216_230519_71eb5c", "20251216_231538_b523c0"]


def rows_of(db: Path, ids: list[str]) -> dict[str, list[tuple]]:
    """The sessions' rows and their messages' rows, as stored."""
    marks = ",".join("?" * len(ids))
    return {
        "sessions": sql(db, f"SELECT * FROM sessions WHERE id IN ({marks}) ORDER BY id", ids),
        "messages": sql(
            db, f"SELECT * FROM messages WHERE session_id IN ({marks}) ORDER BY id", ids
        ),
    }


def make_home(tmp_path: Path):
    """(live database, Hermes home, app, client) with CHAIN's transcript files in sessions/
    (each test module makes it its ``home`` fixture)."""
    live = copy_fixture("hermes-v22.db", tmp_path)
    (tmp_path / "sessions").mkdir()
    for sid in CHAIN:
        (tmp_path / "sessions" / f"{sid}.jsonl").write_text('{"role": "user"}\n')
    (tmp_path / "sessions" / "other.jsonl").write_text("{}\n")
    app = make_app(live, tmp_path / "inst")
    return live, tmp_path, app, app.test_client()


def month_file(inst: Path) -> Path:
    """This month's archive file, where cold storage moves conversations."""
    return inst / "archives" / time.strftime("hermes-archive-%Y-%m.db")


def move_chain_back(client) -> dict:
    """CHAIN moved back from this month's archive file; the job, checked whole."""
    month = time.strftime("archive %Y-%m")
    r = post(
        client,
        "/coldstore",
        {"from": month, "session": CHAIN[0], "confirm": "yes", "format": "json"},
    )
    job = r.get_json()
    assert r.status_code == 200 and job["error"] is None, job
    assert job["direction"] == "back" and job["sessions_moved"] == 3
    return job
