"""The Markdown and QMD files of `hermes sessions export --format md|qmd`, written as a stream.

A file is: YAML front matter; a heading with the title; the session id, source and working
directory; ``## Messages`` with a ``### <Role> — <UTC time>`` block per message (its text, a
JSON block for structured content, a ``## Tool calls`` JSON block); one ``## Compression
segment: <id>`` heading before each segment of a logical (compression-chain) export; and an
``## Export verification`` footer whose last line is the SHA-256 of the whole file as it reads
with ``pending`` in place of that digest. Blocks are separated by one blank line and nothing
trails the last character of a block.

Hermes builds the text whole and digests it; here it is produced block by block, hashed as it
goes, and the digest closes the stream, so a long conversation never sits in memory twice.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

FORMATS = ("md", "qmd")
EXPORTER = "hermes sessions export (md/qmd) v1"
DIGEST_LINE = "- SHA256 of exported body: `{}`"
_DIGEST_RE = re.compile(r"- SHA256 of exported body: `([0-9a-f]{64})`")

Record = Mapping[str, Any]


# -- values --------------------------------------------------------------------------------------


def utc_iso(value: Any) -> str:
    """Epoch seconds as ISO 8601 in UTC with a ``Z`` (microseconds when there are any); text
    that is not a number as it is; nothing for nothing."""
    if value is None or value == "":
        return ""
    try:
        moment = datetime.fromtimestamp(float(value), tz=UTC)
    except (TypeError, ValueError):
        return str(value)
    except (OverflowError, OSError):  # a number no calendar holds: shown as stored
        return str(value)
    return moment.isoformat().replace("+00:00", "Z")


_YAML_WORDS = {None: "null", True: "true", False: "false"}


def _yaml_value(value: Any) -> str:
    """A front-matter value: JSON for numbers, lists and text (text always quoted)."""
    if value is None or isinstance(value, bool):
        return _YAML_WORDS[value]
    plain = value if isinstance(value, (int, float, list)) else str(value)
    return json.dumps(plain, ensure_ascii=False)


def session_id(record: Record) -> str:
    return str(record.get("id") or record.get("session_id") or "unknown-session")


def segments(record: Record) -> list[Record]:
    parts = record.get("segments")
    if isinstance(parts, list) and parts:
        return [p for p in parts if isinstance(p, dict)]
    return [record]


def message_count(record: Record) -> int:
    return sum(len(seg.get("messages") or []) for seg in segments(record))


# -- blocks ----------------------------------------------------------------------------------------


def _front_matter(record: Record, fmt: str, exported: str) -> str:
    fields: list[tuple[str, Any]] = [
        ("session_id", session_id(record)),
        ("title", record.get("title")),
        ("source", record.get("source")),
        ("created_at", utc_iso(record.get("started_at") or record.get("created_at"))),
        ("updated_at", utc_iso(record.get("last_active") or record.get("updated_at"))),
        ("ended_at", utc_iso(record.get("ended_at"))),
        ("model", record.get("model")),
        ("provider", record.get("billing_provider") or record.get("provider")),
        ("cwd", record.get("cwd")),
        ("archived", bool(record.get("archived"))),
        ("message_count", message_count(record)),
        ("tool_call_count", record.get("tool_call_count") or 0),
    ]
    if record.get("lineage_session_ids"):
        fields.append(("lineage_session_ids", record.get("lineage_session_ids")))
    fields += [("format", fmt), ("exported_at", exported), ("exporter", EXPORTER)]
    lines = "".join(f"{key}: {_yaml_value(value)}\n" for key, value in fields)
    return f"---\n{lines}---\n"


def _json_block(value: Any) -> str:
    return "```json\n" + json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n```"


def _heading(message: Record) -> str:
    """``### User — <time>``; a tool's result is headed by the tool's name."""
    role = str(message.get("role") or "message")
    tool = (message.get("name") or message.get("tool_name")) if role == "tool" else None
    words = [f"Tool — {tool}" if tool else role.capitalize()]
    when = utc_iso(message.get("created_at") or message.get("timestamp"))
    words += [when] if when else []
    return "### " + " — ".join(words)


def _message_lines(message: Record) -> Iterator[str]:
    """A message as the lines of its block: heading, text, tool calls, then a blank line."""
    yield _heading(message) + "\n"
    content = message.get("content")
    if isinstance(content, str):
        if content.rstrip():
            yield content.rstrip() + "\n"
    elif content is not None:
        yield _json_block(content) + "\n"
    calls = message.get("tool_calls")
    if calls:
        yield "\n\n## Tool calls\n\n" + _json_block(calls) + "\n"
    yield ""


