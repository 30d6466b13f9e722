"""Logbook's standalone HTML export (``templates/exports/page.html``), streamed.

The page is Logbook's own: the site's stylesheet inline, the conversation laid out as the
viewer lays it out, and nothing else. It is safe by construction:

- every value from the database reaches the template as a plain ``str`` (never an object that
  could pass itself off as markup) and Jinja's autoescape escapes it; the only markup not
  written in the template is the site's own stylesheet;
- there is no script at all, no event handler, no URL but ``#`` anchors to the page itself,
  and its Content-Security-Policy (``default-src 'none'``) lets a browser load nothing.

It holds what Hermes's own page (``hermes sessions export --format html``) holds, in the same
order: each session's id, title, model, start and system prompt, and each message's role,
local time, text (a tool's result as such), tool calls (name and arguments) and reasoning.
tests/oracle compares the two by what they hold, not by their bytes.

The page is produced session by session and message by message (Jinja's ``generate``): a
multi-session page of any size needs the contents' short rows first and then one session's
messages at a time, never the whole selection in memory.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

from webui.paths import STATIC, TEMPLATES

Record = Mapping[str, Any]
TEMPLATE = "page.html"

_env = Environment(
    loader=FileSystemLoader(str(TEMPLATES / "exports")),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
)


@cache
def site_css() -> Markup:
    """The site's stylesheet (our own file, not data), put inline so the page stands alone."""
    css = (STATIC / "app.css").read_text(encoding="utf-8")
    if "</" in css:  # it could close the <style> element early
        raise ValueError("static/app.css must not contain '</'")
    return Markup(css)


def _text(value: Any) -> str:
    """A database value as plain text: a ``str`` whatever it was, so autoescape sees it."""
    return value if type(value) is str else str(value)


def _moment(value: Any) -> tuple[str, str] | None:
    """(the server's local time to the second, ISO 8601 with its offset), None for none."""
    if not value:
        return None
    try:
        when = datetime.fromtimestamp(float(value)).astimezone()
    except (TypeError, ValueError, OverflowError, OSError):
        return (_text(value), "")
    return when.strftime("%Y-%m-%d %H:%M:%S"), when.isoformat(timespec="seconds")


def _css_token(role: str) -> str:
    """A role as one CSS class token: lower case, anything but letters, digits, - and _ as -."""
    return re.sub(r"[^\w-]", "-", role.lower())


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str


@dataclass(frozen=True)
class Message:
    role: str
    role_class: str
    when: tuple[str, str] | None
    text: str
    is_result: bool
    calls: list[Call]
    reasoning: str


def _content(value: Any) -> str:
    """A message's text. Multimodal content (a list of parts) shows its text parts and names
    its images, one part a line; parts of other kinds are left out, as Hermes's page does."""
    if not value:
        return ""
    if not isinstance(value, list):
        return _text(value)
    lines = []
    for part in value:
        if not isinstance(part, dict):
            lines.append(_text(part))
        elif part.get("type") == "text":
            lines.append(_text(part.get("text", "")))
        elif part.get("type") == "image_url":
            lines.append("[Image Attachment]")
    return "\n".join(lines)


def _calls(value: Any) -> list[Call]:
    if not isinstance(value, list):
        return []
    found = []
    for call in value:
        function = call.get("function") if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        found.append(
            Call(_text(function.get("name", "unknown")), _text(function.get("arguments", "{}")))
        )
    return found


def messages(record: Record) -> Iterator[Message]:
    for message in record.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role = _text(message.get("role", "unknown"))
        if role == "session_meta":  # Hermes's bookkeeping rows, not part of the conversation
            continue
        reasoning = message.get("reasoning") or message.get("reasoning_content")
        yield Message(
            role=role,
            role_class=_css_token(role),
            when=_moment(message.get("timestamp")),
            text=_content(message.get("content")),
            is_result=role == "tool",
            calls=_calls(message.get("tool_calls")),
            reasoning=_text(reasoning) if reasoning else "",
        )


def anchor(session_id: str) -> str:
    """The page-internal address of a session: an id attribute and a fragment at once."""
    return "s-" + quote(session_id, safe="")


@dataclass(frozen=True)
class Session:
    id: str
    anchor: str
    title: str | None
    model: str | None
    started: tuple[str, str] | None
    system_prompt: str
    messages: Iterator[Message]


def _session(record: Record) -> Session:
    sid = _text(record.get("id", ""))
    title, model = record.get("title"), record.get("model")
    prompt = record.get("system_prompt")
    return Session(
        id=sid,
        anchor=anchor(sid),
        title=_text(title) if title else None,
        model=_text(model) if model else None,
        started=_moment(record.get("started_at")),
        system_prompt=_text(prompt) if prompt else "",
        messages=messages(record),
    )


def contents_entry(row: Record) -> dict[str, Any]:
    """One session in the contents of a multi-session page (from its short row alone)."""
    sid = _text(row.get("id", ""))
    title = row.get("title") or row.get("preview")
    started = _moment(row.get("started_at"))
    return {
        "anchor": anchor(sid),
        "label": _text(title) if title else None,
        "short_id": sid[:8],
        "day": started[0].split(" ")[0] if started else None,
    }


def page_chunks(
    records: Iterable[Record],
    contents: Iterable[Record] | None,
    *,
    generated: float | None = None,
    version: str = "",
) -> Iterator[str]:
    """The page, a piece at a time. ``contents``: the sessions' short rows for a page of
    several sessions (in the records' order), None for a page of one; ``version``: Logbook's,
    named in the page's foot."""
    records = iter(records)
    single = None
    if contents is None:
        single = next(records, None)
        records = iter([single] if single is not None else [])
    title = (single.get("title") if single is not None else None) or None
    yield from _env.get_template(TEMPLATE).generate(
        page_title=_text(title) if title else None,
        several=contents is not None,
        contents=(contents_entry(r) for r in contents) if contents is not None else (),
        sessions=(_session(r) for r in records),
        css=site_css(),
        version=version,
        generated_at=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(generated)),
    )
