"""What the tests of a ledger that follows state.db (the stats rollup, the digest:
webui.db.following) share: every kind of change applied to a copy of a real Hermes database,
after each the ledger that followed along compared with one built from scratch; a session
deleted whole as Hermes deletes it; and a background pass watched by pages while it runs."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from support import make_app, sql


def delete_session(conn: sqlite3.Connection, sid: str) -> None:
    """A session removed whole, as Hermes's delete_session does (its children unlinked)."""
    conn.execute("DELETE FROM messages WHERE session_id = ?", (sid,))
    conn.execute("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?", (sid,))
    conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))


def ledger_rows(
    connect: Callable[[], sqlite3.Connection],
    db: Path,
    statements: dict[str, str],
    per_session: set[str],
) -> dict:
    """What a ledger holds: each statement's rows (a SELECT over its file), sorted; in the
    ``per_session`` ones only the rows of sessions the file still has (their first column);
    and what it counted."""
    live = {r[0] for r in sql(db, "SELECT id FROM sessions")}
    conn = connect()
    try:
        out: dict[str, Any] = {}
        for name, statement in statements.items():
            rows = conn.execute(statement).fetchall()
            if name in per_session:
                rows = [r for r in rows if r[0] in live]
            out[name] = sorted(rows, key=repr)
        out["counted"] = conn.execute(
            "SELECT value FROM main.meta WHERE key = 'counted'"
        ).fetchone()[0]
    finally:
        conn.close()
    return out


def stopped_after_one_batch(
    new: Callable[[Any, Path], Any], reader: Any, path: Path, db: Path
) -> int:
    """A first pass (``new(reader, path)``) stopped after one batch of 500 ids, then dropped as
    by a restart; checked to have read part of the file. Returns the file's newest id."""
    first = new(reader, path)
    first._batch = 500
    stopped = first.refresh(0.0).seen_max_id
    top = sql(db, "SELECT MAX(id) FROM messages")[0][0]
    assert 0 < stopped < top
    assert first.coverage().seen_max_id == stopped  # kept in its file
    return top


def refresh_to_the_end(followed: Any, tries: int) -> None:
    """Refreshed (a budget of 5 s each time) until complete, ``tries`` times at most."""
    for _ in range(tries):
        if followed.refresh(5.0).complete:
            return
    raise AssertionError(f"{type(followed).__name__} never completed")


def follow_every_change(
    db: Path,
    tmp_path: Path,
    new: Callable[[Any, Path], Any],
    complete: Callable[[Any], None],
    dump: Callable[[Any, Path], dict],
    changes: Sequence[Callable[[sqlite3.Connection], None]],
    truth: str,
) -> None:
    """``new(reader, path)`` makes a ledger; after each change written to ``db`` the one that
    followed along holds what a fresh one does (``dump``), and has counted what ``truth`` (a
    COUNT over the file) says."""
    from webui.web.logbooks import get_logbook

    app = make_app(db, tmp_path / "inst")
    with app.app_context():
        reader = get_logbook().reader
        followed = new(reader, tmp_path / "followed.sqlite")
        complete(followed)
        for n, change in enumerate(changes):
            conn = sqlite3.connect(db)
            with conn:
                change(conn)
            conn.close()
            complete(followed)
            fresh = new(reader, tmp_path / f"fresh-{n}.sqlite")
            complete(fresh)
            assert dump(followed, db) == dump(fresh, db), change.__name__
            assert int(dump(followed, db)["counted"]) == sql(db, truth)[0][0], change.__name__


def app_reading_within(db: Path, tmp_path: Path, limit: float, too_long: str) -> tuple:
    """(app, client, logbook) over ``db`` whose ledgers read state.db within ``limit`` seconds
    a read (statistics never reused); the premise checked: ``too_long`` does not fit."""
    import pytest

    from webui.db.errors import QueryTimeout
    from webui.web.logbooks import get_logbook

    app = make_app(db, tmp_path / "inst", LOGBOOK_ROLLUP_READ_LIMIT=limit, LOGBOOK_STATS_REUSE_S=0)
    with app.app_context():
        lb = get_logbook()
        with pytest.raises(QueryTimeout):
            lb.reader.scalar(too_long, time_limit_s=limit)
    return app, app.test_client(), lb


def watch_while(
    app: Any, work: Callable[[], Any], look: Callable[[], Iterable], bound_s: float
) -> list:
    """Run ``work`` in a thread (in ``app``'s context) and, until it is over, ``look`` (a
    page's view of it) every 50 ms; returns all that was seen, in order."""

    def run() -> None:
        with app.app_context():
            work()

    worker = threading.Thread(target=run)
    worker.start()
    seen: list = []
    while worker.is_alive():
        seen.extend(look())
        time.sleep(0.05)
    worker.join(timeout=bound_s)
    return seen


def moved_forward(seen: list[tuple[bool, int]]) -> None:
    """Pages saw the pass partial (complete False) at least once, and always further on."""
    partial = [upto for complete, upto in seen if not complete]
    assert partial, "the pass was over before a page saw it partial"
    assert partial == sorted(partial), "the pages saw it move forward"
