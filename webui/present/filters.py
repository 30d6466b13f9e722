"""Jinja filters: numbers, money, times. Presentation only, no business rules."""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Any

from markupsafe import Markup

from webui import keep
from webui.hermes.cost import group_cost as group_cost_rule
from webui.hermes.cost import session_cost


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
    """A dollar figure, for an amount that is one. Every cost of a session or a group goes
    through ``cost`` (or ``group_cost``), which decides first whether there is a dollar figure
    at all: unknown and included work is named, never "$0"."""
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


def axis_money(value: Any) -> str:
    """A chart axis's dollar tick: its zero is the axis's origin, written "0"."""
    try:
        return "0" if float(value) == 0 else money(value)
    except (TypeError, ValueError):
        return money(value)


COST_TITLES = {
    "actual": "actual cost, as the provider billed it",
    "estimated": "estimated from the token counts and the price table",
    "included": "included in a subscription: no per-token charge",
    "unknown": "unknown: Hermes had no price for this model",
    "group": "the sum of the priced sessions' costs (billed where the provider reported it, "
    "else estimated)",
}


def _getter(row: Any):
    if hasattr(row, "get"):
        return row.get
    return lambda k, d=None: getattr(row, k, d)


def _is_group(row: Any) -> bool:
    """A group of sessions (a model, a day, a chat, a chain) carries its session count; a
    session row never has one."""
    return _getter(row)("sessions") is not None


def _cost_parts(row: Any) -> tuple[str, str]:
    get = _getter(row)
    if _is_group(row):
        figure, left_out = group_cost_parts(row)
        if left_out:
            return f"{figure} + {left_out}", "group"
        return figure, figure if figure in ("unknown", "included") else "group"
    amount, kind = session_cost(
        get("actual_cost_usd"), get("estimated_cost_usd"), get("cost_status")
    )
    if amount is None:
        return kind, kind
    return ("≈ " if kind == "estimated" else "") + money(amount), kind


def cost_text(row: Any) -> str:
    """A cost as plain text (for SVG labels and titles): ``cost`` without the markup."""
    return _cost_parts(row)[0]


def cost(row: Any) -> Markup:
    """The one way a cost is shown, for a session or a group of sessions. A session: "$0.32"
    (actual), "≈ $0.19" (estimated), "included" or "unknown". A group (a row carrying
    ``sessions``, ``included_sessions``, ``unpriced_sessions`` and ``cost_usd``/``cost``): the
    priced sessions' sum saying what it leaves out ("$3.16 + 11 unknown, 13 included"), or
    only words when no session of it was priced. Never "$0" for a cost nobody knows."""
    text, kind = _cost_parts(row)
    if kind == "group" and " + " in text:
        title = COST_TITLES["group"] + "; sessions with no dollar figure are not in it"
    else:
        title = COST_TITLES[kind]
    return Markup('<span class="cost cost-{}" title="{}">{}</span>').format(kind, title, text)


def as_group(amount: Any, sessions: Any, included: Any = 0, unpriced: Any = 0) -> dict[str, Any]:
    """Figures kept apart (a report's totals, a top list's value) as a group for ``cost``."""
    return {
        "cost_usd": amount,
        "sessions": sessions or 0,
        "included_sessions": included or 0,
        "unpriced_sessions": unpriced or 0,
    }


TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def tokens(row: Any) -> int:
    """A row's tokens by Logbook's one definition (``webui.db.sql.tokens``): input + output +
    cache read + cache write; reasoning tokens are part of output."""
    get = row.get if hasattr(row, "get") else (lambda k: getattr(row, k, None))
    total = 0
    for kind in TOKEN_KINDS:
        try:
            total += int(get(kind) or 0)
        except (TypeError, ValueError):
            continue
    return total


def group_cost_parts(row: Any) -> tuple[str, str]:
    """(the figure, what it leaves out): ("$3.16", "11 unknown, 13 included"); a group with no
    dollar figure at all is never "$0": ("unknown", ""), ("included", ""), or
    ("11 unknown, 13 included", ""). The rule is ``webui.hermes.cost.group_cost``."""
    get = _getter(row)
    amount = get("cost_usd")
    if amount is None:
        amount = get("cost")
    # A model used only for auxiliary calls counts the sessions those calls belong to.
    sessions = get("sessions") or get("aux_sessions")
    figure, unknown, included = group_cost_rule(
        amount, sessions, get("included_sessions"), get("unpriced_sessions")
    )
    left_out = ", ".join(
        f"{n:,} {word}" for n, word in ((unknown, "unknown"), (included, "included")) if n
    )
    if figure is not None and not figure and not sessions:
        return "—", ""  # nothing to price: no sessions (an empty period, a day before)
    if figure is None:
        if not unknown:
            return ("included" if included else "—"), ""
        if not included:
            return "unknown", ""
        return left_out, ""
    return money(figure), left_out


