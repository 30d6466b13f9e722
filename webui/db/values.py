"""Values as pages read them: of the type each column is meant to hold, whatever a row holds.

SQLite stores any value in any column, and the database is written by other programs: a token
count near 2**63, a start time that reads '2026-13-45', bytes where a title belongs, an end
time of -1e20. Pages (and their JSON twins) read every row through ``shown`` so that such a
row is shown as what it is instead of breaking the page: times outside the calendar and text
where a number belongs become "unknown" (None), bytes become text (undecodable bytes shown as
U+FFFD), and a number where text belongs is written out. Exports do not come this way: they
carry the rows as stored, as Hermes's do.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

# Seconds since 1970 a calendar can show (year 1 .. 9999 would be wider, but a Hermes time is
# never before its epoch, and a negative one is damage).
LATEST = 253402300799.0

TIMES = frozenset(
    {
        "started_at", "ended_at", "timestamp", "last_active", "created_at", "updated_at",
        "session_started", "first_active", "oldest", "newest", "archived_at", "at",
    }
)  # fmt: skip
NUMBERS = frozenset(
    {
        "message_count", "tool_call_count", "api_call_count", "input_tokens", "output_tokens",
        "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "token_count",
        "estimated_cost_usd", "actual_cost_usd", "tokens", "cost", "cost_usd", "messages",
        "sessions", "child_count", "archived", "active", "count", "n",
    }
)  # fmt: skip
# Only names that always hold a number, whatever the query: a generic alias ("value", "k")
# holds text in some queries (a chat's key in a facet) and is left as it is.


TEXTS = frozenset(
    {
        "title", "source", "model", "role", "content", "tool_name", "reasoning",
        "reasoning_content", "system_prompt", "model_config", "end_reason", "billing_provider",
        "billing_mode", "billing_base_url", "cost_status", "cost_source", "user_id", "chat_id",
        "chat_type", "display_name", "origin_json", "cwd", "git_branch", "git_repo_root",
        "session_key", "preview", "finish_reason", "tool_call_id", "thread_id", "user_name",
    }
)  # fmt: skip


def as_time(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8", "replace")
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            try:
                value = datetime.fromisoformat(text).timestamp()
            except (ValueError, OverflowError, OSError):
                return None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value) if 0 <= value <= LATEST else None


def as_number(value: Any) -> int | float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8", "replace")
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() and abs(number) < 2**63 else number


def as_text(value: Any, known_text: bool = False) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    if known_text and isinstance(value, (int, float)):
        return str(value)
    return value


def shown(names: list[str], values: tuple) -> dict[str, Any]:
    """A row as pages read it (see the module's docstring)."""
    out: dict[str, Any] = {}
    for name, value in zip(names, values, strict=False):
        if value is None or (isinstance(value, str) and name not in TIMES and name not in NUMBERS):
            out[name] = value
        elif name in TIMES:
            out[name] = as_time(value)
        elif name in NUMBERS:
            out[name] = as_number(value)
        else:
            out[name] = as_text(value, name in TEXTS)
    return out
