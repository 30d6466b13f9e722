"""Every page of RESULTS.md's table on the same million messages in schema 22 (Hermes 0.19.0)
and schema 31 (Hermes 0.22.2's fresh layout: external-content FTS over views, the trigram index
without tool, cron and delegate rows, prompts content-addressed, a usage row per session), side
by side in one run (issue 44 point 7). Both files come from the generator with the same
arguments (``make_db.py --schema 22`` and ``--schema 31``), so they hold the same history.

The machine is shared: requests alternate between the two files (a, b, b, a, …) so a burst of
someone else's load falls on both; the load average is printed before and after. Warm pages:
median and p95 of ``n`` requests through the app (no HTTP server) after two warm-up requests
each. Cold pages (the first request after start, the first stats requests): a new app with an
empty instance folder each time, three rounds, alternating. The export: the whole
``/export.jsonl`` streamed, two rounds, alternating (MB/s).

    .venv/bin/python benchmarks/make_db.py --out /tmp/b/v22-1m.db --schema 22 --now N
    .venv/bin/python benchmarks/make_db.py --out /tmp/b/v31-1m.db --schema 31 --now N
    .venv/bin/python benchmarks/schema31_pages.py /tmp/b/v22-1m.db /tmp/b/v31-1m.db [--n 15]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from support import make_app  # noqa: E402

LIMIT = 1.25  # issue 44: every page within 1.25 times schema 22's


def q(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def discover(db: Path) -> dict:
    """The ids the pages need (the same in both files: the same history)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        d: dict = {}
        d["long_id"], d["long_n"] = conn.execute(
            "SELECT id, message_count FROM sessions ORDER BY message_count DESC LIMIT 1"
        ).fetchone()
        k = min(4500, d["long_n"]) - 1
        d["deep_msg"] = conn.execute(
            "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id LIMIT 1 OFFSET ?",
            (d["long_id"], k),
        ).fetchone()[0]
        d["tree_root"] = conn.execute(
            "WITH RECURSIVE fam(id, root) AS (SELECT id, id FROM sessions WHERE "
            "parent_session_id IS NULL OR parent_session_id NOT IN (SELECT id FROM sessions) "
            "UNION SELECT s.id, fam.root FROM sessions s JOIN fam ON s.parent_session_id = "
            "fam.id) SELECT root FROM fam GROUP BY root ORDER BY COUNT(*) DESC, root LIMIT 1"
        ).fetchone()[0]
        d["messages"] = conn.execute("SELECT MAX(id) FROM messages").fetchone()[0]
        return d
    finally:
        conn.close()


def deep_list(client) -> str:
    """The list's 21st page, reached by following ``next`` 20 times."""
    url = "/sessions?format=json"
    for _ in range(20):
        nxt = client.get(url).get_json()["next"]
        if not nxt:
            break
        url = nxt
    return url


