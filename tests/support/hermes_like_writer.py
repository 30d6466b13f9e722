"""A stand-in for the Hermes gateway's writer, run as a separate process by the tests and the
load benchmark: the same connection settings and retry policy as hermes_state.SessionDB
(1 s busy timeout, BEGIN IMMEDIATE, 15 attempts with 20–150 ms jitter), appending messages to
one active session at a fixed rate. Prints a JSON summary at the end."""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import time


def execute_write(conn: sqlite3.Connection, fn, stats: dict) -> None:
    for attempt in range(15):
        started = time.perf_counter()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back already
                    conn.execute("ROLLBACK")
                raise
            stats["max_wait_s"] = max(stats["max_wait_s"], time.perf_counter() - started)
            return
        except sqlite3.OperationalError as exc:
            if ("locked" in str(exc) or "busy" in str(exc)) and attempt < 14:
                stats["retries"] += 1
                time.sleep(random.uniform(0.020, 0.150))
                continue
            raise


class Stop(Exception):
    pass


def main() -> int:
    import signal

    def stop(*_):
        raise Stop

    signal.signal(signal.SIGTERM, stop)
    db, seconds, rate, marker = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    conn = sqlite3.connect(db, timeout=1.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA foreign_keys=ON")
    sid = f"writer_{marker}"
    stats = {"written": 0, "failures": 0, "retries": 0, "max_wait_s": 0.0, "errors": []}
    now = time.time()
    execute_write(
        conn,
        lambda c: c.execute(
            "INSERT INTO sessions (id, source, started_at, message_count) VALUES (?, 'telegram', ?, 0)",
            (sid, now),
        ),
        stats,
    )
    deadline = time.monotonic() + seconds
    interval = 1.0 / rate
    next_at = time.monotonic()
    n = 0
    try:
        while time.monotonic() < deadline:
            n += 1
            content = f"{marker} message {n}"

            def append(c, content=content):
                c.execute(
                    "INSERT INTO messages (session_id, role, content, timestamp) VALUES "
                    "(?, 'user', ?, ?)",
                    (sid, content, time.time()),
                )
                c.execute(
                    "UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (sid,)
                )

            try:
                execute_write(conn, append, stats)
                stats["written"] += 1
            except sqlite3.Error as exc:
                stats["failures"] += 1
                stats["errors"].append(str(exc))
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
    except Stop:
        pass
    conn.close()
    print(json.dumps(stats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
