"""``hermes sessions export --only user-prompts``: what the user typed, one record per prompt
(JSONL) or a Markdown list of them, streamed session by session.

A prompt record is ``session_id``, ``index`` (1 for a session's first user message),
``created_at`` (UTC to the second, ``Z``), ``role``, ``text`` (structured content flattened
to its text parts), then ``message_id`` and ``event_id`` when known. The Markdown has a title
line, each session's id/source/model/title/start/message count as a list, and a numbered
heading per prompt; one session gets a title of its own and headings a level higher.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

Record = Mapping[str, Any]
NONE_FOUND = "_No user prompts found._"


def when(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        try:
            moment = datetime.fromtimestamp(float(value), tz=UTC)
        except (ValueError, OverflowError, OSError):
            return str(value)
        return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
    return str(value)


def _part_text(part: Any) -> str:
    """One part of a message's content as text: its own text when it has some, else the
    part written as JSON (keys sorted)."""
    if not isinstance(part, dict):
        return part if isinstance(part, str) else str(part)
    texts = [part[key] for key in ("text", "content") if isinstance(part.get(key), str)]
    return texts[0] if texts else json.dumps(part, ensure_ascii=False, sort_keys=True, default=str)


def text_of(content: Any) -> str:
    """Message content as plain text: text parts of a multimodal list one per line."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "\n".join(t for t in map(_part_text, content) if t)
    return _part_text(content)


def prompts(record: Record) -> Iterator[dict[str, Any]]:
    sid = str(record.get("id") or record.get("session_id") or "")
    users = (
        m for m in record.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"
    )
    for number, message in enumerate(users, start=1):
        row: dict[str, Any] = {
            "session_id": sid,
            "index": number,
            "created_at": when(message.get("timestamp")),
            "role": "user",
            "text": text_of(message.get("content")),
        }
        if message.get("id") is not None:
            row["message_id"] = message["id"]
        event = message.get("platform_message_id") or message.get("event_id")
        if event:
            row["event_id"] = event
        yield row


def jsonl_lines(record: Record) -> Iterator[str]:
    for row in prompts(record):
        yield json.dumps(row, ensure_ascii=False, default=str) + "\n"


# -- Markdown --------------------------------------------------------------------------------------


def _one_line(value: Any) -> str:
    return " ".join(str(value).splitlines()).strip()


def _about(record: Record) -> list[str]:
    sid = str(record.get("id") or record.get("session_id") or "unknown")
    lines = [f"- Session ID: `{sid}`"]
    for key, label in (("source", "Source"), ("model", "Model")):
        if record.get(key):
            lines.append(f"- {label}: `{record[key]}`")
    if record.get("title"):
        lines.append(f"- Title: {_one_line(record['title'])}")
    started = when(record.get("started_at"))
    if started:
        lines.append(f"- Started: {started}")
    if record.get("message_count") is not None:
        lines.append(f"- Messages: {record['message_count']}")
    return lines


def _heading_id(record: Record) -> str:
    return _one_line(record.get("id") or record.get("session_id") or "unknown") or "unknown"


def _prompt_lines(record: Record, level: int) -> list[str]:
    lines: list[str] = []
    for row in prompts(record):
        lines.append(
            f"{'#' * level} {row['index']}. {row['created_at'] or 'timestamp unavailable'}"
        )
        if row.get("message_id") is not None:
            lines += [f"Message ID: `{row['message_id']}`", ""]
        lines += [str(row["text"] or ""), ""]
    return lines or [NONE_FOUND, ""]


class _Joined:
    """Lines joined by newlines as a stream; blank lines at the very end are dropped."""

    def __init__(self) -> None:
        self.blanks = 0
        self.started = False

    def feed(self, lines: Iterable[str]) -> str:
        out = []
        for line in lines:
            if line == "":
                self.blanks += 1
                continue
            out.append("\n" * (self.blanks + self.started) + line)
            self.blanks, self.started = 0, True
        return "".join(out)

    @staticmethod
    def end() -> str:
        return "\n"


def markdown_chunks(records: Iterable[Record]) -> Iterator[str]:
    """The Markdown file for these sessions, a session at a time."""
    it = iter(records)
    first, second = next(it, None), None
    if first is not None:
        second = next(it, None)
    joined = _Joined()
    if first is not None and second is None:
        yield joined.feed([f"# User prompts for session {_heading_id(first)}", *_about(first), ""])
        yield joined.feed(_prompt_lines(first, 2))
        yield joined.end()
        return
    yield joined.feed(["# User prompts export", ""])
    if first is None:
        yield joined.feed([NONE_FOUND, ""])
    for record in (r for r in (first, second) if r is not None):
        yield joined.feed(_session_block(record))
    for record in it:
        yield joined.feed(_session_block(record))
    yield joined.end()


def _session_block(record: Record) -> list[str]:
    return [f"## Session {_heading_id(record)}", *_about(record), "", *_prompt_lines(record, 3)]
