"""Where a session came from, in words: "telegram · DM · Alice" for a gateway chat,
"cli · ~/src/atlas @ main" for a session run in a folder. Built from the columns Hermes 0.19
records (record_gateway_session_peer, set_session_cwd); None when a row has none of them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

CHAT_TYPES = {"dm": "DM", "group": "group", "channel": "channel", "thread": "thread"}


def origin_label(row: Mapping[str, Any], home: str | None = None) -> str | None:
    source = row.get("source") or ""
    name = (row.get("display_name") or "").strip() or _origin_json_label(row.get("origin_json"))
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


def _origin_json_label(raw: Any) -> str:
    if not raw or not isinstance(raw, str):
        return ""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return ""
    label = value.get("label") if isinstance(value, dict) else None
    return label.strip() if isinstance(label, str) else ""
