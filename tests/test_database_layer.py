"""The database layer on a live, shared file: read-only, time-limited, never fragile."""

from __future__ import annotations

import hashlib
import sqlite3
import threading

import pytest

from support import copy_fixture, make_app, sql


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_browsing_never_changes_the_database(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path)
    before = digest(db)
    client = make_app(db, tmp_path / "inst").test_client()
    for (sid,) in sql(db, "SELECT id FROM sessions LIMIT 40"):
        assert client.get(f"/sessions/{sid}?rewound=1").status_code == 200
    for q in ("", "?sort=-last_active", "?state=active", "?source=cli&sort=cost"):
        assert client.get(f"/sessions{q}").status_code == 200
    assert digest(db) == before
    assert sql(db, "PRAGMA journal_mode")[0][0] == "wal"


def test_page_connections_are_read_only(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    with app.app_context():
        reader = app.extensions["logbook"].reader
        assert reader.scalar("PRAGMA query_only") == 1
        try:
            reader.rows("DELETE FROM sessions")
        except Exception as exc:  # noqa: BLE001 - any refusal will do, as long as nothing changed
            assert "readonly" in str(exc).lower() or "read-only" in str(exc).lower()
        else:
            raise AssertionError("a page connection could write")
    assert sql(db, "SELECT COUNT(*) FROM sessions")[0][0] == 159


def test_query_time_limit_gives_a_clear_503(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    client = make_app(db, tmp_path / "inst", LOGBOOK_QUERY_TIME_LIMIT=0.0).test_client()
    r = client.get("/sessions?rows=all&sort=-last_active")
    assert r.status_code == 503
    assert r.headers["Retry-After"]
    text = r.get_data(as_text=True)
    assert "took too long" in text and "Traceback" not in text and "SELECT" not in text
    r = client.get("/sessions?rows=all&sort=-last_active&format=json")
    assert r.status_code == 503 and "took too long" in r.get_json()["message"]


@pytest.mark.slow
def test_locked_database_gives_503_with_retry_after(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    client = app.test_client()
    assert client.get("/sessions").status_code == 200  # warm: pool holds connections
    # Another process takes the database for itself (exclusive locking mode, as some tools do):
    # readers get "database is locked" until it lets go.
    with app.app_context():
        from webui.web.logbooks import get_logbook

        # The pool and the data_version watcher let go, so the other process can take the lock.
        get_logbook().reader.let_go()
    holder = sqlite3.connect(db, timeout=0)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE state_meta SET value = value")
    try:
        r = client.get("/sessions")
        assert r.status_code == 503
        assert r.headers["Retry-After"]
        assert "busy" in r.get_data(as_text=True).lower()
    finally:
        holder.rollback()
        holder.close()
    assert client.get("/sessions").status_code == 200


def test_reads_do_not_block_a_writer(tmp_path):
    """While pages are being served, a Hermes-like writer (1 s busy timeout, BEGIN IMMEDIATE)
    keeps writing without a single failure."""
    db = copy_fixture("hermes-v11.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    errors: list[Exception] = []
    stop = threading.Event()

    def writer():
        conn = sqlite3.connect(db, timeout=1.0, isolation_level=None)
        sid = conn.execute("SELECT id FROM sessions LIMIT 1").fetchone()[0]
        n = 0
        while not stop.is_set() and n < 200:
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT INTO messages (session_id, role, content, timestamp) "
                    "VALUES (?, 'user', 'writer probe', 1.0e9 + ?)",
                    (sid, n),
                )
                conn.execute("COMMIT")
                n += 1
            except sqlite3.Error as exc:
                errors.append(exc)
                break
        conn.close()

    t = threading.Thread(target=writer)
    t.start()
    for _ in range(15):
        assert client.get("/sessions?rows=all&sort=-last_active").status_code == 200
    stop.set()
    t.join()
    assert not errors
    assert sql(db, "SELECT COUNT(*) FROM messages WHERE content = 'writer probe'")[0][0] > 0


def test_minimal_schema_missing_columns_render_as_absent(tmp_path):
    """A Hermes-shaped file with far fewer columns: pages work, absent values show as —."""
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    conn.executescript("""
        PRAGMA journal_mode = WAL;
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL,
                               parent_session_id TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
                               role TEXT NOT NULL, content TEXT, timestamp REAL NOT NULL);
        INSERT INTO sessions VALUES ('s1', 'cli', 1700000000, NULL), ('s2', 'telegram', 1700000100, 's1');
        INSERT INTO messages (session_id, role, content, timestamp) VALUES
            ('s1', 'user', 'hello there', 1700000001), ('s1', 'assistant', '**hi**', 1700000002);
    """)
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    for sort in ("started", "-last_active", "messages", "-tokens", "cost"):
        r = client.get(f"/sessions?rows=all&format=json&sort={sort}")
        assert r.status_code == 200
        assert {s["id"] for s in r.get_json()["sessions"]} == {"s1", "s2"}
    body = client.get("/sessions?rows=all&format=json").get_json()
    s1 = next(s for s in body["sessions"] if s["id"] == "s1")
    assert s1["title"] is None and s1["preview"] == "hello there" and s1["model"] is None
    r = client.get("/sessions/s1")
    assert r.status_code == 200 and b"<strong>hi</strong>" in r.data
    assert client.get("/sessions?rows=all&state=active&model=x").status_code == 200


def test_newer_schema_extra_columns_are_shown(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    sid = sql(
        db, "SELECT id FROM sessions WHERE cwd IS NOT NULL OR git_branch IS NOT NULL LIMIT 1"
    ) or sql(db, "SELECT id FROM sessions LIMIT 1")
    html = client.get(f"/sessions/{sid[0][0]}").get_data(as_text=True)
    assert "More metadata" in html
    for col in ("session_key", "rewind_count", "archived", "profile_name"):
        assert f">{col}<" in html
