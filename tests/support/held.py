"""What a process holds open of a database (its descriptors, read from /proc), and waiting for
background work to show (bounded by WAIT_BOUND_S: a bound for a hang, never a speed target)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from support import WAIT_BOUND_S


def held(pid: int, db: Path) -> list[str]:
    """What process ``pid`` holds open of the database and its sidecars."""
    family = {str(db.resolve()) + suffix for suffix in ("", "-wal", "-shm")}
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.removesuffix(" (deleted)") in family:
            found.append(target)
    return sorted(found)


def wait_for(what, timeout: float = WAIT_BOUND_S) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if what():
            return True
        time.sleep(0.1)
    return bool(what())
