"""Page times on the benchmark database as schema 11 (as make_db writes it) and as schema 22
(the same file after Hermes 0.19.0 opened it, as happens to every user's file), in one run:
median and p95 of 15 warm requests per page through the app (no HTTP server).

    .venv/bin/python benchmarks/make_db.py --out /tmp/bench/bench-1m.db
    mkdir -p /tmp/bench/h22 && cp /tmp/bench/bench-1m.db /tmp/bench/h22/state.db
    HERMES_HOME=/tmp/bench/h22 ~/.cache/hermes-logbook/hermes-agent-0.19.0/bin/python -c \\
      "from pathlib import Path; from hermes_state import SessionDB; SessionDB(Path('/tmp/bench/h22/state.db')).close()"
    .venv/bin/python benchmarks/schema22_pages.py /tmp/bench/bench-1m.db /tmp/bench/h22/state.db

"Warm" means within the seconds the list's facet and count scans are shared (webui.db.
sessions: _shared); the first request after a session appears or goes pays the scan.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from support import make_app  # noqa: E402

PAGES = [
    ("list JSON, Hermes rows", "/sessions?format=json"),
    ("list JSON, every row", "/sessions?format=json&rows=all"),
    ("list HTML, Hermes rows", "/sessions"),
    ("list HTML, every row", "/sessions?rows=all"),
    ("list JSON, last active", "/sessions?format=json&sort=-last_active"),
    ("list JSON, by cost", "/sessions?format=json&sort=-cost"),
    ("search deploy*", "/search?q=deploy*&format=json"),
    ("stats 365 d", "/stats?period=365&format=json"),
]


def measure(db: Path, n: int = 15) -> dict[str, tuple[float, float]]:
    client = make_app(db, Path(tempfile.mkdtemp())).test_client()
    out = {}
    for name, url in PAGES:
        for _ in range(2):
            assert client.get(url).status_code == 200, url
        times = []
        for _ in range(n):
            t = time.perf_counter()
            client.get(url).get_data()
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        out[name] = (statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)])
    return out


if __name__ == "__main__":
    v11, v22 = measure(Path(sys.argv[1])), measure(Path(sys.argv[2]))
    print("| page | schema 11 median (p95) ms | schema 22 median (p95) ms |")
    print("|---|---:|---:|")
    for name, _ in PAGES:
        a, b = v11[name], v22[name]
        print(f"| {name} | {a[0]:.1f} ({a[1]:.1f}) | {b[0]:.1f} ({b[1]:.1f}) |")
