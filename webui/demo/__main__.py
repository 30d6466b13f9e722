"""python -m webui.demo OUT.db: generate a demo/benchmark database from the command line."""

from __future__ import annotations

import argparse
import os
import sys
import time

from webui.demo import generate
from webui.demo.spec import DEFAULT_NOW

# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m webui.demo",
                                 description="Generate a realistic, deterministic Hermes v11 state.db.")
    ap.add_argument("out", help="output path (must not exist)")
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--messages-per-session", type=float, default=14.0)
    ap.add_argument("--long-session", type=int, default=0, metavar="K",
                    help="add one extra session with exactly K messages")
    ap.add_argument("--text-scale", type=float, default=1.0, metavar="X",
                    help="scale message lengths (1.0: ~5.5 KB/message on disk; ~0.3: ~1.5 KB, like real Hermes)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--now", type=float, default=None, help=f"anchor epoch seconds (default {DEFAULT_NOW:.0f})")
    ap.add_argument("--quiet", action="store_true", help="no progress output")
    ap.add_argument("--schema", type=int, default=11, choices=(11, 22, 31),
                    help="11 (the reference documents), 22 (Hermes 0.19.0, with origins) or 31 "
                         "(Hermes 0.22.2's fresh layout, the same data)")
    args = ap.parse_args(argv)

    last = [0.0]

    def report(done: int, total: int) -> None:
        t = time.perf_counter()
        if t - last[0] >= 2 or done == total:
            last[0] = t
            pct = 100.0 * done / total if total else 100.0
            print(f"\r{done:,}/{total:,} messages ({pct:5.1f}%)", end="", file=sys.stderr, flush=True)

    try:
        info = generate(args.out, sessions=args.sessions, seed=args.seed, now=args.now, schema=args.schema,
                        long_session_messages=args.long_session, messages_per_session=args.messages_per_session,
                        progress=None if args.quiet else report, text_scale=args.text_scale)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(file=sys.stderr)
    size = os.path.getsize(info.path)
    print(f"wrote {info.path}: {info.sessions:,} sessions, {info.messages:,} messages, "
          f"{size / 1e6:,.1f} MB in {info.seconds:.1f}s"
          + (f"; long session {info.long_session_id}" if info.long_session_id else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
