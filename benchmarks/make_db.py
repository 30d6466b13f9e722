"""Build the benchmark database ``benchmarks/data/bench-1m.db`` (skipped when it exists).

About 20,000 sessions and 1,000,000 messages written by :func:`webui.demo.generate` in
Hermes's exact schema 11 (both FTS5 tables and their triggers), plus one 5,000-message session for
the viewer's deep pages.  The history spans the 365 days before today (00:00 UTC) unless
``--now`` fixes another anchor; seed and arguments are fixed, so a rebuild on the same day is
byte-identical.  ``text_scale`` brings the size to ~1.5 GB, the density of real Hermes
databases (1.4 GB for 977k messages); the generator's default (1.0) would give ~5.5 GB.

    .venv/bin/python benchmarks/make_db.py                 # ~2 minutes on 2 cores
    .venv/bin/python benchmarks/make_db.py --out /tmp/x.db --sessions 2000   # a small one
    .venv/bin/python benchmarks/make_db.py --out /tmp/b/v31.db --schema 31   # Hermes 0.22.2's
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webui.demo import generate  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
DEFAULT_DB = DATA / "bench-1m.db"
SESSIONS = 20_000
MESSAGES_PER_SESSION = 50
LONG_SESSION = 5_000
SEED = 7
# measured: 100k messages at 0.05 -> 1.56 KB/message, falling slowly with size (the FTS doclists
# compress better); 1M messages at 0.05 -> see benchmarks/RESULTS.md ("database")
TEXT_SCALE = 0.05


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_DB)
    ap.add_argument("--sessions", type=int, default=SESSIONS)
    ap.add_argument("--messages-per-session", type=float, default=MESSAGES_PER_SESSION)
    ap.add_argument("--long-session", type=int, default=LONG_SESSION)
    ap.add_argument("--text-scale", type=float, default=TEXT_SCALE)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument(
        "--schema",
        type=int,
        default=11,
        choices=(11, 22, 31),
        help="11 (the reference documents), 22 (Hermes 0.19.0) or 31 (Hermes 0.22.2's fresh "
        "layout: external-content FTS over views); 22 and 31 also write where each "
        "conversation came from, the same in both",
    )
    ap.add_argument(
        "--now",
        type=float,
        default=None,
        help="anchor of the synthetic year (default: today 00:00 UTC, so that the stats "
        "periods '30 days' and '365 days' cover real data, as the demo does)",
    )
    args = ap.parse_args(argv)
    now = args.now if args.now is not None else time.time() // 86400 * 86400

    out: Path = args.out
    if out.exists():
        print(f"{out} exists ({out.stat().st_size / 1e9:.2f} GB): skipped (delete it to rebuild)")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    last = [0.0]

    def progress(done: int, total: int) -> None:
        t = time.perf_counter()
        if t - last[0] >= 5 or done == total:
            last[0] = t
            print(f"  {done:,}/{total:,} messages", file=sys.stderr, flush=True)

    info = generate(
        out,
        sessions=args.sessions,
        seed=args.seed,
        now=now,
        messages_per_session=args.messages_per_session,
        long_session_messages=args.long_session,
        text_scale=args.text_scale,
        progress=progress,
        schema=args.schema,
    )
    size = os.path.getsize(out)
    facts = {
        "path": str(out),
        "sessions": info.sessions,
        "messages": info.messages,
        "long_session_id": info.long_session_id,
        "text_scale": args.text_scale,
        "seed": args.seed,
        "schema": args.schema,
        "now": now,
        "bytes": size,
        "build_seconds": info.seconds,
    }
    out.with_suffix(".json").write_text(json.dumps(facts, indent=1) + "\n")
    print(
        f"wrote {out}: {info.sessions:,} sessions, {info.messages:,} messages, {size / 1e9:.2f} GB "
        f"({size / max(info.messages, 1):,.0f} B/message) in {info.seconds:.0f}s; "
        f"long session {info.long_session_id}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
