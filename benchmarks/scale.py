"""A million messages against ten million, measured side by side in one run (issue 38).

Both files are schema 22 (the generator's file opened once by Hermes 0.19.0's ``SessionDB``,
which migrates it). The runner starts Logbook on each with a fresh instance folder and
measures, in order:

1. a baseline of the machine: reading every row of the first 300,000 messages of each file
   (a plain SQLite scan, MB/s), so a reader can scale every other figure to their machine,
   and how busy the machine was meanwhile;
2. the start: seconds to the first 200 of /sessions, then seconds until the statistics are
   complete (the background pass), what /stats said meanwhile (its JSON: how far it got),
   how the other pages answered meanwhile against their idle time, the server's RSS (peak and
   steady), the instance folder's size and the rollup's longest read of state.db;
3. every page, warm, interleaved (one request to each server in turn, ``--rounds`` times):
   the list by each sort and source, search (word, phrase, prefix, CJK, prefix in a source),
   the viewer of the longest session, stats 30/365/all, chats, workspaces; then stats after a
   write (a message appended as Hermes appends one) and after a commit that changes nothing a
   figure reads (Hermes's own ``SessionDB`` opened on the file, as its dashboard does on every
   API request: it needs ``--hermes-python``);
4. an export of everything as JSONL for ``--export-s`` seconds: MB/s and peak RSS;
5. with ``--prune``: a copy of each file, and on it a prune of the oldest ``--prune-share``
   of its sessions (100,000 of the ten-million file's 200,000) beside Hermes 0.19's own writer
   appending 50 messages a second: the longest transaction, the writer's failures and worst
   wait.

Then the table (medians, the 10M ÷ 1M ratio, the goal) goes into RESULTS.md between the
``scale`` markers. Nothing else should run meanwhile; the runner says how busy the machine was.

    .venv/bin/python benchmarks/scale.py --small benchmarks/data/bench-1m-v22.db \\
        --large /work/bench10m/h22/state.db --hermes-python ~/.cache/hermes-logbook/hermes-agent-0.19.0/bin/python
"""

from __future__ import annotations

import argparse
import json
import shutil
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from run import (  # noqa: E402
    Client,
    Quietness,
    RssSampler,
    Server,
    facts_machine,
    proc_status,
    process_cpu_s,
    reset_hwm,
    timed_get,
    write_section,
)

DEFAULT_OUT = HERE / "RESULTS.md"
BASELINE_ROWS = 300_000


@dataclass
class Target:
    label: str
    db: Path
    server: Server | None = None
    client: Client | None = None
    facts: dict = field(default_factory=dict)
    start: dict = field(default_factory=dict)
    times: dict[str, list[float]] = field(default_factory=dict)
    statuses: dict[str, set[int]] = field(default_factory=dict)
    export: dict = field(default_factory=dict)
    prune: dict = field(default_factory=dict)


