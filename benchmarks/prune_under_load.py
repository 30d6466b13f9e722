"""A large prune on a copy of the benchmark database while a Hermes-like writer appends 50
messages a second: the writer's failures and longest wait, and Logbook's longest single write
transaction. Usage: python benchmarks/prune_under_load.py [--days 180]"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webui import create_app  # noqa: E402
from webui.hermes.selection import Selection  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default=str(ROOT / "benchmarks" / "data" / "bench-1m.db"))
    ap.add_argument("--days", type=int, default=180)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="prune-bench-"))
    db = work / "state.db"
    shutil.copyfile(args.db, db)
    app = create_app({"LOGBOOK_DB": str(db), "TESTING": True}, instance_path=str(work / "inst"))
    writer = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "support" / "hermes_like_writer.py"),
            str(db),
            "600",
            "50",
            "bench",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(1)
    started = time.perf_counter()
    with app.app_context():
        actions = app.extensions["logbook"].actions
        job = actions.run_prune(
            Selection(started_before=time.time() - args.days * 86400, archived=None)
        )
    took = time.perf_counter() - started
    out = ""
    for _ in range(3):  # the writer prints its summary when told to stop
        writer.terminate()
        try:
            out, _ = writer.communicate(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        writer.kill()
        out, _ = writer.communicate(timeout=10)
    stats = json.loads(out) if out.strip() else {}
    times = sorted(job.txn_times)

    def pct(p: float) -> float:
        return round(times[min(len(times) - 1, int(p * len(times)))] * 1000, 1) if times else 0.0

    print(
        json.dumps(
            {
                "deleted_sessions": job.deleted,
                "deleted_messages": job.messages_deleted,
                "transactions": job.transactions,
                "txn_ms_p50": pct(0.5),
                "txn_ms_p95": pct(0.95),
                "txn_ms_p99": pct(0.99),
                "longest_txn_ms": round(job.longest_txn_s * 1000, 1),
                "seconds": round(took, 1),
                "error": job.error,
                "writer": {
                    k: stats.get(k)
                    for k in ("written", "failures", "retries", "max_wait_s", "errors")
                },
            }
        )
    )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
