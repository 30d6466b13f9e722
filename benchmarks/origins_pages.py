"""Origin pages (schema 22) on a million messages: a chat's timeline with 250 sessions, the
chats, workspaces and people pages, the list with its origin facets, search within one chat.
Median and p95 of warm requests per page through the app (no HTTP server), in one run, and
each page's ratio to the plain list's JSON measured in the same run.

The database: the schema-22 benchmark file (see schema22_pages.py) with origins written by
Hermes 0.19.0's own code (tests/oracle/origins_fixture.py --big: a peer for every gateway
session, a folder and branch for every CLI session, and one Telegram DM of 250 sessions):

    mkdir -p /tmp/bench/h22o && cp /tmp/bench/h22/state.db /tmp/bench/h22o/state.db
    HERMES_HOME=/tmp/hh ~/.cache/hermes-logbook/hermes-agent-0.19.0/bin/python \\
      tests/oracle/origins_fixture.py /tmp/bench/h22o/state.db --big 250
    .venv/bin/python benchmarks/origins_pages.py /tmp/bench/h22o/state.db
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from schema22_pages import warm_times  # noqa: E402

from support import make_app  # noqa: E402

BIG = "agent:main:telegram:dm:99"
PAGES = [
    ("list JSON (the yardstick)", "/sessions?format=json"),
    ("chat timeline HTML, first page", f"/chats/{BIG}"),
    ("chat timeline HTML, latest session", f"/chats/{BIG}?from={{latest}}"),
    ("chat timeline HTML, middle", f"/chats/{BIG}?from={{middle}}"),
    ("chat timeline JSON, first page", f"/chats/{BIG}?format=json"),
    ("chats HTML", "/chats"),
    ("workspaces HTML", "/workspaces"),
    ("people HTML", "/people"),
    ("list HTML with origin facets", "/sessions"),
    ("list JSON, one chat", f"/sessions?format=json&rows=all&session_key={BIG}"),
    ("search kubernetes in the chat", f"/search?q=kubernetes&session_key={BIG}&format=json"),
    (
        "chat transcript (Markdown, 250 sessions)",
        f"/export.md?style=transcript&session_key={BIG}&rows=all&sort=started",
    ),
]


def measure(db: Path, n: int = 15) -> dict[str, tuple[float, float]]:
    from webui.web.logbooks import get_logbook

    app = make_app(db, Path(tempfile.mkdtemp()))
    client = app.test_client()
    with app.app_context():
        ids = [
            r["id"]
            for r in get_logbook().reader.rows(
                "SELECT id FROM sessions WHERE session_key = ? ORDER BY started_at, id", [BIG]
            )
        ]
    out = {}
    for name, url in PAGES:
        url = url.format(latest=ids[-1], middle=ids[len(ids) // 2])
        out[name] = warm_times(client, url, n)
    out["sessions in the chat"] = (len(ids), 0.0)
    return out


if __name__ == "__main__":
    results = measure(Path(sys.argv[1]))
    base = results["list JSON (the yardstick)"][0]
    print("| page | median ms (p95) | ratio to list JSON |")
    print("|---|---:|---:|")
    for name, (med, p95) in results.items():
        if name == "sessions in the chat":
            print(f"| {name} | {int(med)} | — |")
        else:
            print(f"| {name} | {med:.1f} ({p95:.1f}) | {med / base:.1f}× |")
