"""Hermes 0.19's export rules as pure functions: which sessions make a logical (compression)
lineage, how it becomes one record, and the file formats of `hermes sessions export`.

The renderers themselves are Hermes's own code (``webui.hermes.vendor``), so a Markdown, QMD,
HTML or user-prompts file from Logbook is what `hermes sessions export --format …` writes for
the same records; these functions only choose and name what goes in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from webui.hermes.vendor import session_export as _prompts
from webui.hermes.vendor import session_export_md as _md
from webui.hermes.vendor.session_export_html import (
    generate_html_export,
    generate_multi_session_html_export,
)

FORMATS = ("jsonl", "md", "qmd", "html")
ONLY = ("user-prompts",)
LINEAGE_MODES = ("single", "logical")

Session = Mapping[str, Any]


class ExportFormatError(ValueError):
    """A format or option Hermes does not offer, in words for the user."""


def only_value(raw: str | None) -> str | None:
    """``only=`` as Hermes names it (user, prompts, user_prompts → user-prompts)."""
    if raw is None or not raw.strip():
        return None
    try:
        return _prompts.normalize_export_only(raw)
    except ValueError:
        raise ExportFormatError(
            f"only={raw!r} is not an export filter; the one there is: only=user-prompts."
        ) from None


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


def redact(record: dict[str, Any]) -> dict[str, Any]:
    """``--redact``: Hermes's force-mode secret redaction over messages (and segments)."""
    return _md.redact_session_data(record)


# -- Markdown / QMD -----------------------------------------------------------------------------


def document(record: Session, fmt: str) -> str:
    """One session's .md/.qmd file with Hermes's front matter and verification footer."""
    return _md.render_session_markdown(dict(record), fmt=fmt)


def file_name(record: Session, fmt: str) -> str:
    return _md.safe_session_filename(dict(record), fmt=fmt)


def verify(text: str, record: Session) -> tuple[bool, str]:
    """Hermes's verify_export_file on text read back: the body's SHA-256 matches the one it
    states, and it names this session and its number of messages."""
    match = _md._SHA_LINE_RE.search(text)
    if not match:
        return False, "sha256 marker missing"
    actual = hashlib.sha256(_md._body_for_digest(text).encode("utf-8")).hexdigest()
    if actual != match.group(1):
        return False, "sha256 mismatch"
    if f"- Exported messages: `{_md._message_count(dict(record))}`" not in text:
        return False, "message count mismatch"
    if f"- Session id: `{_md._session_id(dict(record))}`" not in text:
        return False, "session id mismatch"
    return True, "ok"


def manifest_entry(record: Session, path: str, fmt: str, data: bytes, when: float) -> str:
    """One line of Hermes's manifest.jsonl for a written file."""
    entry = {
        "session_id": _md._session_id(dict(record)),
        "lineage_session_ids": record.get("lineage_session_ids") or [_md._session_id(dict(record))],
        "path": path,
        "format": fmt,
        "message_count": _md._message_count(dict(record)),
        "sha256": hashlib.sha256(data).hexdigest(),
        "exported_at": when,
    }
    return json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"


# -- user prompts -------------------------------------------------------------------------------


def prompt_lines(record: Session) -> Iterator[str]:
    """``--only user-prompts --format jsonl``: one line per user prompt, as Hermes writes it."""
    for row in _prompts.iter_user_prompt_records([dict(record)]):
        yield json.dumps(row, ensure_ascii=False) + "\n"


def prompts_markdown(records: Iterable[Session]) -> Iterator[str]:
    """``--only user-prompts --format md``, streamed: the same text as Hermes's renderer,
    which builds it whole. One session gets the single-session layout, as in Hermes."""
    it = iter(records)
    first = next(it, None)
    if first is None:
        yield _prompts._render_user_prompts_markdown([])
        return
    second = next(it, None)
    if second is None:
        yield _prompts._render_user_prompts_markdown([dict(first)])
        return
    pending: list[str] = ["# User prompts export", ""]

    def block(session: Session) -> list[str]:
        lines = [f"## Session {_prompts._heading_text(_prompts._session_id(dict(session)))}"]
        lines.extend(_prompts._session_metadata_lines(dict(session)))
        lines.append("")
        _prompts._append_prompt_records(lines, dict(session), heading_level=3)
        return lines

    for session in _chain(first, second, it):
        pending.extend(block(session))
        # Trailing blank lines are held back: Hermes strips them at the very end only.
        keep = len(pending)
        while keep and pending[keep - 1] == "":
            keep -= 1
        if keep:
            yield "\n".join(pending[:keep]) + "\n"
            pending = pending[keep:]


def _chain(first: Session, second: Session, rest: Iterator[Session]) -> Iterator[Session]:
    yield first
    yield second
    yield from rest


# -- HTML -------------------------------------------------------------------------------------


def html(records: list[dict[str, Any]]) -> str:
    """Hermes's self-contained HTML export: one session, or several with a sidebar."""
    if len(records) == 1:
        return generate_html_export(records[0])
    return generate_multi_session_html_export(records)
