"""Hermes's standalone HTML export (``templates/exports/hermes_page.html``), streamed.

The template lays the page out; this module turns export records into what it shows: each
message's role, icon, local time, tool calls, text and reasoning, and the sidebar's entries
when several sessions share the page. Every value from the database is untrusted and goes out
escaped as Hermes escapes it (``&`` ``<`` ``>`` ``"`` ``'``), through the template's finalizer,
so nothing in the template can forget it.

The page is produced session by session and message by message (Jinja's ``generate``): a
multi-session page of any size needs the sidebar's short rows first and then one session's
messages at a time, never the whole selection in memory.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

from webui.paths import TEMPLATES

Record = Mapping[str, Any]
SIDEBAR_TITLE_CHARS = 50
EMPTY_PAGE = "<html><body><h1>No sessions to export.</h1></body></html>"


def hermes_escape(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def _finalize(value: Any) -> Any:
    if isinstance(value, Markup):
        return value
    # None shows as "None", as in Hermes's page (an untitled single session's <title>).
    return Markup(hermes_escape(value))


_env = Environment(
    loader=FileSystemLoader(str(TEMPLATES / "exports")),
    autoescape=True,
    finalize=_finalize,
    keep_trailing_newline=True,
)


def local_time(value: Any) -> str:
    """The server's local time to the second, "N/A" for none (as Hermes prints it)."""
    if not value:
        return "N/A"
    try:
        return datetime.fromtimestamp(float(value)).strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError, OverflowError, OSError):
        return str(value)


@dataclass(frozen=True)
class Call:
    name: Any
    arguments: Any


@dataclass(frozen=True)
class Message:
    role: Any
    role_class: str
    icon: str
    delay: str | None
    when: str
    calls: list[Call]
    content: Any
    preformatted: bool
    reasoning: Any


_ICONS = {"user": "user", "assistant": "bot", "system": "shield"}


_PART_SHOWN = {
    "text": lambda part: part.get("text", ""),
    "image_url": lambda part: "[Image Attachment]",
}


def _flat_content(content: Any) -> Any:
    """A multimodal list as its text parts, one per line, images named, other kinds left out."""
    if not isinstance(content, list):
        return content
    shown = (
        _PART_SHOWN[part.get("type")](part) if isinstance(part, dict) else part
        for part in content
        if not isinstance(part, dict) or part.get("type") in _PART_SHOWN
    )
    return "\n".join(str(text) for text in shown)


def _calls(value: Any) -> list[Call]:
    if not value or not isinstance(value, list):
        return []
    calls = []
    for call in value:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            function = {}
        calls.append(Call(function.get("name", "unknown"), function.get("arguments", "{}")))
    return calls


def messages(record: Record) -> Iterator[Message]:
    for position, message in enumerate(record.get("messages") or []):
        if not isinstance(message, dict):
            continue
        role = message.get("role", "unknown")
        if role == "session_meta":  # bookkeeping rows, not part of the conversation
            continue
        yield Message(
            role=role,
            # A safe CSS class whatever the role says (letters, digits, - and _).
            role_class="".join(c if c.isalnum() or c in "-_" else "-" for c in str(role).lower()),
            icon=_ICONS.get(role, "terminal"),
            # The first ten messages fade in one after another.
            delay=str(min(position * 0.05, 1.0)) if position < 10 else None,
            when=local_time(message.get("timestamp", 0)),
            calls=_calls(message.get("tool_calls")),
            content=_flat_content(message.get("content") or ""),
            preformatted=role == "tool",
            reasoning=message.get("reasoning") or message.get("reasoning_content"),
        )


@dataclass(frozen=True)
class View:
    id: str
    css_class: str
    title: Any
    model: Any
    started: str
    system_prompt: Any
    messages: Iterator[Message]


def _view(record: Record, alone: bool) -> View:
    return View(
        id=str(record.get("id", "N/A")),
        css_class="session-view active" if alone else "session-view",
        title=record.get("title") or "Hermes Session",
        model=record.get("model", "Unknown"),
        started=local_time(record.get("started_at", 0)),
        system_prompt=record.get("system_prompt"),
        messages=messages(record),
    )


def sidebar_entry(record: Record) -> dict[str, Any]:
    """One session in the sidebar of a multi-session page (from its row alone)."""
    sid = str(record.get("id", "N/A"))
    title = record.get("title") or record.get("preview") or "Untitled Session"
    if len(title) > SIDEBAR_TITLE_CHARS:
        title = title[: SIDEBAR_TITLE_CHARS - 3] + "..."
    return {
        "id": sid,
        "anchor": quote(sid, safe=""),
        "title": title,
        "short_id": sid[:8],
        "day": local_time(record.get("started_at", 0)).split(" ")[0],
    }


def page_chunks(
    records: Iterable[Record],
    sidebar: Iterable[Record] | None,
    *,
    title: Any = None,
    nonce: str | None = None,
    generated: float | None = None,
) -> Iterator[str]:
    """The page. ``sidebar``: the sessions' rows for a multi-session page (their order is the
    records' order), None for one session, whose ``title`` names the page."""
    multi = sidebar is not None
    template = _env.get_template("hermes_page.html")
    yield from template.generate(
        nonce=nonce or secrets.token_urlsafe(16),
        page_title="Hermes Session Export" if multi else title,
        main_margin="var(--sidebar-width)" if multi else "0",
        layout="layout-multi" if multi else "layout-single",
        sidebar=(sidebar_entry(r) for r in sidebar) if multi else None,
        views=(_view(r, alone=not multi) for r in records),
        generated_at=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(generated)),
    )


def page(records: list[Record]) -> str:
    """A whole page for records in hand (one session, or several with a sidebar)."""
    if not records:
        return EMPTY_PAGE
    if len(records) == 1:
        return "".join(page_chunks(records, None, title=records[0].get("title", "Hermes Session")))
    return "".join(page_chunks(records, records))
