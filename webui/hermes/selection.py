"""Which sessions a bulk action touches: the filters of Hermes 0.19.0's ``hermes sessions
prune / archive / export`` (``hermes_cli/session_filters.py`` and ``SessionDB.
_prune_filter_where``), as pure functions over plain values.

URL and form parameters use the contract's names (``older_than``, ``newer_than``, ``before``,
``after``, ``source``, ``title``, ``end_reason``, ``cwd``, ``branch``, ``model``,
``provider``, ``user``, ``chat_id``, ``chat_type``, ``min_/max_messages``, ``…tokens``,
``…cost``, ``…tool_calls``, ``archived``); the SQL is in ``webui.db.selection``.

Rules kept from Hermes: a bare number is days, ``m`` is minutes; the tighter of two bounds
wins; an empty window is an error; only ended sessions are ever candidates; a filter alone
means all ages (only a completely bare prune means "older than 90 days"); archive refuses to
run without a filter; prune and archive leave archived sessions alone unless asked, export
includes them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, tzinfo
from typing import Any

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(
    r"^(\d+(?:\.\d+)?)\s*(s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|"
    r"hours|d|day|days|w|wk|wks|week|weeks)$"
)
BARE_PRUNE_DAYS = 90


class SelectionError(ValueError):
    """A filter Hermes would refuse; the message is Hermes's own wording where it has one."""


def parse_duration_seconds(value: str) -> float | None:
    text = value.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text) * 86400
    m = _DURATION.match(text)
    if not m:
        return None
    return float(m.group(1)) * _UNITS[m.group(2)[0]]


def parse_point_in_time(value: str, flag: str, now: float, tz: tzinfo | None = None) -> float:
    """A duration ago, or an ISO time (naive: in ``tz``, else the server's zone, as Hermes)."""
    text = (value or "").strip()
    duration = parse_duration_seconds(text) if text else None
    if duration is not None:
        return now - duration
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None and tz is not None:
            moment = moment.replace(tzinfo=tz)
        stamp = moment.timestamp()
    except (ValueError, OverflowError, OSError):
        raise SelectionError(
            f"Invalid value for --{flag}: '{value}'. Use a duration like '5h', '30m', '2d', "
            "'1w', a bare number of days, or an ISO timestamp like '2026-07-05' or "
            "'2026-07-05 14:30'."
        ) from None
    return stamp


