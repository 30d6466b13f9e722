"""An idle Logbook holds no descriptor on state.db, -wal or -shm (issue 44, point 4), so
Hermes 0.22's own maintenance runs beside it; a busy one is named in 0.22's refusal; the
first request after idle opens what it needs again."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from support import FIXTURES, ROOT, WAIT_BOUND_S, copy_fixture, make_app, sql
from support.held import held, wait_for


def test_an_idle_app_lets_the_live_file_go_and_reopens_it(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_IDLE_RELEASE_S=0.3)
    client = app.test_client()
    listed = "/sessions?format=json&rows=all&archived=include&limit=500"
    total = len(client.get(listed).get_json()["sessions"])
    assert client.get("/search?q=docker").status_code == 200
    assert client.get("/stats").status_code == 200
    assert held(os.getpid(), db), "a busy app reads the file"
    assert wait_for(lambda: not held(os.getpid(), db)), held(os.getpid(), db)
    # Written while nobody held it: the next request reads it afresh, never a kept answer.
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES ('after-idle', 'cli', ?)",
            (time.time(),),
        )
    conn.close()
    assert not held(os.getpid(), db)
    assert len(client.get(listed).get_json()["sessions"]) == total + 1
    assert held(os.getpid(), db)
    assert wait_for(lambda: not held(os.getpid(), db))


def test_background_work_after_a_release_is_let_go_too(tmp_path):
    """Work outside any request (the rollup's or the digest's pass) opens a connection after
    the app let the file go: with no request to start a busy spell, the idle thread still lets
    it go (the digest's pass held state.db for good, and Hermes 0.22 refused its own prune)."""
    from webui.web.logbooks import live_logbook

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_IDLE_RELEASE_S=0.3)
    client = app.test_client()
    assert client.get("/sessions?format=json").status_code == 200
    assert wait_for(lambda: not held(os.getpid(), db)), "the first release"
    idle = app.extensions["logbook_idle"]
    before = idle.releases
    with app.app_context():  # as a background pass reads: in the app, outside any request
        live_logbook().reader.scalar("SELECT COUNT(*) FROM sessions")
    assert held(os.getpid(), db)
    assert wait_for(lambda: not held(os.getpid(), db)), held(os.getpid(), db)
    assert idle.releases > before


def test_a_page_left_open_holds_the_file_only_while_its_polls_are_answered(tmp_path):
    """Polls (the list's "what changed", an active session's tail) are not activity: once
    idle, each one lets go again as it answers."""
    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_IDLE_RELEASE_S=0.3)
    client = app.test_client()
    assert client.get("/sessions").status_code == 200
    assert wait_for(lambda: not held(os.getpid(), db))
    token = None
    for _ in range(8):  # faster than the idle time: never idle, were they activity
        r = client.get("/changes" + (f"?since={token}" if token else ""))
        assert r.status_code in (200, 204)
        token = r.get_json()["token"] if r.status_code == 200 else token
        assert not held(os.getpid(), db)
        time.sleep(0.1)
    assert client.get("/sessions").status_code == 200 and held(os.getpid(), db)


def test_a_connection_in_use_is_never_closed_under_its_user(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_IDLE_RELEASE_S=0.2)
    client = app.test_client()
    assert client.get("/sessions").status_code == 200
    reader = app.extensions["logbook"].reader
    idle = app.extensions["logbook_idle"]
    go_on, inside, counted = threading.Event(), threading.Event(), []

    def background():  # as the rollup's pass or a kept figure's refresh reads
        with app.app_context(), reader.connection(time_limit_s=30) as conn:
            inside.set()
            go_on.wait(10)
            counted.append(conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])

    worker = threading.Thread(target=background)
    worker.start()
    assert inside.wait(10)
    before, looked = idle.releases, idle.looks
    assert wait_for(lambda: idle.looks >= looked + 3)  # it looked, the connection in use
    assert idle.releases == before and held(os.getpid(), db)
    go_on.set()
    worker.join(10)
    assert counted == [sql(db, "SELECT COUNT(*) FROM messages")[0][0]]
    assert wait_for(lambda: not held(os.getpid(), db))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=WAIT_BOUND_S) as r:
        r.read()
        return r.status


def _count(db: Path) -> int:
    return sql(db, "SELECT COUNT(*) FROM sessions")[0][0]


class LogbookProcess:
    """A real Logbook server process on ``db``, letting go after ``idle_s`` without requests."""

    def __init__(self, db: Path, folder: Path, idle_s: float):
        port = _free_port()
        env = {**os.environ, "HERMES_LOGBOOK_IDLE_S": str(idle_s), "PYTHONPATH": str(ROOT)}
        self.log = folder / f"logbook-{port}.err"
        with self.log.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "webui", "--db", str(db), "--port", str(port)]
                + ["--instance", str(folder / "inst")],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        self.url = f"http://127.0.0.1:{port}"
        assert wait_for(lambda: _answers(self.url)), self.log.read_text()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(WAIT_BOUND_S)


@pytest.mark.oracle
@pytest.mark.slow
def test_hermes_022_prunes_beside_an_idle_logbook_and_names_a_busy_one(tmp_path):
    from support.hermes022 import Hermes022

    hermes = Hermes022.migrated(FIXTURES / "hermes-v22.db", tmp_path / "home")
    before = _count(hermes.db)
    prune = ("sessions", "prune", "--older-than", "1d", "--yes")
    # Busy: a page was just answered and the idle time is far off (ten minutes).
    busy = LogbookProcess(hermes.db, tmp_path, idle_s=600)
    try:
        listed = _total(busy.url)
        assert held(busy.proc.pid, hermes.db)
        refused = hermes.cli(*prune)
        said = refused.stdout + refused.stderr
        assert "Refusing `hermes sessions prune`" in said, said
        assert f"PID {busy.proc.pid} (" in said and "webui" in said, said
        assert _count(hermes.db) == before
    finally:
        busy.stop()
    # Idle: after two seconds without a request nothing is held, and the same command runs.
    idle = LogbookProcess(hermes.db, tmp_path, idle_s=2)
    try:
        assert _total(idle.url) == listed
        assert wait_for(lambda: not held(idle.proc.pid, hermes.db)), held(idle.proc.pid, hermes.db)
        pruned = hermes.cli(*prune)
        said = pruned.stdout + pruned.stderr
        assert pruned.returncode == 0 and "Refusing" not in said, said
        after = _count(hermes.db)
        assert "Pruned" in said and after < before, said
        # The next request opens the file again and sees what Hermes did.
        assert _total(idle.url) < listed
    finally:
        idle.stop()


def _total(url: str) -> int:
    listed = "/sessions?format=json&rows=all&archived=include&limit=500"
    with urllib.request.urlopen(url + listed, timeout=WAIT_BOUND_S) as r:
        return len(json.loads(r.read())["sessions"])


def _answers(url: str) -> bool:
    try:
        return _get(url + "/sessions") == 200
    except OSError:
        return False
