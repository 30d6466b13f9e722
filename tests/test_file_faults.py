"""The database file misbehaving under a running Logbook (issue 37 point 8, issue 36 point 5):
deleted, replaced by another file, or on a full disk. Every page says what is wrong with which
file, under a title that names it; none answers from a file that is gone; no change is half
written."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support import copy_fixture, make_app, sql

PAGES = [
    "/sessions",
    "/sessions/{sid}",
    "/stats?period=90",
    "/stats",
    "/search?q=docker",
    "/prune?older_than=0",
    "/chats",
    "/export.jsonl",
]


@pytest.fixture
def served(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    client = app.test_client()
    sid = sql(db, "SELECT id FROM sessions WHERE message_count > 2 LIMIT 1")[0][0]
    for url in PAGES:  # everything warm: kept figures, pooled connections, the rollup
        client.get(url.replace("{sid}", sid)).get_data()
    return db, app, client, sid


def test_a_deleted_file_is_one_clear_page_everywhere(served):
    db, _app, client, sid = served
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    for url in PAGES:
        url = url.replace("{sid}", sid)
        r = client.get(url)
        page = r.get_data(as_text=True)
        assert r.status_code == 503, (url, r.status_code)
        assert "<title>Database file missing" in page, url
        assert "is gone" in page and str(db) in page
        assert 'href="/sessions">Back' not in page, "a link that meets the same error"
        assert f'href="{url}"' in page.replace("&amp;", "&")  # check again
        body = client.get(url + ("&" if "?" in url else "?") + "format=json").get_json()
        assert body["error"] == "Database file missing", url
    assert not db.exists(), "nothing recreated the file"


def test_a_replaced_file_is_read_at_once_not_described_from_memory(served, tmp_path):
    db, _app, client, _sid = served
    before = client.get("/prune?older_than=0&format=json").get_json()["count"]
    other = copy_fixture("hermes-v11.db", tmp_path / "other")  # another history, same kind
    conn = sqlite3.connect(other)
    have = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    conn.close()
    if have != {r[1] for r in sql(db, "PRAGMA table_info(sessions)")}:
        # Another schema needs a restart: said so, never a 500.
        os.replace(other, db)
        r = client.get("/prune?older_than=0&format=json")
        assert r.status_code == 503 and "another schema" in r.get_json()["message"]
        return
    os.replace(other, db)
    after = client.get("/prune?older_than=0&format=json").get_json()["count"]
    assert after == sql(db, "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL")[0][0]
    assert after != before


def test_a_replaced_file_of_the_same_schema_is_read_at_once(served, tmp_path):
    db, _app, client, sid = served
    before = client.get("/prune?older_than=0&format=json").get_json()["count"]
    other = tmp_path / "other.db"
    shutil.copyfile(db, other)
    conn = sqlite3.connect(other)
    with conn:  # the restored backup lacks a few sessions
        gone = [
            r[0] for r in conn.execute("SELECT id FROM sessions WHERE ended_at IS NOT NULL LIMIT 5")
        ]
        for g in gone:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (g,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (g,))
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    os.replace(other, db)
    body = client.get("/prune?older_than=0&format=json").get_json()
    assert body["count"] == before - 5
    assert not set(gone) & set(body["sessions"])
    stats = client.get("/stats?period=all&format=json").get_json()
    assert stats["totals"]["sessions"] == sql(db, "SELECT COUNT(*) FROM sessions")[0][0]


CHILD = """
import json, os, resource, signal, sys
sys.path.insert(0, {tests!r})
from support import make_app
from support.http import post
app = make_app({db!r}, {inst!r})
client = app.test_client()
client.get("/sessions")
client.get("/sessions/{sid}")
if not {rlimit!r}:  # the disk fills up while Logbook runs
    fd = os.open({filler!r}, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
else:  # no small file system to fill: a file size limit instead
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails (EFBIG), no kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
out = {{}}
for what, url, form in [
    ("rename", "/sessions/{sid}/title", {{"title": "renamed on a full disk"}}),
    ("delete", "/sessions/{sid}/delete", {{"confirm": "yes"}}),
    ("prune", "/prune", {{"older_than": "0", "confirm": "yes"}}),
]:
    r = post(client, url + "?format=json", form, headers={{"Accept": "application/json"}})
    out[what] = [r.status_code, r.get_data(as_text=True)[:400]]
print(json.dumps(out))
"""


@pytest.fixture
def full_disk(tmp_path):
    """A copy of a real database on a file system with no room left: a small tmpfs filled up
    where this machine lets the tests mount one, else (rlimit=True) a file size limit."""
    src = copy_fixture("hermes-v22.db", tmp_path / "src")
    conn = sqlite3.connect(src)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # an empty WAL: every write must grow it
    conn.close()
    mount = tmp_path / "full"
    mount.mkdir()
    size = src.stat().st_size + 256 * 1024
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
            capture_output=True,
        ).returncode
        == 0
    )
    db = mount / "state.db"
    shutil.copyfile(src, db)
    facts = (
        *sql(src, "SELECT id, title FROM sessions WHERE ended_at IS NOT NULL LIMIT 1")[0],
        sql(src, "SELECT COUNT(*) FROM sessions")[0][0],
    )
    yield db, not mounted, facts
    if mounted:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_changes_nothing_and_says_so(full_disk, tmp_path):
    db, rlimit, (sid, title, n) = full_disk
    script = CHILD.format(
        tests=str(Path(__file__).parent),
        db=str(db),
        inst=str(tmp_path / "inst"),
        sid=sid,
        rlimit=rlimit,
        filler=str(db.parent / "filler"),
    )
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for what in ("rename", "delete", "prune"):
        status, body = out[what]
        assert status in (503, 507), (what, status, body)
        assert "unexpected" not in body
        if not rlimit:  # a real full file system is named as such
            assert status == 507 or what == "prune", (what, status, body)
            assert "full" in body, body
        assert "nothing was changed" in body or "removing 0" in body or "removed 0" in body, body
    after = tmp_path / "after"  # read where there is room (a reader needs its -shm file)
    after.mkdir()
    for suffix in ("", "-wal"):
        if Path(str(db) + suffix).exists():
            shutil.copyfile(str(db) + suffix, str(after / "state.db") + suffix)
    assert sql(after / "state.db", "SELECT title FROM sessions WHERE id = ?", (sid,)) == [(title,)]
    assert sql(after / "state.db", "SELECT COUNT(*) FROM sessions")[0][0] == n


def test_people_without_end_times_and_a_rename_without_a_title(tmp_path):
    from support.http import post

    db = copy_fixture("hermes-v22-origins.db", tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET ended_at = NULL")
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    assert client.get("/people").status_code == 200
    assert client.get("/people?format=json").status_code == 200
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    r = post(client, f"/sessions/{sid}/title", {})
    assert r.status_code < 500, r.get_data(as_text=True)[:300]
