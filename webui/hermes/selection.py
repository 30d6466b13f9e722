"""Which sessions a bulk action touches: the filters of ``hermes sessions prune / archive /
export`` (``hermes_cli/session_filters.py`` and ``SessionDB._prune_filter_where`` of Hermes
0.19.0, 0.20.1 and 0.22.2; what differs between them is a field of
``webui.hermes.rules.Rules``), as pure functions over plain values.

URL and form parameters use the contract's names (``older_than``, ``newer_than``, ``before``,
``after``, ``source``, ``title``, ``end_reason``, ``cwd``, ``branch``, ``model``,
``provider``, ``user``, ``chat_id``, ``chat_type``, ``min_/max_messages``, ``…tokens``,
``…cost``, ``…tool_calls``, ``archived``); the SQL is in ``webui.db.changes.selection``.

Rules kept from Hermes: a bare number is days, ``m`` is minutes; the tighter of two bounds
wins; an empty window is an error; only ended sessions are ever candidates; a filter alone
means all ages (only a completely bare prune means "older than 90 days"); archive refuses to
run without a filter; prune and archive leave archived sessions alone unless asked, export
includes them. A text filter is matched as typed (``title=" Home "`` is not ``Home``), and
one given empty matches everything but still counts as given (no implicit 90 days), as the
command line takes ``--title ""``. ``older_than`` / ``newer_than`` bound the start on 0.19
files and last activity since 0.20 (the SQL reads ``Rules.age_is_inactivity``).
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

    # --before / --after: the start
    started_before: float | None = None
    started_after: float | None = None
    # --older-than / --newer-than: the start on 0.19 files, last activity since 0.20
    active_before: float | None = None
    active_after: float | None = None
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
    # Text filters given empty (Hermes's keys): they match everything, yet count as given.
    empty: tuple[str, ...] = field(default=())
    # `prune --include-pinned`: pinned sessions are candidates too (0.22 spares them).
    include_pinned: bool = False
    # Whose selection this is: "prune", "archive", "export" or "list" (0.22 spares pins and
    # keeps lineages whole for prune and archive only).
    command: str = "list"

    def given(self) -> dict[str, Any]:
        """The filters that were given with a value (Hermes's "is not None"), time bounds
        included."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in _NOT_FILTERS and getattr(self, f.name) is not None
        }

    @property
    def any_filter(self) -> bool:
        return bool(self.given()) or bool(self.sessions) or bool(self.empty)


_NOT_FILTERS = ("archived", "sessions", "empty", "include_pinned", "command")


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
    inactivity: bool = False,
) -> Selection:
    """The selection the URL or form asks for, as ``hermes sessions <command>`` would read the
    same options. ``inactivity`` (0.20+, ``Rules.age_is_inactivity``): older_than and
    newer_than bound last activity, so each window is checked on its own. Raises
    SelectionError with the reason."""
    now = time.time() if now is None else now
    values: dict[str, Any] = {}
    empty: list[str] = []
    for name, (key, kind) in PARAMS.items():
        raw = args.get(name)
        if raw is None:
            continue
        if kind is str:
            # As typed: Hermes neither trims a filter nor drops an empty one (it matches
            # everything, and a filter was given).
            text = str(raw)
            if text == "":
                empty.append(key)
            else:
                values[key] = text[:500]
            continue
        text = str(raw).strip()
        if text == "":
            continue
        try:
            number = kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise SelectionError(f"{name} must be {what}, not '{text[:40]}'.") from None
        if kind is float and number != number or abs(number) > 1e15:  # NaN, absurd
            raise SelectionError(f"{name} must be a finite number.")
        values[key] = number
    bounds: dict[str, float] = {}
    for flag, key in TIME_KEYS.items():
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
        bounds[key] = stamp
    _check_windows(bounds, inactivity)
    values.update(bounds)
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
    include_pinned = str(args.get("include_pinned") or "").strip().lower() in _YES
    selection = Selection(
        archived=archived,
        sessions=sessions,
        empty=tuple(empty),
        include_pinned=include_pinned,
        command=command,
        **values,
    )
    if command == "prune" and not selection.any_filter:
        # A completely bare `hermes sessions prune` means --older-than 90.
        selection = replace(selection, active_before=now - BARE_PRUNE_DAYS * 86400)
    return selection


