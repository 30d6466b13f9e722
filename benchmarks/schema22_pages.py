"""Page times on the benchmark databases, in one run: schema 11 (as make_db writes it) and
schema 22 (the same file after Hermes 0.19.0 opened it, as happens to every user's file), at
1M messages and at 100k (growth). Median and p95 of warm requests per page through the app
(no HTTP server), then the ratios.

    .venv/bin/python benchmarks/make_db.py --out /tmp/bench/bench-1m.db
    .venv/bin/python benchmarks/make_db.py --out /tmp/bench/bench-100k.db --sessions 2000
    for d in h22 h22-100k; do mkdir -p /tmp/bench/$d; done
    cp /tmp/bench/bench-1m.db /tmp/bench/h22/state.db
    cp /tmp/bench/bench-100k.db /tmp/bench/h22-100k/state.db
    for d in h22 h22-100k; do HERMES_HOME=/tmp/bench/$d \\
      ~/.cache/hermes-logbook/hermes-agent-0.19.0/bin/python -c "from pathlib import Path; \\
      from hermes_state import SessionDB; SessionDB(Path('/tmp/bench/$d/state.db')).close()"; done
    .venv/bin/python benchmarks/schema22_pages.py v11-1m=/tmp/bench/bench-1m.db \\
      v22-1m=/tmp/bench/h22/state.db v22-100k=/tmp/bench/h22-100k/state.db

"Shared" stats: the same report asked again while nobody wrote to the file (it is shared
until the next commit); "computed": after a write, every figure read afresh. "First stats
visit": a new server, empty rollup, the background warmer started: seconds until the rollup
is complete, and how the first request answered (at once, partial, with progress).
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
    ("list JSON", "/sessions?format=json"),
    ("list HTML", "/sessions"),
    ("list JSON, every row", "/sessions?format=json&rows=all"),
    ("list JSON, last active", "/sessions?format=json&sort=-last_active"),
    ("list JSON, by cost", "/sessions?format=json&sort=-cost"),
    ("list JSON, telegram", "/sessions?format=json&source=telegram"),
    ("viewer JSON, 5,000-msg session", "/sessions/{long}?format=json"),
    ("viewer HTML, 5,000-msg session", "/sessions/{long}"),
    ("search deploy*", "/search?q=deploy*&format=json"),
    ('search "docker compose"', "/search?q=%22docker+compose%22&format=json"),
    ("search the", "/search?q=the&format=json"),
    ("search kubernetes", "/search?q=kubernetes&format=json"),
    ("search deploy* in telegram", "/search?q=deploy*&source=telegram&format=json"),
    ("stats 7 d, shared", "/stats?period=7&format=json"),
    ("stats 365 d, shared", "/stats?period=365&format=json"),
    ("stats all, shared", "/stats?period=all&format=json"),
]
# The same HTML pages with nothing kept rendered (rows, messages, Markdown): a first visit.
AFRESH = [
    ("list HTML, rows rendered afresh", "/sessions"),
    ("viewer HTML, rendered afresh", "/sessions/{long}"),
]
COMPUTED = [
    ("stats 7 d, computed", "/stats?period=7&format=json"),
    ("stats 30 d, computed", "/stats?period=30&format=json"),
    ("stats 365 d, computed", "/stats?period=365&format=json"),
    ("stats all, computed", "/stats?period=all&format=json"),
]


def _quantiles(times: list[float]) -> tuple[float, float]:
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)]


def warm_times(client, url: str, n: int) -> tuple[float, float]:
    """Median and p95 (ms) of ``n`` requests for ``url`` after two warm-up requests."""
    for _ in range(2):
        # Read whole and closed, as a browser does: a streamed export left unread keeps its
        # client's one export slot (the next one would be refused with 429).
        response = client.get(url)
        response.get_data()
        response.close()
        assert response.status_code == 200, url
    times = []
    for _ in range(n):
        t = time.perf_counter()
        client.get(url).get_data()
        times.append((time.perf_counter() - t) * 1000)
    return _quantiles(times)


def forget_rendered(app) -> None:
    """Drop every kept rendering: rows and messages (present/fragments.py), message views
    and the memoised Markdown, JSON and tool calls (webui/keep.py)."""
    from webui.present import markdown, rows

    app.jinja_env.fragment_cache.kept.clear()
    rows._ROW_VIEWS.clear()
    for fn in (
        markdown.markdown,
        markdown.highlight_json,
        rows.json_result,
        rows.tool_calls_view,
        rows._structured,
    ):
        fn.cache.clear()


def measure(db: Path, n: int = 15) -> dict[str, tuple[float, float]]:
    from webui.db import start_rollup_warmer
    from webui.web.logbooks import get_logbook

    app = make_app(db, Path(tempfile.mkdtemp()))
    client = app.test_client()
    out: dict[str, tuple[float, float]] = {}
    with app.app_context():
        lb = get_logbook()
        t = time.perf_counter()
        first = client.get("/stats?period=30&format=json")
        first_s = time.perf_counter() - t
        complete = first.get_json()["coverage"]["complete"]
        warmer = start_rollup_warmer(app, lb)
        warmer.join()
        out["first stats visit: answer (s)"] = (first_s, float(complete))
        out["first stats visit: rollup complete (s)"] = (time.perf_counter() - t, 0.0)
        long_id = lb.reader.scalar(
            "SELECT session_id FROM messages GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1"
        )
    for name, url in PAGES:
        out[name] = warm_times(client, url.format(long=long_id), n)
    for name, url in AFRESH:
        times = []
        for _ in range(7):
            forget_rendered(app)
            t = time.perf_counter()
            client.get(url.format(long=long_id)).get_data()
            times.append((time.perf_counter() - t) * 1000)
        out[name] = _quantiles(times)
    for name, url in COMPUTED:
        times = []
        for _ in range(5):
            with app.app_context():
                get_logbook().sessions.invalidate()  # as after a write: nothing shared
            t = time.perf_counter()
            client.get(url).get_data()
            times.append((time.perf_counter() - t) * 1000)
        out[name] = _quantiles(times)
    return out


if __name__ == "__main__":
    runs = [arg.split("=", 1) for arg in sys.argv[1:]]
    results = {label: measure(Path(path)) for label, path in runs}
    labels = [label for label, _ in runs]
    header = " | ".join(f"{label} median (p95)" for label in labels)
    ratios = []
    if "v11-1m" in results and "v22-1m" in results:
        ratios.append(("22/11 at 1M", "v22-1m", "v11-1m"))
    if "v22-1m" in results and "v22-100k" in results:
        ratios.append(("1M/100k at 22", "v22-1m", "v22-100k"))
    print(f"| page | {header} | {' | '.join(r[0] for r in ratios)} |")
    print("|---|" + "---:|" * (len(labels) + len(ratios)))
    names = list(results[labels[0]])
    for name in names:
        cells = []
        for label in labels:
            med, p95 = results[label][name]
            if name.startswith("first stats visit: answer"):
                cells.append(f"{med:.2f} s ({'complete' if p95 else 'partial'})")
            elif name.startswith("first stats visit"):
                cells.append(f"{med:.1f} s")
            else:
                cells.append(f"{med:.1f} ({p95:.1f})")
        ratio_cells = [
            f"{results[a][name][0] / results[b][name][0]:.2f}×"
            if results[b][name][0] and not name.startswith("first stats visit: answer")
            else "—"
            for _, a, b in ratios
        ]
        print(f"| {name} | {' | '.join(cells)} | {' | '.join(ratio_cells)} |")