def _messages_lines(record: Record) -> Iterator[str]:
    yield "## Messages\n"
    if message_count(record) == 0:
        yield "_No messages in this session._\n"
        return
    parts = segments(record)
    for segment in parts:
        if len(parts) > 1:
            yield f"## Compression segment: {session_id(segment)}\n"
        for message in segment.get("messages") or []:
            yield from _message_lines(message)


class _Trimmed:
    """Lines joined by newlines, as a stream, with the whitespace at the very end dropped: what
    is held back is only the trailing whitespace seen so far."""

    def __init__(self) -> None:
        self.held = ""
        self.started = False

    def feed(self, line: str) -> str:
        text = self.held + ("\n" if self.started else "") + line
        self.started = True
        kept = text.rstrip()
        self.held = text[len(kept) :]
        return kept

    def end(self) -> str:
        self.held = ""
        return "\n"


def document_chunks(record: Record, fmt: str, exported_at: float) -> Iterator[str]:
    """The file, a block at a time; the last chunk carries the digest of all before it."""
    if fmt not in FORMATS:
        raise ValueError(f"not a Markdown format: {fmt}")
    sid = session_id(record)
    exported = utc_iso(exported_at)
    digest = hashlib.sha256()

    def out(text: str) -> str:
        digest.update(text.encode("utf-8"))
        return text

    head = [_front_matter(record, fmt, exported), f"# {record.get('title') or sid}\n"]
    head.append(f"Session ID: `{sid}`\n")
    if record.get("source"):
        head.append(f"Source: `{record.get('source')}`\n")
    if record.get("cwd"):
        head.append(f"Working directory: `{record.get('cwd')}`\n")
    yield out("\n".join(head) + "\n")

    section = _Trimmed()
    for line in _messages_lines(record):
        chunk = section.feed(line)
        if chunk:
            yield out(chunk)
    yield out(section.end())

    footer = [
        "",
        "## Export verification\n",
        f"- Session id: `{sid}`",
        f"- Exported messages: `{message_count(record)}`",
        f"- Source DB message count at export: `{record.get('message_count', message_count(record))}`",
        f"- Exported at: `{exported}`",
    ]
    body = "\n".join(footer) + "\n"
    digest.update((body + DIGEST_LINE.format("pending") + "\n").encode("utf-8"))
    yield body + DIGEST_LINE.format(digest.hexdigest()) + "\n"


def document(record: Record, fmt: str, exported_at: float) -> str:
    return "".join(document_chunks(record, fmt, exported_at))


# -- names, verification, manifest ----------------------------------------------------------------

_SLUG_DROP = re.compile(r"[^A-Za-z0-9._-]+")
_ID_DROP = re.compile(r"[^A-Za-z0-9._-]")


def safe_name_part(text: str) -> str:
    """Text made safe as part of a file name: only letters, digits, ``. _ -``, and never a
    leading dot (so no ``/``, no ``..`` to climb with, no absolute path, no hidden file). Text
    that had to change gets a digest of itself, so two ids never share a file."""
    cleaned = _ID_DROP.sub("_", text).lstrip(".")[:120] or "session"
    if cleaned == text:
        return cleaned
    return f"{cleaned}-{hashlib.sha256(text.encode('utf-8', 'replace')).hexdigest()[:8]}"


def file_name(record: Record, fmt: str) -> str:
    """``<id>-<slug of the title>.<fmt>``, Hermes's name for the file. Ids are data from the
    database: one that is not a plain name (a slash, ``..``) is made one."""
    slug = _SLUG_DROP.sub("-", str(record.get("title") or "session")).strip(".-_").lower()
    return f"{safe_name_part(session_id(record))}-{(slug or 'session')[:60]}.{fmt}"


def verify(text: str, record: Record) -> tuple[bool, str]:
    """Hermes's check of an export file read back: its digest matches its body, and it states
    this session's id and number of messages."""
    found = _DIGEST_RE.search(text)
    if not found:
        return False, "sha256 marker missing"
    body = _DIGEST_RE.sub(DIGEST_LINE.format("pending"), text)
    if hashlib.sha256(body.encode("utf-8")).hexdigest() != found.group(1):
        return False, "sha256 mismatch"
    if f"- Exported messages: `{message_count(record)}`" not in text:
        return False, "message count mismatch"
    if f"- Session id: `{session_id(record)}`" not in text:
        return False, "session id mismatch"
    return True, "ok"


def manifest_line(record: Record, path: str, fmt: str, sha256: str, when: float) -> str:
    """One line of the ``manifest.jsonl`` that sits beside the files (``sha256``: of the file
    as written)."""
    entry = {
        "session_id": session_id(record),
        "lineage_session_ids": record.get("lineage_session_ids") or [session_id(record)],
        "path": path,
        "format": fmt,
        "message_count": message_count(record),
        "sha256": sha256,
        "exported_at": when,
    }
    return json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
