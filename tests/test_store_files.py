"""Files Logbook does not control (issue 49, points 2-4), over real files through the app: a
hostile archive or replica copy never holds a page, hundreds of files hold few descriptors,
a store that stalls ends its part of an export, a missing search module is searched by
substring, a replaced file is read again, broken files are read once per change."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from support import FIXTURES, copy_fixture, make_app
from support.stores import blank, put_sessions

RECURSIVE = (
    "WITH RECURSIVE r(version) AS (SELECT 1 UNION ALL SELECT version + 1 FROM r) "
    "SELECT version FROM r"
)


def _hostile(path: Path, what: str) -> Path:
    """A Hermes file whose ``what`` (schema_version, or sessions) is a view that never ends."""
    shutil.copy(FIXTURES / "hermes-v8.db", path)
    conn = sqlite3.connect(path)
    try:
        if what == "schema_version":
            conn.execute("DROP TABLE IF EXISTS schema_version")
            conn.execute(f"CREATE VIEW schema_version AS {RECURSIVE}")
        else:
            conn.execute("ALTER TABLE sessions RENAME TO sessions_kept")
            conn.execute(
                "CREATE VIEW sessions AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 "
                "FROM r) SELECT s.* FROM sessions_kept s, r"
            )
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path


def _within(seconds: float, fn):
    """``fn()``, which must come back within ``seconds`` (else the test fails, not hangs)."""
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("v", fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    return out["v"]


@pytest.mark.parametrize("what", ["schema_version", "sessions"])
def test_an_archive_of_views_that_never_end_holds_no_page(tmp_path, what):
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    _hostile(folder / "hostile.db", what)
    shutil.copy(FIXTURES / "hermes-v11.db", folder / "laptop.db")
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()
    for url in ("/sessions", "/search?q=the", "/stats?period=all", "/people", "/chats", "/stores"):
        r = _within(30, lambda url=url: client.get(url))
        assert r.status_code == 200, url
        assert "archive hostile" in r.get_data(as_text=True), url
    stores = {s["name"]: s for s in client.get("/stores?format=json").get_json()["stores"]}
    assert stores["archive laptop"]["status"] == "ok"
    hostile = stores["archive hostile"]
    assert hostile["status"] in ("stalled", "error")
    assert ("did not answer" in hostile["message"]) or ("view" in hostile["message"])
    # Read once: asked again, the verdict stands without reading the file again.
    assert _within(5, lambda: client.get("/sessions?format=json")).status_code == 200


def test_a_replica_copy_of_views_that_never_end_holds_no_page(tmp_path):
    from webui.db.stores.replicas import Follower

    live = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(live, tmp_path / "inst")
    follower = Follower(app, "laptop", "file:///nowhere", tmp_path / "replicas")
    follower.path.parent.mkdir(parents=True)
    _hostile(follower.path, "schema_version")
    store = _within(30, follower.store)
    assert store.status == "error" and "did not answer" in store.message
    assert store.logbook is None
    assert _within(5, follower.store).status == "error"


def _many(folder: Path, n: int, tmp: Path) -> None:
    """``n`` small archive files, each with one session of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    base = blank(tmp / "base.db", tmp / "blank", schema=11)
    put_sessions(base, [{"id": "one", "source": "cli", "started_at": 1_780_000_000.0}], 2)
    for i in range(n):
        target = folder / f"nightly-{i:04d}.db"
        shutil.copyfile(base, target)
        conn = sqlite3.connect(target)
        conn.execute("UPDATE messages SET session_id = ? WHERE session_id = 'one'", (f"n{i}",))
        conn.execute("UPDATE sessions SET id = ?, started_at = started_at + ?", (f"n{i}", i))
        conn.commit()
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.close()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.slow
def test_a_thousand_archive_files_hold_few_descriptors_and_answer_every_page(tmp_path):
    folder = tmp_path / "archives"
    _many(folder, 1000, tmp_path)
    live = copy_fixture("hermes-v22.db", tmp_path)
    before = _fds()
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)])
    client = app.test_client()
    if hasattr(app.extensions["stores"], "settle"):
        app.extensions["stores"].settle(300)
    for url in (
        "/sessions?format=json",
        "/sessions?format=json&source=cli&limit=200",
        "/search?q=message&format=json",
        "/stats?period=all&format=json",
        "/chats?format=json",
        "/people?format=json",
        "/workspaces?format=json",
        "/stores?format=json",
    ):
        r = client.get(url)
        assert r.status_code == 200, (url, r.get_data(as_text=True)[:200])
    stores = client.get("/stores?format=json").get_json()["stores"]
    assert sum(1 for s in stores if s["status"] == "ok") == 1001
    listed = client.get("/sessions?format=json&rows=all&limit=500").get_json()
    assert len(listed["sessions"]) == 500 and not listed.get("missing_stores")
    assert client.get("/export.jsonl?source=cli").status_code == 200
    # A thousand stores read, yet the process holds a bounded number of descriptors.
    assert _fds() - before < 100, _fds() - before


