"""The whole history against the live file alone, side by side in one run (issue 35).

Two servers on the same live database (a million messages, schema 22): one reads it alone, the
other with an archives folder of ``--archives`` more files of a million messages each (made by
the generator with their own seeds, so their sessions are their own, as a user's monthly
archives are). Every page a user opens first — the list (newest, by cost, a source), search
(a word, a phrase, a prefix), stats, people, workspaces, /stores — is asked of each server in
turn, ``--rounds`` times after a warm-up, and the medians are compared. A session shown from
an archive (the viewer, following the redirect) is timed too.

    .venv/bin/python benchmarks/stores.py --live benchmarks/data/bench-1m-v22.db \\
        --archives 5 --out benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from run import Client, Quietness, Server, facts_machine, timed_get, write_section  # noqa: E402

DATA = HERE / "data"
VIEWER_REDIRECT = "an archived session's address (302 to its store)"
VIEWER = "an archived session's page (its longest)"
PAGES = (
    ("list, newest", "/sessions?format=json"),
    ("list by cost", "/sessions?sort=-cost&format=json"),
    ("list, telegram", "/sessions?source=telegram&format=json"),
    ("search docker", "/search?q=docker&format=json"),
    ('search "docker compose"', "/search?q=%22docker+compose%22&format=json"),
    ("search deploy*", "/search?q=deploy%2A&format=json"),
    ("stats 30 days", "/stats?period=30&format=json"),
    ("people", "/people?format=json"),
    ("workspaces", "/workspaces?format=json"),
    ("stores", "/stores?format=json"),
)


def archive_files(n: int, folder: Path) -> list[Path]:
    """``n`` generated files of a million messages (kept in benchmarks/data, built once)."""
    out = []
    for i in range(n):
        path = DATA / f"archive-{i + 1}.db"
        if not path.exists():
            subprocess.run(
                [
                    sys.executable,
                    str(HERE / "make_db.py"),
                    "--out",
                    str(path),
                    "--seed",
                    str(101 + i),
                ],
                check=True,
                cwd=ROOT,
            )
        link = folder / f"hermes-archive-2025-{i + 1:02d}.db"
        link.symlink_to(path)
        out.append(link)
    return out


def an_archived_session(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT id FROM sessions ORDER BY message_count DESC LIMIT 1"
        ).fetchone()[0]
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--live", type=Path, default=DATA / "bench-1m-v22.db")
    ap.add_argument("--archives", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="logbook-stores-"))
    folder = work / "archives"
    folder.mkdir()
    files = archive_files(args.archives, folder)
    (work / "none").mkdir()  # the live file alone: an archives folder with nothing in it
    alone = Server(args.live, work / "inst-alone", extra=["--archives", str(work / "none")])
    whole = Server(args.live, work / "inst-whole", extra=["--archives", str(folder)])
    quiet = Quietness()
    first = {"alone": alone.start(), "whole": whole.start()}
    ca, cw = Client(alone.port), Client(whole.port)
    sid = an_archived_session(files[-1])
    viewer = f"/sessions/{sid}"
    pinned = f"/sessions/{sid}?store=archive+2025-{args.archives:02d}"
    times: dict[str, dict[str, list[float]]] = {"alone": {}, "whole": {}}
    statuses: dict[str, set[int]] = {}
    try:
        # Both servers' statistics complete first (their background pass), then a warm-up:
        # every page once on each (the kept values of a first visit are not measured).
        for client in (ca, cw):
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                body = json.loads(client.get("/stats?period=30&format=json")[1])
                if body.get("coverage", {}).get("complete"):
                    break
                time.sleep(1)
        for _name, url in PAGES:
            timed_get(ca, url)
            timed_get(cw, url)
        for _ in range(args.rounds):
            for name, url in PAGES:
                for label, client in (("alone", ca), ("whole", cw)):
                    ms, status, _ = timed_get(client, url)
                    times[label].setdefault(name, []).append(ms)
                    statuses.setdefault(name, set()).add(status)
            # A session kept in an archive: the redirect its plain address answers, then its
            # page in the archive's store.
            for name, url in ((VIEWER_REDIRECT, viewer), (VIEWER, pinned)):
                ms, status, _ = timed_get(cw, url)
                times["whole"].setdefault(name, []).append(ms)
                statuses.setdefault(name, set()).add(status)
        merged = json.loads(cw.get("/sessions?format=json")[1])
        quiet.finish(whole.pid)
    finally:
        ca.close()
        cw.close()
        alone.stop()
        whole.stop()
    lines = [
        f"Live file `{args.live.name}` (a million messages, schema 22) alone, and with "
        f"{args.archives} archive files of a million messages each beside it "
        f"({sum(f.resolve().stat().st_size for f in files) / 1e9:.1f} GB); medians of "
        f"{args.rounds} interleaved rounds, warm. {quiet.line()} (The other server of this "
        "run, the live file alone, is one of those other processes: the two take turns.)",
        "",
        f"First answer of /sessions after start: {first['alone']:.2f} s alone, "
        f"{first['whole']:.2f} s with the archives; the merged list's first page held "
        f"{len(merged['sessions'])} rows from {len({r.get('store') for r in merged['sessions']})} "
        "stores. Goals (issue 35): the merged list within 2x, merged search within 3x.",
        "",
        "| page | live alone (ms) | with archives (ms) | ratio | statuses |",
        "|---|---:|---:|---:|---|",
    ]
    for name in [n for n, _ in PAGES] + [VIEWER_REDIRECT, VIEWER]:
        a = times["alone"].get(name)
        w = times["whole"][name]
        ma = statistics.median(a) if a else None
        mw = statistics.median(w)
        ratio = f"{mw / ma:.2f}×" if ma else "—"
        lines.append(
            f"| {name} | {ma:.1f} | {mw:.1f} | {ratio} | {', '.join(map(str, sorted(statuses[name])))} |"
            if ma
            else f"| {name} | — | {mw:.1f} | — | {', '.join(map(str, sorted(statuses[name])))} |"
        )
    m = facts_machine()
    lines += [
        "",
        f"Machine: {m.get('cpu', '?')}, {m.get('nproc', '?')} cores, {m.get('memory', '?')}, "
        f"SQLite {m.get('sqlite', '?')}, Python {m.get('python', '?')}.",
    ]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = "\n".join(
        [
            "<!-- stores:start -->",
            f"## The whole history: the live file beside five archives ({stamp})",
            "",
            *lines,
            "<!-- stores:end -->",
        ]
    )
    print(text)
    if args.out:
        write_section(args.out, "stores", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
