"""What an exported HTML page holds, read back with the standard library's HTML parser: its
sessions in order, each with its id, title, model, start and system prompt, and its messages
in order, each with its role, time, text, tool calls (name, arguments) and reasoning.

Two readers: one for Logbook's page (templates/exports/page.html), one for the page
`hermes sessions export --format html` writes (Hermes 0.19.0). Both give the same shape, so
a test compares what the pages hold, whatever they look like. Each reader knows its page by
its classes only; text is taken as the parser gives it (entities decoded, nothing stripped
unless the page's own layout put it there)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import unquote

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


@dataclass
class Message:
    role: str = ""
    time: str | None = None
    text: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)
    reasoning: str = ""


@dataclass
class Session:
    id: str = ""
    title: str | None = None
    model: str | None = None
    started: str | None = None
    system_prompt: str = ""
    messages: list[Message] = field(default_factory=list)


@dataclass
class Page:
    contents: list[str] = field(default_factory=list)  # session ids, as the page lists them
    sessions: list[Session] = field(default_factory=list)


# (tag, a class it has, a class an ancestor has, the field its text is); the first row that
# fits names the field
Fields = list[tuple[str, str | None, str | None, str]]


class _Reader(HTMLParser):
    """Keeps the open elements (tag, classes, attributes) and captures the text of the
    elements ``FIELDS`` names, however deeply they nest."""

    FIELDS: Fields = []

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.stack: list[tuple[str, set[str], dict[str, str | None]]] = []
        self.capture: list[tuple[int, str, list[str]]] = []  # (depth, field, pieces)

    # what a page means: overridden by each reader
    def opened(self, tag: str, classes: set[str], attrs: dict[str, str | None]) -> None: ...

    def field_of(self, tag: str, classes: set[str]) -> str | None:
        if not self.page.sessions:
            return None
        for want_tag, has, within, name in self.FIELDS:
            fits = tag == want_tag and (has is None or has in classes)
            if fits and (within is None or self.within(within)):
                return name
        return None

    def captured(self, name: str, text: str) -> None: ...

    def within(self, cls: str) -> bool:
        return any(cls in classes for _t, classes, _a in self.stack)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        self.opened(tag, classes, a)
        if tag in VOID:
            return
        self.stack.append((tag, classes, a))
        name = self.field_of(tag, classes)
        if name is not None:
            self.capture.append((len(self.stack), name, []))

    def handle_startendtag(self, tag, attrs):
        self.opened(tag, set((dict(attrs).get("class") or "").split()), dict(attrs))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        while self.stack:
            depth = len(self.stack)
            open_tag = self.stack.pop()[0]
            if self.capture and self.capture[-1][0] == depth:
                _d, name, pieces = self.capture.pop()
                self.captured(name, "".join(pieces))
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self.capture:
            self.capture[-1][2].append(data)

    @property
    def session(self) -> Session:
        return self.page.sessions[-1]

    @property
    def message(self) -> Message:
        return self.session.messages[-1]


class _Logbook(_Reader):
    def opened(self, tag, classes, attrs):
        if tag == "section" and "session" in classes:
            self.page.sessions.append(Session())
        elif tag == "article" and "msg" in classes:
            self.session.messages.append(Message())
        elif tag == "a" and self.within("contents"):
            self.page.contents.append(unquote((attrs.get("href") or "").removeprefix("#s-")))

    FIELDS = [
        ("h1", None, None, "title"),
        ("code", "sid", None, "id"),
        ("dd", "model", None, "model"),
        ("time", None, "started", "started"),
        ("time", None, "msg-head", "time"),
        ("span", "role", None, "role"),
        ("code", "call-name", None, "call"),
        ("div", "arguments", None, "arguments"),
        ("div", None, "system-prompt", "system_prompt"),
        ("div", None, "reasoning", "reasoning"),
        ("div", "text", "msg", "text"),
        ("div", "result", "msg", "text"),
    ]

    def field_of(self, tag, classes):
        # What the page says in place of a missing value is not a value.
        return None if {"untitled", "absent"} & classes else super().field_of(tag, classes)

    def captured(self, name, text):
        if name in ("title", "id", "model", "started", "system_prompt"):
            setattr(self.session, name, text)
        elif name == "call":
            self.message.calls.append((text, ""))
        elif name == "arguments":
            self.message.calls[-1] = (self.message.calls[-1][0], text)
        else:
            setattr(self.message, name, text)


class _Hermes(_Reader):
    """Hermes 0.19.0's page. Its layout puts whitespace around some values (the role after
    two icons, "Tool Call: name" between lines of the template): that whitespace is taken off
    here, and only that."""

    def opened(self, tag, classes, attrs):
        if tag == "div" and "session-view" in classes:
            self.page.sessions.append(Session(id=(attrs.get("id") or "").removeprefix("view-")))
        elif tag == "div" and "message" in classes:
            self.session.messages.append(Message())
        elif tag == "a" and "session-item" in classes:
            self.page.contents.append(attrs.get("data-id") or "")

    FIELDS = [
        ("h1", None, None, "title"),
        ("div", "meta-item", None, "meta"),
        ("div", "role-badge", None, "role"),
        ("div", "timestamp", None, "time"),
        ("div", "tool-call-header", None, "call"),
        ("code", None, "tool-call-content", "arguments"),
        ("div", "content", "system-prompt-content", "system_prompt"),
        ("div", "content", "reasoning-content", "reasoning"),
        ("div", "content", "message-body", "text"),
    ]

    def captured(self, name, text):
        if name == "title":
            self.session.title = text
        elif name == "meta":
            label, _, value = text.partition(": ")
            if label == "Model":
                self.session.model = value
            elif label == "Started":
                self.session.started = None if value == "N/A" else value
        elif name == "system_prompt":
            self.session.system_prompt = text
        elif name == "role":
            self.message.role = text.removeprefix("  ")  # after the chevron and the icon
        elif name == "time":
            self.message.time = None if text == "N/A" else text
        elif name == "call":
            found = re.fullmatch(r"\s*Tool Call: (.*?)\s*", text, re.S)
            self.message.calls.append((found.group(1) if found else text, ""))
        elif name == "arguments":
            self.message.calls[-1] = (self.message.calls[-1][0], text)
        else:
            setattr(self.message, name, text)


def _read(reader: _Reader, html: str) -> Page:
    reader.feed(html)
    reader.close()
    return reader.page


def logbook_page(html: str) -> Page:
    return _read(_Logbook(), html)


def hermes_page(html: str) -> Page:
    """Hermes's page, with what it shows for a missing value read as missing: "N/A" for a
    time, "Hermes Session" for a title, "None"/"Unknown" for a model."""
    page = _read(_Hermes(), html)
    for s in page.sessions:
        s.title = None if s.title == "Hermes Session" else s.title
        s.model = None if s.model in ("None", "Unknown", "") else s.model
    return page
