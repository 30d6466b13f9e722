"""Hermes Agent 0.19.0's own writer, for the benchmarks: its ``SessionDB`` (run with the Python
of a venv where hermes-agent==0.19.0 is installed, never Logbook's) creates a session and
appends messages at a fixed rate, timing every ``append_message`` call (lock waits, Hermes's own
retries and checkpoints included). Prints a JSON summary when told to stop (SIGTERM).

Usage: <hermes venv>/bin/python benchmarks/hermes_writer.py STATE_DB SECONDS RATE"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

from hermes_state import SessionDB


class Stop(BaseException):  # not caught by the failure count below
    pass


def main() -> int:
    def stop(*_):
        raise Stop

    signal.signal(signal.SIGTERM, stop)
    path, seconds, rate = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    db = SessionDB(path)
    sid = f"bench_writer_{int(time.time())}"
    db.create_session(sid, "telegram", model="bench/writer")
    waits: list[float] = []
    stats = {"written": 0, "failures": 0, "errors": []}
    interval = 1.0 / rate
    next_at = time.monotonic()
    deadline = next_at + seconds
    try:
        print("ready", flush=True)
        n = 0
        while time.monotonic() < deadline:
            n += 1
            started = time.perf_counter()
            try:
                db.append_message(sid, "user", f"hostile benchmark message {n} deploy docker")
                stats["written"] += 1
            except Exception as exc:  # noqa: BLE001 - counted, the gateway would lose it
                stats["failures"] += 1
                stats["errors"].append(str(exc)[:200])
            waits.append(time.perf_counter() - started)
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
    except Stop:
        pass
    waits.sort()
    stats["max_wait_s"] = waits[-1] if waits else 0.0
    stats["p99_wait_s"] = waits[int(len(waits) * 0.99)] if waits else 0.0
    stats["over_500ms"] = sum(1 for w in waits if w > 0.5)
    stats["session"] = sid
    db.close()
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
