"""Storage, Files and Reliability (issue 48) on a million messages against ten million, side
by side in one run.

For each file (schema 22: the generator's file opened once by Hermes 0.19.0's ``SessionDB``,
as ``scale.py`` uses them) the runner starts Logbook with a fresh instance folder and:

1. follows the background passes from start-up (the stats rollup, then the digest of every
   message, then dbstat's walk of every table and index) until /storage says the digest is
   complete and every object is measured: the first build's time, the server's peak RSS
   meanwhile, the digest file's size and the digest's longest read of state.db, and how
   /storage, /files and /stats answered meanwhile (status, partial or not, time);
2. measures every page of the three, warm, interleaved (one request to each server in turn,
   ``--rounds`` times): /storage and its JSON, /files (grouped) and its JSON, one workspace,
   a busy file's history, one version, a conversation's Files panel, /stats with the
   Reliability section (30 days, all) and its JSON, a prune preview with its estimate;
3. appends a tool call and its result as Hermes does and asks /stats and /files again: what a
   page costs when the digest has something new to read;
4. the server's RSS after all of it.

The table goes into RESULTS.md between the ``know`` markers.

    .venv/bin/python benchmarks/know.py --small …/1m.db --large …/10m.db
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import (  # noqa: E402
    Client,
    Quietness,
    Server,
    facts_machine,
    proc_status,
    process_cpu_s,
    timed_get,
    write_section,
)

DEFAULT_OUT = HERE / "RESULTS.md"
BUILD_LIMIT_S = 3 * 3600


@dataclass
class Target:
    label: str
    db: Path
    server: Server | None = None
    client: Client | None = None
    facts: dict = field(default_factory=dict)
    build: dict = field(default_factory=dict)
    times: dict[str, list[float]] = field(default_factory=dict)
    statuses: dict[str, set[int]] = field(default_factory=dict)


def ro(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def discover(db: Path) -> dict:
    conn = ro(db)
    try:
        return {
            "sessions": conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            "messages": conn.execute("SELECT MAX(id) FROM messages").fetchone()[0],
            "size_gb": round(db.stat().st_size / 1e9, 2),
            "long_id": conn.execute(
                "SELECT id FROM sessions ORDER BY message_count DESC LIMIT 1"
            ).fetchone()[0],
        }
    finally:
        conn.close()


def get_json(client: Client, url: str) -> tuple[float, int, dict]:
    ms, status, body = timed_get(client, url)
    try:
        return ms, status, json.loads(body)
    except ValueError:
        return ms, status, {}


def build(t: Target, instance: Path) -> None:
    """Start the server and follow the background passes to their end."""
    t.server = Server(t.db, instance)
    first = t.server.start()
    t.client = Client(t.server.port)
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], proc_status(t.server.pid).get("VmRSS", 0))
            stop.wait(0.1)

    threading.Thread(target=sample, daemon=True).start()
    began = time.perf_counter()
    during: dict[str, list[tuple[float, int]]] = {
        "/storage": [],
        "/files": [],
        "/stats?period=all": [],
    }
    said, digest_s, objects_s = [], None, None
    while time.perf_counter() - began < BUILD_LIMIT_S:
        ms, status, body = get_json(t.client, "/storage?format=json")
        cov = body.get("coverage", {})
        measured = body.get("measured", {})
        now = time.perf_counter() - began
        said.append({"s": round(now, 1), "status": status, "ms": round(ms, 1), **cov,
                     "objects": measured.get("objects"), "of": measured.get("of")})  # fmt: skip
        if cov.get("complete") and digest_s is None:
            digest_s = now
        if digest_s is not None and measured.get("objects") == measured.get("of"):
            objects_s = now
            break
        for url in during:
            ms, status, _ = timed_get(t.client, url)
            during[url].append((ms, status))
        time.sleep(5.0 if now > 60 else 1.0)
    stop.set()
    digest = sorted(instance.glob("digest-*.sqlite"))
    t.build = {
        "first_page_s": first,
        "digest_s": digest_s,
        "objects_s": objects_s,
        "rss_peak_mb": peak[0] / 1024,
        "digest_mb": sum(p.stat().st_size for p in digest) / 2**20,
        "instance_mb": sum(p.stat().st_size for p in instance.rglob("*") if p.is_file()) / 2**20,
        "longest_read_ms": said[-1].get("longest_read_ms") if said else None,
        "halfway": said[len(said) // 2] if said else {},
        "during": {
            u: {
                "median_ms": statistics.median(m for m, _ in v) if v else None,
                "worst_ms": max((m for m, _ in v), default=None),
                "statuses": sorted({s for _, s in v}),
            }
            for u, v in during.items()
        },
    }


def pages(t: Target) -> list[tuple[str, str, str]]:
    """(group, name, URL) of every page measured, with this file's own ids."""
    q = urllib.parse.quote
    files = get_json(t.client, "/files?format=json&limit=200&workspace=")[2].get("changes", [])
    counts: dict[str, int] = {}
    for c in files:
        counts[c["path"]] = counts.get(c["path"], 0) + 1
    busy = max(counts, key=counts.get) if counts else "/"
    full = next((c for c in files if c["full"]), files[0] if files else {"ref": "1"})
    ws = next((c["workspace"] for c in files if c["workspace"]), "(none)")
    return [
        ("storage", "/storage", "/storage"),
        ("storage", "/storage JSON", "/storage?format=json"),
        ("files", "/files (by workspace)", "/files"),
        ("files", "/files JSON", "/files?format=json"),
        ("files", "one workspace", f"/files?workspace={q(ws)}"),
        ("files", "a busy file's history", f"/files/history?path={q(busy)}"),
        ("files", "one version", f"/files/change/{q(full['ref'])}"),
        ("files", "a conversation's Files panel", f"/sessions/{q(t.facts['long_id'])}/files"),
        ("reliability", "/stats 30 days (with Reliability)", "/stats?period=30"),
        ("reliability", "/stats all (with Reliability)", "/stats?period=all"),
        ("reliability", "/stats all, JSON", "/stats?period=all&format=json"),
        ("storage", "prune preview with its estimate", "/prune?older_than=300d&format=json"),
    ]


