"""A JSON tool result as the conversation shows it: highlighted, with long multi-line strings
(file contents, command output) lifted out to read as text. Made inline for a page, or in
the render process for "render it anyway" (webui.present.slow_render)."""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup

from webui import keep
from webui.hermes.content import pretty_json
from webui.present.markdown import highlight_code

# Over this many characters with a line break, a string in a JSON tool result is shown as text.
LIFT_CHARS = 120


def lift_long_strings(text: str) -> tuple[Any, list[dict[str, str]]]:
    """(the JSON with long multi-line top-level strings replaced by a pointer, those strings
    as [{"key", "text"}]). Anything that is not a JSON object comes back unchanged."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return text, []
    if not isinstance(obj, dict):
        return obj, []
    lifted = []
    for key, value in obj.items():
        if isinstance(value, str) and len(value) > LIFT_CHARS and "\n" in value:
            lifted.append({"key": str(key), "text": value})
            obj[key] = f"[{len(value):,} characters, shown below]"
    return obj, lifted


@keep.memoize_text(8_000_000, cost=lambda v: len(v[0]) + sum(len(t["text"]) for t in v[1]))
def json_result(text: str) -> tuple[Markup, tuple[dict[str, str], ...]]:
    """(highlighted JSON, lifted strings) for a JSON tool result. File contents and command
    output inside it read as text, not as one line of "\\n" escapes: long multi-line strings
    are lifted out of the JSON. Shared between requests: read it, never change it."""
    short, texts = lift_long_strings(text)
    return highlight_code(pretty_json(short), "json"), tuple(texts)
