"""Jinja filters: numbers, money, times. Presentation only, no business rules."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any


def num(value: Any) -> str:
    if value is None or value == "":
        return "—"
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)


def compact(value: Any) -> str:
    """1234 → 1.2k, 1_234_567 → 1.2M."""
    if value is None:
        return "—"
    try:
        n = float(value)
    except (TypeError, ValueError):
        return str(value)
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f}".rstrip("0").rstrip(".") + unit
    return f"{int(n):,}"


def money(value: Any) -> str:
    if value is None:
        return "—"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if v == 0:
        return "$0"
    if abs(v) < 0.01:
        return f"${v:.4f}"
    if abs(v) < 100:
        return f"${v:.2f}"
    return f"${v:,.0f}"


def nbytes(value: Any) -> str:
    n = float(value or 0)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def _dt(ts: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(ts)).astimezone()
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def iso(ts: Any) -> str:
    d = _dt(ts)
    return d.isoformat(timespec="seconds") if d else ""


def exact(ts: Any) -> str:
    d = _dt(ts)
    return d.strftime("%Y-%m-%d %H:%M:%S %Z") if d else "—"


def exact_short(ts: Any) -> str:
    d = _dt(ts)
    return d.strftime("%Y-%m-%d %H:%M") if d else "—"


def short_time(ts: Any) -> str:
    d = _dt(ts)
    return d.strftime("%H:%M:%S") if d else ""


def relative(ts: Any, now: float | None = None) -> str:
    d = _dt(ts)
    if d is None:
        return "—"
    delta = (now or time.time()) - float(ts)
    future = delta < 0
    delta = abs(delta)
    for unit, size in (("y", 365 * 86400), ("mo", 30 * 86400), ("d", 86400), ("h", 3600),
                       ("min", 60)):
        if delta >= size:
            n = int(delta // size)
            return f"in {n} {unit}" if future else f"{n} {unit} ago"
    return "just now"


def duration(seconds: Any) -> str:
    if seconds is None:
        return "—"
    s = int(float(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def rowid(session_id: Any) -> str:
    """A stable, HTML-safe element id for a session's row (ids may hold any character)."""
    import hashlib
    return hashlib.sha1(str(session_id).encode()).hexdigest()[:12]


FILTERS = {
    "rowid": rowid,
    "num": num, "compact": compact, "money": money, "nbytes": nbytes, "iso": iso,
    "exact": exact, "exact_short": exact_short, "relative": relative, "duration": duration, "short_time": short_time,
}
