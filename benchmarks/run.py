"""Page benchmarks against the real server on the benchmark database; writes benchmarks/RESULTS.md.

Starts ``python -m webui --db DB --port P --instance TMP`` as a subprocess (a fresh instance
folder, so the stats rollup starts cold), then measures over real HTTP (keep-alive, 127.0.0.1
only):

* first request after start: process start -> first 200 of /sessions;
* stats cold: the first request of each period (the rollup is built incrementally, a time budget
  per request), then how long until ``coverage.complete`` in /stats?format=json;
* every page: 1 warm-up + N timed requests (fewer for slow pages), median and p95, next to the
  raw SQL the page needs at its core, timed on a read-only sqlite3 connection in the same run;
* the server's memory (VmHWM/VmRSS from /proc) and a full /export.jsonl streamed to nowhere.

    .venv/bin/python benchmarks/run.py                     # bench-1m.db, ~5 minutes
    .venv/bin/python benchmarks/run.py --db other.db --out /tmp/R.md --repeat 5

Everything stops by itself: bounded loops, per-request timeouts, and the server is terminated
(by its pid) at the end.  The section between the ``load`` markers in RESULTS.md (written by
load.py) is kept.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import platform
import re
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DB = ROOT / "benchmarks" / "data" / "bench-1m.db"
DEFAULT_OUT = ROOT / "benchmarks" / "RESULTS.md"
LOAD_START, LOAD_END = "<!-- load:start -->", "<!-- load:end -->"
HOST = "127.0.0.1"
REQUEST_TIMEOUT = 120.0


# ------------------------------------------------------------------------------------------
# small helpers
# ------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def write_section(out: Path, name: str, section: str) -> None:
    """Put ``section`` (which starts and ends with its ``<!-- name:start/end -->`` markers)
    into RESULTS.md in place of the old one, or at its end."""
    old = out.read_text(encoding="utf-8") if out.exists() else "# Benchmark results\n\n"
    pattern = rf"<!-- {name}:start -->.*?<!-- {name}:end -->"
    if re.search(pattern, old, re.S):
        new = re.sub(pattern, lambda m: section, old, flags=re.S)
    else:
        new = old.rstrip("\n") + "\n\n" + section + "\n"
    out.write_text(new, encoding="utf-8")


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    v = sorted(values)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM of a process, in kB."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent not idle (all cores), from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return 0.0


def process_cpu_s(pid: int) -> float:
    """utime + stime of a process and its reaped children, in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class Quietness:
    """How much CPU other processes took during the measurements: the machine's busy time minus
    this runner's and the server's. A noisy neighbour makes every number slower."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.busy0 = machine_busy_s()
        self.self0 = process_cpu_s(os.getpid())
        self.server_cpu = 0.0
        self.other_s = 0.0
        self.wall = 0.0

    def finish(self, server_pid: int) -> None:
        self.wall = time.perf_counter() - self.t0
        self.server_cpu = process_cpu_s(server_pid)
        busy = machine_busy_s() - self.busy0
        mine = process_cpu_s(os.getpid()) - self.self0
        self.other_s = max(0.0, busy - mine - self.server_cpu)

    def line(self) -> str:
        share = self.other_s / self.wall if self.wall else 0.0
        text = (
            f"* other processes used {self.other_s:.1f} CPU-seconds during the {self.wall:.0f} s of "
            f"measurements ({share:.0%} of one core); the server used {self.server_cpu:.1f}"
        )
        if share > 0.1:
            text += (
                " — **the machine was not quiet: these numbers are pessimistic; run again with "
                "nothing else running**"
            )
        return text


def wait_until_quiet(max_wait_s: float, threshold: float = 0.25, window_s: float = 5.0) -> bool:
    """Wait (at most max_wait_s) for a window in which the machine is busy less than
    ``threshold`` of one core. True when it got quiet."""
    deadline = time.monotonic() + max_wait_s
    while True:
        b0, t0 = machine_busy_s(), time.perf_counter()
        time.sleep(window_s)
        load = (machine_busy_s() - b0) / (time.perf_counter() - t0)
        if load < threshold:
            return True
        if time.monotonic() > deadline:
            print(f"the machine is still busy ({load:.0%} of a core): measuring anyway", flush=True)
            return False
        print(
            f"waiting for a quiet machine (other processes use {load:.0%} of a core)…", flush=True
        )


def reset_hwm(pid: int) -> bool:
    """Reset the peak-RSS counter (Linux: write 5 to clear_refs)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class RssSampler:
    """Samples a process's RSS every few ms in a thread; keeps the maximum."""

    def __init__(self, pid: int, every: float = 0.05):
        self.pid, self.every = pid, every
        self.peak_kb = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, proc_status(self.pid).get("VmRSS", 0))
            self._stop.wait(self.every)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join(timeout=2)


