"""How Hermes stores message content, and how to read it back.

Multimodal content (a list of parts) is stored as the string "\\x00json:" + json.dumps(list);
tool calls are OpenAI-style JSON text. Everything here is plain data: escaping and HTML happen
in templates and in ``render``.
"""

from __future__ import annotations

import json
from typing import Any

MULTIMODAL_PREFIX = "\x00json:"


def decode_content(content: Any) -> Any:
    """The message content as Hermes's ``_decode_content`` returns it (a list for multimodal).
    A BLOB (bytes: written by something other than Hermes) is read as UTF-8, damage marked."""
    if isinstance(content, (bytes, bytearray, memoryview)):
        content = bytes(content).decode("utf-8", "replace")
    if isinstance(content, str) and content.startswith(MULTIMODAL_PREFIX):
        try:
            return json.loads(content[len(MULTIMODAL_PREFIX) :])
        except (ValueError, RecursionError):
            return content[len(MULTIMODAL_PREFIX) :]
    return content


def content_parts(content: Any) -> list[dict[str, str]]:
    """Content as display parts: [{"kind": "text", "text": …} | {"kind": "placeholder", …}]."""
    value = decode_content(content)
    if value is None:
        return []
    if isinstance(value, str):
        return [{"kind": "text", "text": value}]
    if isinstance(value, dict):
        value = [value]
    parts: list[dict[str, str]] = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            parts.append({"kind": "text", "text": item})
        elif isinstance(item, dict):
            kind = str(item.get("type") or "part")
            if kind in ("text", "input_text", "output_text") and isinstance(item.get("text"), str):
                parts.append({"kind": "text", "text": item["text"]})
            else:
                parts.append({"kind": "placeholder", "text": placeholder(item)})
        else:
            parts.append({"kind": "text", "text": json.dumps(item)})
    return parts


def placeholder(item: dict) -> str:
    kind = str(item.get("type") or "attachment")
    label = {
        "image_url": "image",
        "input_image": "image",
        "input_audio": "audio",
        "file": "file",
        "input_file": "file",
    }.get(kind, kind)
    url = item.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        return f"[{label}: inline data, {len(url):,} bytes]"
    if isinstance(url, str):
        return f"[{label}: {url[:200]}]"
    return f"[{label}]"


def plain_text(content: Any, limit: int | None = None) -> str:
    """Text parts joined (placeholders for the rest), as Hermes's search context does."""
    text = " ".join(p["text"] for p in content_parts(content))
    if limit is not None:
        # Only as much of a long text as the result needs is collapsed (a 10 MB tool result
        # as a search hit's context: 170 ms for the whole).
        head = max(limit * 8, 4096)
        while head < len(text) and len(" ".join(text[:head].split())) <= limit:
            head *= 4
        text = text[:head]
    text = " ".join(text.split())
    if limit is not None and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def load_tool_calls(raw: Any) -> list:
    """The tool_calls column as Hermes's export returns it: the parsed JSON list, or [] when
    it is empty or not valid JSON."""
    if not raw:
        return []
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, TypeError, RecursionError):
        return []
    return value if isinstance(value, list) else [value]


def parse_tool_calls(raw: Any) -> list[dict[str, Any]]:
    """[{"id", "name", "arguments" (parsed when it is JSON), "raw_arguments"}] for display."""
    calls = load_tool_calls(raw)
    out = []
    for call in calls:
        if not isinstance(call, dict):
            continue
        fn = call.get("function") if isinstance(call.get("function"), dict) else {}
        name = fn.get("name") or call.get("name") or "tool"
        args = fn.get("arguments", call.get("arguments", call.get("input")))
        parsed = args
        if isinstance(args, str):
            try:
                parsed = json.loads(args)
            except (ValueError, RecursionError):
                parsed = args
        out.append(
            {
                "id": str(call.get("id") or call.get("call_id") or ""),
                "name": str(name),
                "arguments": parsed,
                "raw_arguments": args,
            }
        )
    return out


def pretty_json(value: Any) -> str:
    """Indented JSON for display; text that is JSON is parsed first; anything else as is."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                value = json.loads(stripped)
            except (ValueError, RecursionError):
                return value
        else:
            return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError, RecursionError):
        return "[too deeply nested to show]" if isinstance(value, (list, dict)) else str(value)


def looks_like_json(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    s = text.strip()
    if s[:1] not in ("{", "["):
        return False
    try:
        json.loads(s)
        return True
    except (ValueError, RecursionError):
        return False
