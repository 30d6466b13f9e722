"""Logbook's connections closing beside Hermes 0.22's writer (issue 44 point 4).

0.22's guard notes (``hermes_state_lockguard``): SQLite lets a process that closes the last
connection it has on a WAL file checkpoint it and unlink its ``-wal``/``-shm`` once it can take
both EXCLUSIVE — and a writer still holding that generation then refuses every turn ("retired
state.db-wal"). Logbook never checkpoints beyond PASSIVE, never changes the journal mode, and
its closes must never end the generation a live Hermes holds. Proven here with 0.22's own
``SessionDB`` holding a WAL file open as the gateway does, while Logbook reads, renames, pins,
deletes and then lets the file go when idle (every connection of its process closed)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from support import make_app, sql
from support.held import held, wait_for
from support.http import post
from support.twins import hermes_on_copy

pytestmark = pytest.mark.oracle

_WRITER = """
import json, sys
from pathlib import Path
from hermes_state import SessionDB
db = SessionDB(Path(sys.argv[1]))
db.create_session("wal_probe", "cli")
print("ready", flush=True)
for line in sys.stdin:
    try:
        db.append_message("wal_probe", "user", "written beside Logbook " + line.strip())
        print(json.dumps({"ok": True}), flush=True)
    except Exception as exc:
        print(json.dumps({"ok": False, "error": repr(exc)}), flush=True)
db.close()
"""


def _ident(path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def test_logbooks_closes_never_end_the_wal_generation_hermes_holds(tmp_path):
    home = tmp_path / "hermes"
    home.mkdir()
    hermes = hermes_on_copy("hermes-v31-migrated.db", home)
    db = hermes.db
    assert sql(db, "PRAGMA journal_mode") == [("wal",)]
    writer = subprocess.Popen(
        [*hermes.python(), "-c", _WRITER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=hermes.env(),
    )
    try:
        assert writer.stdout.readline().strip() == "ready"

        def write(n: int) -> dict:
            writer.stdin.write(f"{n}\n")
            writer.stdin.flush()
            return json.loads(writer.stdout.readline())

        assert write(1) == {"ok": True}
        wal, shm = db.with_name("state.db-wal"), db.with_name("state.db-shm")
        generation = (_ident(wal), _ident(shm))
        app = make_app(db, tmp_path / "inst", LOGBOOK_IDLE_RELEASE_S=0.3)
        client = app.test_client()
        assert client.get("/sessions").status_code == 200
        assert client.get("/search?q=nginx").status_code == 200
        assert (
            post(client, "/sessions/g_words/title", {"title": "Renamed beside 0.22"}).status_code
            == 200
        )
        assert post(client, "/sessions/g_words/pin", {"pinned": "1"}).status_code == 200
        assert post(client, "/sessions/g_multimodel/delete", {}).status_code == 200
        assert write(2) == {"ok": True}
        # Idle: every connection of this process on the file is closed.
        assert wait_for(lambda: not held(os.getpid(), db)), held(os.getpid(), db)
        assert wal.exists() and shm.exists(), "a close of Logbook's ended Hermes's WAL generation"
        assert (_ident(wal), _ident(shm)) == generation, "the -wal/-shm were replaced"
        for n in range(3, 6):
            assert write(n) == {"ok": True}, "Hermes's writer refused after Logbook let go"
        assert sql(db, "PRAGMA journal_mode") == [("wal",)]
        # Logbook opens the file again and sees what Hermes wrote meanwhile.
        assert client.get("/sessions/wal_probe?format=json").status_code == 200
        count = sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = 'wal_probe'")
        assert count == [(5,)]
        assert sql(db, "SELECT title, pinned FROM sessions WHERE id = 'g_words'") == [
            ("Renamed beside 0.22", 1)
        ]
    finally:
        writer.stdin.close()
        writer.wait(timeout=60)
        writer.stdout.close()
