"""Logbook beside Hermes 0.19.0's own dashboard, on the same file in the same run.

Hermes ships a dashboard (``hermes_cli.web_server``, FastAPI): its JSON API is what it shows.
This starts it with the Python of a venv where hermes-agent==0.19.0 is installed (never
Logbook's), starts Logbook on the same copy of the benchmark database, and times the pages
that answer the same questions: the session list, a search, a conversation, a year's usage.
Offline, Hermes's analytics first try to fetch model metadata from OpenRouter (minutes of
timeouts); the run seeds ``HERMES_HOME/cache/openrouter_model_metadata.json`` as a user who
has run Hermes online would have it, and says so. Writes the ``official`` section of
benchmarks/RESULTS.md.

Usage: python benchmarks/official_side_by_side.py --db PATH/state.db [--requests 9]"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from run import HOST, Server, free_port, pct, write_section  # noqa: E402

SECTION = "official"


def timed(port: int, path: str, headers: dict | None = None, timeout: float = 600):
    c = http.client.HTTPConnection(HOST, port, timeout=timeout)
    t0 = time.perf_counter()
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    took = time.perf_counter() - t0
    c.close()
    return r.status, took, body


def start_official(python: str, home: Path, token: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_DASHBOARD_SESSION_TOKEN": token}
    code = (
        "import uvicorn; from hermes_cli.web_server import app; "
        f"uvicorn.run(app, host='{HOST}', port={port}, log_level='warning')"
    )
    proc = subprocess.Popen(
        [python, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if timed(port, "/api/status", timeout=5)[0] in (200, 401, 403, 404):
                return proc, port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("Hermes's dashboard did not start within 120 s")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True, help="the 1M-message schema-22 benchmark database")
    ap.add_argument("--requests", type=int, default=9)
    ap.add_argument(
        "--hermes-python",
        default=str(Path.home() / ".cache/hermes-logbook/hermes-agent-0.19.0/bin/python"),
    )
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    args = ap.parse_args()
    if not Path(args.hermes_python).exists():
        print(f"Hermes 0.19.0 is not installed at {args.hermes_python}: nothing to compare")
        return 0

    home = Path(tempfile.mkdtemp(prefix="official-"))
    db = home / "state.db"
    shutil.copyfile(args.db, db)
    (home / "cache").mkdir()
    (home / "cache" / "openrouter_model_metadata.json").write_text(
        json.dumps({"anthropic/claude-sonnet-4": {"context_length": 200000}}), encoding="utf-8"
    )
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    long_id, long_n = conn.execute(
        "SELECT session_id, COUNT(*) FROM messages GROUP BY session_id ORDER BY COUNT(*) DESC "
        "LIMIT 1"
    ).fetchone()
    messages = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    conn.close()

    token = secrets.token_urlsafe(24)
    official, oport = start_official(args.hermes_python, home, token)
    server = Server(db, home / "logbook-instance")
    server.start()
    # Logbook reads the stats rollup and the search's map of sources in the background from
    # start-up (a few seconds on a million messages); the comparison is of the two servers
    # at rest, so it waits for that (and says how long it took).
    t0 = time.perf_counter()
    warm_s = None
    while time.perf_counter() - t0 < 120:
        status, _took, body = timed(server.port, "/stats?period=30&format=json")
        if status == 200 and json.loads(body)["coverage"]["complete"]:
            warm_s = time.perf_counter() - t0
            break
        time.sleep(0.5)
    auth = {"X-Hermes-Session-Token": token}
    pairs = [
        ("sessions, newest first (50)", "/api/sessions?limit=50", "/sessions?format=json"),
        (
            "sessions, last active (50)",
            "/api/sessions?limit=50&order=recent",
            "/sessions?sort=-last_active&format=json",
        ),
        (
            "search deploy*",
            f"/api/sessions/search?q={quote('deploy*')}",
            f"/search?q={quote('deploy*')}&format=json",
        ),
        (
            'search "docker compose"',
            f"/api/sessions/search?q={quote(chr(34) + 'docker compose' + chr(34))}",
            f"/search?q={quote(chr(34) + 'docker compose' + chr(34))}&format=json",
        ),
        (
            # Hermes sends the whole conversation; Logbook its first page (the rest on scroll).
            f"the longest conversation ({long_n:,} messages)*",
            f"/api/sessions/{long_id}/messages",
            f"/sessions/{long_id}?format=json",
        ),
        ("usage, 365 days", "/api/analytics/usage?days=365", "/stats?period=365&format=json"),
    ]
    rows = []
    try:
        for name, opath, lpath in pairs:
            first = {}
            for side, port, path, headers in (
                ("official", oport, opath, auth),
                ("logbook", server.port, lpath, {}),
            ):
                status, took, _b = timed(port, path, headers)
                first[side] = (status, took)
            times = {"official": [], "logbook": []}
            for _ in range(args.requests):
                for side, port, path, headers in (
                    ("official", oport, opath, auth),
                    ("logbook", server.port, lpath, {}),
                ):
                    status, took, _b = timed(port, path, headers)
                    if status != 200:
                        raise SystemExit(f"{side} {path}: HTTP {status}")
                    times[side].append(took)
            o, lb = pct(times["official"], 50), pct(times["logbook"], 50)
            rows.append(
                f"| {name} | {first['official'][1] * 1000:,.0f} | {o * 1000:,.1f} "
                f"({pct(times['official'], 95) * 1000:,.1f}) | {first['logbook'][1] * 1000:,.0f} "
                f"| {lb * 1000:,.1f} ({pct(times['logbook'], 95) * 1000:,.1f}) | {lb / o:.2f}× |"
            )
            print(rows[-1], flush=True)
    finally:
        official.terminate()
        server.stop()
        try:
            official.wait(timeout=10)
        except subprocess.TimeoutExpired:
            official.kill()
        shutil.rmtree(home, ignore_errors=True)

    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    section = "\n".join(
        [
            f"<!-- {SECTION}:start -->",
            "## Beside Hermes 0.19.0's own dashboard",
            "",
            f"`benchmarks/official_side_by_side.py` ({stamp}): Hermes 0.19.0's dashboard "
            "(`hermes_cli.web_server`, its own venv, uvicorn) and Logbook (waitress, 8 threads) "
            f"on one copy of the benchmark file ({messages:,} messages, schema 22), one request "
            f"at a time, alternating: the first request of each, then the median (p95) of "
            f"{args.requests}, ms. Its JSON API is what its pages show; Logbook's JSON twins "
            "answer the same questions. The analytics' model-metadata cache "
            "(`HERMES_HOME/cache/openrouter_model_metadata.json`) was seeded: offline, Hermes "
            "otherwise spends minutes trying to fetch it. *Ratio*: Logbook median / Hermes "
            "median (below 1: Logbook faster). \\* Hermes answers with every message of the "
            "conversation, Logbook with its first page (the viewer loads the rest as the reader "
            "scrolls): the same first screen, not the same bytes. Logbook's background "
            "warm-up after start (the stats rollup and the search's map of sources) was "
            + (f"waited for ({warm_s:.1f} s) " if warm_s is not None else "not complete in 120 s ")
            + "before the first request.",
            "",
            "| question | Hermes first | Hermes median (p95) | Logbook first | Logbook median "
            "(p95) | ratio |",
            "|---|---:|---:|---:|---:|---:|",
            *rows,
            f"<!-- {SECTION}:end -->",
        ]
    )
    print(section)
    write_section(Path(args.out), SECTION, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
