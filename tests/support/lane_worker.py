"""A change run in a real child process, killed with SIGKILL at a chosen step of its work.

``run(db, instance, op, kill_at)`` starts a child (forked from a multiprocessing fork server
that has Logbook imported, so a child costs milliseconds, not the half second of a fresh
interpreter); the child starts Logbook on ``db`` (which replays the journal, as every start
does) and runs ``op``. Every durable point of the work — a journal line, a commit to the live
file or an archive, a transcript file moved — calls the lane's step hook
(webui.db.changes.lane.STEP); at the ``kill_at``-th the child sends itself SIGKILL, exactly as
``kill -9`` would end it there. ``kill_at`` None: it runs to the end.

``op``: {"op": "delete" | "prune" | "out" | "back" | "start", "ids": [...]}. ``sabotage``
"skip_replay" breaks the replay on purpose (the journal reads as empty), to show the tests
that use this notice.

No clock decides anything here: batches keep fixed, small sizes (never grown or cut by how
long a transaction took), so a step number names the same point of the work on every run,
and more points fall inside a session's removal or a conversation's move."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ARCHIVE_NAME = "hermes-archive-2026-01.db"
_CTX = None


def archive_of(instance: Path) -> Path:
    return Path(instance) / "archives" / ARCHIVE_NAME


def _context():
    global _CTX
    if _CTX is None:
        _CTX = multiprocessing.get_context("forkserver")
        # Logbook and what its app imports, once, in the server: a child then starts in ms.
        _CTX.set_forkserver_preload(
            [
                "support.lane_worker",
                "webui",
                "webui.db.stores.coldstore",
                "webui.web.filewatch",
                "webui.web.views.actions",
                "webui.web.views.coldstore",
                "webui.web.views.export",
                "webui.web.views.lineage",
                "webui.web.views.origins",
                "webui.web.views.search",
                "webui.web.views.sessions",
                "webui.web.views.stats",
                "webui.web.views.stores",
                "webui.web.views.ui",
            ]
        )
    return _CTX


def run(
    db: Path,
    instance: Path,
    op: dict,
    kill_at: int | str | None = None,
    sabotage: str | None = None,
    timeout: float = 300.0,
) -> tuple[bool, dict]:
    """(killed, what the op reported). Raises when the child failed otherwise."""
    out = Path(instance).with_name(Path(instance).name + ".result.json")
    out.unlink(missing_ok=True)
    proc = _context().Process(
        target=work, args=(str(db), str(instance), op, kill_at, sabotage, str(out))
    )
    proc.start()
    proc.join(timeout)
    if proc.exitcode is None:
        proc.kill()
        proc.join()
        raise AssertionError(f"{op['op']} did not end within {timeout} s")
    if proc.exitcode == -signal.SIGKILL:
        return True, {}
    report = json.loads(out.read_text()) if out.exists() else {}
    if proc.exitcode != 0:
        raise AssertionError(f"{op['op']} failed in its process: {report}")
    return False, report


def work(db: str, instance: str, op: dict, kill_at, sabotage, out: str) -> None:
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import webui.db.changes.lane as lane_module

    count = [0]
    # kill_at: a step number, or "label+N": the N-th step after the first one so labelled.
    after = [None]
    if isinstance(kill_at, str):
        label, _, extra = kill_at.partition("+")
        after = [label, int(extra or 0)]

    def step(name: str) -> None:
        count[0] += 1
        if isinstance(kill_at, int) and count[0] >= kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if after[0] is not None:
            if name == after[0] and len(after) == 2:
                after.append(count[0])
            if len(after) == 3 and count[0] >= after[2] + after[1]:
                os.kill(os.getpid(), signal.SIGKILL)

    lane_module.STEP = step
    _fixed_batches()
    if sabotage == "skip_replay":
        from webui.db.changes.journal import Journal

        Journal.pending = lambda self: ([], [])
    report: dict = {}
    try:
        report = _run(Path(db), Path(instance), op)
        report["steps"] = count[0]
    except BaseException as exc:  # noqa: BLE001 - written for the parent to read
        report = {"exception": f"{type(exc).__name__}: {exc}"}
        Path(out).write_text(json.dumps(report))
        os._exit(1)
    Path(out).write_text(json.dumps(report))
    os._exit(0)  # no interpreter shutdown: nothing runs after the work


def _fixed_batches() -> None:
    import webui.db.changes.batches as batches
    import webui.db.changes.carrying as carrying
    import webui.db.changes.prune as prune
    import webui.db.changes.removal as removal

    for module in (batches, prune):
        module.limit = lambda cut, slow: None  # no time limit: never rolled back as too slow
        module.adapt = lambda size, took, lo, hi: size  # never resized by a clock
    removal.ONE_TXN_MESSAGES = prune.ONE_TXN_MESSAGES = 30
    removal.MESSAGE_BATCH = prune.MESSAGE_BATCH = 40
    carrying.BACK_BATCH = 40


def _run(db: Path, instance: Path, op: dict) -> dict:
    from support import make_app
    from webui.db.stores import coldstore as cold
    from webui.hermes.selection import Selection
    from webui.web.logbooks import get_logbook

    app = make_app(db, instance)  # a start: the journal is replayed here
    kind, ids = op["op"], list(op.get("ids") or [])
    with app.app_context():
        lb = get_logbook()
        if kind == "delete":
            return {"deleted": [d for i in ids for d in lb.actions.delete(i).ids]}
        if kind == "prune":
            job = lb.actions.run_prune(Selection(sessions=tuple(ids), archived=None))
            return {"deleted": job.deleted, "error": job.error}
        if kind == "out":
            job = cold.new_job(archive_of(instance), len(ids), False, include_resumable=True)
            cold.ColdStorage.of(lb).move_out(ids, job)
            return job.as_json()
        if kind in ("back", "back-from"):
            archive = Path(op.get("archive") or archive_of(instance))
            job = cold.new_job(archive, len(ids), True)
            cold.ColdStorage.of(lb).move_back(archive, ids, job)
            return job.as_json()
        if kind == "out-to":
            job = cold.new_job(Path(op["archive"]), len(ids), False, include_resumable=True)
            cold.ColdStorage.of(lb).move_out(ids, job)
            return job.as_json()
        return {"recovered": list(lb.actions.recovered)}