def ro(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def discover(db: Path) -> dict:
    conn = ro(db)
    try:
        d = {
            "sessions": conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            "messages": conn.execute("SELECT MAX(id) FROM messages").fetchone()[0],
            "size_gb": round(db.stat().st_size / 1e9, 2),
            "schema": conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone()
            else None,
        }
        d["long_id"] = conn.execute(
            "SELECT id FROM sessions ORDER BY message_count DESC LIMIT 1"
        ).fetchone()[0]
        d["sources"] = [
            r[0]
            for r in conn.execute(
                "SELECT source FROM sessions GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 3"
            )
        ]
        d["session_key"] = (
            conn.execute(
                "SELECT session_key FROM sessions WHERE session_key IS NOT NULL "
                "GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1"
            ).fetchone()
            if conn.execute(
                "SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'session_key'"
            ).fetchone()
            else None
        )
    finally:
        conn.close()
    return d


def baseline(db: Path) -> dict:
    """A plain read of every column of the first BASELINE_ROWS messages: the machine's
    speed at the simplest thing a page does, to scale every other figure by."""
    conn = ro(db)
    t0 = time.perf_counter()
    n = size = 0
    cur = conn.execute("SELECT * FROM messages WHERE id <= ?", (BASELINE_ROWS,))
    while True:
        chunk = cur.fetchmany(5000)
        if not chunk:
            break
        n += len(chunk)
        size += sum(len(str(v)) for row in chunk for v in row if v is not None)
    took = time.perf_counter() - t0
    conn.close()
    return {"rows": n, "seconds": took, "mb_s": size / 1e6 / took}


def pages(d: dict) -> list[tuple[str, str, str]]:
    """(group, name, URL) of every page measured."""
    q = urllib.parse.quote
    out = [
        ("list", "newest first", "/sessions"),
        ("list", "by last activity", "/sessions?sort=-last_active"),
        ("list", "by messages", "/sessions?sort=-messages"),
        ("list", "by tokens", "/sessions?sort=-tokens"),
        ("list", "by cost", "/sessions?sort=-cost"),
        ("list", "oldest first", "/sessions?sort=started"),
        ("list", "every row", "/sessions?rows=all"),
    ]
    out += [("list", f"source={s}", f"/sessions?source={q(s)}") for s in d["sources"]]
    out += [
        ("search", "docker (a word)", "/search?q=docker&format=json"),
        ("search", '"docker compose" (a phrase)', "/search?q=%22docker+compose%22&format=json"),
        ("search", "deploy* (a prefix)", "/search?q=deploy*&format=json"),
        ("search", "大别山项目 (CJK)", f"/search?q={q('大别山项目')}&format=json"),
        (
            "search",
            f"deploy* in {d['sources'][1]}",
            f"/search?q=deploy*&source={q(d['sources'][1])}&format=json",
        ),
        ("viewer", "longest session, JSON", f"/sessions/{d['long_id']}?format=json"),
        ("viewer", "longest session, HTML", f"/sessions/{d['long_id']}"),
        ("stats", "30 days", "/stats?period=30"),
        ("stats", "365 days", "/stats?period=365"),
        ("stats", "all", "/stats?period=all"),
        ("origins", "chats", "/chats"),
        ("origins", "workspaces", "/workspaces"),
    ]
    return out


GOALS = {"list": 1.5, "viewer": 1.5, "search": 2.0, "stats": 1.5, "origins": 1.5}


def start(t: Target, instance: Path, probes: list[str]) -> None:
    """Start the server; time the first page, then follow the background pass to the end,
    timing a few pages meanwhile."""
    t.server = Server(t.db, instance)
    first = t.server.start()
    t.client = Client(t.server.port)
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], proc_status(t.server.pid).get("VmRSS", 0))
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    began = time.perf_counter()
    during: dict[str, list[float]] = {u: [] for u in probes}
    said: list[dict] = []
    complete_s = None
    while time.perf_counter() - began < 900:
        ms, status, body = timed_get(t.client, "/stats?period=all&format=json")
        cov = json.loads(body).get("coverage", {}) if status == 200 else {}
        said.append({"s": round(time.perf_counter() - began, 1), "status": status, "ms": ms, **cov})
        if cov.get("complete"):
            complete_s = time.perf_counter() - began
            break
        for u in probes:
            during[u].append(timed_get(t.client, u)[0])
        time.sleep(1.0)
    rollup_peak = peak[0]
    idle = {u: [timed_get(t.client, u)[0] for _ in range(7)] for u in probes}
    stop.set()
    sampler.join()
    statuses = sorted({s["status"] for s in said})
    t.start = {
        "first_page_s": first,
        "complete_s": complete_s,
        "stats_requests": len(said),
        "stats_statuses": statuses,
        "stats_first": said[0] if said else {},
        "stats_halfway": said[len(said) // 2] if said else {},
        "longest_read_ms": said[-1].get("longest_read_ms") if said else None,
        "rss_peak_mb": rollup_peak / 1024,
        "during_vs_idle": {
            u: (
                statistics.median(during[u]) if during[u] else None,
                statistics.median(idle[u]),
                max(during[u]) if during[u] else None,
            )
            for u in probes
        },
        "instance_mb": sum(p.stat().st_size for p in instance.rglob("*") if p.is_file()) / 2**20,
    }


def append_like_hermes(db: Path) -> None:
    """A message appended and its session's counters moved, in one transaction, as Hermes's
    append_message does."""
    conn = sqlite3.connect(db, timeout=10)
    with conn:
        sid = conn.execute("SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1").fetchone()[0]
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
            (sid, "scale benchmark write deploy docker", time.time()),
        )
        conn.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (sid,))
    conn.close()


