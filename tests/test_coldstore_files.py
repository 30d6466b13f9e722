"""Cold storage against files it does not control (issue 49: C-1, C-2, C-3, C-4, N-9): the
archive file deleted, replaced, linked to the live file or given a trigger of someone else's,
at any moment of a move; a move, a prune and a bulk delete of the same sessions at once;
session ids that are not plain file names. Every session ends whole in exactly one file, or is
gone only because it was deleted, pruned, or left with a file someone else deleted."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import copy_fixture, make_app, sql
from support.http import post
from support.lane_worker import run
from support.whole import assert_whole_once, sessions
from webui.db.changes import archive_file
from webui.db.changes import lane as lane_module
from webui.db.stores import coldstore as cold
from webui.web.logbooks import get_logbook

MOMENTS = settings(
    max_examples=40 if os.environ.get("CI") else 12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def _home(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    db = copy_fixture("hermes-v22.db", where)
    return db.rename(where / "state.db")


def _month(instance: Path, n: int = 1) -> Path:
    stem = time.strftime("hermes-archive-%Y-%m")
    return instance / "archives" / (f"{stem}.db" if n == 1 else f"{stem}-{n}.db")


def _ended_roots(db: Path) -> list[str]:
    return [
        r[0]
        for r in sql(db, "SELECT id FROM sessions WHERE ended_at IS NOT NULL ORDER BY started_at")
    ]


def _move(app, instance: Path, roots: list[str] | None = None) -> cold.MoveJob:
    with app.app_context():
        lb = get_logbook()
        ids = roots if roots is not None else _ended_roots(lb.opened.path)
        job = cold.new_job(_month(instance), len(ids), False, include_resumable=True)
        return cold.ColdStorage.of(lb).move_out(ids, job)


def _archives(instance: Path) -> list[Path]:
    folder = instance / "archives"
    return sorted(folder.glob("*.db")) if folder.is_dir() else []


# -- C-1: the archive changes at any moment of a move ---------------------------------------


def _plain_hermes_file(live: Path, path: Path) -> None:
    """Another Hermes database with the live file's schema and no rows: what a sync tool might
    put in the archive's place."""
    archive_file.create_like(live, path)


ATTACKS = ("delete", "delete-all", "replace", "trigger", "delete-after-check")


@pytest.mark.slow
@given(moment=st.integers(min_value=1, max_value=80), attack=st.sampled_from(ATTACKS))
@settings(MOMENTS)
def test_an_archive_deleted_replaced_or_rigged_at_any_moment_of_a_move_loses_nothing(
    tmp_path_factory, moment, attack
):
    """C-1 (and C-4 mid-move): at the ``moment``-th durable step of a move of every ended
    conversation, the archive file is deleted (alone, or with its -wal/-shm), replaced by
    another Hermes file (``os.replace``, as a sync tool does), given a trigger that wipes what
    is written, or deleted right after the move checked it was still there. The move stops and
    says so (unless it had already finished), and after the next start every session is whole
    in exactly one file — except the ones that had moved before the attack and left with the
    deleted or replaced file, which is what deleting an archive does."""
    base = tmp_path_factory.mktemp("c1")
    db = _home(base)
    instance = base / "inst"
    app = make_app(db, instance)
    before = sessions(db)
    target = _month(instance)
    state = {"count": 0, "fired": False, "left_with_file": set()}

    def strike() -> None:
        state["fired"] = True
        if target.exists():
            state["left_with_file"] = set(sessions(target)) - set(sessions(db))
        if attack in ("delete", "delete-after-check"):
            target.unlink(missing_ok=True)
        elif attack == "delete-all":
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(str(target) + suffix).unlink(missing_ok=True)
        elif attack == "replace":
            other = target.with_name("incoming.tmp")
            _plain_hermes_file(db, other)
            os.replace(other, target)
        elif attack == "trigger" and target.exists():
            conn = sqlite3.connect(target, timeout=0.1)
            try:
                conn.execute(
                    "CREATE TRIGGER wipe AFTER INSERT ON messages BEGIN "
                    "DELETE FROM messages WHERE id = NEW.id; END"
                )
            except sqlite3.OperationalError:
                state["fired"] = False  # the move holds the file (a read of its copy): not now
            finally:
                conn.close()

    def step(_label: str) -> None:
        state["count"] += 1
        if attack != "delete-after-check" and state["count"] == moment and not state["fired"]:
            strike()

    still_at = archive_file.Identity.still_at
    checks = {"n": 0}

    def checked_then_struck(self, path, wal=None, *, check_wal=True):
        ok = still_at(self, path, wal, check_wal=check_wal)
        checks["n"] += 1
        if ok and checks["n"] == moment // 4 + 1 and not state["fired"]:
            strike()  # right after the check said yes: the window before the delete commits
        return ok

    lane_module.STEP = step
    if attack == "delete-after-check":
        archive_file.Identity.still_at = checked_then_struck
    try:
        job = _move(app, instance)
    finally:
        lane_module.STEP = None
        archive_file.Identity.still_at = still_at
    make_app(db, instance)  # the next start replays whatever was cut
    files = [db, *_archives(instance)]
    assert_whole_once(before, files, gone_ok=state["left_with_file"])
    if state["fired"] and job.error is None:
        # Struck after the last unit ended: the move was complete and said so.
        assert job.conversations_moved + len(job.stayed) == job.total or job.total == 0
    if job.error:
        assert any(
            w in job.error for w in ("replaced", "deleted", "did not read back", "changed")
        ), job.error


