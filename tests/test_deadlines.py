"""No request can hold the server (issue 15): one deadline shared by a request's queries, a
watchdog that interrupts what the progress handler cannot, and a cap on concurrent searches.
Real SQLite files, real queries."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from support import copy_fixture, make_app
from webui.db import QueryTimeout
from webui.db import deadline as request_deadline
from webui.db.deadline import Watchdog

# A statement that runs for as long as it is allowed to (a long recursive count).
SPIN = (
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
    "SELECT COUNT(*) FROM (SELECT n FROM c LIMIT 400000000)"
)


@pytest.fixture
def app(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    return make_app(db, tmp_path / "inst", LOGBOOK_QUERY_TIME_LIMIT=5.0)


def test_queries_share_one_request_deadline(tmp_path):
    # A query limit of ten minutes: only the request's deadline can stop SPIN (a minute of
    # counting, or more), so its QueryTimeout says the deadline was applied, on any machine.
    db = copy_fixture("hermes-v11.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_QUERY_TIME_LIMIT=600.0)
    reader = app.extensions["logbook"].reader
    with app.test_request_context("/"):
        t0 = time.monotonic()
        request_deadline.begin(0.6)
        try:
            with pytest.raises(QueryTimeout):
                reader.scalar(SPIN)  # stopped at the request's deadline
            first = time.monotonic() - t0
            with pytest.raises(QueryTimeout):
                reader.scalar("SELECT COUNT(*) FROM sessions")  # nothing left for it
        finally:
            request_deadline.end()
    assert first >= 0.6, first  # never before it (how soon after: benchmarks/)
    # without a request deadline the query limit alone applies
    with app.app_context():
        assert reader.scalar("SELECT COUNT(*) FROM sessions") > 0


def test_explicit_budgets_are_not_cut_by_the_request_deadline(app):
    reader = app.extensions["logbook"].reader
    with app.app_context():
        request_deadline.begin(0.0)
        try:
            assert reader.scalar("SELECT COUNT(*) FROM messages", time_limit_s=5) > 0
        finally:
            request_deadline.end()


def test_the_watchdog_interrupts_a_statement_the_progress_handler_cannot(tmp_path):
    """A Python function inside SQL blocks the VM: only interrupt() ends the statement."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.create_function("slow", 1, lambda x: time.sleep(0.05) or x)
    dog = Watchdog()
    t0 = time.monotonic()
    with (
        pytest.raises(sqlite3.OperationalError, match="interrupted"),
        dog.watch(conn, time.monotonic() + 0.3),
    ):
        conn.execute(
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c "
            "LIMIT 1000) SELECT SUM(slow(n)) FROM c"
        ).fetchone()
    # Interrupted (1,000 rows of 50 ms would take 50 s), never before its deadline.
    assert time.monotonic() - t0 >= 0.3
    # A statement that ends in time is never interrupted later. (The sleep can only make
    # this pass without proving much, if the watchdog ran late, never fail it.)
    with dog.watch(conn, time.monotonic() + 0.5):
        assert conn.execute("SELECT 1").fetchone() == (1,)
    time.sleep(0.6)
    assert conn.execute("SELECT 2").fetchone() == (2,)


def test_searches_beyond_the_cap_are_told_to_wait_while_cheap_pages_answer(app):
    client = app.test_client()
    slots = app.extensions["logbook_search_slots"]
    held = 0
    while slots.acquire(blocking=False):  # every search slot busy
        held += 1
    try:
        assert held >= 1
        # a search that may read the whole index waits for a slot; a simple one does not
        r = client.get("/search?q=docker+OR+compose&format=json")
        assert r.status_code == 503 and r.headers["Retry-After"]
        assert "other searches" in r.get_json()["message"]
        assert client.get("/search?q=docker&format=json").status_code == 200
        assert client.get("/sessions?format=json").status_code == 200
    finally:
        for _ in range(held):
            slots.release()
    assert client.get("/search?q=docker&format=json").status_code == 200


def test_a_timeout_is_never_called_invalid_syntax(app):
    client = app.test_client()
    app.extensions["logbook"].reader.time_limit_s = 0.0
    r = client.get("/search", query_string={"q": "docker*", "format": "json"})
    assert r.status_code == 503 and "took too long" in r.get_json()["message"]
    assert "syntax" not in r.get_json()["message"]


def test_threads_do_not_inherit_a_request_deadline(app):
    seen = []
    request_deadline.begin(0.0)
    try:
        t = threading.Thread(target=lambda: seen.append(request_deadline.remaining()))
        t.start()
        t.join()
    finally:
        request_deadline.end()
    assert seen == [None]


def test_a_streamed_export_outlives_the_request_deadline(tmp_path):
    """The deadline covers the view; the export's body streams on with its own budgets."""
    db = copy_fixture("hermes-v11.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_REQUEST_DEADLINE=0.3)
    client = app.test_client()
    r = client.get("/export.jsonl", buffered=False)
    body = iter(r.response)
    lines = next(body).count(b"\n")
    time.sleep(0.35)  # a slow reader: the deadline passes before the rest is read
    lines += sum(chunk.count(b"\n") for chunk in body)
    r.close()
    import sqlite3 as _sqlite3

    conn = _sqlite3.connect(db)
    total = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    conn.close()
    assert lines == total