def test_a_store_that_stalls_ends_its_part_of_an_export(tmp_path, monkeypatch):
    """Every read of its messages takes longer than a store's export reads may (a column
    computed at great cost): its part ends, the others come whole, the note says so, and the
    export's slot is free again."""
    import webui.db.stores.store_set as stores_mod

    monkeypatch.setattr(stores_mod, "STORE_EXPORT_LIMIT_S", 1.0, raising=False)
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    _slow(folder / "slow.db")
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)])
    client = app.test_client()

    def export():
        r = client.get("/export.jsonl")
        return r.status_code, r.get_data(as_text=True)  # read where it was asked

    status, text = _within(60, export)
    assert status == 200
    lines = [line for line in text.splitlines() if line]
    import json

    note = json.loads(lines[-1])["logbook_export_incomplete"]
    assert note["missing"][0].startswith("archive slow:")
    live_ids = {x[0] for x in sqlite3.connect(live).execute("SELECT id FROM sessions")}
    assert live_ids <= {json.loads(line).get("id") for line in lines[:-1]}
    assert app.extensions["logbook_export_slots"].running() == 0


def _slow(path: Path, blob: int = 10_000_000) -> Path:
    """A file whose messages cost time each to read (a value of 2 * ``blob`` characters
    computed per row: about 20 ms for the default)."""
    shutil.copy(FIXTURES / "hermes-v11.db", path)
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            "ALTER TABLE messages ADD COLUMN slowdown AS "
            f"(length(hex(zeroblob({int(blob)})))) VIRTUAL"
        )
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path


