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

# Why a session ended, in the words Hermes itself uses when it happens (the notice the gateway
# sends on an automatic reset, its replies to /new, /reset, /resume and /branch, the CLI's
# lines): (a short form for a list cell, the sentence). The facts come from Hermes 0.19 and
# 0.22 (gateway/run.py's reset notice, locales/en.yaml's gateway.reset/resume/branch replies,
# cli.py); an end reason not listed here is shown as Hermes wrote it.
END_REASONS: dict[str, tuple[str, str]] = {
    # "◐ Session automatically reset (daily schedule at 4:00)."
    "daily": ("daily reset", "session automatically reset (daily schedule)"),
    # "◐ Session automatically reset (inactive for 24h)."
    "idle": ("reset after inactivity", "session automatically reset (inactive)"),
    "suspended": (
        "stopped or interrupted",
        "session automatically reset (previous session was stopped or interrupted)",
    ),
    "resume_pending_expired": (
        "restart recovery timed out",
        "session automatically reset (gateway restart recovery timed out)",
    ),
    # "✨ Session reset! Starting fresh." / "✨ New session started!"
    "session_reset": ("session reset", "session reset by /new or /reset: starting fresh"),
    # the CLI's /new: "New session started!"
    "new_session": ("new session started", "new session started (/new)"),
    # "↻ Resumed session …": the one open before it ends
    "session_switch": ("resumed another session", "another session resumed (/resume)"),
    "resumed_other": ("resumed another session", "another session resumed (/resume)"),
    "superseded_by_resume": ("resumed elsewhere", "the session was resumed in another window"),
    # "🗜️ Compacting context — summarizing earlier conversation so I can continue"
    "compression": (
        "context compacted",
        "context compacted: earlier conversation summarized, continued in the next session",
    ),
    # "⑂ Branched to …"
    "branched": ("branched", "branched (/branch)"),
    # the CLI's "Goodbye! ⚕"
    "cli_close": ("CLI closed", "the CLI was closed"),
    "tui_close": ("TUI closed", "the terminal UI was closed"),
    "tui_shutdown": ("TUI shut down", "the terminal UI shut down"),
    "agent_close": ("agent closed", "the agent was closed"),
    "cron_complete": ("cron job done", "the cron job finished"),
    "webhook_complete": ("webhook done", "the webhook run finished"),
    "idle_timeout": ("idle timeout", "closed after a while without activity"),
    "lru_evict": ("closed for newer sessions", "closed to make room for newer sessions"),
    "ws_disconnect": ("disconnected", "the connection was closed"),
    "ws_orphan_reap": ("connection lost", "the connection was lost"),
    "adopted_by_profile": ("moved to another profile", "moved to another profile"),
    "onboarding_restart": ("setup restarted", "restarted by setup"),
    "user_exit": ("exited", "the user exited"),
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
    """A session's end_reason as Hermes words it (an unknown one as Hermes wrote it)."""
    if reason is None or reason == "":
        return None
    known = END_REASONS.get(str(reason))
    return known[1] if known else str(reason).replace("_", " ")


def end_reason_short(reason: Any) -> str | None:
    """The same in a few words, for a list's cell (the sentence is its tooltip)."""
    if reason is None or reason == "":
        return None
    known = END_REASONS.get(str(reason))
    return known[0] if known else str(reason).replace("_", " ")


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


def chat_name(row: Mapping[str, Any]) -> str:
    """A chat's name, from what its sessions recorded (``label``: the chat's own name, else
    its id; ``user_name``, ``user_id``, ``thread_id``, ``chat_type``, ``session_key``):

    * a direct chat is the person ("Alice");
    * a thread is its chat's name and the thread ("Family 🏠 (thread 57)"): everyone in it
      shares one session (Hermes's default), so no member names it;
    * a group or channel is its name, with the person when Hermes keys its sessions per person
      (the key ends with that person's id: "ops (carol)").
    """
    name = str(row.get("label") or "").strip()
    person = str(row.get("user_name") or "").strip()
    user_id = str(row.get("user_id") or "").strip()
    thread = str(row.get("thread_id") or "").strip()
    kind = str(row.get("chat_type") or "").strip().lower()
    key = str(row.get("session_key") or "")
    if kind == "dm":
        name = person or name or user_id or key.rsplit(":", 1)[-1]
        return f"{name} (thread {thread})" if thread else name
    name = name or key.rsplit(":", 1)[-1]
    if thread:
        return f"{name} (thread {thread})"
    if user_id and key.endswith(":" + user_id):
        return f"{name} ({person or user_id})"
    return name


def distinct_labels(
    rows: list[dict[str, Any]], label: str = "label", within: tuple[str, ...] = ()
) -> None:
    """Chats whose names read the same (within the same ``within`` values: on /chats, the
    same source) are told apart, in place, by the end of their key (a chat, person or thread
    id), and by the whole key if that is not enough."""

    def clashes() -> list[list[dict[str, Any]]]:
        by: dict[Any, list[dict[str, Any]]] = {}
        for row in rows:
            by.setdefault((row.get(label), *(row.get(k) for k in within)), []).append(row)
        return [same for same in by.values() if len(same) > 1]

    for same in clashes():
        for r in same:
            tail = str(r.get("session_key") or r.get("value") or "").rsplit(":", 1)[-1]
            if tail and tail not in str(r.get(label)):
                r[label] = f"{r.get(label)} ({tail})"
    for same in clashes():
        for r in same:
            r[label] = f"{r.get(label)} ({r.get('session_key') or r.get('value')})"
