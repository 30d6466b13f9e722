"""Every write transaction stays short (issue 15, point 7): a batch whose statements outrun
their time limit is rolled back whole and tried again smaller, and a COMMIT does not wait for
an fsync. On a real generated state.db with both FTS5 indexes and their triggers."""

from __future__ import annotations

import sqlite3

import pytest

from support import make_app, sql
from support.http import fts_consistent
from webui.db.changes.writer import TooSlow
from webui.hermes.selection import selection_from_args
from webui.web.logbooks import get_logbook

LONG = 3_000


@pytest.fixture(scope="module")
def long_template(tmp_path_factory):
    """Generated once for the module; each test changes a copy of its own."""
    from webui.demo import generate

    path = tmp_path_factory.mktemp("long") / "state.db"
    info = generate(path, sessions=120, seed=5, long_session_messages=LONG)
    return path, info.long_session_id


@pytest.fixture
def long_db(long_template, tmp_path):
    template, sid = long_template
    path = tmp_path / "state.db"
    with sqlite3.connect(template) as src, sqlite3.connect(path) as dst:
        src.backup(dst)  # whole and consistent, in the template's journal mode (WAL)
    src.close()
    dst.close()
    return path, sid


def _per_session(db) -> dict[str, int]:
    return dict(
        sql(
            db,
            "SELECT s.id, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) "
            "FROM sessions s",
        )
    )


def test_a_batch_past_its_time_limit_is_rolled_back_whole(long_db, tmp_path):
    db, sid = long_db
    app = make_app(db, tmp_path / "inst")
    before = _per_session(db)
    with app.app_context():
        actions = get_logbook().actions
        w = actions.w
        # Every write runs inside a unit of the lane (webui.db.changes); outside, it is refused.
        with pytest.raises(RuntimeError, match="outside the lane"):
            w.run(lambda c: c.execute("SELECT 1").fetchone())
        with actions.lane.unit("test"), pytest.raises(TooSlow):
            w.run(
                lambda c: c.execute("DELETE FROM messages WHERE session_id = ?", (sid,)).rowcount,
                give_up_after=0.0,
            )
        assert w.stats["abandoned"] == 1
        # The same batch with no limit goes through: the limit, not the statement, stopped it.
        with actions.lane.unit("test"):
            gone = w.run(
                lambda c: (
                    c.execute(
                        "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE "
                        "session_id = ? LIMIT 10)",
                        (sid,),
                    ).rowcount
                )
            )
    assert gone == 10
    after = _per_session(db)
    assert after == {**before, sid: before[sid] - 10}
    assert fts_consistent(db) == 0


def test_the_writer_commits_without_an_fsync_and_changes_no_stored_setting(long_db, tmp_path):
    db, _ = long_db
    app = make_app(db, tmp_path / "inst")
    with app.app_context():
        conn = get_logbook().actions.w._connect()
        try:
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        finally:
            conn.close()
    # A connection of Hermes's own still gets SQLite's default (FULL) and WAL.
    other = sqlite3.connect(db)
    try:
        assert other.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        other.close()


@pytest.mark.slow  # a prune cut into its smallest batches, each tried several times
def test_a_prune_whose_batches_all_run_too_long_still_removes_exactly_its_sessions(
    long_db, tmp_path, monkeypatch
):
    db, sid = long_db
    monkeypatch.setattr("webui.db.changes.batches.STATEMENTS_BUDGET_S", 0.0)  # every cuttable batch
    app = make_app(db, tmp_path / "inst")
    before = _per_session(db)
    with app.app_context():
        actions = get_logbook().actions
        sel = selection_from_args({"older_than": "0", "min_messages": "20"}, command="prune")
        doomed = set(actions.prune_ids(sel))
        assert sid in doomed and len(doomed) < len(before)
        job = actions.run_prune(sel)
    assert job.error is None
    # Cut to the smallest batches, which run to the end: many rolled back, none lost.
    assert job.abandoned > 0
    assert job.deleted == len(doomed)
    assert job.messages_deleted == sum(before[s] for s in doomed)
    after = _per_session(db)
    assert after == {s: n for s, n in before.items() if s not in doomed}
    assert fts_consistent(db) == 0


def test_a_batch_that_cannot_be_cut_is_tried_under_the_limit_a_few_times_then_runs_to_the_end():
    from webui.db.changes.batches import SMALLEST_TRIES, STATEMENTS_BUDGET_S
    from webui.db.changes.batches import limit as _limit

    assert _limit(True, 0) == _limit(True, 99) == STATEMENTS_BUDGET_S
    assert [_limit(False, n) for n in range(SMALLEST_TRIES + 1)] == [
        *[STATEMENTS_BUDGET_S] * SMALLEST_TRIES,
        None,
    ]