@dataclass(frozen=True)
class Selection:
    """Hermes's filter keys (``build_prune_filters``); None means "not given"."""

    started_before: float | None = None
    started_after: float | None = None
    source: str | None = None
    title_like: str | None = None
    end_reason: str | None = None
    cwd_prefix: str | None = None
    min_messages: int | None = None
    max_messages: int | None = None
    model_like: str | None = None
    provider: str | None = None
    user_id: str | None = None
    chat_id: str | None = None
    chat_type: str | None = None
    branch_like: str | None = None
    min_tokens: int | None = None
    max_tokens: int | None = None
    min_cost: float | None = None
    max_cost: float | None = None
    min_tool_calls: int | None = None
    max_tool_calls: int | None = None
    # Tri-state as Hermes: None both, False unarchived only, True archived only.
    archived: bool | None = False
    sessions: tuple[str, ...] = field(default=())

    def given(self) -> dict[str, Any]:
        """The filters that were given (Hermes's "is not None"), time bounds included."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("archived", "sessions") and getattr(self, f.name) is not None
        }

    @property
    def any_filter(self) -> bool:
        return bool(self.given()) or bool(self.sessions)


# URL parameter → (Hermes key, type)
PARAMS: dict[str, tuple[str, type]] = {
    "source": ("source", str),
    "title": ("title_like", str),
    "end_reason": ("end_reason", str),
    "cwd": ("cwd_prefix", str),
    "min_messages": ("min_messages", int),
    "max_messages": ("max_messages", int),
    "model": ("model_like", str),
    "provider": ("provider", str),
    "user": ("user_id", str),
    "chat_id": ("chat_id", str),
    "chat_type": ("chat_type", str),
    "branch": ("branch_like", str),
    "min_tokens": ("min_tokens", int),
    "max_tokens": ("max_tokens", int),
    "min_cost": ("min_cost", float),
    "max_cost": ("max_cost", float),
    "min_tool_calls": ("min_tool_calls", int),
    "max_tool_calls": ("max_tool_calls", int),
}
TIME_PARAMS = ("older_than", "newer_than", "before", "after")
ARCHIVED_DEFAULT = {"prune": False, "archive": False, "export": None, "list": False}


def selection_from_args(
    args: Mapping[str, Any],
    *,
    command: str,
    now: float | None = None,
    tz: tzinfo | None = None,
) -> Selection:
    """The selection the URL or form asks for, as ``hermes sessions <command>`` would read the
    same options. Raises SelectionError with the reason."""
    now = time.time() if now is None else now
    values: dict[str, Any] = {}
    for name, (key, kind) in PARAMS.items():
        raw = args.get(name)
        if raw is None or str(raw).strip() == "":
            continue
        text = str(raw).strip()
        if kind is str:
            values[key] = text[:500]
            continue
        try:
            number = kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise SelectionError(f"{name} must be {what}, not '{text[:40]}'.") from None
        if kind is float and number != number or abs(number) > 1e15:  # NaN, absurd
            raise SelectionError(f"{name} must be a finite number.")
        values[key] = number
    upper: list[float] = []
    lower: list[float] = []
    for flag in TIME_PARAMS:
        raw = args.get(flag)
        if raw is None or str(raw).strip() == "":
            continue
        stamp = parse_point_in_time(str(raw), flag.replace("_", "-"), now, tz)
        try:  # a point a calendar can name (year 1 to 9999), or the message says why
            datetime.fromtimestamp(stamp)
        except (ValueError, OverflowError, OSError):
            raise SelectionError(
                f"{flag} '{str(raw)[:40]}' is too far from today to be a date."
            ) from None
        (upper if flag in ("older_than", "before") else lower).append(stamp)
    if upper:
        values["started_before"] = min(upper)
    if lower:
        values["started_after"] = max(lower)
    if upper and lower and values["started_after"] >= values["started_before"]:
        raise SelectionError(
            "Empty time window: the --after/--newer-than bound "
            f"({_fmt(values['started_after'])}) is not earlier than the --before/--older-than "
            f"bound ({_fmt(values['started_before'])})."
        )
    archived = ARCHIVED_DEFAULT[command]
    mode = str(args.get("archived") or "").strip().lower()
    if mode in ("include", "1", "true", "yes", "on", "all"):
        archived = None
    elif mode == "only":
        archived = True
    elif mode in ("hide", "0", "false", "no", "off"):
        archived = False
    elif mode:
        raise SelectionError("archived must be 'hide', 'include' or 'only'.")
    sessions = tuple(s for s in _getlist(args, "session") if s)
    selection = Selection(archived=archived, sessions=sessions, **values)
    if command == "prune" and not selection.any_filter:
        # A completely bare `hermes sessions prune` means --older-than 90.
        selection = Selection(archived=archived, started_before=now - BARE_PRUNE_DAYS * 86400)
    return selection


# Hermes's selection options that narrow the session list (and the exports made from it) on
# top of the list's own filters: source, model, user, chat_id, chat_type, branch and archived
# are the list's own, read with Hermes's meanings there.
NARROWING = (
    "title",
    "end_reason",
    "cwd",
    "provider",
    "min_messages",
    "max_messages",
    "min_tokens",
    "max_tokens",
    "min_cost",
    "max_cost",
    "min_tool_calls",
    "max_tool_calls",
)
EVERYTHING = Selection(archived=None)


def narrowing_from_args(
    args: Mapping[str, Any], *, now: float | None = None, tz: tzinfo | None = None
) -> Selection:
    """The narrowing options of a list's URL, each with Hermes's meaning: no "ended sessions
    only" base and no archived default (the list has its own state and archived filters).
    ``after`` is read here only when the caller found it is not a page cursor. Raises
    SelectionError with the reason."""
    given: dict[str, Any] = {
        name: args.get(name)
        for name in (*NARROWING, *TIME_PARAMS)
        if args.get(name) not in (None, "")
    }
    ids = [s for s in _getlist(args, "session") if s]
    if ids:
        given["session"] = ids[:1000]
    if not given:
        return EVERYTHING
    return replace(selection_from_args(given, command="list", now=now, tz=tz), archived=None)


def narrowing_args(args: Mapping[str, Any], sel: Selection) -> dict[str, Any]:
    """The narrowing options as they were given, for the next page's URL. ``after`` is written
    as its equal, ``newer_than`` (on the list, ``after`` is the page cursor); when both came,
    as the tighter of the two, which is what they meant together."""
    names = (*NARROWING, "older_than", "newer_than", "before")
    out: dict[str, Any] = {n: str(args[n]) for n in names if args.get(n) not in (None, "")}
    if sel.sessions:
        out["session"] = list(sel.sessions)
    later = args.get("after")
    if later not in (None, ""):
        out["newer_than"] = (
            _iso(sel.started_after) if "newer_than" in out and sel.started_after else str(later)
        )
    return out


def _getlist(args: Mapping[str, Any], name: str) -> list[str]:
    getlist = getattr(args, "getlist", None)
    if getlist:
        return [str(v) for v in getlist(name)]
    value = args.get(name)
    return (
        [str(v) for v in value]
        if isinstance(value, (list, tuple))
        else ([str(value)] if value else [])
    )


def archive_problem(selection: Selection) -> str | None:
    """`hermes sessions archive` refuses to run without a filter that holds a value."""
    if any(v for v in selection.given().values()) or selection.sessions:
        return None
    return (
        "Refusing to archive every ended session: pass at least one filter (e.g. "
        "--newer-than 5h, --source cli, --title codex)."
    )


def as_args(selection: Selection) -> dict[str, str]:
    """The selection as URL/form parameters with absolute times, so a confirmation deletes by
    the very bounds its preview showed (a duration would move on while the user reads)."""
    out: dict[str, str] = {}
    back = {key: name for name, (key, _) in PARAMS.items()}
    for key, value in selection.given().items():
        if key == "started_before":
            out["before"] = _iso(value)
        elif key == "started_after":
            out["after"] = _iso(value)
        else:
            out[back[key]] = str(value)
    out["archived"] = {None: "include", True: "only", False: "hide"}[selection.archived]
    return out


def describe(selection: Selection) -> str:
    """Hermes's describe_filters, in its order and words."""
    s = selection
    parts: list[str] = []
    if s.started_before is not None:
        parts.append(f"started before {_fmt(s.started_before)}")
    if s.started_after is not None:
        parts.append(f"started after {_fmt(s.started_after)}")
    for key, label in (
        ("source", "source '{}'"),
        ("title_like", "title contains '{}'"),
        ("end_reason", "end reason '{}'"),
        ("cwd_prefix", "cwd under '{}'"),
    ):
        if getattr(s, key):
            parts.append(label.format(getattr(s, key)))
    if s.min_messages is not None:
        parts.append(f">= {s.min_messages} messages")
    if s.max_messages is not None:
        parts.append(f"<= {s.max_messages} messages")
    for key, label in (
        ("model_like", "model contains '{}'"),
        ("provider", "provider '{}'"),
        ("user_id", "user '{}'"),
        ("chat_id", "chat '{}'"),
        ("chat_type", "chat type '{}'"),
        ("branch_like", "git branch contains '{}'"),
    ):
        if getattr(s, key):
            parts.append(label.format(getattr(s, key)))
    for low, high, unit in (
        ("min_tokens", "max_tokens", " tokens"),
        ("min_cost", "max_cost", ""),
        ("min_tool_calls", "max_tool_calls", " tool calls"),
    ):
        dollar = "$" if low == "min_cost" else ""
        if getattr(s, low) is not None:
            parts.append(f">= {dollar}{getattr(s, low)}{unit}")
        if getattr(s, high) is not None:
            parts.append(f"<= {dollar}{getattr(s, high)}{unit}")
    if s.sessions:
        parts.append(f"{len(s.sessions)} chosen session(s)")
    return ", ".join(parts) if parts else "no filters (all ended sessions)"


def _fmt(stamp: float) -> str:
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M")


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp).astimezone().isoformat()
