"""Killed at any moment (kill -9), a prune, a bulk delete or an archive leaves no conversation
half done: after the next start every session either has all the messages it had or is gone
with all of them, its transcript files follow its row, and an archived conversation is
archived whole. A kill is a race, so each action is killed many times at spread-out moments.

The prune's batches are many short sessions whose messages together need several transactions
while none alone is long: the case that once went unjournaled (issue 37, point 5)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from support import make_app, sql
from support.http import fts_consistent

pytestmark = pytest.mark.slow
TESTS = Path(__file__).parent
RUNS = 6  # kills per action, at spread-out moments


@pytest.fixture(scope="module")
def many_db(tmp_path_factory):
    from webui.demo import generate

    path = tmp_path_factory.mktemp("many") / "state.db"
    generate(path, sessions=260, seed=5)
    return path


def _copy(src: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / "state.db"
    a, b = sqlite3.connect(src), sqlite3.connect(target)
    a.backup(b)
    a.close(), b.close()
    return target


def _state(db: Path) -> dict[str, tuple[int, int]]:
    """session id -> (messages, archived)."""
    conn = sqlite3.connect(db)
    try:
        cols = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
        archived = "COALESCE(archived, 0)" if "archived" in cols else "0"
        rows = conn.execute(
            f"SELECT s.id, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id), {archived} "
            "FROM sessions s"
        ).fetchall()
        orphans = conn.execute(
            "SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)"
        ).fetchone()[0]
    finally:
        conn.close()
    assert orphans == 0, "messages left without their session"
    return {sid: (n, a) for sid, n, a in rows}


def _kill_at(db: Path, instance: Path, action: str, delay: float | None) -> bool | float:
    """Run ``action`` in a child process and kill -9 it ``delay`` seconds after it begins.
    True when it was still running (cut), False when it had finished. ``delay`` None: let it
    finish and return how long it took."""
    child = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from support import make_app
        from webui.web.logbooks import get_logbook
        from webui.hermes.selection import selection_from_args
        app = make_app({str(db)!r}, {str(instance)!r})
        with app.app_context():
            actions = get_logbook().actions
            print("ready", flush=True)
            {action}
        print("finished", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    if delay is None:
        began = time.monotonic()
        assert proc.stdout.readline().strip() == "finished"
        took = time.monotonic() - began
        proc.wait(timeout=30)
        proc.stdout.close()
        return took
    try:
        proc.wait(timeout=delay)  # ended (or killed itself) before the moment: not cut
        cut = False
    except subprocess.TimeoutExpired:
        cut = True
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    return cut


def _whole(before: dict, after: dict) -> None:
    for sid, (n, _) in before.items():
        if sid in after:
            assert after[sid][0] == n, f"{sid}: {after[sid][0]} of its {n} messages are left"


ACTIONS = {
    "prune": "actions.run_prune(selection_from_args({'older_than': '0'}, command='prune'))",
    "bulk delete": (
        "ids = [r['id'] for r in actions.r.rows('SELECT id FROM sessions WHERE ended_at IS NOT "
        "NULL ORDER BY started_at LIMIT 120')]\n"
        "            [actions.delete(i) for i in ids]"
    ),
}


@pytest.mark.parametrize("name", list(ACTIONS))
def test_a_kill_anywhere_leaves_every_session_whole(many_db, tmp_path, name):
    action = ACTIONS[name]
    rnd = random.Random(name)
    # How long the whole action takes here, uncut: the kills are spread over that time.
    took = _kill_at(_copy(many_db, tmp_path / "whole"), tmp_path / "inst-whole", action, None)
    cuts = 0
    for run in range(RUNS):
        db = _copy(many_db, tmp_path / f"run{run}")
        instance = tmp_path / f"inst{run}"
        before = _state(db)
        slot = 0.9 * took / RUNS  # one moment in each slot of its length, random within it
        cuts += _kill_at(db, instance, action, slot * run + rnd.uniform(0, slot))
        make_app(db, instance)  # the next start finishes what the journal holds
        after = _state(db)
        _whole(before, after)
        assert not list(instance.glob("changes-*/*.jsonl")), "the journal is emptied"
        fts_consistent(db)
    assert cuts >= RUNS // 2, f"only {cuts} of {RUNS} runs were cut mid-way: move the moments"


def test_a_kill_during_a_prune_of_a_schema_22_file_removes_rows_and_transcripts_together(
    tmp_path,
):
    """On a schema-22 file (Hermes 0.19 removes transcripts on prune), a kill at any moment
    leaves no transcript file of a removed session, and every file of a kept one."""
    from support import copy_fixture

    rnd = random.Random(22)
    for run in range(RUNS):
        home = tmp_path / f"home{run}"
        db = copy_fixture("hermes-v22.db", home)
        db = db.rename(home / "state.db")
        folder = home / "sessions"
        folder.mkdir()
        ids = [r[0] for r in sql(db, "SELECT id FROM sessions")]
        for sid in ids:
            for name in (f"{sid}.json", f"{sid}.jsonl", f"request_dump_{sid}_1.json"):
                (folder / name).write_text("{}")
        before = _state(db)
        instance = tmp_path / f"inst{run}"
        _kill_at(
            db,
            instance,
            "actions.run_prune(selection_from_args({'older_than': '0'}, command='prune'))",
            rnd.uniform(0.0, 0.6),
        )
        make_app(db, instance)
        after = _state(db)
        _whole(before, after)
        files = {p.name for p in folder.iterdir()}
        for sid in ids:
            mine = {f"{sid}.json", f"{sid}.jsonl", f"request_dump_{sid}_1.json"}
            if sid in after:
                assert mine <= files, f"a kept session lost its files: {sid}"
            else:
                assert not mine & files, f"a removed session's files stayed: {sid}"


def test_a_kill_during_an_archive_leaves_each_conversation_archived_whole(tmp_path):
    """Archive takes a conversation (its compression chain) in one transaction: killed at any
    moment, no chain is left half archived."""
    from support import copy_fixture

    rnd = random.Random(7)
    for run in range(RUNS):
        db = copy_fixture("hermes-v22-extended.db", tmp_path / f"db{run}")
        _kill_at(
            db,
            tmp_path / f"inst{run}",
            "ids = [r['id'] for r in actions.r.rows('SELECT id FROM sessions WHERE ended_at IS "
            "NOT NULL ORDER BY started_at')]\n"
            "            actions.set_archived(ids, True)",
            rnd.uniform(0.0, 0.4),
        )
        pairs = sql(
            db,
            "SELECT p.archived, c.archived FROM sessions c JOIN sessions p ON p.id = "
            "c.parent_session_id WHERE p.end_reason = 'compression' AND c.model_config NOT LIKE "
            "'%_branched_from%'",
        )
        assert pairs and all(a == b for a, b in pairs), pairs


COLD = (
    "from pathlib import Path\n"
    "            from webui.db.stores import coldstore as cold\n"
    "            from webui.web.logbooks import get_logbook as lb_\n"
    "            lb = lb_()\n"
    "            ids = actions.prune_ids(selection_from_args({'older_than': '0'}, command='prune'))\n"
    "            groups = cold.ColdStorage.of(lb).conversations_of(ids)\n"
    "            job = cold.new_job(Path(app.instance_path) / 'archives' / 'hermes-archive-2026-01.db', len(groups), False)\n"
    "            cold.ColdStorage.of(lb).move_out([g[0] for g in groups], job)\n"
    "            assert job.error is None, job.error"
)


def test_a_kill_during_a_move_to_cold_storage_loses_nothing(many_db, tmp_path):
    """Killed at any moment, a move leaves every session whole in the live file or whole in
    the archive (or, copied and not yet removed, whole in both); the next move finishes it."""
    rnd = random.Random("cold")
    took = _kill_at(_copy(many_db, tmp_path / "whole"), tmp_path / "inst-whole", COLD, None)
    cuts = 0
    for run in range(RUNS):
        db = _copy(many_db, tmp_path / f"run{run}")
        instance = tmp_path / f"inst{run}"
        archive = instance / "archives" / "hermes-archive-2026-01.db"
        before = _state(db)
        slot = 0.9 * took / RUNS
        cuts += _kill_at(db, instance, COLD, slot * run + rnd.uniform(0, slot))
        make_app(db, instance)  # the next start finishes what the journal holds
        live = _state(db)
        _whole(before, live)
        kept = _state(archive) if archive.exists() else {}
        for sid, (n, _) in before.items():
            assert sid in live or kept.get(sid, (None,))[0] == n, f"{sid} is lost or partial"
        # The next move completes it: every ended conversation in the archive, whole.
        _kill_at(db, instance, COLD, None)
        live, kept = _state(db), _state(archive)
        for sid, (n, _) in before.items():
            assert (live.get(sid) or kept.get(sid))[0] == n
        assert all(kept[sid][0] == before[sid][0] for sid in kept)
        fts_consistent(db)
        fts_consistent(archive)
    assert cuts >= RUNS // 2, f"only {cuts} of {RUNS} runs were cut mid-way: move the moments"


COLD_BACK = (
    "from pathlib import Path\n"
    "            import sqlite3\n"
    "            from webui.db.stores import coldstore as cold\n"
    "            from webui.web.logbooks import get_logbook as lb_\n"
    "            lb = lb_()\n"
    "            archive = Path(app.instance_path) / 'archives' / 'hermes-archive-2026-01.db'\n"
    "            ids = [r[0] for r in sqlite3.connect(archive).execute('SELECT id FROM sessions')]\n"
    "            groups = cold.archive_conversations(archive, ids)\n"
    "            job = cold.new_job(archive, len(groups), True)\n"
    "            cold.ColdStorage.of(lb).move_back(archive, [g[0] for g in groups], job)\n"
    "            assert job.error is None, job.error"
)


def test_a_kill_while_moving_back_from_cold_storage_loses_nothing(many_db, tmp_path):
    """The way back: killed at any moment, every conversation is whole in the archive or
    whole in the live file (or in both, copied and not yet removed); the next move back
    finishes it and the archive is left empty."""
    rnd = random.Random("cold-back")
    moved = _copy(many_db, tmp_path / "moved")
    _kill_at(moved, tmp_path / "inst-moved", COLD, None)  # everything ended goes out first
    archive_of = lambda inst: inst / "archives" / "hermes-archive-2026-01.db"  # noqa: E731
    whole_archive = _state(archive_of(tmp_path / "inst-moved"))
    assert whole_archive, "the move out left nothing to bring back"
    took = _kill_at(moved, tmp_path / "inst-moved", COLD_BACK, None)
    cuts = 0
    for run in range(RUNS):
        db = _copy(many_db, tmp_path / f"run{run}")
        instance = tmp_path / f"inst{run}"
        _kill_at(db, instance, COLD, None)
        archive = archive_of(instance)
        live_before, kept_before = _state(db), _state(archive)
        slot = 0.9 * took / RUNS
        cuts += _kill_at(db, instance, COLD_BACK, slot * run + rnd.uniform(0, slot))
        make_app(db, instance)  # the next start finishes what the journal holds
        live, kept = _state(db), _state(archive)
        _whole(live_before, live)
        for sid, (n, _) in kept_before.items():
            whole = live.get(sid, (None,))[0] == n or kept.get(sid, (None,))[0] == n
            assert whole, f"{sid} is lost or partial on the way back"
        _kill_at(db, instance, COLD_BACK, None)
        live, kept = _state(db), _state(archive)
        assert not kept, "the archive still holds conversations after the move back finished"
        assert {sid: v[0] for sid, v in live.items()} == {
            **{sid: v[0] for sid, v in live_before.items()},
            **{sid: v[0] for sid, v in kept_before.items()},
        }
        fts_consistent(db)
        fts_consistent(archive)
    assert cuts >= RUNS // 2, f"only {cuts} of {RUNS} runs were cut mid-way: move the moments"


def test_a_move_back_killed_between_its_messages_and_its_rows_is_undone_at_the_next_start(
    many_db, tmp_path
):
    """The moment the race above finds only sometimes, made certain: the process kills itself
    (SIGKILL) as soon as the first batch of a conversation's messages has entered the live file,
    before its session rows. The next start takes those messages out again and says so; the
    archive still holds the conversation whole, and the next move back brings it in."""
    db = _copy(many_db, tmp_path / "db")
    instance = tmp_path / "inst"
    _kill_at(db, instance, COLD, None)
    archive = instance / "archives" / "hermes-archive-2026-01.db"
    live_before, kept_before = _state(db), _state(archive)
    killer = (
        "import os, signal\n"
        "            import webui.db.changes.carrying as mv, webui.db.changes.lane as ln\n"
        "            mv.BACK_BATCH = 3\n"
        "            def kill(label):\n"
        "                if label == 'live commit':\n"
        "                    os.kill(os.getpid(), signal.SIGKILL)\n"
        "            ln.STEP = kill\n"
        "            " + COLD_BACK
    )
    assert _kill_at(db, instance, killer, 30.0) is False  # it killed itself: no longer running
    orphans = sql(
        db, "SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)"
    )[0][0]
    assert orphans > 0, "the kill came before any message was copied: move the kill point"
    app = make_app(db, instance)  # the next start undoes it
    live, kept = _state(db), _state(archive)
    assert live == live_before and kept == kept_before
    with app.app_context():
        from webui.web.logbooks import get_logbook

        said = " ".join(get_logbook().actions.recovered)
    assert f"the {orphans} messages it had copied into the live file were taken out" in said
    _kill_at(db, instance, COLD_BACK, None)
    live, kept = _state(db), _state(archive)
    assert not kept
    assert {s: v[0] for s, v in live.items()} == {
        **{s: v[0] for s, v in live_before.items()},
        **{s: v[0] for s, v in kept_before.items()},
    }
    fts_consistent(db)
