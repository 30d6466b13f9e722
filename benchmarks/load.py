"""Load: 20 concurrent users mixing pages for 60 s while a Hermes-like writer appends 20 messages/s.

Copies the benchmark database (the writer appends to the copy, never to bench-1m.db), starts the
real server on it (``python -m webui``, fresh instance folder), brings the stats rollup up to date,
then runs ``tests/support/hermes_like_writer.py COPY SECONDS RATE MARKER`` and USERS threads, each with its
own keep-alive HTTP connection to 127.0.0.1, picking pages at random (list, viewer, search,
lineage, stats, JSON twins) with a think time between requests.  Reports requests, errors (must be
0), p50/p95 per page kind, the writer's summary (failures must be 0) and the server's peak memory,
and puts them in the load section of benchmarks/RESULTS.md (replacing the previous one).

    .venv/bin/python benchmarks/load.py                    # 60 s of load, ~2 minutes in all
    .venv/bin/python benchmarks/load.py --seconds 20 --users 5 --think 0

Everything stops by itself: the users stop at the deadline, each request has a timeout, the
writer runs for a fixed time, and the server is terminated by its pid.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import (  # noqa: E402
    DEFAULT_DB,
    DEFAULT_OUT,
    LOAD_END,
    LOAD_START,
    ROOT,
    Client,
    Quietness,
    RssSampler,
    Server,
    pct,
    proc_status,
    ro_connect,
    wait_until_quiet,
    write_section,
)

WRITER = ROOT / "tests" / "support" / "hermes_like_writer.py"


def targets(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """URLs per page kind, from the database itself."""
    q = urllib.parse.quote
    rng = random.Random(11)
    long_id, long_n = conn.execute(
        "SELECT id, message_count FROM sessions ORDER BY message_count DESC LIMIT 1"
    ).fetchone()
    deep = conn.execute(
        "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id LIMIT 1 OFFSET ?",
        (long_id, min(4500, long_n) - 1),
    ).fetchone()[0]
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM sessions WHERE message_count > 0 ORDER BY random() LIMIT 300"
        )
    ]
    parents = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT parent_session_id FROM sessions "
            "WHERE parent_session_id IS NOT NULL ORDER BY random() LIMIT 100"
        )
    ]
    sources = [r[0] for r in conn.execute("SELECT source FROM sessions GROUP BY source")]
    deep_key = conn.execute(
        "SELECT started_at, id FROM sessions ORDER BY started_at DESC, id DESC LIMIT 1 OFFSET 999"
    ).fetchone()
    import base64

    cursor = (
        base64.urlsafe_b64encode(json.dumps(list(deep_key), separators=(",", ":")).encode())
        .decode()
        .rstrip("=")
    )
    rng.shuffle(ids)
    return {
        "list": [
            "/sessions",
            "/sessions?sort=-last_active",
            "/sessions?sort=-tokens",
            f"/sessions?after={cursor}",
        ]
        + [f"/sessions?source={s}" for s in sources[:6]],
        "viewer": [f"/sessions/{long_id}", f"/sessions/{long_id}?at={deep}"]
        + [f"/sessions/{i}" for i in ids[:200]],
        "search": [
            f"/search?q={q(w)}"
            for w in (
                "sourdough",
                "the",
                '"docker compose"',
                "deploy*",
                "大别山项目",
                "通信",
                "nginx certbot",
                "kubectl",
                "OOMKilled",
                "pytest fixture",
            )
        ],
        "lineage": [f"/sessions/{p}/lineage" for p in parents],
        "stats": ["/stats?period=30", "/stats?period=365", "/stats?period=7"],
        "json": [
            "/sessions?format=json",
            f"/sessions/{long_id}?format=json",
            f"/search?q={q('docker')}&format=json",
        ]
        + [f"/sessions/{i}?format=json" for i in ids[200:260]],
    }


def _schema_version(db: Path) -> str:
    conn = ro_connect(db)
    try:
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return str(row[0]) if row and row[0] is not None else "?"
    except sqlite3.Error:
        return "?"
    finally:
        conn.close()


MIX = (("list", 30), ("viewer", 25), ("search", 20), ("lineage", 8), ("stats", 7), ("json", 10))


def user(
    n: int,
    port: int,
    urls: dict[str, list[str]],
    deadline: float,
    think: float,
    results: list,
    errors: list,
) -> None:
    rng = random.Random(1000 + n)
    kinds = [k for k, _ in MIX]
    weights = [w for _, w in MIX]
    client = Client(port)
    while time.monotonic() < deadline:
        kind = rng.choices(kinds, weights)[0]
        url = rng.choice(urls[kind])
        t = time.perf_counter()
        try:
            status, _, _ = client.get(url)
        except Exception as exc:  # noqa: BLE001 - every failure is an error to report
            errors.append((kind, url, repr(exc)))
            client.close()
            continue
        ms = (time.perf_counter() - t) * 1000
        results.append((kind, ms, status))
        if status != 200:
            errors.append((kind, url, f"HTTP {status}"))
        if think:
            time.sleep(
                min(rng.uniform(think / 2, think * 1.5), max(0.0, deadline - time.monotonic()))
            )
    client.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, default=DEFAULT_DB)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rate", type=float, default=20, help="writer: messages per second")
    ap.add_argument(
        "--think",
        type=float,
        default=1.0,
        help="mean think time between a user's requests, seconds (0.5x-1.5x; 0 = none)",
    )
    ap.add_argument(
        "--threads", type=int, default=None, help="server --threads (default: its own, 8)"
    )
    ap.add_argument(
        "--warm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="visit every URL once before the timed part (reported apart; default on)",
    )
    ap.add_argument("--keep-copy", action="store_true")
    ap.add_argument(
        "--wait-quiet",
        type=float,
        default=600,
        metavar="S",
        help="first wait up to S seconds for other processes to go quiet (default 600; 0: don't)",
    )
    args = ap.parse_args(argv)
    src = args.db.resolve()
    if not src.exists():
        print(f"no database at {src}: run benchmarks/make_db.py first", file=sys.stderr)
        return 2
    copy = src.with_name(src.stem + "-load-copy.db")
    for suffix in ("", "-wal", "-shm"):
        Path(str(copy) + suffix).unlink(missing_ok=True)
    t = time.perf_counter()
    shutil.copyfile(src, copy)
    print(f"copied the database in {time.perf_counter() - t:.1f} s", flush=True)
    conn = ro_connect(copy)
    urls = targets(conn)
    conn.close()
    instance = Path(tempfile.mkdtemp(prefix="logbook-load-"))
    server = Server(copy, instance, threads=args.threads)
    writer_out = {}
    results: list = []
    errors: list = []
    marker = f"load{os.getpid()}"
    try:
        server.start()
        client = Client(server.port)
        # the rollup is built by stats requests (a budget each): bring it up to date first
        t = time.perf_counter()
        for _ in range(400):
            status, body, _ = client.get("/stats?period=all&format=json")
            if status == 200 and json.loads(body)["coverage"]["complete"]:
                break
        print(f"rollup up to date in {time.perf_counter() - t:.1f} s", flush=True)
        # First visits: every URL once, in order, before the clock starts. What a page shares
        # between requests (counts, facet menus, kept orders, reports) is worked out here, as
        # it is once per change of the set of sessions on a running server; the timed part
        # then measures the steady state beside the writer. Reported on their own line.
        first_visits: list[float] = []
        if args.warm:
            for kind_urls in urls.values():
                for url in kind_urls[:12]:
                    t1 = time.perf_counter()
                    client.get(url)
                    first_visits.append((time.perf_counter() - t1) * 1000)
        client.close()
        if args.wait_quiet > 0:
            wait_until_quiet(args.wait_quiet)
        quiet = Quietness()
        writer = subprocess.Popen(
            [sys.executable, str(WRITER), str(copy), str(args.seconds), str(args.rate), marker],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + args.seconds
        threads = [
            threading.Thread(
                target=user,
                args=(i, server.port, urls, deadline, args.think, results, errors),
                daemon=True,
            )
            for i in range(args.users)
        ]
        t0 = time.perf_counter()
        with RssSampler(server.pid, every=0.1) as rss:
            for th in threads:
                th.start()
            for th in threads:
                th.join(timeout=args.seconds + 120)
        elapsed = time.perf_counter() - t0
        try:
            out, err = writer.communicate(timeout=args.seconds + 60)
        except subprocess.TimeoutExpired:
            writer.kill()
            out, err = writer.communicate(timeout=10)
        try:
            writer_out = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            writer_out = {"failures": "?", "error": (out + err)[-500:]}
        # the writer's rows are visible to the server
        c2 = Client(server.port)
        status, body, _ = c2.get(f"/sessions/writer_{marker}?format=json")
        seen = json.loads(body)["session"]["message_count"] if status == 200 else None
        c2.close()
        hwm = proc_status(server.pid).get("VmHWM", 0) / 1024
        quiet.finish(server.pid)
    finally:
        server.stop()
        shutil.rmtree(instance, ignore_errors=True)
        if not args.keep_copy:
            for suffix in ("", "-wal", "-shm"):
                Path(str(copy) + suffix).unlink(missing_ok=True)

    by_kind: dict[str, list[float]] = {}
    for kind, ms, _ in results:
        by_kind.setdefault(kind, []).append(ms)
    all_ms = [ms for _, ms, _ in results]
    lines = [
        LOAD_START,
        "## Load",
        "",
        f"`benchmarks/load.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {args.users} "
        f"concurrent users (threads, one keep-alive connection each, think time "
        f"{args.think / 2:g}–{args.think * 1.5:g} s) for {args.seconds:g} s, mixing "
        + ", ".join(f"{k} {w}%" for k, w in MIX)
        + f", against a copy of `{args.db}` (schema {_schema_version(args.db)}) while "
        "`tests/support/hermes_like_writer.py` "
        f"appended {args.rate:g} messages/s to it. Server: waitress, "
        f"{args.threads or 8} threads.",
        "",
        (
            f"* first visits (every URL once, one client, before the timed part): "
            f"{len(first_visits)} requests, median {statistics.median(first_visits):.0f} ms, "
            f"slowest {max(first_visits):,.0f} ms"
            if first_visits
            else "* no first-visit pass (--no-warm): the timed part starts cold"
        ),
        f"* requests: **{len(results):,}** in {elapsed:.0f} s ({len(results) / elapsed:.1f}/s); "
        f"errors: **{len(errors)}**" + (f" (first: {errors[0]})" if errors else ""),
        f"* writer: {writer_out.get('written', '?')} messages written, failures: "
        f"**{writer_out.get('failures', '?')}**, lock retries {writer_out.get('retries', '?')}, "
        f"longest write {1000 * float(writer_out.get('max_wait_s', 0) or 0):.0f} ms; the server "
        f"then showed the writer's session with {seen} messages",
        f"* server peak RSS during the load: {rss.peak_kb / 1024:.0f} MB (VmHWM over its life {hwm:.0f} MB)",
        quiet.line(),
        "",
        "| page kind | requests | p50 ms | p95 ms | max ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, _ in MIX:
        v = by_kind.get(kind, [])
        if v:
            lines.append(
                f"| {kind} | {len(v)} | {statistics.median(v):,.0f} | {pct(v, 95):,.0f} | "
                f"{max(v):,.0f} |"
            )
    if all_ms:
        lines.append(
            f"| **all** | {len(all_ms)} | {statistics.median(all_ms):,.0f} | {pct(all_ms, 95):,.0f} | "
            f"{max(all_ms):,.0f} |"
        )
    lines += ["", LOAD_END]
    section = "\n".join(lines)
    print(section)
    write_section(args.out, "load", section)
    print(f"updated {args.out}")
    ok = not errors and writer_out.get("failures") == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
