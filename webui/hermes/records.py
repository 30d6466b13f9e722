"""Export records as each Hermes generation writes them (``hermes sessions export``): a session's
row shaped as its ``get_session``/``search_sessions`` return it, each message as its
``get_messages`` returns it, and 0.22's ``timings`` object. Pure functions over rows already
read; ``webui.db.sessions.export`` reads them. Facts in ``docs/hermes-generations.md`` §5.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from webui.hermes.content import decode_content, load_tool_calls
from webui.hermes.display import decode_metadata
from webui.hermes.listing import EPOCH_MAX, EPOCH_MIN

# Hermes 0.22 trusts a stored time only inside this window (its coerce_epoch): seconds since
# 1970, up to 2103.
MARKERS = ("_reset_from", "_branched_from")


def session_record(row: dict[str, Any], rules) -> dict[str, Any]:
    """A session row as the generation's reads shape it: the content-addressed columns
    (``_system_prompt_resolved``, ``_tool_names_resolved`` read beside the row) in place of the
    stored ones, and 0.22's /new and /branch markers lifted out of ``model_config``."""
    data = dict(row)
    for column in ("system_prompt", "tool_names"):
        key = f"_{column}_resolved"
        if key in data:
            resolved = data.pop(key)
            if column in data:
                data[column] = resolved
    if rules.lifts_markers and not all(data.get(m) for m in MARKERS):
        config = data.get("model_config")
        if isinstance(config, str) and config:
            try:
                config = json.loads(config)
            except (ValueError, RecursionError):
                config = None
        if isinstance(config, dict):
            for marker in MARKERS:
                value = config.get(marker)
                if not data.get(marker) and isinstance(value, str) and value.strip():
                    data[marker] = value.strip()
    return data


def message_record(row: dict[str, Any], rules) -> dict[str, Any]:
    """A message as the generation's get_messages returns it: content decoded (multimodal back
    to its list), tool_calls parsed when set ([] when unreadable; before 0.19 also when
    empty), display_metadata decoded to an object (0.20 on), and 0.22's display index left out
    with ``_compressed_summary`` kept only as true, last."""
    m = dict(row)
    m["content"] = decode_content(m.get("content"))
    if "tool_calls" in m and (m["tool_calls"] or not rules.export_active_by_id):
        m["tool_calls"] = load_tool_calls(m["tool_calls"])
    if rules.decodes_display_metadata and m.get("display_metadata") is not None:
        m["display_metadata"] = decode_metadata(m["display_metadata"])
    if rules.drops_display_index:
        m.pop("display_identity", None)
        m.pop("display_order", None)
        if m.pop("_compressed_summary", 0):
            m["_compressed_summary"] = True
    return m


def epoch(value: Any) -> float | None:
    """A stored time as seconds, or None when it is unset or cannot be trusted (0.22)."""
    if value is None or value == "":
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if math.isfinite(seconds) and EPOCH_MIN <= seconds <= EPOCH_MAX else None


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()


def timings(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """0.22's ``timings``: what the message times say about a session, never its text: how
    many rows carry a trusted time, the first and last, the wall-clock span, every gap between
    consecutive timed rows (ids, roles, milliseconds) and the largest, rows per role, tool
    results and tool calls emitted. ``complete`` is always false (Hermes keeps no stopwatch)."""
    timed = [(m, t) for m in messages if (t := epoch(m.get("timestamp"))) is not None]
    roles = Counter(str(m.get("role") or "unknown") for m in messages)
    emitted = 0
    for m in messages:
        calls = m.get("tool_calls")
        if calls:
            emitted += len(calls) if isinstance(calls, list) else 1
    gaps = [
        {
            "from_message_id": a.get("id"),
            "to_message_id": b.get("id"),
            "from_role": a.get("role"),
            "to_role": b.get("role"),
            "gap_ms": max(0, round((tb - ta) * 1000)),
        }
        for (a, ta), (b, tb) in zip(timed, timed[1:], strict=False)
    ]
    first = timed[0][1] if timed else None
    last = timed[-1][1] if timed else None
    return {
        "source": "message_timestamps",
        "available": bool(timed),
        "complete": False,
        "unavailable_reason": None if timed else "no_timestamped_messages",
        "message_timestamps": {"available": len(timed), "missing": len(messages) - len(timed)},
        "first_message_at": _iso(first) if first is not None else None,
        "last_message_at": _iso(last) if last is not None else None,
        "wall_clock_ms": max(0, round((last - first) * 1000)) if timed else None,
        "largest_gap_ms": max(g["gap_ms"] for g in gaps) if gaps else None,
        "role_counts": dict(roles),
        "tool_result_count": roles.get("tool", 0),
        "tool_calls_emitted": emitted,
        "intervals": gaps,
    }


def tool_list(raw: Any) -> list[str] | None:
    """The names in a session's pinned tool list (0.22's ``tool_names``, resolved): a JSON list
    of names, or of tool definitions (``{"function": {"name": …}}``); None when there is none
    or it is not such a list."""
    if not raw or not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list):
        return None
    names = []
    for item in value:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, dict):
            fn = item.get("function") if isinstance(item.get("function"), dict) else item
            name = fn.get("name")
            names.append(str(name) if name is not None else "?")
    return names