# -- C-2: a monthly file that is, or points to, the live file -------------------------------


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_monthly_file_linked_to_the_live_file_is_refused(tmp_path, link):
    """C-2: the month's archive name is a link to the live database (symbolic or hard): the
    move is refused, saying why, and the live file keeps every session."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    app = make_app(db, instance)
    before = sessions(db)
    target = _month(instance)
    target.parent.mkdir(parents=True)
    if link == "symlink":
        target.symlink_to(db)
    else:
        os.link(db, target)
    r = post(
        app.test_client(), "/coldstore", {"older_than": "0", "confirm": "yes", "format": "json"}
    )
    job = r.get_json()
    assert r.status_code == 503 and job["conversations_moved"] == 0
    assert "Nothing was moved" in job["error"]
    assert ("is a link" if link == "symlink" else "hard link") in job["error"]
    assert sessions(db) == before


# -- C-3: a move, a prune and a bulk delete of the same sessions at once ---------------------


@pytest.mark.slow
def test_a_move_a_prune_and_a_bulk_delete_of_the_same_sessions_at_once_leave_every_session_whole(
    tmp_path,
):
    """C-3: a move of every ended conversation, a prune of every ended session (another
    thread) and a bulk delete of a third of them (another process) all at once: every session
    that was not pruned or deleted is whole in exactly one file; nothing is half in one and
    half in the other, and the archive holds no row without its messages."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    app = make_app(db, instance)
    before = sessions(db)
    ended = _ended_roots(db)
    doomed = ended[::3]
    gate = threading.Barrier(3)
    results: dict[str, object] = {}

    def mover():
        gate.wait()
        results["move"] = _move(app, instance)

    def pruner():
        from webui.hermes.selection import Selection

        with app.app_context():
            gate.wait()
            results["prune"] = get_logbook().actions.run_prune(
                Selection(sessions=tuple(ended), archived=None)
            )

    def deleter():
        gate.wait()
        results["delete"] = run(db, instance, {"op": "delete", "ids": doomed})

    threads = [threading.Thread(target=f) for f in (mover, pruner, deleter)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert set(results) == {"move", "prune", "delete"}
    assert results["move"].error is None and results["prune"].error is None
    killed, report = results["delete"]
    assert not killed
    # Gone only if pruned (ended) or deleted (with the delegate runs a delete takes along).
    where = assert_whole_once(
        before, [db, *_archives(instance)], gone_ok=set(ended) | set(report["deleted"])
    )
    moved = [s for s, w in where.items() if w not in (None, db.name)]
    assert moved or results["prune"].deleted, "nothing happened: the race was not run"


# -- C-4: a file of this month's name that cold storage did not make ------------------------


def _plant(live: Path, path: Path) -> bytes:
    """A file of the live file's schema with a trigger of its own that wipes what is written:
    the attack of C-4. Returns its bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    archive_file.create_like(live, path)
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TRIGGER wipe AFTER INSERT ON messages BEGIN "
        "DELETE FROM messages WHERE id = NEW.id; END"
    )
    conn.close()
    return path.read_bytes()


@pytest.mark.slow  # moves every ended conversation to cold storage
def test_a_planted_file_of_this_months_name_is_never_written_into(tmp_path):
    """C-4: a file of this month's name with a trigger that wipes every message written into
    it. Cold storage did not make it: it is passed over (named in the result), the
    conversations go whole into the next name, and the planted file is not changed."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    app = make_app(db, instance)
    before = sessions(db)
    planted = _plant(db, _month(instance))
    r = post(
        app.test_client(), "/coldstore", {"older_than": "0", "confirm": "yes", "format": "json"}
    )
    job = r.get_json()
    assert r.status_code == 200 and job["error"] is None and job["conversations_moved"] > 0, job
    assert job["archive"] == str(_month(instance, 2))
    assert job["archive_names_passed_over"] == [
        f"{_month(instance).name}: not made by Logbook's cold storage"
    ]
    assert _month(instance).read_bytes() == planted
    where = assert_whole_once(before, [db, _month(instance), _month(instance, 2)])
    assert sum(1 for w in where.values() if w == _month(instance, 2).name) == job["sessions_moved"]


@pytest.mark.slow  # two moves to cold storage, a file rebuilt between them
def test_a_trigger_planted_in_cold_storages_own_file_is_found_before_the_next_move(tmp_path):
    """C-4: the file cold storage made gets a trigger of someone else's between two moves: the
    next move finds it (the schema is no longer the live file's) and writes elsewhere."""
    db = _home(tmp_path)
    instance = tmp_path / "inst"
    app = make_app(db, instance)
    before = sessions(db)
    roots = _ended_roots(db)
    first = _move(app, instance, roots[:5])
    assert first.error is None and first.conversations_moved
    conn = sqlite3.connect(_month(instance))
    conn.execute("CREATE TRIGGER wipe AFTER INSERT ON messages BEGIN DELETE FROM messages; END")
    conn.close()
    rigged = _month(instance).read_bytes()
    second = _move(app, instance, roots[5:])
    assert second.error is None and second.conversations_moved, second.as_json()
    assert second.target == _month(instance, 2)
    assert "that the live database does not have" in second.passed_over[0]
    assert _month(instance).read_bytes() == rigged
    assert_whole_once(before, [db, _month(instance), _month(instance, 2)])


# -- N-9: transcripts are named by ids, never globbed ---------------------------------------


def _rename_in(db: Path, old: str, new: str) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("UPDATE messages SET session_id = ? WHERE session_id = ?", (new, old))
        conn.execute("UPDATE sessions SET id = ? WHERE id = ?", (new, old))
    conn.close()


@pytest.mark.parametrize("bad", ["../evil", "ev*l", "..", "a/b"])
def test_session_ids_that_are_not_file_names_move_no_file_either_way(tmp_path, bad):
    """N-9: a session whose id holds ``../`` (or glob characters) moved out and back: its rows
    move, and not one file outside the transcripts named exactly for a plain id does — the
    files an old glob on the id would have taken stay where they are."""
    home = tmp_path / "home"
    db = _home(home)
    instance = tmp_path / "inst"
    sid = sql(
        db,
        "SELECT id FROM sessions s WHERE ended_at IS NOT NULL AND parent_session_id IS NULL "
        "AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id) LIMIT 1",
    )[0][0]
    _rename_in(db, sid, bad)
    sessions_dir = home / "sessions"
    sessions_dir.mkdir()
    decoys = [
        home / "evil.json",
        home / "evil.jsonl",
        sessions_dir / "evXl.json",
        sessions_dir / "request_dump_evXl_1.json",
        tmp_path / "evil.json",
    ]
    for d in decoys:
        d.write_text("{}")
    app = make_app(db, instance)
    before = sessions(db)
    out = _move(app, instance, [bad])
    assert out.error is None and out.conversations_moved == 1 and out.files_moved == 0
    archives = instance / "archives"
    (archives / "sessions").mkdir(exist_ok=True)
    for d in [archives / "evil.json", archives / "evil.jsonl", archives / "sessions" / "ev1l.json"]:
        d.write_text("{}")  # what a glob of "sessions/../evil.json*" (or "ev*l") would reach
    decoys += [archives / "evil.json", archives / "evil.jsonl", archives / "sessions" / "ev1l.json"]
    with app.app_context():
        lb = get_logbook()
        job = cold.new_job(_month(instance), 1, True)
        back = cold.ColdStorage.of(lb).move_back(_month(instance), [bad], job)
    assert back.error is None and back.conversations_moved == 1 and back.files_moved == 0
    assert all(d.exists() for d in decoys)
    assert sorted(p.name for p in sessions_dir.iterdir()) == [
        "evXl.json",
        "request_dump_evXl_1.json",
    ]
    assert_whole_once(before, [db, _month(instance)])
    shutil.rmtree(archives)
