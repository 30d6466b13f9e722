"""Where does a page spend its time?  Every SQL statement it runs (with its own time), then a
cProfile of the whole request, in-process through Flask's test client (no HTTP).

    .venv/bin/python benchmarks/profile_page.py "/stats?period=365"
    .venv/bin/python benchmarks/profile_page.py "/sessions?sort=-last_active" --repeat 10 --top 25

The first request (warm-up: pools, templates, the stats rollup) is not profiled; the next
``--repeat`` requests are, and the SQL table shows the last one.  The instance folder is a fresh
temporary one unless ``--instance`` names one (the stats rollup lives there).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webui import create_app  # noqa: E402
from webui.db import check_database  # noqa: E402
from webui.db.reader import Reader  # noqa: E402
from webui.web.logbooks import get_logbook  # noqa: E402

DEFAULT_DB = ROOT / "benchmarks" / "data" / "bench-1m.db"


class SqlLog:
    """Wraps Reader.rows/scalar/stream to time every statement."""

    def __init__(self):
        self.entries: list[tuple[float, int, str]] = []
        self.on = False

    def install(self):
        self._wrap(Reader)

    def _wrap(self, cls):
        log = self
        orig_rows, orig_scalar = cls.rows, cls.scalar

        def rows(self, sql, params=(), **kw):
            t = time.perf_counter()
            out = orig_rows(self, sql, params, **kw)
            if log.on:
                log.entries.append(((time.perf_counter() - t) * 1000, len(out), sql))
            return out

        def scalar(self, sql, params=(), **kw):
            t = time.perf_counter()
            out = orig_scalar(self, sql, params, **kw)
            if log.on:
                log.entries.append(((time.perf_counter() - t) * 1000, 1, sql))
            return out

        cls.rows, cls.scalar = rows, scalar


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url")
    ap.add_argument("--db", type=Path, default=DEFAULT_DB)
    ap.add_argument("--instance", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--sort", default="cumulative", help="pstats sort key (cumulative, tottime)")
    ap.add_argument(
        "--invalidate",
        action="store_true",
        help="drop the shared figures before each request, as after a write (stats 'computed')",
    )
    args = ap.parse_args(argv)
    log = SqlLog()
    log.install()
    instance = args.instance or Path(tempfile.mkdtemp(prefix="logbook-prof-"))
    try:
        opened = check_database(str(args.db))
        app = create_app(
            {"LOGBOOK_DB": str(opened.path)}, opened=opened, instance_path=str(instance)
        )
        client = app.test_client()
        for _ in range(50):  # warm-up; for /stats, until the rollup is complete
            r = client.get(args.url)
            if not args.url.startswith("/stats"):
                break
            if json.loads(client.get("/stats?period=all&format=json").data)["coverage"]["complete"]:
                client.get(args.url)
                break
        assert r.status_code == 200, r.status_code
        prof = cProfile.Profile()
        times = []
        for _i in range(args.repeat):
            if args.invalidate:
                with app.app_context():
                    get_logbook().sessions.invalidate()
            log.entries.clear()
            log.on = True
            t = time.perf_counter()
            prof.enable()
            r = client.get(args.url)
            prof.disable()
            times.append((time.perf_counter() - t) * 1000)
            log.on = False
        times.sort()
        sql_total = sum(e[0] for e in log.entries)
        print(
            f"{args.url}: {len(r.data):,} bytes; request median {times[len(times) // 2]:.1f} ms "
            f"(min {times[0]:.1f}, max {times[-1]:.1f}) with the profiler on"
        )
        print(
            f"\nSQL of the last request: {len(log.entries)} statements, {sql_total:.1f} ms in all"
        )
        grouped: dict[str, list] = {}
        for ms, n, sql in log.entries:  # the same statement run many times is one line
            g = grouped.setdefault(" ".join(sql.split()), [0.0, 0, 0])
            g[0] += ms
            g[1] += n
            g[2] += 1
        for sql, (ms, n, k) in sorted(grouped.items(), key=lambda kv: -kv[1][0]):
            times = f"{k} × " if k > 1 else ""
            print(f"  {ms:8.2f} ms  {times}{n:6d} rows  {sql[:230]}")
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(args.sort).print_stats(args.top)
        print(f"\ncProfile over {args.repeat} requests (sorted by {args.sort}):")
        print(s.getvalue())
    finally:
        if args.instance is None:
            shutil.rmtree(instance, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