def append_tool_turn(db: Path) -> None:
    """An assistant message calling terminal and its failing result, as Hermes appends them."""
    conn = sqlite3.connect(db, timeout=10)
    with conn:
        sid = conn.execute("SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1").fetchone()[0]
        cid = f"call_bench_{time.time_ns()}"
        calls = [{"id": cid, "type": "function",
                  "function": {"name": "terminal", "arguments": json.dumps({"command": "echo x > bench.txt"})}}]  # fmt: skip
        now = time.time()
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) "
            "VALUES (?, 'assistant', 'benchmark', ?, ?)",
            (sid, json.dumps(calls), now),
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, timestamp) "
            "VALUES (?, 'tool', ?, ?, 'terminal', ?)",
            (sid, json.dumps({"output": "", "exit_code": 1, "error": None}), cid, now + 1),
        )
    conn.close()


def after_writes(targets: list[Target], rounds: int = 5) -> None:
    for _ in range(rounds):
        for t in targets:
            for name, url in (("/stats 365 days, just after a tool call", "/stats?period=365"),
                              ("/files, just after a tool call", "/files")):  # fmt: skip
                append_tool_turn(t.db)
                ms, status, _ = timed_get(t.client, url)
                t.times.setdefault(name, []).append(ms)
                t.statuses.setdefault(name, set()).add(status)


def med(v: list[float]) -> float | None:
    return statistics.median(v) if v else None


def f1(v: float | None) -> str:
    return "—" if v is None else f"{v:,.1f}"