class Client:
    """One keep-alive HTTP/1.1 connection to the server (reconnects when the server closes)."""

    def __init__(self, port: int):
        self.port = port
        self.conn: http.client.HTTPConnection | None = None

    def get(self, url: str, sink: bool = False) -> tuple[int, bytes, int]:
        """(status, body or b'' when sink, bytes read)."""
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(HOST, self.port, timeout=REQUEST_TIMEOUT)
            try:
                self.conn.request("GET", url, headers={"Accept-Encoding": "identity"})
                resp = self.conn.getresponse()
                if sink:
                    n = 0
                    while True:
                        chunk = resp.read(1 << 20)
                        if not chunk:
                            break
                        n += len(chunk)
                    body = b""
                else:
                    body = resp.read()
                    n = len(body)
                if resp.getheader("Connection", "").lower() == "close":
                    self.close()
                return resp.status, body, n
            except (TimeoutError, http.client.HTTPException, ConnectionError):
                self.close()
                if attempt:
                    raise
        raise RuntimeError("unreachable")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def timed_get(client: Client, url: str) -> tuple[float, int, bytes]:
    t = time.perf_counter()
    status, body, _ = client.get(url)
    return (time.perf_counter() - t) * 1000, status, body


def sql_ms(conn: sqlite3.Connection, statements: list[tuple[str, tuple]], repeat: int) -> float:
    """Median ms of running all statements (fetching every row), after one warm-up."""
    times = []
    for i in range(repeat + 1):
        t = time.perf_counter()
        for sql, params in statements:
            conn.execute(sql, params).fetchall()
        if i:
            times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


# ------------------------------------------------------------------------------------------
# the server
# ------------------------------------------------------------------------------------------


class Server:
    def __init__(
        self,
        db: Path,
        instance: Path,
        threads: int | None = None,
        extra: list[str] | None = None,
        launcher: list[str] | None = None,
    ):
        self.db, self.instance, self.threads = db, instance, threads
        self.extra = list(extra or [])
        # What runs Logbook's command line (default: python -m webui; crowded.py for attacks).
        self.launcher = list(launcher or ["-m", "webui"])
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []
        self.banner = threading.Event()

    def start(self) -> float:
        """Start; returns seconds from process start to the first 200 of /sessions."""
        cmd = [
            sys.executable,
            *self.launcher,
            "--db",
            str(self.db),
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--instance",
            str(self.instance),
        ]
        if self.threads:
            cmd += ["--threads", str(self.threads)]
        cmd += self.extra
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited:\n" + "".join(self.output))
            try:
                c = http.client.HTTPConnection(HOST, self.port, timeout=30)
                c.request("GET", "/sessions")
                r = c.getresponse()
                r.read()
                c.close()
                if r.status == 200:
                    return time.perf_counter() - t0
            except (ConnectionError, OSError, http.client.HTTPException):
                pass
            time.sleep(0.01)
        raise RuntimeError("server did not answer within 60 s:\n" + "".join(self.output))

    def _drain(self):
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            self.output.append(line)
            if "URL:" in line:
                self.banner.set()

    @property
    def pid(self) -> int:
        assert self.proc
        return self.proc.pid

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


# ------------------------------------------------------------------------------------------
# what to measure
# ------------------------------------------------------------------------------------------


@dataclass
class Row:
    group: str
    name: str
    url: str
    target_ms: float | None = None  # median target
    target_text: str = "—"
    sql: list[tuple[str, tuple]] = field(default_factory=list)
    sql_note: str = ""
    repeat: int | None = None
    times: list[float] = field(default_factory=list)
    sql_median: float | None = None
    note: str = ""
    status: int = 0
    bytes: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def p95(self) -> float:
        return pct(self.times, 95)

    @property
    def met(self) -> bool | None:
        if self.target_ms is None:
            return None
        return self.median <= self.target_ms


def facts_machine() -> dict[str, str]:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except OSError:
        pass
    from importlib.metadata import version

    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "flask": version("flask"),
        "waitress": version("waitress"),
        "kernel": platform.release(),
    }