@pytest.mark.slow
def test_an_export_stops_working_when_its_client_is_gone(tmp_path, monkeypatch):
    """A client asks for a store's export and goes away before a byte comes: reading the
    store ends within its read limit, the export sees its client gone and gives its slot
    back (before: the worker read on for up to ten minutes, holding the slot)."""
    import webui.db.stores.store_set as stores_mod
    from support.browser import LiveServer

    monkeypatch.setattr(stores_mod, "STORE_EXPORT_LIMIT_S", 3.0, raising=False)
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    _slow(folder / "slow.db", blob=25_000_000)  # a batch of its sessions: minutes
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)], LOGBOOK_EXPORT_SLOTS=2)
    server = LiveServer(app, threads=4)
    try:
        host, port = server.url.removeprefix("http://").split(":")
        s = socket.create_connection((host, int(port)))
        s.sendall(f"GET /export.jsonl?store=archive+slow HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        slots = app.extensions["logbook_export_slots"]
        end = time.monotonic() + 10
        while time.monotonic() < end and not slots.running():
            time.sleep(0.05)
        assert slots.running() == 1
        s.close()  # gone before the first byte
        end = time.monotonic() + 15
        while time.monotonic() < end and slots.running():
            time.sleep(0.1)
        assert slots.running() == 0, "the export kept its slot after its client left"
    finally:
        server.close()


def _without_module(path: Path) -> Path:
    """The file's search index declared with a module this SQLite does not have."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_master SET sql = replace(sql, 'fts5(', 'nosuchfts(') "
            "WHERE name = 'messages_fts'"
        )
        conn.commit()
    finally:
        conn.close()
    return path


@pytest.mark.parametrize("where", ["archive", "live"])
def test_a_store_whose_search_module_is_missing_is_searched_by_substring(tmp_path, where):
    folder = tmp_path / "archives"
    folder.mkdir()
    if where == "archive":
        live = copy_fixture("hermes-v22.db", tmp_path)
        _without_module(shutil.copy(FIXTURES / "hermes-v22-origins.db", folder / "broken.db"))
        word = (
            sqlite3.connect(folder / "broken.db")
            .execute(
                "SELECT content FROM messages WHERE role = 'user' AND length(content) > 20 LIMIT 1"
            )
            .fetchone()[0]
            .split()[-1]
        )
    else:
        live = _without_module(copy_fixture("hermes-v22-origins.db", tmp_path))
        word = (
            sqlite3.connect(live)
            .execute(
                "SELECT content FROM messages WHERE role = 'user' AND length(content) > 20 LIMIT 1"
            )
            .fetchone()[0]
            .split()[-1]
        )
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()
    r = client.get(f"/search?q={word}&format=json")
    assert r.status_code == 200, r.get_data(as_text=True)[:300]
    body = r.get_json()
    assert body["results"], word
    if where == "archive":
        assert any(h["store"] == "archive broken" for h in body["results"])
        facts = {s["name"]: s for s in client.get("/stores?format=json").get_json()["stores"]}
        assert "no such module" in facts["archive broken"]["search_note"]
    assert client.get(f"/search?q={word}").status_code == 200


def test_a_file_replaced_under_logbook_is_read_again(tmp_path):
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    target = folder / "monthly.db"
    shutil.copy(FIXTURES / "hermes-v11.db", target)
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()

    def store():
        return next(
            s
            for s in client.get("/stores?format=json").get_json()["stores"]
            if s["name"] == "archive monthly"
        )

    assert store()["sessions"] == 159
    # A sync tool replaces it with a damaged copy: named as broken at once.
    damaged = tmp_path / "incoming.db"
    damaged.write_bytes((FIXTURES / "hermes-v11.db").read_bytes()[:4096] + b"\x00" * 4096)
    os.replace(damaged, target)
    time.sleep(1.1)  # a file read is looked at again once a second at most
    assert store()["status"] == "error"
    body = client.get("/sessions?format=json").get_json()
    assert any("archive monthly" in m for m in body.get("missing_stores", []))
    # Then with another good file: its sessions, read afresh.
    other = tmp_path / "incoming2.db"
    shutil.copy(FIXTURES / "hermes-v8.db", other)
    os.replace(other, target)
    time.sleep(1.1)
    assert store()["status"] == "ok" and store()["sessions"] == 122
    # Rewritten in place (same inode): read again too.
    with open(target, "r+b") as fh:
        fh.write(b"\x00" * 100)
    time.sleep(1.1)
    assert store()["status"] == "error"


def test_broken_files_are_read_once_per_change_not_on_every_rescan(tmp_path, monkeypatch):
    import webui.db.stores.store_set as stores_mod

    calls = {"n": 0}
    real = stores_mod.check_database

    def counting(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(stores_mod, "check_database", counting)
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    for i in range(300):
        (folder / f"broken-{i:03d}.db").write_bytes(b"SQLite format 3\x00" + bytes([i % 256]) * 84)
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)])
    stores = app.extensions["stores"]
    with app.test_request_context("/"):
        stores.others(**({"wait_s": 60} if "wait_s" in stores.others.__code__.co_varnames else {}))
    first = calls["n"]
    assert first >= 300
    for _ in range(3):
        stores.rescan_now()
        with app.test_request_context("/"):
            stores.others()
    assert calls["n"] == first, "unchanged broken files were read again"
    (folder / "broken-007.db").write_bytes(b"SQLite format 3\x00" + b"\x07" * 200)
    stores.rescan_now()
    with app.test_request_context("/"):
        stores.others(**({"wait_s": 60} if "wait_s" in stores.others.__code__.co_varnames else {}))
    assert calls["n"] == first + 1
    listed = app.test_client().get("/stores?format=json").get_json()["stores"]
    assert sum(1 for s in listed if s["kind"] == "archive" and s["status"] == "error") == 300