def hermes_open(db: Path, hermes_python: str) -> None:
    """Hermes's own SessionDB opened and closed on the file: what its dashboard does on
    every API request (a commit that changes no session and no message)."""
    subprocess.run(
        [
            hermes_python,
            "-c",
            "import sys; from pathlib import Path; from hermes_state import SessionDB; "
            "SessionDB(Path(sys.argv[1])).close()",
            str(db),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def after_writes(targets: list[Target], hermes_python: str | None, rounds: int = 5) -> None:
    for _ in range(rounds):
        for t in targets:
            append_like_hermes(t.db)
            ms, status, _ = timed_get(t.client, "/stats?period=365")
            t.times.setdefault("after a write", []).append(ms)
            t.statuses.setdefault("after a write", set()).add(status)
            if hermes_python:
                hermes_open(t.db, hermes_python)
                ms, status, _ = timed_get(t.client, "/stats?period=365")
                t.times.setdefault("after Hermes opened the file", []).append(ms)
                t.statuses.setdefault("after Hermes opened the file", set()).add(status)


def export(t: Target, seconds: float) -> None:
    """The whole history as JSONL, read for ``seconds`` (then the connection is dropped)."""
    import http.client

    reset = reset_hwm(t.server.pid)
    with RssSampler(t.server.pid) as sampler:
        conn = http.client.HTTPConnection("127.0.0.1", t.server.port, timeout=120)
        conn.request("GET", "/export.jsonl", headers={"Accept-Encoding": "identity"})
        resp = conn.getresponse()
        n = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            chunk = resp.read(1 << 20)
            if not chunk:
                break
            n += len(chunk)
        took = time.perf_counter() - t0
        conn.close()
    hwm = proc_status(t.server.pid).get("VmHWM", 0) if reset else 0
    t.export = {
        "status": resp.status,
        "mb": n / 1e6,
        "seconds": took,
        "mb_s": n / 1e6 / took,
        "peak_rss_mb": max(sampler.peak_kb, hwm) / 1024,
    }


def prune(t: Target, share: float, hermes_python: str, work: Path) -> None:
    """A copy of the file; on it, the oldest ``share`` of the sessions pruned (in-process,
    as the prune page runs it) while Hermes's own writer appends 50 messages a second."""
    from webui import create_app
    from webui.hermes.selection import Selection

    copy = work / f"prune-{t.label}.db"
    shutil.copyfile(t.db, copy)
    conn = ro(copy)
    n = conn.execute("SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL").fetchone()[0]
    k = int(n * share)
    cutoff = conn.execute(
        "SELECT started_at FROM sessions WHERE ended_at IS NOT NULL ORDER BY started_at "
        "LIMIT 1 OFFSET ?",
        (k,),
    ).fetchone()[0]
    conn.close()
    app = create_app(
        {"LOGBOOK_DB": str(copy), "TESTING": True}, instance_path=str(work / f"inst-{t.label}")
    )
    writer = subprocess.Popen(
        [hermes_python, str(HERE / "hermes_writer.py"), str(copy), "3600", "50"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    writer.stdout.readline()  # "ready"
    t0 = time.perf_counter()
    with app.app_context():
        job = app.extensions["logbook"].actions.run_prune(
            Selection(started_before=cutoff, archived=None)
        )
    took = time.perf_counter() - t0
    writer.terminate()
    out, _ = writer.communicate(timeout=120)
    stats = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    t.prune = {
        "sessions": job.deleted,
        "messages": job.messages_deleted,
        "seconds": took,
        "transactions": job.transactions,
        "longest_txn_ms": job.longest_txn_s * 1000,
        "error": job.error,
        "writer_written": stats.get("written"),
        "writer_failures": stats.get("failures"),
        "writer_worst_lock_wait_ms": (stats.get("max_lock_wait_s") or 0) * 1000,
    }
    copy.unlink(missing_ok=True)
    for suffix in ("-wal", "-shm"):
        Path(str(copy) + suffix).unlink(missing_ok=True)


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def f1(v: float | None) -> str:
    return "—" if v is None else f"{v:,.1f}"


def write(out: Path, targets: list[Target], plist, machine: dict, quiet: Quietness, when: str):
    small, large = targets
    lines = [
        "<!-- scale:start -->",
        "## A million messages against ten million (schema 22, one run)",
        "",
        f"Measured {when} by `benchmarks/scale.py` on {machine['nproc']} cores ({machine['cpu']}),"
        f" {machine['memory']}, SQLite {machine['sqlite']}, Python {machine['python']}.",
        quiet.line(),
        "",
        "| | " + " | ".join(t.label for t in targets) + " |",
        "|---|---:|---:|",
        "| sessions / messages | "
        + " | ".join(f"{t.facts['sessions']:,} / {t.facts['messages']:,}" for t in targets)
        + " |",
        "| file | " + " | ".join(f"{t.facts['size_gb']} GB" for t in targets) + " |",
        "| baseline: a plain read of the first 300,000 messages | "
        + " | ".join(f"{t.facts['baseline']['mb_s']:.0f} MB/s" for t in targets)
        + " |",
        "| first page after start | "
        + " | ".join(f"{t.start['first_page_s']:.2f} s" for t in targets)
        + " |",
        "| statistics complete after (background pass) | "
        + " | ".join(f1(t.start["complete_s"]) + " s" for t in targets)
        + " |",
        "| /stats meanwhile | "
        + " | ".join(
            f"HTTP {', '.join(map(str, t.start['stats_statuses']))}, partial: "
            f"{t.start['stats_halfway'].get('messages_seen_up_to_id', 0):,} of "
            f"{t.start['stats_halfway'].get('newest_message_id', 0):,} at "
            f"{t.start['stats_halfway'].get('s')} s"
            for t in targets
        )
        + " |",
        "| longest read of state.db by the pass | "
        + " | ".join(f1(t.start["longest_read_ms"]) + " ms" for t in targets)
        + " |",
        "| server RSS peak during the pass / after the pages | "
        + " | ".join(
            f"{t.start['rss_peak_mb']:.0f} / {t.start.get('rss_steady_mb', 0):.0f} MB"
            for t in targets
        )
        + " |",
        "| instance folder (rollup, journal) | "
        + " | ".join(f"{t.start['instance_mb']:.0f} MB" for t in targets)
        + " |",
    ]
    for url in small.start["during_vs_idle"]:
        lines.append(
            f"| `{url}` during the pass vs idle (median, worst) | "
            + " | ".join(
                "{} vs {} ms (worst {})".format(
                    f1(t.start["during_vs_idle"][url][0]),
                    f1(t.start["during_vs_idle"][url][1]),
                    f1(t.start["during_vs_idle"][url][2]),
                )
                for t in targets
            )
            + " |"
        )
    if small.export:
        lines.append(
            "| export JSONL (MB/s, peak RSS) | "
            + " | ".join(
                f"{t.export['mb_s']:.0f} MB/s, {t.export['peak_rss_mb']:.0f} MB" for t in targets
            )
            + " |"
        )
    if small.prune:
        lines.append(
            "| prune beside Hermes's writer | "
            + " | ".join(
                f"{t.prune['sessions']:,} sessions ({t.prune['messages']:,} messages) in "
                f"{t.prune['seconds']:.0f} s, longest transaction {t.prune['longest_txn_ms']:.1f} ms,"
                f" writer {t.prune['writer_written']} written / {t.prune['writer_failures']} failed,"
                f" worst lock wait {t.prune['writer_worst_lock_wait_ms']:.0f} ms"
                for t in targets
            )
            + " |"
        )
    lines += [
        "",
        "Pages, warm, each server in turn; medians in ms (HTTP through the real server):",
        "",
        f"| page | {small.label} | {large.label} | ratio | goal |",
        "|---|---:|---:|---:|---|",
    ]
    for group, name, url in [
        *plist,
        ("stats", "365 days, just after a write", "after a write"),
        ("stats", "365 days, just after Hermes opened the file", "after Hermes opened the file"),
    ]:
        a, b = med(small.times.get(url, [])), med(large.times.get(url, []))
        if a is None or b is None:
            continue
        goal = 3.0 if "after" in url else GOALS[group]
        ratio = b / a if a else None
        bad = {s for t in targets for s in t.statuses.get(url, set())} - {200}
        verdict = "met" if ratio is not None and ratio <= goal else "**not met**"
        lines.append(
            f"| {group}: {name} | {a:.1f} | {b:.1f} | {ratio:.2f}× | ≤ {goal}× {verdict}"
            + (f" (HTTP {sorted(bad)})" if bad else "")
            + " |"
        )
    lines.append("<!-- scale:end -->")
    write_section(out, "scale", "\n".join(lines))
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=Path, required=True)
    ap.add_argument("--large", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--export-s", type=float, default=30.0)
    ap.add_argument("--hermes-python", default=None)
    ap.add_argument("--prune", action="store_true")
    ap.add_argument("--prune-share", type=float, default=0.5)
    args = ap.parse_args(argv)
    targets = [Target("1M", args.small.resolve()), Target("10M", args.large.resolve())]
    machine = facts_machine()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    work = Path(tempfile.mkdtemp(prefix="logbook-scale-"))
    quiet = Quietness()
    try:
        for t in targets:
            t.facts = discover(t.db)
            t.facts["baseline"] = baseline(t.db)
            print(t.label, json.dumps(t.facts), flush=True)
        plist = pages(targets[1].facts)
        for t in targets:  # each file's own longest session; the same sources for both
            t.facts["pages"] = pages({**t.facts, "sources": targets[1].facts["sources"]})
        probes = ["/sessions", "/search?q=docker&format=json"]
        for t in targets:
            start(t, work / f"instance-{t.label}", probes)
            print(t.label, json.dumps(t.start), flush=True)
        # each server measured on its own file's ids (its longest session, its sources): the
        # same page with the same meaning; interleaved, one request to each in turn
        own = [t.facts["pages"] for t in targets]
        for _ in range(args.rounds):
            for k in range(len(plist)):
                for t, mine in zip(targets, own, strict=True):
                    url = mine[k][2]
                    if url not in t.times:
                        timed_get(t.client, url)  # warm-up
                    ms, status, _ = timed_get(t.client, url)
                    t.times.setdefault(plist[k][2], []).append(ms)
                    t.statuses.setdefault(plist[k][2], set()).add(status)
        after_writes(targets, args.hermes_python)
        for t in targets:
            t.start["rss_steady_mb"] = proc_status(t.server.pid).get("VmRSS", 0) / 1024
        if args.export_s > 0:
            for t in targets:
                export(t, args.export_s)
                print(t.label, "export", json.dumps(t.export), flush=True)
        quiet.finish(targets[1].server.pid)
        # the other server is not "another process" either
        quiet.other_s = max(0.0, quiet.other_s - process_cpu_s(targets[0].server.pid))
        for t in targets:
            t.client.close()
            t.server.stop()
        if args.prune:
            if not args.hermes_python:
                raise SystemExit("--prune needs --hermes-python (Hermes's own writer)")
            for t in targets:
                prune(t, args.prune_share, args.hermes_python, work)
                print(t.label, "prune", json.dumps(t.prune), flush=True)
        write(args.out, targets, plist, machine, quiet, when)
    finally:
        for t in targets:
            if t.server is not None:
                t.server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
