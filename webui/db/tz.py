"""Days in the reader's time zone. SQLite knows only UTC and the server's zone; a browser may
be anywhere. A zone's offset changes only at its transitions (daylight saving), so a period's
timestamps are shifted by a CASE over the transitions inside it, computed here with zoneinfo:
exact days for any zone, still one pass over the rows."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from webui.db.errors import BadRequest

UTC = "UTC"
_DAY = 86400


def zone(name: str | None) -> ZoneInfo:
    """The IANA zone ``name`` (UTC when empty), or a 400 that says what is wrong."""
    name = (name or UTC).strip() or UTC
    if len(name) > 64 or ".." in name or name.startswith("/"):
        raise BadRequest(f"'{name[:64]}' is not a time zone name (like Europe/Berlin or UTC).")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise BadRequest(f"'{name}' is not a time zone name (like Europe/Berlin or UTC).") from None


LATEST = 253402214400.0  # 9999-12-31 00:00 UTC: the last day every zone can still show


def _offset(tz: ZoneInfo, ts: float) -> int:
    offset = dt.datetime.fromtimestamp(ts, dt.UTC).astimezone(tz).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


def offsets(tz: ZoneInfo, start: float, end: float) -> list[tuple[float, int]]:
    """[(from_ts, offset_seconds)] covering [start, end]: the first entry starts at ``start``;
    each later one at a transition (found to the second)."""
    # A damaged row's time (-1e20, 1e308) is no reason to walk the calendar past its ends.
    start = int(min(max(start, 0.0), LATEST))
    end = int(min(max(end, start), LATEST)) + 1
    out: list[tuple[float, int]] = [(start, _offset(tz, start))]
    t = start
    while t < end:
        nxt = min(t + _DAY, end)
        if _offset(tz, nxt) != out[-1][1]:
            lo, hi = t, nxt  # the change lies in (lo, hi]
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _offset(tz, mid) == out[-1][1]:
                    lo = mid
                else:
                    hi = mid
            out.append((hi, _offset(tz, hi)))
        t = nxt
    return out


def local_seconds(column: str, tz: ZoneInfo, start: float, end: float) -> str:
    """SQL: ``column`` (epoch seconds) shifted into ``tz``'s wall-clock seconds, exact for rows
    between ``start`` and ``end``."""
    steps = offsets(tz, start, end)
    if len(steps) == 1:
        return f"({column} + {steps[0][1]})"
    cases = " ".join(
        f"WHEN {column} < {nxt!r} THEN {off}"
        for (_, off), (nxt, _) in zip(steps, steps[1:], strict=False)
    )
    return f"({column} + CASE {cases} ELSE {steps[-1][1]} END)"
