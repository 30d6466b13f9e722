"""Hermes 0.19's export rules as pure functions: which formats and filters there are, which
sessions make a logical (compression) lineage, and how it becomes one record. The files
themselves are written by ``export_markdown`` (Markdown, QMD), ``export_prompts`` (user
prompts), ``webui.present.export_html`` (HTML) and ``redaction`` (``--redact``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

FORMATS = ("jsonl", "md", "qmd", "html")
ONLY = ("user-prompts",)
PROMPT_ALIASES = ("user", "prompts", "user-prompts", "user_prompts")
LINEAGE_MODES = ("single", "logical")

Session = Mapping[str, Any]


class ExportFormatError(ValueError):
    """A format or option Hermes does not offer, in words for the user."""


def only_value(raw: str | None) -> str | None:
    """``only=`` as Hermes names it (user, prompts, user_prompts → user-prompts)."""
    if raw is None or not raw.strip():
        return None
    if raw.strip().lower() in PROMPT_ALIASES:
        return "user-prompts"
    raise ExportFormatError(
        f"only={raw!r} is not an export filter; the one there is: only=user-prompts."
    )


def lineage_mode(raw: str | None) -> str:
    value = (raw or "single").strip().lower()
    if value not in LINEAGE_MODES:
        raise ExportFormatError("lineage_mode is single (one row) or logical (its whole chain).")
    return value


def is_branch(session: Session) -> bool:
    """Hermes's _is_branch_child_row: a /branch copy names its origin in model_config."""
    raw = session.get("model_config")
    if not raw:
        return False
    try:
        cfg = json.loads(raw) if isinstance(raw, str) else raw
    except (TypeError, ValueError):
        return False
    return isinstance(cfg, dict) and cfg.get("_branched_from") is not None


def compression_lineage(
    session_id: str,
    get: Callable[[str], Session | None],
    children: Callable[[str], list[Session]],
) -> list[str]:
    """Hermes 0.19's get_compression_lineage: up through parents that ended in compression,
    then down from that root through the first non-branch child (earliest start) of every
    segment that ended in compression. ``children`` gives a session's children oldest first.
    A branch, or an id the walk does not reach, stands alone; an unknown id gives []."""
    session = get(session_id)
    if session is None:
        return []
    if is_branch(session):
        return [session_id]
    root = session
    seen = {root["id"]}
    while root.get("parent_session_id") and not is_branch(root):
        parent = get(root["parent_session_id"])
        if parent is None or parent.get("end_reason") != "compression" or parent["id"] in seen:
            break
        root = parent
        seen.add(root["id"])
    lineage = [root["id"]]
    walked = {root["id"]}
    current = root
    while current.get("end_reason") == "compression":
        nxt = next((c for c in children(current["id"]) if not is_branch(c)), None)
        if nxt is None or nxt["id"] in walked:
            break
        lineage.append(nxt["id"])
        walked.add(nxt["id"])
        current = nxt
    return lineage if session_id in lineage else [session_id]


def logical_record(segments: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Hermes's export_session_lineage: the newest segment's columns, every segment's
    messages in order, the segments themselves and their ids."""
    if not segments:
        return None
    base = dict(segments[-1])
    base["segments"] = segments
    base["lineage_session_ids"] = [seg["id"] for seg in segments]
    base["message_count"] = sum(len(seg.get("messages") or []) for seg in segments)
    base["messages"] = [m for seg in segments for m in (seg.get("messages") or [])]
    return base


def without_rewound(record: dict[str, Any]) -> dict[str, Any]:
    """The record as Hermes 0.19 exports it when it was read with every message: the ones
    undone by /rewind or compacted away (``active = 0``) left out."""
    messages = record.get("messages") or []
    if not any(isinstance(m, dict) and m.get("active") == 0 for m in messages):
        return record
    kept = [m for m in messages if not (isinstance(m, dict) and m.get("active") == 0)]
    return {**record, "messages": kept}