def pages(d: dict, deep_json: str) -> list[tuple[str, str]]:
    parsed = urllib.parse.urlsplit(deep_json)
    qs = [(k, v) for k, v in urllib.parse.parse_qsl(parsed.query) if k != "format"]
    deep_html = parsed.path + "?" + urllib.parse.urlencode(qs)
    lid, mid, root = d["long_id"], d["deep_msg"], d["tree_root"]
    return [
        ("list: default (newest first)", "/sessions"),
        ("list: source=telegram", "/sessions?source=telegram"),
        ("list: sort=-last_active", "/sessions?sort=-last_active"),
        ("list: sort=-messages", "/sessions?sort=-messages"),
        ("list: sort=-tokens", "/sessions?sort=-tokens"),
        ("list: sort=-cost", "/sessions?sort=-cost"),
        ("list: sort=started (oldest first)", "/sessions?sort=started"),
        ("list: deep page (21st, after 20 × next)", deep_html),
        ("list JSON: default", "/sessions?format=json"),
        ("list JSON: sort=-last_active", "/sessions?sort=-last_active&format=json"),
        ("list JSON: deep page", deep_json),
        (f"viewer: first page ({d['long_n']:,}-message session)", f"/sessions/{lid}"),
        ("viewer: deep page (?at= message #4,500)", f"/sessions/{lid}?at={mid}"),
        ("viewer JSON: first page", f"/sessions/{lid}?format=json"),
        ("viewer JSON: deep page", f"/sessions/{lid}?at={mid}&format=json"),
        ("search: rare word “onmouseover”", "/search?q=onmouseover"),
        ("search: commonest word “the”", "/search?q=the"),
        ("search: phrase “\"docker compose\"”", "/search?q=" + q('"docker compose"')),
        ("search: prefix “deploy*”", f"/search?q={q('deploy*')}"),
        ("search: CJK “大别山项目” (trigram)", f"/search?q={q('大别山项目')}"),
        ("search: 2-char CJK “通信” (substring)", f"/search?q={q('通信')}"),
        ("search JSON: rare word", "/search?q=onmouseover&format=json"),
        ("search JSON: “the”", "/search?q=the&format=json"),
        ("search: deploy* in telegram", f"/search?q={q('deploy*')}&source=telegram"),
        ("lineage: largest tree", f"/sessions/{root}/lineage"),
        ("lineage JSON", f"/sessions/{root}/lineage?format=json"),
        ("stats: period=30 (warm)", "/stats?period=30"),
        ("stats: period=365 (warm)", "/stats?period=365"),
        ("stats: period=all (warm)", "/stats?period=all"),
        ("stats JSON: period=365 (warm)", "/stats?period=365&format=json"),
    ]


def _quantiles(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)]


def _get(client, url: str) -> float:
    t = time.perf_counter()
    r = client.get(url)
    r.get_data()
    r.close()
    assert r.status_code == 200, (url, r.status_code)
    return (time.perf_counter() - t) * 1000


def _warm_app(db: Path):
    """A served app whose stats rollup and digest are complete (as after the start-up passes):
    a test app starts no background digest pass, and without it every stats request spent its
    budget reading more of the digest (the Reliability section), about a second each."""
    from webui.db import start_rollup_warmer
    from webui.web.logbooks import get_logbook

    app = make_app(db, Path(tempfile.mkdtemp(prefix="b31-")))
    with app.app_context():
        lb = get_logbook()
        start_rollup_warmer(app, lb).join()
        while not lb.digest.refresh(2.0).complete:
            pass
    return app


def alternating(clients: dict, urls: list[tuple[str, str]], n: int) -> dict:
    labels = list(clients)
    out: dict = {label: {} for label in labels}
    for name, url in urls:
        times: dict = {label: [] for label in labels}
        for label in labels:
            for _ in range(2):
                _get(clients[label], url)
        for i in range(n):
            for label in labels if i % 2 == 0 else labels[::-1]:
                times[label].append(_get(clients[label], url))
        for label in labels:
            out[label][name] = _quantiles(times[label])
        print(f"  {name}: " + ", ".join(f"{k} {v[name][0]:.1f}" for k, v in out.items()),
              file=sys.stderr, flush=True)  # fmt: skip
    return out


COMPUTED = [
    ("stats: period=30 (computed)", "/stats?period=30&format=json"),
    ("stats: period=365 (computed)", "/stats?period=365&format=json"),
    ("stats: period=all (computed)", "/stats?period=all&format=json"),
]


def computed(apps: dict, n: int) -> dict:
    """Stats asked right after a write (nothing shared: every figure read afresh), alternating."""
    from webui.web.logbooks import get_logbook

    labels = list(apps)
    out: dict = {label: {} for label in labels}
    for name, url in COMPUTED:
        times: dict = {label: [] for label in labels}
        for i in range(n):
            for label in labels if i % 2 == 0 else labels[::-1]:
                with apps[label].app_context():
                    get_logbook().sessions.invalidate()  # as after a write
                times[label].append(_get(apps[label].test_client(), url))
        for label in labels:
            out[label][name] = _quantiles(times[label])
        print(f"  {name}: " + ", ".join(f"{k} {v[name][0]:.1f}" for k, v in out.items()),
              file=sys.stderr, flush=True)  # fmt: skip
    return out


