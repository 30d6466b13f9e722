"""Hermes Agent 0.19.0's own writer, for the benchmarks: its ``SessionDB`` (run with the Python
of a venv where hermes-agent==0.19.0 is installed, never Logbook's) creates a session and
appends messages at a fixed rate, timing every ``append_message`` call (lock waits, Hermes's own
retries and checkpoints included). Prints a JSON summary when told to stop (SIGTERM).

Every 1,000 writes Hermes's ``append_message`` also runs FTS5 ``'optimize'`` after its commit,
which rewrites both full-text indexes whole while holding the write lock (on the 1M-message
benchmark file: ~20 s when never merged, several seconds when merged). That time is Hermes's own
and would be the same without any reader, so it is timed apart (``maintenance_s``) and taken out
of the append's wait; a call still under way when the run stops is reported as ``in_flight_s``.

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


class TimedConnection:
    """Hermes's connection with its BEGIN IMMEDIATEs timed: the time from an append's first
    BEGIN to the one that got the lock (Hermes's own retry sleeps included) is what other
    writers cost it. The rest of an append is Hermes's own work: its FTS5 triggers sometimes
    merge index segments inside the INSERT (one append of the 1M-message file takes ~2.5 s with
    no other process near it), which says nothing about the readers beside it."""

    def __init__(self, conn):
        self._conn = conn
        self.first_begin: float | None = None
        self.lock_wait = 0.0

    def execute(self, sql, *args):
        if sql.lstrip().upper().startswith("BEGIN"):
            now = time.perf_counter()
            if self.first_begin is None:
                self.first_begin = now
            result = self._conn.execute(sql, *args)
            self.lock_wait = time.perf_counter() - self.first_begin
            return result
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def main() -> int:
    def stop(*_):
        raise Stop

    signal.signal(signal.SIGTERM, stop)
    path, seconds, rate = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    db = SessionDB(path)
    sid = f"bench_writer_{int(time.time())}"
    db.create_session(sid, "telegram", model="bench/writer")
    waits: list[float] = []
    stats = {"written": 0, "failures": 0, "errors": [], "maintenance_s": []}
    own = {"s": 0.0}

    def timed(fn):
        def run():
            t0 = time.perf_counter()
            try:
                return fn()
            finally:
                took = time.perf_counter() - t0
                own["s"] += took
                if took > 0.05:
                    stats["maintenance_s"].append(round(took, 3))

        return run

    # Hermes's own upkeep, timed apart (instance attributes shadow the methods).
    db._try_optimize_fts = timed(db._try_optimize_fts)
    db._try_wal_checkpoint = timed(db._try_wal_checkpoint)
    timed_conn = TimedConnection(db._conn)
    db._conn = timed_conn
    lock_waits: list[float] = []
    started = None
    interval = 1.0 / rate
    next_at = time.monotonic()
    deadline = next_at + seconds
    try:
        print("ready", flush=True)
        n = 0
        while time.monotonic() < deadline:
            n += 1
            started = time.perf_counter()
            own["s"] = 0.0
            timed_conn.first_begin, timed_conn.lock_wait = None, 0.0
            try:
                db.append_message(sid, "user", f"hostile benchmark message {n} deploy docker")
                stats["written"] += 1
            except Exception as exc:  # noqa: BLE001 - counted, the gateway would lose it
                stats["failures"] += 1
                stats["errors"].append(str(exc)[:200])
            waits.append(time.perf_counter() - started - own["s"])
            lock_waits.append(timed_conn.lock_wait)
            if waits[-1] > 0.5:
                stats.setdefault("slow_appends", []).append([n, round(waits[-1], 3)])
            started = None
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
    except Stop:
        if started is not None:
            stats["in_flight_s"] = round(time.perf_counter() - started, 3)
    waits.sort()
    stats["max_wait_s"] = waits[-1] if waits else 0.0
    stats["p99_wait_s"] = waits[int(len(waits) * 0.99)] if waits else 0.0
    stats["over_500ms"] = sum(1 for w in waits if w > 0.5)
    lock_waits.sort()
    stats["max_lock_wait_s"] = lock_waits[-1] if lock_waits else 0.0
    stats["p99_lock_wait_s"] = lock_waits[int(len(lock_waits) * 0.99)] if lock_waits else 0.0
    stats["session"] = sid
    db.close()
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
