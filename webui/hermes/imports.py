"""Sessions Hermes imported from another agent's history (``hermes sessions import``, 0.20 on):
a session with ``source = 'claude-code'`` or ``'codex-cli'`` whose ``origin_json`` says
``{"imported_from": {"tool", "path", "foreign_session_id"}}``. Named here for the viewer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

TOOLS = {
    "claude-code": "Claude Code",
    "codex-cli": "Codex CLI",
    "claude": "Claude Code",
    "codex": "Codex CLI",
}


def imported_from(row: Mapping[str, Any]) -> dict[str, str] | None:
    """Where an imported session came from: ``tool`` (in words), ``path`` and
    ``foreign_session_id`` as recorded (strings, possibly empty); None for any other session."""
    raw = row.get("origin_json")
    value: Any = None
    if isinstance(raw, str) and raw:
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = None
    found = value.get("imported_from") if isinstance(value, dict) else None
    if not isinstance(found, dict):
        if row.get("source") in ("claude-code", "codex-cli"):
            return {"tool": TOOLS[row["source"]], "path": "", "foreign_session_id": ""}
        return None
    tool = str(found.get("tool") or row.get("source") or "")
    return {
        "tool": TOOLS.get(tool, tool or "another agent"),
        "path": str(found.get("path") or ""),
        "foreign_session_id": str(found.get("foreign_session_id") or ""),
    }
