"""Every kind of change through the lane (webui/db/changes), beside Hermes 0.19's own writer:
a move of every ended conversation to cold storage, a move of half of them back, a bulk
delete, a prune, and all of them at once (a move, a prune and a bulk delete of the same
sessions in three threads). For each: Logbook's transactions (count, p50, p99, longest) and
what Hermes's writer saw meanwhile (messages written, failures, its longest wait for the lock).

Usage: .venv/bin/python benchmarks/lane_beside_hermes.py [--sessions 2000] [--rate 20]
(needs the Hermes 0.19 oracle venv, as the oracle tests do)."""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support import make_app  # noqa: E402
from support.oracle import ensure_venv, start_hermes_writer  # noqa: E402
from webui.db.stores import coldstore as cold  # noqa: E402
from webui.demo import generate  # noqa: E402
from webui.hermes.selection import Selection  # noqa: E402
from webui.web.logbooks import get_logbook  # noqa: E402


def _times(jobs) -> list[float]:
    return [t for j in jobs for t in j.txn_times]


def _row(name: str, txns: list[float], written: dict, took: float) -> str:
    ms = sorted(t * 1000 for t in txns) or [0.0]
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return (
        f"| {name} | {took:.1f} s | {len(ms)} | {statistics.median(ms):.1f} | {p99:.1f} | "
        f"{ms[-1]:.1f} | {written['written']} | {written['failures']} | "
        f"{written['max_wait_s'] * 1000:.0f} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--rate", type=int, default=20)
    args = ap.parse_args()
    venv = ensure_venv()
    work = Path(tempfile.mkdtemp(prefix="lane-bench-"))
    source = work / "source.db"
    generate(source, sessions=args.sessions, seed=5, schema=22)
    rows = [
        "| change | took | transactions | p50 ms | p99 ms | longest ms | Hermes wrote | "
        "Hermes failures | Hermes longest wait ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("move out", "move back", "bulk delete", "prune", "all at once"):
        home = work / name.replace(" ", "-")
        home.mkdir()
        db = home / "state.db"
        shutil.copyfile(source, db)
        app = make_app(db, home / "inst")
        with app.app_context():
            lb = get_logbook()
            ended = lb.actions.prune_ids(Selection(archived=None, started_before=time.time()))
        archive = home / "inst" / "archives" / "hermes-archive-bench.db"
        if name == "move back":  # the way back needs something out there first
            with app.app_context():
                cold.ColdStorage.of(get_logbook()).move_out(
                    ended, cold.new_job(archive, len(ended), False, True)
                )
        writer = start_hermes_writer(venv, db, 600, args.rate)
        began = time.monotonic()
        jobs = []
        try:
            with app.app_context():
                lb = get_logbook()
                if name == "move out":
                    jobs.append(
                        cold.ColdStorage.of(lb).move_out(
                            ended, cold.new_job(archive, len(ended), False, True)
                        )
                    )
                elif name == "move back":
                    half = ended[: len(ended) // 2]
                    jobs.append(
                        cold.ColdStorage.of(lb).move_back(
                            archive, half, cold.new_job(archive, len(half), True)
                        )
                    )
                elif name == "bulk delete":
                    from webui.db.changes.jobs import Job

                    job = Job(kind="delete")
                    for sid in ended[: len(ended) // 3]:
                        lb.actions.delete(sid, job=job)
                    jobs.append(job)
                elif name == "prune":
                    jobs.append(
                        lb.actions.run_prune(Selection(sessions=tuple(ended), archived=None))
                    )
                else:
                    jobs.extend(_all_at_once(app, lb, ended, archive))
        finally:
            took = time.monotonic() - began
            writer.send_signal(signal.SIGTERM)
            out, _ = writer.communicate(timeout=120)
        written = json.loads(out.strip().splitlines()[-1])
        errors = [getattr(j, "error", None) for j in jobs if getattr(j, "error", None)]
        rows.append(
            _row(name, _times(jobs), written, took) + (f" errors: {errors}" if errors else "")
        )
        print(rows[-1], flush=True)
    print("\n".join(rows))
    shutil.rmtree(work, ignore_errors=True)
    return 0


def _all_at_once(app, lb, ended, archive):
    from webui.db.changes.jobs import Job

    gate = threading.Barrier(3)
    jobs: list = []

    def mover():
        with app.app_context():
            gate.wait()
            jobs.append(
                cold.ColdStorage.of(get_logbook()).move_out(
                    ended, cold.new_job(archive, len(ended), False, True)
                )
            )

    def pruner():
        with app.app_context():
            gate.wait()
            jobs.append(
                get_logbook().actions.run_prune(Selection(sessions=tuple(ended), archived=None))
            )

    def deleter():
        with app.app_context():
            job = Job(kind="delete")
            gate.wait()
            for sid in ended[::3]:
                get_logbook().actions.delete(sid, job=job)
            jobs.append(job)

    threads = [threading.Thread(target=f) for f in (mover, pruner, deleter)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return jobs


if __name__ == "__main__":
    raise SystemExit(main())
