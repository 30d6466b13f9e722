"""Where a session came from, in words: "telegram · DM · Alice" for a gateway chat,
"cli · ~/src/atlas @ main" for a session run in a folder. Built from the columns Hermes 0.19
records (record_gateway_session_peer, update_session_cwd); None when a row has none of them.
Also why a chat's session ended: the reset boundaries of its timeline, in Hermes 0.19's own
end_reason values (gateway/session.py, hermes_state.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

CHAT_TYPES = {"dm": "DM", "group": "group", "channel": "channel", "thread": "thread"}

# The session columns an origin is told from (schema 22; NULL on older files).
ORIGIN_COLUMNS = ("display_name", "chat_type", "origin_json", "cwd", "git_repo_root", "git_branch")

# Keys of origin_json that name a chat: the gateway writes SessionSource.to_dict()
# (chat_name, user_name); other writers put a "label".
ORIGIN_NAME_KEYS = ("label", "chat_name", "user_name")

# Why a session ended, as a chat's timeline words the boundary. The gateway ends a chat's
# session when it resets it: "daily" (the daily reset hour, 04:00 by default), "idle" (the idle
# timeout), "session_reset" (/new or /reset), "session_switch" (/resume of another session),
# "suspended", "resume_pending_expired"; agents end theirs for other reasons.
END_REASONS = {
    "daily": "daily reset",
    "idle": "idle reset (no message for a while)",
    "session_reset": "reset by /new or /reset",
    "new_session": "a new session was started",
    "session_switch": "switched to another session (/resume)",
    "resumed_other": "another session was resumed",
    "suspended": "suspended",
    "resume_pending_expired": "an interrupted run expired",
    "compression": "context compressed: continued in the next session",
    "branched": "branched (/branch)",
    "cli_close": "the CLI closed",
    "tui_close": "the TUI closed",
    "tui_shutdown": "the TUI shut down",
    "agent_close": "the agent closed",
    "cron_complete": "the cron job finished",
    "idle_timeout": "idle timeout",
    "lru_evict": "evicted (too many open sessions)",
    "ws_disconnect": "the connection dropped",
    "ws_orphan_reap": "the connection was lost",
}
# The reasons that start a new session of the same chat: a reset boundary, not an ending.
RESETS = frozenset(
    {
        "daily",
        "idle",
        "session_reset",
        "new_session",
        "session_switch",
        "suspended",
        "resume_pending_expired",
        "compression",
    }
)


def chat_type_words(chat_type: Any) -> str:
    """ "dm" → "DM"; other chat types as Hermes names them."""
    text = str(chat_type or "").strip()
    return CHAT_TYPES.get(text.lower(), text)


def end_reason_words(reason: Any) -> str | None:
    """A session's end_reason in words (an unknown one as Hermes wrote it)."""
    if reason is None or reason == "":
        return None
    return END_REASONS.get(str(reason), str(reason).replace("_", " "))


# `hermes sessions import` (0.20+): the tool a session was imported from, by the source it
# writes (origin_json.imported_from.tool), in the words Hermes titles them with.
IMPORT_TOOLS = {"claude-code": "Claude Code", "codex-cli": "Codex CLI"}


def imported_from(raw: Any) -> dict[str, str] | None:
    """Where an imported session came from (origin_json's ``imported_from``: tool, path,
    foreign session id), with the tool in words; None for a session Hermes ran itself."""
    if not raw or not isinstance(raw, str) or "imported_from" not in raw:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    found = value.get("imported_from") if isinstance(value, dict) else None
    if not isinstance(found, dict):
        return None
    out = {k: str(found[k]) for k in ("tool", "path", "foreign_session_id") if found.get(k)}
    if not out.get("tool"):
        return None
    out["label"] = IMPORT_TOOLS.get(out["tool"], out["tool"])
    return out


def origin_label(row: Mapping[str, Any], home: str | None = None) -> str | None:
    source = row.get("source") or ""
    imported = imported_from(row.get("origin_json"))
    if imported:
        # An imported conversation is told by where it came from, then its folder.
        folder = (row.get("cwd") or "").strip()
        if home and folder and (folder == home or folder.startswith(home.rstrip("/") + "/")):
            folder = "~" + folder[len(home.rstrip("/")) :]
        return " · ".join(p for p in (f"imported from {imported['label']}", folder) if p)
    name = (row.get("display_name") or "").strip() or origin_json_name(row.get("origin_json"))
    chat_type = (row.get("chat_type") or "").strip()
    if name or chat_type:
        parts = [source, CHAT_TYPES.get(chat_type.lower(), chat_type), name]
        return " · ".join(p for p in parts if p)
    folder = (row.get("git_repo_root") or "").strip() or (row.get("cwd") or "").strip()
    if folder:
        if home and (folder == home or folder.startswith(home.rstrip("/") + "/")):
            folder = "~" + folder[len(home.rstrip("/")) :]
        branch = (row.get("git_branch") or "").strip()
        return " · ".join(p for p in (source, folder + (f" @ {branch}" if branch else "")) if p)
    return None


def origin_json_name(raw: Any) -> str:
    """The chat's name in origin_json (arbitrary JSON from a platform: anything else → '')."""
    if not raw or not isinstance(raw, str):
        return ""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(value, dict):
        return ""
    for key in ORIGIN_NAME_KEYS:
        name = value.get(key)
        if isinstance(name, str) and name.strip():
            return name.strip()
    return ""


def distinct_labels(rows: list[dict[str, Any]], label: str = "label") -> None:
    """Chats that would read the same ("ops · discord" for a group keyed per person, a
    channel's threads) are told apart, in place: by the person where their people differ,
    else by the thread, else by the end of their key."""
    by_label: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        by_label.setdefault(row.get(label), []).append(row)
    for same in by_label.values():
        if len(same) < 2:
            continue
        people = {r.get("user_name") or r.get("user_id") for r in same}
        threads = {r.get("thread_id") for r in same}
        for r in same:
            if len(people) > 1 and (r.get("user_name") or r.get("user_id")):
                extra = str(r.get("user_name") or r.get("user_id"))
            elif len(threads) > 1 and r.get("thread_id"):
                extra = f"thread {r['thread_id']}"
            else:
                extra = str(r.get("session_key") or r.get("value") or "").rsplit(":", 1)[-1]
            r[label] = f"{r.get(label)} ({extra})" if extra else r.get(label)