def ro_connect(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
    conn.execute("PRAGMA query_only = 1")
    return conn


def discover(conn: sqlite3.Connection, db: Path) -> dict:
    """Ids and words the benchmark needs, found with SQL."""
    d: dict = {}
    d["sessions"] = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    d["messages"] = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    d["size"] = db.stat().st_size
    meta = db.with_suffix(".json")
    d["build"] = json.loads(meta.read_text()) if meta.exists() else {}
    long_id, long_n = conn.execute(
        "SELECT id, message_count FROM sessions ORDER BY message_count DESC LIMIT 1"
    ).fetchone()
    d["long_id"], d["long_n"] = long_id, long_n
    k = min(4500, long_n) - 1
    d["deep_msg"] = conn.execute(
        "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id LIMIT 1 OFFSET ?",
        (long_id, k),
    ).fetchone()[0]
    d["deep_msg_rank"] = k + 1
    # the largest lineage tree: every session's root, counted
    root, size = conn.execute(
        "WITH RECURSIVE fam(id, root) AS (SELECT id, id FROM sessions WHERE parent_session_id IS NULL "
        "OR parent_session_id NOT IN (SELECT id FROM sessions) UNION "
        "SELECT s.id, fam.root FROM sessions s JOIN fam ON s.parent_session_id = fam.id) "
        "SELECT root, COUNT(*) AS n FROM fam GROUP BY root ORDER BY n DESC, root LIMIT 1"
    ).fetchone()
    d["tree_root"], d["tree_size"] = root, size
    d["source"] = conn.execute(
        "SELECT source FROM sessions GROUP BY source ORDER BY COUNT(*) DESC LIMIT 1 OFFSET 1"
    ).fetchone()[0]  # the second most common source
    # a rare word: the candidate with the fewest matches, at least 20
    counts = {}
    for w in (
        "onmouseover",
        "acetone",
        "sourdough",
        "zigbee",
        "restic",
        "itinerary",
        "vacuum",
        "ramen",
    ):
        counts[w] = conn.execute(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?", (w,)
        ).fetchone()[0]
    rare = min((w for w in counts if counts[w] >= 20), key=lambda w: counts[w], default="sourdough")
    d["rare"], d["rare_count"] = rare, counts.get(rare)
    d["counts"] = {}
    for label, table, expr in (
        ("the", "messages_fts", "the"),
        ("docker compose", "messages_fts", '"docker compose"'),
        ("deploy*", "messages_fts", "deploy*"),
        ("大别山项目", "messages_fts_trigram", '"大别山项目"'),
    ):
        d["counts"][label] = conn.execute(
            f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH ?", (expr,)
        ).fetchone()[0]
    d["counts"]["通信"] = conn.execute(
        "SELECT COUNT(*) FROM messages WHERE content LIKE '%通信%'"
    ).fetchone()[0]
    d["counts"][rare] = d["rare_count"]
    return d


def list_sql(order: str, where: str = "", params: tuple = ()) -> list[tuple[str, tuple]]:
    return [(f"SELECT * FROM sessions s {where} ORDER BY {order} LIMIT 50", params)]


LAST_ACTIVE = (
    "COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at)"
)
HERMES_SEARCH = (
    "SELECT m.id, m.session_id, m.role, snippet({t}, 0, '>>>', '<<<', '...', 40) AS snippet, "
    "m.content, m.timestamp, m.tool_name, s.source, s.model, s.started_at "
    "FROM {t} JOIN messages m ON m.id = {t}.rowid JOIN sessions s ON s.id = m.session_id "
    "WHERE {t} MATCH ? ORDER BY rank LIMIT 50"
)


def stats_sql(since: float | None) -> list[tuple[str, tuple]]:
    where, params = ("WHERE started_at >= ?", (since,)) if since is not None else ("", ())
    sums = (
        "COUNT(*), SUM(message_count), SUM(tool_call_count), SUM(input_tokens), SUM(output_tokens), "
        "SUM(cache_read_tokens), SUM(cache_write_tokens), SUM(reasoning_tokens), "
        "SUM(COALESCE(actual_cost_usd, estimated_cost_usd, 0))"
    )
    return [
        (f"SELECT {sums} FROM sessions {where}", params),
        (f"SELECT model, {sums} FROM sessions {where} GROUP BY model", params),
        (
            f"SELECT strftime('%Y-%m-%d', started_at, 'unixepoch'), {sums} FROM sessions {where} GROUP BY 1",
            params,
        ),
    ]


def build_rows(d: dict, client: Client, now: float) -> list[Row]:
    rows: list[Row] = []
    q = urllib.parse.quote
    # list pages
    for name, url, sql in (
        ("list: default (newest first)", "/sessions", list_sql("s.started_at DESC, s.id DESC")),
        (
            f"list: source={d['source']}",
            f"/sessions?source={d['source']}",
            list_sql("s.started_at DESC, s.id DESC", "WHERE s.source = ?", (d["source"],)),
        ),
        (
            "list: sort=-last_active",
            "/sessions?sort=-last_active",
            [
                (
                    f"SELECT s.*, {LAST_ACTIVE} AS la FROM sessions s ORDER BY la DESC, s.id DESC LIMIT 50",
                    (),
                )
            ],
        ),
        (
            "list: sort=-messages",
            "/sessions?sort=-messages",
            list_sql("s.message_count DESC, s.id DESC"),
        ),
        (
            "list: sort=-tokens",
            "/sessions?sort=-tokens",
            list_sql(
                "(s.input_tokens + s.output_tokens + s.cache_read_tokens + s.cache_write_tokens) DESC, "
                "s.id DESC"
            ),
        ),
        (
            "list: sort=-cost",
            "/sessions?sort=-cost",
            list_sql("COALESCE(s.actual_cost_usd, s.estimated_cost_usd, 0) DESC, s.id DESC"),
        ),
        (
            "list: sort=started (oldest first)",
            "/sessions?sort=started",
            list_sql("s.started_at, s.id"),
        ),
    ):
        rows.append(Row("list", name, url, 50, "≤ 50 ms", sql))
    # deep page: follow `next` of the JSON twin 20 times, time only the last
    url = "/sessions?format=json"
    for _ in range(20):
        status, body, _ = client.get(url)
        nxt = json.loads(body)["next"]
        if not nxt:
            break
        url = nxt
    deep_json = url
    parsed = urllib.parse.urlsplit(deep_json)
    qs = [(k, v) for k, v in urllib.parse.parse_qsl(parsed.query) if k != "format"]
    deep_html = parsed.path + "?" + urllib.parse.urlencode(qs)
    # the key of the 21st page, for the raw keyset query
    k = (
        conn_holder["conn"]
        .execute(
            "SELECT started_at, id FROM sessions ORDER BY started_at DESC, id DESC "
            "LIMIT 1 OFFSET 999"
        )
        .fetchone()
    )
    deep_sql = [
        (
            "SELECT * FROM sessions s WHERE (s.started_at, s.id) < (?, ?) "
            "ORDER BY s.started_at DESC, s.id DESC LIMIT 50",
            tuple(k),
        )
    ]
    rows.append(
        Row("list", "list: deep page (21st, after 20 × next)", deep_html, 50, "≤ 50 ms", deep_sql)
    )
    rows.append(
        Row(
            "list",
            "list JSON: default",
            "/sessions?format=json",
            50,
            "≤ 50 ms",
            list_sql("s.started_at DESC, s.id DESC"),
        )
    )
    rows.append(
        Row(
            "list",
            "list JSON: sort=-last_active",
            "/sessions?sort=-last_active&format=json",
            50,
            "≤ 50 ms",
            rows[2].sql,
        )
    )
    rows.append(Row("list", "list JSON: deep page", deep_json, 50, "≤ 50 ms", deep_sql))
    # viewer
    lid, mid = d["long_id"], d["deep_msg"]
    first_sql = [
        ("SELECT * FROM sessions WHERE id = ?", (lid,)),
        ("SELECT * FROM messages WHERE session_id = ? ORDER BY timestamp, id LIMIT 100", (lid,)),
    ]
    anchor = (
        conn_holder["conn"]
        .execute("SELECT timestamp, id FROM messages WHERE id = ?", (mid,))
        .fetchone()
    )
    deep_v_sql = [
        ("SELECT * FROM sessions WHERE id = ?", (lid,)),
        (
            "SELECT * FROM messages WHERE session_id = ? AND (timestamp, id) >= (?, ?) "
            "ORDER BY timestamp, id LIMIT 100",
            (lid, anchor[0], anchor[1]),
        ),
    ]
    rows.append(
        Row(
            "viewer",
            f"viewer: first page ({d['long_n']:,}-message session)",
            f"/sessions/{lid}",
            100,
            "≤ 100 ms",
            first_sql,
        )
    )
    rows.append(
        Row(
            "viewer",
            f"viewer: deep page (?at= message #{d['deep_msg_rank']:,})",
            f"/sessions/{lid}?at={mid}",
            100,
            "≤ 100 ms (as first)",
            deep_v_sql,
        )
    )
    rows.append(
        Row(
            "viewer",
            "viewer JSON: first page",
            f"/sessions/{lid}?format=json",
            100,
            "≤ 100 ms",
            first_sql,
        )
    )
    rows.append(
        Row(
            "viewer",
            "viewer JSON: deep page",
            f"/sessions/{lid}?at={mid}&format=json",
            100,
            "≤ 100 ms (as first)",
            deep_v_sql,
        )
    )
    # search
    c = d["counts"]
    for label, query, table, expr, target in (
        (f"rare word “{d['rare']}”", d["rare"], "messages_fts", d["rare"], 150),
        ("commonest word “the”", "the", "messages_fts", "the", 500),
        (
            "phrase “\"docker compose\"”",
            '"docker compose"',
            "messages_fts",
            '"docker compose"',
            150,
        ),
        ("prefix “deploy*”", "deploy*", "messages_fts", "deploy*", 150),
        ("CJK “大别山项目” (trigram)", "大别山项目", "messages_fts_trigram", '"大别山项目"', 150),
    ):
        rows.append(
            Row(
                "search",
                f"search: {label} — {c.get(query.strip(chr(34)), c.get(query, 0)):,} matches",
                f"/search?q={q(query)}",
                target,
                f"≤ {target} ms",
                [(HERMES_SEARCH.format(t=table), (expr,))],
            )
        )
    rows.append(
        Row(
            "search",
            f"search: 2-char CJK “通信” (substring) — {c['通信']:,} matches",
            f"/search?q={q('通信')}",
            150,
            "≤ 150 ms",
            [
                (
                    "SELECT m.id, m.content FROM messages m WHERE m.content LIKE '%通信%' "
                    "ORDER BY m.id DESC LIMIT 50",
                    (),
                )
            ],
        )
    )
    rows.append(
        Row(
            "search",
            "search JSON: rare word",
            f"/search?q={q(d['rare'])}&format=json",
            150,
            "≤ 150 ms",
            [(HERMES_SEARCH.format(t="messages_fts"), (d["rare"],))],
        )
    )
    rows.append(
        Row(
            "search",
            "search JSON: “the”",
            "/search?q=the&format=json",
            500,
            "≤ 500 ms",
            [(HERMES_SEARCH.format(t="messages_fts"), ("the",))],
        )
    )
    # lineage
    tree_sql = [
        (
            "WITH RECURSIVE down(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN down "
            "ON s.parent_session_id = down.id) SELECT s.* FROM down JOIN sessions s ON s.id = down.id "
            "ORDER BY s.started_at, s.id",
            (d["tree_root"],),
        )
    ]
    rows.append(
        Row(
            "lineage",
            f"lineage: largest tree ({d['tree_size']} sessions)",
            f"/sessions/{d['tree_root']}/lineage",
            200,
            "≤ 200 ms",
            tree_sql,
        )
    )
    rows.append(
        Row(
            "lineage",
            "lineage JSON",
            f"/sessions/{d['tree_root']}/lineage?format=json",
            200,
            "≤ 200 ms",
            tree_sql,
        )
    )
    # stats (warm; the cold numbers are measured separately)
    for period, days in (("30", 30), ("365", 365), ("all", None)):
        since = None if days is None else now - days * 86400
        target = 500 if period == "365" else None
        rows.append(
            Row(
                "stats",
                f"stats: period={period} (warm)",
                f"/stats?period={period}",
                target,
                "≤ 500 ms warm" if target else "—",
                stats_sql(since),
            )
        )
    rows.append(
        Row(
            "stats",
            "stats JSON: period=365 (warm)",
            "/stats?period=365&format=json",
            500,
            "≤ 500 ms warm",
            stats_sql(now - 365 * 86400),
        )
    )
    return rows


conn_holder: dict = {}


# ------------------------------------------------------------------------------------------
# the run
# ------------------------------------------------------------------------------------------


def measure_row(
    row: Row, client: Client, repeat: int, conn: sqlite3.Connection, budget_s: float
) -> None:
    ms, status, body = timed_get(client, row.url)  # warm-up
    row.status = status
    row.bytes = len(body)
    if status != 200:
        row.note = f"HTTP {status}"
    n = row.repeat or repeat
    if ms > 1000:
        n = min(n, 5)
    deadline = time.monotonic() + budget_s
    for i in range(n):
        ms, status, body = timed_get(client, row.url)
        if status != 200:
            row.note = f"HTTP {status}"
        row.times.append(ms)
        if time.monotonic() > deadline and i >= 2:
            break
    if row.sql:
        row.sql_median = sql_ms(conn, row.sql, min(n, 10))


def stats_cold(client: Client, now: float) -> dict:
    """First request of each stats period right after start, then requests until the rollup
    is complete (each request may spend LOGBOOK_ROLLUP_BUDGET seconds on it)."""
    out: dict = {"first": {}}
    t_first = time.perf_counter()
    for period in ("30", "365", "all"):
        ms, status, _ = timed_get(client, f"/stats?period={period}")
        out["first"][period] = (ms, status)
    n = 0
    deadline = time.monotonic() + 900
    complete = False
    cov = {}
    while time.monotonic() < deadline:
        ms, status, body = timed_get(client, "/stats?period=all&format=json")
        n += 1
        if status == 200:
            cov = json.loads(body).get("coverage", {})
            if cov.get("complete"):
                complete = True
                break
    out["until_complete_s"] = time.perf_counter() - t_first
    out["requests"] = n + 3
    out["complete"] = complete
    out["coverage"] = cov
    return out


def export(client: Client, pid: int, conn: sqlite3.Connection) -> dict:
    reset = reset_hwm(pid)
    with RssSampler(pid) as sampler:
        t = time.perf_counter()
        status, _, n = client.get("/export.jsonl", sink=True)
        secs = time.perf_counter() - t
    hwm = proc_status(pid).get("VmHWM", 0) if reset else 0
    # the raw read the export needs: every session row and every message row
    t = time.perf_counter()
    conn.execute("SELECT * FROM sessions").fetchall()
    cur = conn.execute("SELECT * FROM messages ORDER BY session_id, timestamp, id")
    raw_rows = 0
    while True:
        chunk = cur.fetchmany(5000)
        if not chunk:
            break
        raw_rows += len(chunk)
    raw_s = time.perf_counter() - t
    # The documents, filtered (every session with a message: the whole file): a zip of Hermes's
    # Markdown files and Logbook's HTML page, each streamed with the server's memory watched.
    documents = []
    for route in ("/export.md?min_messages=1", "/export.html?min_messages=1"):
        doc_reset = reset_hwm(pid)
        with RssSampler(pid) as doc_sampler:
            t = time.perf_counter()
            doc_status, _, doc_bytes = client.get(route, sink=True)
            doc_s = time.perf_counter() - t
        doc_hwm = proc_status(pid).get("VmHWM", 0) if doc_reset else 0
        documents.append(
            {
                "route": route,
                "status": doc_status,
                "bytes": doc_bytes,
                "seconds": doc_s,
                "peak_rss_mb": max(doc_sampler.peak_kb, doc_hwm) / 1024,
            }
        )
        print(f"  {route}: {documents[-1]}", flush=True)
    return {
        "documents": documents,
        "status": status,
        "bytes": n,
        "seconds": secs,
        "mb_s": n / 1e6 / secs if secs else 0,
        "peak_rss_mb": max(sampler.peak_kb, hwm) / 1024,
        "sampled_peak_mb": sampler.peak_kb / 1024,
        "hwm_reset": reset,
        "raw_s": raw_s,
        "raw_rows": raw_rows,
    }


def fmt(v: float | None, digits: int = 1) -> str:
    if v is None:
        return "—"
    return f"{v:,.{digits}f}" if v < 100 else f"{v:,.0f}"


def _document_name(route: str) -> str:
    return "Hermes's Markdown files in a zip" if ".md" in route else "Logbook's HTML page"


def export_lines(exp: dict) -> list[str]:
    if not exp["bytes"]:
        return ["* `/export.jsonl`: not run (--no-export)"]
    return [
        f"* `/export.jsonl` (everything, {exp['bytes'] / 1e6:,.0f} MB streamed to nowhere): "
        f"{exp['seconds']:.1f} s = **{exp['mb_s']:.1f} MB/s** (target ≥ 50 MB/s: "
        f"{'met' if exp['mb_s'] >= 50 else 'not met'}); the raw read of every session and message row "
        f"({exp['raw_rows']:,} rows) takes {exp['raw_s']:.1f} s",
        f"* server peak RSS during the export: **{exp['peak_rss_mb']:.0f} MB** (target ≤ 200 MB: "
        f"{'met' if exp['peak_rss_mb'] <= 200 else 'not met'}; VmHWM after a reset"
        + (", sampled every 50 ms" if not exp["hwm_reset"] else "")
        + ")",
        *(
            f"* `{doc['route']}` ({_document_name(doc['route'])}, "
            f"{doc['bytes'] / 1e6:,.0f} MB, HTTP {doc['status']}): {doc['seconds']:.1f} s, server peak RSS "
            f"**{doc['peak_rss_mb']:.0f} MB** (target ≤ 250 MB: {'met' if doc['peak_rss_mb'] <= 250 else 'not met'})"
            for doc in exp.get("documents", [])
        ),
    ]


def write_results(
    out: Path,
    machine: dict,
    d: dict,
    first_s: float,
    cold: dict,
    rows: list[Row],
    exp: dict,
    mem: dict,
    started: str,
    wall_s: float,
    quiet: Quietness,
) -> None:
    b = d.get("build", {})
    lines = [
        "# Benchmark results",
        "",
        f"Measured by `benchmarks/run.py` on {started} (run took {wall_s:.0f} s). "
        "How to run and read this: [README](README.md).",
        "",
        "## Machine",
        "",
        f"* {machine['nproc']} cores: {machine['cpu']}; {machine['memory']} RAM; Linux {machine['kernel']}",
        f"* Python {machine['python']}, SQLite {machine['sqlite']}, Flask {machine['flask']}, "
        f"waitress {machine['waitress']} (8 threads, the default)",
        quiet.line(),
        "",
        "## Database",
        "",
        f"* `{d['path']}`: {d['size'] / 1e9:.2f} GB ({d['size'] / 2**30:.2f} GiB), "
        f"{d['sessions']:,} sessions, {d['messages']:,} messages "
        f"({d['size'] / max(d['messages'], 1):,.0f} bytes per message)",
        f"* built by `benchmarks/make_db.py` (webui.demo, schema 11 with both FTS5 tables): "
        f"seed {b.get('seed', '?')}, text_scale {b.get('text_scale', '?')}, anchored at "
        f"{time.strftime('%Y-%m-%d', time.gmtime(b['now'])) if b.get('now') else '?'}, "
        f"built in {b.get('build_seconds', 0):.0f} s",
        f"* long session `{d['long_id']}` ({d['long_n']:,} messages); largest lineage tree "
        f"`{d['tree_root']}` ({d['tree_size']} sessions)",
        "",
        "## Pages",
        "",
        "Median and p95 over real HTTP with keep-alive (1 warm-up, then the timed requests), whole "
        "response read. *Raw SQL* is the query the page needs at its core, run on a read-only "
        "sqlite3 connection in the same run (median); *ratio* = page median / raw SQL.",
        "",
        "| page | URL | median ms | p95 ms | raw SQL ms | ratio | target | met? |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    first_ok = first_s <= 2.0
    lines.append(
        f"| first request after start | `/sessions` | {first_s * 1000:,.0f} | — | — | — | ≤ 2 s | "
        f"{'yes' if first_ok else '**no**'} |"
    )
    for period in ("30", "365", "all"):
        ms, status = cold["first"][period]
        lines.append(
            f"| stats: period={period} (cold, first request) | `/stats?period={period}` | "
            f"{ms:,.0f} | — | — | — | — | {'' if status == 200 else f'HTTP {status}'} |"
        )
    for r in rows:
        ratio = r.median / r.sql_median if r.sql_median else None
        met = r.met
        mark = "—" if met is None else ("yes" if met else "**no**")
        note = f" ({r.note})" if r.note else ""
        url = r.url if len(r.url) <= 70 else r.url[:67] + "…"
        lines.append(
            f"| {r.name}{note} | `{url}` | {fmt(r.median)} | {fmt(r.p95)} | {fmt(r.sql_median, 2)} | "
            f"{fmt(ratio)}× | {r.target_text} | {mark} |"
        )
    lines += [
        "",
        "## Stats rollup",
        "",
        f"* The instance folder starts empty, so the rollup (tool usage, heatmap, messages per source) is "
        f"built by the stats requests themselves, a time budget per request: coverage.complete after "
        f"{cold['until_complete_s']:.1f} s and {cold['requests']} back-to-back stats requests"
        + ("" if cold["complete"] else f" (NOT complete: {cold['coverage']})")
        + ".",
        "",
        "## Export and memory",
        "",
        *(export_lines(exp)),
        f"* server memory after start: {mem['start_rss_mb']:.0f} MB; peak over all page benchmarks "
        f"(before the export): {mem['pages_hwm_mb']:.0f} MB",
        "",
        "## Not met",
        "",
    ]
    misses = []
    if not first_ok:
        misses.append(
            f"* first request after start: {first_s:.2f} s, target 2 s (+{first_s - 2:.2f} s)"
        )
    for r in rows:
        if r.met is False:
            misses.append(
                f"* {r.name}: median {r.median:,.0f} ms, target {r.target_ms:,.0f} ms "
                f"(+{r.median - r.target_ms:,.0f} ms, {r.median / r.target_ms:.1f}×)"
            )
    if exp["bytes"] and exp["mb_s"] < 50:
        misses.append(
            f"* export: {exp['mb_s']:.1f} MB/s, target 50 MB/s ({50 / exp['mb_s']:.1f}× too slow)"
        )
    if exp["bytes"] and exp["peak_rss_mb"] > 200:
        misses.append(f"* export peak RSS: {exp['peak_rss_mb']:.0f} MB, target 200 MB")
    for doc in exp.get("documents", []):
        if doc["peak_rss_mb"] > 250:
            misses.append(
                f"* `{doc['route']}` peak RSS: {doc['peak_rss_mb']:.0f} MB, target 250 MB"
            )
    lines += misses or ["Every target is met."]
    lines += [
        "",
        "See the diagnosis section below (kept between runs) for why, where a target is missed."
        if misses
        else "",
        "",
    ]
    # keep every section written by the other benchmarks (load, hostile, attacks, scale, …) and
    # the hand-written ones (diagnosis, notes), in their order: only the top is this script's
    kept = ""
    if out.exists():
        old = out.read_text()
        for m in re.finditer(r"<!-- ([a-z0-9-]+):start -->.*?<!-- \1:end -->", old, re.S):
            kept += ("\n" if kept else "") + m.group(0) + "\n"
    if not kept:
        kept = f"{LOAD_START}\n## Load\n\nNot run yet: `benchmarks/load.py`.\n{LOAD_END}\n"
    out.write_text("\n".join(lines) + "\n" + kept)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark the Logbook pages on a big database.")
    ap.add_argument("--db", type=Path, default=DEFAULT_DB)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--repeat", type=int, default=15, help="timed requests per page (default 15)")
    ap.add_argument(
        "--budget", type=float, default=45.0, help="seconds at most per page (default 45)"
    )
    ap.add_argument("--no-export", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the raw numbers here")
    ap.add_argument(
        "--wait-quiet",
        type=float,
        default=600,
        metavar="S",
        help="first wait up to S seconds for other processes to go quiet (default 600; 0: don't)",
    )
    args = ap.parse_args(argv)
    db = args.db.resolve()
    if not db.exists():
        print(f"no database at {db}: run benchmarks/make_db.py first", file=sys.stderr)
        return 2
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    wall = time.perf_counter()
    machine = facts_machine()
    conn = ro_connect(db)
    conn_holder["conn"] = conn
    print("discovering ids and words with SQL…", flush=True)
    d = discover(conn, db)
    d["path"] = os.path.relpath(db, ROOT) if db.is_relative_to(ROOT) else str(db)
    print(json.dumps({k: v for k, v in d.items() if k != "build"}, ensure_ascii=False), flush=True)
    if args.wait_quiet > 0:
        wait_until_quiet(args.wait_quiet)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    instance = Path(tempfile.mkdtemp(prefix="logbook-bench-"))
    server = Server(db, instance)
    quiet = Quietness()
    try:
        first_s = server.start()
        print(f"first request after start: {first_s:.2f} s", flush=True)
        time.sleep(0.5)
        mem = {"start_rss_mb": proc_status(server.pid).get("VmRSS", 0) / 1024}
        client = Client(server.port)
        now = time.time()
        cold = stats_cold(client, now)
        print(
            f"stats cold: {cold['first']}; rollup complete after {cold['until_complete_s']:.1f} s "
            f"({cold['requests']} requests)",
            flush=True,
        )
        rows = build_rows(d, client, now)
        for r in rows:
            measure_row(r, client, args.repeat, conn, args.budget)
            print(
                f"  {r.name:60s} median {r.median:8.1f} ms  p95 {r.p95:8.1f}  sql "
                f"{(r.sql_median or 0):8.2f}  {r.note}",
                flush=True,
            )
        mem["pages_hwm_mb"] = proc_status(server.pid).get("VmHWM", 0) / 1024
        if args.no_export:
            exp = {
                "status": 0,
                "bytes": 0,
                "seconds": 0,
                "mb_s": 0,
                "peak_rss_mb": 0,
                "sampled_peak_mb": 0,
                "hwm_reset": False,
                "raw_s": 0,
                "raw_rows": 0,
            }
        else:
            print("export…", flush=True)
            exp = export(client, server.pid, conn)
            print(f"export: {exp}", flush=True)
        client.close()
        quiet.finish(server.pid)
        print(quiet.line(), flush=True)
    finally:
        server.stop()
        shutil.rmtree(instance, ignore_errors=True)
    write_results(
        args.out,
        machine,
        d,
        first_s,
        cold,
        rows,
        exp,
        mem,
        started,
        time.perf_counter() - wall,
        quiet,
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": machine,
                    "db": dict(d.items()),
                    "first_s": first_s,
                    "cold": cold,
                    "rows": [
                        {
                            "name": r.name,
                            "url": r.url,
                            "times_ms": r.times,
                            "median": r.median,
                            "p95": r.p95,
                            "sql_ms": r.sql_median,
                            "target_ms": r.target_ms,
                            "bytes": r.bytes,
                        }
                        for r in rows
                    ],
                    "export": exp,
                    "memory": mem,
                },
                indent=1,
                ensure_ascii=False,
                default=str,
            )
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