def write(out: Path, targets: list[Target], plist, machine: dict, quiet: Quietness, when: str):
    small, large = targets
    b = [t.build for t in targets]
    lines = [
        "<!-- know:start -->",
        "## Storage, Files and Reliability: a million messages against ten million (issue 48)",
        "",
        f"Measured {when} by `benchmarks/know.py` on {machine['nproc']} cores ({machine['cpu']}), "
        f"{machine['memory']}, SQLite {machine['sqlite']}, Python {machine['python']}.",
        quiet.line(),
        "",
        "| | " + " | ".join(t.label for t in targets) + " |",
        "|---|---:|---:|",
        "| sessions / messages | " + " | ".join(f"{t.facts['sessions']:,} / {t.facts['messages']:,}" for t in targets) + " |",
        "| file | " + " | ".join(f"{t.facts['size_gb']} GB" for t in targets) + " |",
        "| first page after start | " + " | ".join(f"{x['first_page_s']:.2f} s" for x in b) + " |",
        "| digest complete after (background, from start; the stats rollup first) | " + " | ".join(f1(x["digest_s"]) + " s" for x in b) + " |",
        "| every table and index measured by dbstat after | " + " | ".join(f1(x["objects_s"]) + " s" for x in b) + " |",
        "| server RSS peak during the passes | " + " | ".join(f"{x['rss_peak_mb']:.0f} MB" for x in b) + " |",
        "| server RSS after every page | " + " | ".join(f"{x.get('rss_steady_mb', 0):.0f} MB" for x in b) + " |",
        "| digest file / instance folder | " + " | ".join(f"{x['digest_mb']:.0f} / {x['instance_mb']:.0f} MB" for x in b) + " |",
        "| longest read of state.db by the digest | " + " | ".join(f1(x["longest_read_ms"]) + " ms" for x in b) + " |",
        "| /storage meanwhile (halfway) | " + " | ".join(
            f"HTTP {x['halfway'].get('status')}, {x['halfway'].get('messages_seen_up_to_id', 0):,} of "
            f"{x['halfway'].get('newest_message_id', 0):,} read at {x['halfway'].get('s')} s" for x in b) + " |",
    ]  # fmt: skip
    for url in small.build["during"]:
        lines.append(
            f"| `{url}` during the passes (median, worst; statuses) | "
            + " | ".join(
                f"{f1(x['during'][url]['median_ms'])} ms, {f1(x['during'][url]['worst_ms'])} ms; "
                f"{', '.join(map(str, x['during'][url]['statuses']))}"
                for x in b
            )
            + " |"
        )
    lines += [
        "",
        "Pages, warm, each server in turn; medians in ms (HTTP through the real server):",
        "",
        f"| page | {small.label} | {large.label} | ratio |",
        "|---|---:|---:|---:|",
    ]
    names = [name for _g, name, _u in plist] + [
        "/stats 365 days, just after a tool call",
        "/files, just after a tool call",
    ]
    for name in names:
        a, z = med(small.times.get(name, [])), med(large.times.get(name, []))
        if a is None or z is None:
            continue
        bad = {s for t in targets for s in t.statuses.get(name, set())} - {200}
        lines.append(
            f"| {name} | {a:.1f} | {z:.1f} | {z / a:.2f}×"
            + (f" (HTTP {sorted(bad)})" if bad else "")
            + " |"
        )
    lines.append("<!-- know:end -->")
    write_section(out, "know", "\n".join(lines))
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=Path, required=True)
    ap.add_argument("--large", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args(argv)
    targets = [Target("1M", args.small.resolve()), Target("10M", args.large.resolve())]
    machine = facts_machine()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    work = Path(tempfile.mkdtemp(prefix="logbook-know-"))
    quiet = Quietness()
    try:
        for t in targets:
            t.facts = discover(t.db)
            print(t.label, json.dumps(t.facts), flush=True)
        for t in targets:  # one at a time: each build has the machine to itself
            build(t, work / f"instance-{t.label}")
            print(t.label, json.dumps(t.build), flush=True)
        plists = [pages(t) for t in targets]
        for _ in range(args.rounds):
            for k in range(len(plists[0])):
                for t, plist in zip(targets, plists, strict=True):
                    _g, name, url = plist[k]
                    if name not in t.times:
                        timed_get(t.client, url)  # warm-up
                    ms, status, _ = timed_get(t.client, url)
                    t.times.setdefault(name, []).append(ms)
                    t.statuses.setdefault(name, set()).add(status)
        after_writes(targets)
        for t in targets:
            t.build["rss_steady_mb"] = proc_status(t.server.pid).get("VmRSS", 0) / 1024
        quiet.finish(targets[1].server.pid)
        quiet.other_s = max(0.0, quiet.other_s - process_cpu_s(targets[0].server.pid))
        write(args.out, targets, plists[1], machine, quiet, when)
    finally:
        for t in targets:
            if t.client is not None:
                t.client.close()
            if t.server is not None:
                t.server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