def group_cost(row: Any) -> str:
    """The cost of a group of sessions as plain text: a sum in dollars that says what it
    leaves out ("$3.16 + 11 unknown, 13 included"), never "$0" for a group with no dollar
    figure at all (``cost`` is the same with its markup)."""
    figure, left_out = group_cost_parts(row)
    return f"{figure} + {left_out}" if left_out else figure


def status_part(row: Any, kind: str) -> str:
    """The actual or estimated part of a cost-status group: "—" where the group's sessions
    report none of that kind (an "estimated" group's actual cost is not $0, it was never
    reported; nor is an "actual" group's estimate), or where the group has no dollar figure."""
    get = _getter(row)
    figure, _unknown, _included = group_cost_rule(
        0, get("sessions"), get("included_sessions"), get("unpriced_sessions")
    )
    if figure is None:
        return "—"
    value = get(f"{kind}_cost_usd")
    reports = {"actual": "actual", "estimated": "estimated"}
    if not value and str(get("status") or "") != reports[kind]:
        return "—"
    return money(value)


def nbytes(value: Any) -> str:
    n = float(value or 0)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def _dt(ts: Any) -> datetime | None:
    try:
        return local_datetime(float(ts))
    except (TypeError, ValueError, OverflowError, OSError):
        return None


@keep.memoize(8192)
def local_datetime(ts: float) -> datetime:
    """A timestamp in the server's time zone. Each row shows its times three ways (ISO for
    the machine, exact on hover, relative), and astimezone() builds a zone each call: kept."""
    return datetime.fromtimestamp(ts).astimezone()


def iso(ts: Any) -> str:
    d = _dt(ts)
    return d.isoformat(timespec="seconds") if d else ""


def iso_minute(ts: Any) -> str:
    """The server's local time to the minute, as an <input type=datetime-local> reads it."""
    d = _dt(ts)
    return d.strftime("%Y-%m-%dT%H:%M") if d else ""


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
    for unit, size in (
        ("y", 365 * 86400),
        ("mo", 30 * 86400),
        ("d", 86400),
        ("h", 3600),
        ("min", 60),
    ):
        if delta >= size:
            n = int(delta // size)
            return f"in {n} {unit}" if future else f"{n} {unit} ago"
    return "just now"


def span(started: Any, ended: Any) -> float | None:
    """Seconds from ``started`` to ``ended``, None when either is not a time."""
    if not isinstance(started, (int, float)) or not isinstance(ended, (int, float)):
        return None
    return ended - started


def duration(seconds: Any) -> str:
    if seconds is None:
        return "—"
    try:
        s = int(float(seconds))
    except (TypeError, ValueError, OverflowError):
        return "—"
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


_STAMPED_ID = re.compile(r"^\d{8}_\d{6}_(.+)$")


_CRON_ID = re.compile(r"^cron_([0-9A-Za-z]+)_(\d{8}_\d{6})$")


def short_id(session_id: Any) -> str:
    """The part of a session id that tells sessions apart. Hermes ids start with the date
    and time (``20261031_174951_f7466a``), which every row of a day shares: show the random
    tail (``…f7466a``). Cron runs (``cron_<job>_<date>_<time>``) differ by their time: show
    the job's start and the time. Other ids keep their first 12 characters."""
    text = str(session_id)
    m = _STAMPED_ID.match(text)
    if m:
        return "…" + m.group(1)
    m = _CRON_ID.match(text)
    if m:
        return f"cron_{m.group(1)[:6]}…{m.group(2)}"
    return text if len(text) <= 12 else text[:12] + "…"


def model_short(model: Any) -> str:
    """A model's name without its provider's prefix ("anthropic/claude-sonnet-4.6" →
    "claude-sonnet-4.6"), for a narrow column whose tooltip holds the whole name."""
    text = str(model or "").strip()
    return text.rsplit("/", 1)[-1] if text else ""


def rowid(session_id: Any) -> str:
    """A stable, HTML-safe element id for a session's row (ids may hold any character)."""
    import hashlib

    return hashlib.sha1(str(session_id).encode()).hexdigest()[:12]


FILTERS = {
    "rowid": rowid,
    "short_id": short_id,
    "model_short": model_short,
    "num": num,
    "compact": compact,
    "money": money,
    "as_group": as_group,
    "cost": cost,
    "cost_text": cost_text,
    "group_cost": group_cost,
    "group_cost_parts": group_cost_parts,
    "status_part": status_part,
    "tokens": tokens,
    "nbytes": nbytes,
    "iso": iso,
    "iso_minute": iso_minute,
    "exact": exact,
    "exact_short": exact_short,
    "relative": relative,
    "duration": duration,
    "span": span,
    "short_time": short_time,
}