def cold(dbs: dict, rounds: int = 3) -> dict:
    """First requests on a new app with an empty instance folder: the list, then the stats
    of 30 days, 365 days and all time (the rollup still building)."""
    firsts = [
        ("first request after start (/sessions)", "/sessions"),
        ("stats: period=30 (cold, first request)", "/stats?period=30"),
        ("stats: period=365 (cold, first request)", "/stats?period=365"),
        ("stats: period=all (cold, first request)", "/stats?period=all"),
    ]
    labels = list(dbs)
    times: dict = {label: {name: [] for name, _ in firsts} for label in labels}
    for i in range(rounds):
        for label in labels if i % 2 == 0 else labels[::-1]:
            client = make_app(dbs[label], Path(tempfile.mkdtemp(prefix="b31c-"))).test_client()
            for name, url in firsts:
                times[label][name].append(_get(client, url))
    return {label: {k: _quantiles(v) for k, v in t.items()} for label, t in times.items()}


def export(clients: dict, rounds: int = 2) -> dict:
    """The whole /export.jsonl, streamed and dropped: seconds and MB/s (median of rounds)."""
    labels = list(clients)
    res: dict = {label: [] for label in labels}
    for i in range(rounds):
        for label in labels if i % 2 == 0 else labels[::-1]:
            t = time.perf_counter()
            r = clients[label].get("/export.jsonl")
            size = sum(len(chunk) for chunk in r.response)
            r.close()
            res[label].append((time.perf_counter() - t, size))
    out = {}
    for label, runs in res.items():
        secs = statistics.median(s for s, _ in runs)
        size = runs[0][1]
        out[label] = {"seconds": secs, "mb": size / 1e6, "mb_s": size / 1e6 / secs}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("v22", type=Path)
    ap.add_argument("v31", type=Path)
    ap.add_argument("--n", type=int, default=15)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    dbs = {"v22": args.v22, "v31": args.v31}
    load_before = os.getloadavg()
    started = time.time()
    d = discover(args.v22)
    assert discover(args.v31) == d, "the two files must hold the same history"
    print("cold…", file=sys.stderr, flush=True)
    cold_times = cold(dbs)
    print("warm…", file=sys.stderr, flush=True)
    apps = {label: _warm_app(db) for label, db in dbs.items()}
    clients = {label: app.test_client() for label, app in apps.items()}
    urls = pages(d, deep_list(clients["v22"]))
    warm = alternating(clients, urls, args.n)
    for label, figures in computed(apps, args.n).items():
        warm[label].update(figures)
    print("export…", file=sys.stderr, flush=True)
    exp = export(clients)
    load_after = os.getloadavg()
    took = time.time() - started
    rows = []
    for name in [*cold_times["v22"], *warm["v22"]]:
        src = cold_times if name in cold_times["v22"] else warm
        a, b = src["v22"][name], src["v31"][name]
        rows.append((name, a, b, b[0] / a[0] if a[0] else None))
    exp_ratio = exp["v22"]["mb_s"] / exp["v31"]["mb_s"]
    print(
        f"| page | schema 22 median (p95) ms | schema 31 median (p95) ms | 31/22 | within "
        f"{LIMIT}× |"
    )
    print("|---|---:|---:|---:|---|")
    for name, a, b, ratio in rows:
        ok = "yes" if ratio is not None and ratio <= LIMIT else "**no**"
        print(
            f"| {name} | {a[0]:.1f} ({a[1]:.1f}) | {b[0]:.1f} ({b[1]:.1f}) | {ratio:.2f}× | {ok} |"
        )
    print(
        f"| export.jsonl, everything (MB/s; ratio = 22's speed / 31's) | "
        f"{exp['v22']['mb_s']:.1f} ({exp['v22']['mb']:.0f} MB, {exp['v22']['seconds']:.1f} s) | "
        f"{exp['v31']['mb_s']:.1f} ({exp['v31']['mb']:.0f} MB, {exp['v31']['seconds']:.1f} s) | "
        f"{exp_ratio:.2f}× | {'yes' if exp_ratio <= LIMIT else '**no**'} |"
    )
    print(
        f"\nload average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f} "
        f"{load_after[2]:.2f}; {os.cpu_count()} cores; run took {took:.0f} s"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "cold": cold_times,
                    "warm": warm,
                    "export": exp,
                    "load": [load_before, load_after],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
