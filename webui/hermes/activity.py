"""When a session counts as live.

Hermes writes ``ended_at`` when a session closes, but a gateway that crashed or a CLI that was
killed leaves sessions that never close. Hermes 0.19's dashboard calls a session active when it
has no end *and* its last activity is under five minutes old (``web_server.py``:
``ended_at is None and now - last_active < 300``); Logbook uses the same rule, so "live"
means someone is talking to it now, not that it was never closed."""

from __future__ import annotations

import time

ACTIVE_WINDOW_S = 300


def session_state(
    ended_at: float | None, last_active: float | None, now: float | None = None
) -> str:
    """'ended', 'live' (no end, active in the last five minutes) or 'open' (no end recorded,
    but idle: a session Hermes never closed)."""
    if ended_at is not None:
        return "ended"
    now = time.time() if now is None else now
    try:
        idle = now - float(last_active) if last_active is not None else None
    except (TypeError, ValueError):
        idle = None
    return "live" if idle is not None and idle < ACTIVE_WINDOW_S else "open"