_YES = ("1", "true", "yes", "on", "include")
# URL parameter → Selection field
TIME_KEYS = {
    "older_than": "active_before",
    "newer_than": "active_after",
    "before": "started_before",
    "after": "started_after",
}


def _check_windows(b: dict[str, float], inactivity: bool) -> None:
    """An empty window is an error, worded as the generation words it: 0.19 bounds the start
    with all four options (one window); 0.20+ has a start-time and an activity window."""
    if not inactivity:
        upper = [b[k] for k in ("active_before", "started_before") if k in b]
        lower = [b[k] for k in ("active_after", "started_after") if k in b]
        if upper and lower and max(lower) >= min(upper):
            raise SelectionError(
                "Empty time window: the --after/--newer-than bound "
                f"({_fmt(max(lower))}) is not earlier than the --before/--older-than "
                f"bound ({_fmt(min(upper))})."
            )
        return
    for low, high, label, low_flag, high_flag in (
        ("started_after", "started_before", "start-time", "--after", "--before"),
        ("active_after", "active_before", "activity", "--newer-than", "--older-than"),
    ):
        if low in b and high in b and b[low] >= b[high]:
            raise SelectionError(
                f"Empty {label} window: the {low_flag} bound ({_fmt(b[low])}) is not earlier "
                f"than the {high_flag} bound ({_fmt(b[high])})."
            )


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
    """The narrowing options as they were given, for the next page's URL. On the list
    ``after`` is the page cursor, so Hermes's ``--after`` (a start bound) is written as the
    list's own start bound, ``since``, at the absolute time it meant; when ``since`` came too,
    as the later of the two, which is what they meant together."""
    names = (*NARROWING, "older_than", "newer_than", "before")
    out: dict[str, Any] = {n: str(args[n]) for n in names if args.get(n) not in (None, "")}
    if sel.sessions:
        out["session"] = list(sel.sessions)
    if args.get("after") not in (None, "") and sel.started_after is not None:
        stamp = sel.started_after
        since = str(args.get("since") or "").strip()
        if since:
            try:
                stamp = max(stamp, parse_point_in_time(since, "since", time.time()))
            except SelectionError:
                pass  # the list refuses a bad `since` itself
        out["since"] = _iso(stamp)
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
    times = {key: name for name, key in TIME_KEYS.items()}
    for key, value in selection.given().items():
        if key in times:
            out[times[key]] = _iso(value)
        else:
            out[back[key]] = str(value)
    for key in selection.empty:
        out[back[key]] = ""
    out["archived"] = {None: "include", True: "only", False: "hide"}[selection.archived]
    if selection.include_pinned:
        out["include_pinned"] = "1"
    return out


def describe(selection: Selection, *, inactivity: bool = False) -> str:
    """Hermes's describe_filters, in its order and words (0.19: every time bound is a start
    bound; 0.20+: older/newer than bound last activity)."""
    s = selection
    parts: list[str] = []
    if inactivity:
        for value, words in (
            (s.active_before, "last active before"),
            (s.active_after, "last active after"),
            (s.started_before, "started before"),
            (s.started_after, "started after"),
        ):
            if value is not None:
                parts.append(f"{words} {_fmt(value)}")
    else:
        before = [v for v in (s.active_before, s.started_before) if v is not None]
        after = [v for v in (s.active_after, s.started_after) if v is not None]
        if before:
            parts.append(f"started before {_fmt(min(before))}")
        if after:
            parts.append(f"started after {_fmt(max(after))}")
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
