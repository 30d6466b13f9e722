"""Logbook prunes thousands of sessions while a Hermes-like writer appends 50 messages a
second in another process: the writer never fails and nothing is lost or left half-done."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import make_app, sql
from support.http import fts_consistent, post

pytestmark = pytest.mark.slow

WRITER = Path(__file__).parent / "support" / "hermes_like_writer.py"


def test_prune_thousands_while_the_gateway_writes(tmp_path):
    from webui.demo import generate

    db = tmp_path / "state.db"
    generate(db, sessions=2600, seed=5, messages_per_session=10)
    client = make_app(db, tmp_path / "inst").test_client()
    days = 30
    cutoff = time.time() - days * 86400
    expected = sql(
        db, "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND started_at < ?", (cutoff,)
    )[0][0]
    assert expected >= 2000
    sessions_before = sql(db, "SELECT COUNT(*) FROM sessions")[0][0]

    writer = subprocess.Popen(
        [sys.executable, str(WRITER), str(db), "8", "50", "probe"],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)
    r = post(client, "/prune", {"older_than": days, "cutoff": repr(cutoff), "confirm": "yes"})
    job = r.get_json()  # a script's prune answers when it is done
    out, _ = writer.communicate(timeout=60)
    stats = json.loads(out)

    assert stats["failures"] == 0, stats["errors"][:3]
    assert stats["written"] >= 300
    assert (
        sql(db, "SELECT COUNT(*) FROM messages WHERE content LIKE 'probe message %'")[0][0]
        == stats["written"]
    )
    assert (
        sql(db, "SELECT message_count FROM sessions WHERE id = 'writer_probe'")[0][0]
        == stats["written"]
    )
    assert job["error"] is None and job["deleted"] == expected
    assert sql(db, "SELECT COUNT(*) FROM sessions")[0][0] == sessions_before + 1 - expected
    assert (
        sql(
            db,
            "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND started_at < ?",
            (cutoff,),
        )[0][0]
        == 0
    )
    assert fts_consistent(db) == 0
    # the longest single write transaction, for the record (the gateway waits up to ~16 s)
    print(
        f"\nprune: {job['deleted']} sessions, {job['messages_deleted']} messages, "
        f"longest transaction {job['longest_transaction_s'] * 1000:.1f} ms; "
        f"writer: {stats['written']} written, {stats['retries']} retries, "
        f"max wait {stats['max_wait_s'] * 1000:.1f} ms"
    )
    assert job["longest_transaction_s"] < 1.0
