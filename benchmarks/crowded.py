"""Logbook's command line in a process that first holds N other descriptors, as hundreds of
archive stores and their journals would: every connection it then accepts is numbered past
1,024, what waitress's select() loop could not watch (issue 49, B-2: ``ValueError:
filedescriptor out of range in select()`` killed the process). attacks.py runs its server this
way, so each attack is also one against a crowded process.

    python benchmarks/crowded.py 1100 --db …/state.db --port 9131 …   (Logbook's own options)
"""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    held = int(sys.argv[1])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = held + 4096
    if soft != resource.RLIM_INFINITY and soft < want:
        ceiling = want if hard == resource.RLIM_INFINITY else min(hard, want)
        resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
    fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(held)]
    print(f"  Crowded:  {len(fds)} other descriptors held (highest {max(fds)})", flush=True)
    from webui.cli import main as logbook

    return logbook(sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
