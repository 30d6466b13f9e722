"""Turns database rows into what the templates show (parsed, decoded, rendered Markdown).

Kept out of templates so they hold no logic, and out of the database layer so it holds no
presentation."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

from markupsafe import Markup, escape

from webui import keep
from webui.db.search.store import MARK_END, MARK_START
from webui.db.sql import SESSION_FIGURES
from webui.hermes.content import (
    content_parts,
    decode_content,
    load_tool_calls,
    looks_like_json,
    parse_tool_calls,
    plain_text,
    pretty_json,
)
from webui.hermes.origin import imported_from, origin_label
from webui.present import fragments, slow_render
from webui.present.filters import local_datetime
from webui.present.json_view import json_result, lift_long_strings  # noqa: F401 - lift_long_strings: tests
from webui.present.markdown import highlight_code, markdown

MARKDOWN_ROLES = {"user", "assistant"}
REASONING_FIELDS = ("reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items")


def session_label(row: dict[str, Any], limit: int = 80) -> str:
    """Title, else the first user message (as `hermes sessions list` shows), else the id."""
    if row.get("title"):
        return row["title"]
    preview = plain_text(row.get("preview"), limit) if row.get("preview") else ""
    return preview or "(untitled)"


def message_json(m: dict[str, Any]) -> dict[str, Any]:
    """A message row for a JSON twin, as Hermes's get_messages returns it: content decoded
    (multimodal back to its list), tool_calls parsed from JSON ([] when unreadable, null
    stays null)."""
    out = dict(m)
    if "content" in out:
        out["content"] = decode_content(out["content"])
    if out.get("tool_calls"):
        out["tool_calls"] = load_tool_calls(out["tool_calls"])
    return out


def with_origin(row: dict[str, Any]) -> dict[str, Any]:
    """The row with its origin in words (webui.hermes.origin), for the list and the viewer."""
    row["origin"] = origin_label(row, os.path.expanduser("~"))
    return row


def session_json(row: dict[str, Any]) -> dict[str, Any]:
    out = {
        k: row.get(k)
        for k in (
            "id",
            "title",
            "source",
            "model",
            "started_at",
            "ended_at",
            "end_reason",
            "last_active",
            "message_count",
            "tool_call_count",
            *SESSION_FIGURES,
            "cost_status",
            "parent_session_id",
            "child_count",
        )
    }
    # Hermes's list preview: the first user message, 60 characters and '...'.
    out["preview"] = row.get("preview") or ""
    if row.get("archived") is not None:
        out["archived"] = bool(row["archived"])
    # 0.20+ files (the columns exist): every row carries its pin and hidden flags (contract).
    for flag in ("pinned", "hidden", "auto_archived"):
        if row.get(flag) is not None:
            out[flag] = bool(row[flag])
    for key in ("title_source", "continuation_kind", "created_source"):
        if row.get(key):
            out[key] = row[key]
    imported = imported_from(row.get("origin_json"))
    if imported:
        out["imported_from"] = imported
    if "chain" in row:
        out["conversation"] = row["chain"]
    if row.get("lineage_root_id"):
        out["lineage_root_id"] = row["lineage_root_id"]
    if row.get("origin"):
        out["origin"] = row["origin"]
    if "store" in row:
        out["store"] = row["store"]
    if "profile" in row:
        out["profile"] = row["profile"]
    return out


@dataclass
class RenderBudget:
    """How much formatting (Markdown, highlighting) one page may do: a 0.8 MB Markdown table
    takes seconds. A message over ``per_message`` characters, or one that would take the page
    past ``per_page``, is shown as plain text with a "render anyway" link (its id in
    ``forced``)."""

    per_message: int = 50_000
    per_page: int = 300_000
    forced: frozenset[int] = frozenset()
    spent: int = 0
    # How long the page waits for a forced render made apart (slow_render.patience); None:
    # until it is done.
    wait_s: float | None = slow_render.WAIT_AT_MOST_S

    def beyond_page(self, size: int) -> bool:
        """Too large to format inline even when asked for (rendered apart, then)."""
        return size > self.per_message

    def allows(self, message_id: int, size: int) -> bool:
        if message_id not in self.forced and (
            size > self.per_message or self.spent + size > self.per_page
        ):
            return False
        self.spent += size
        return True


def message_view(
    m: dict[str, Any],
    links: dict[str, dict],
    href: Callable[[int], str],
    budget: RenderBudget | None = None,
    shown: tuple[bool, str | None, str | None] | None = None,
) -> dict[str, Any]:
    """``href(message_id)`` links to another message (same page or the page holding it).
    ``shown``: whether the Hermes that wrote the file shows the row, and if not why (its
    code and its words: webui.hermes.display.why_words)."""
    budget = budget or RenderBudget()
    made_of = _row_key(m)
    view = dict(_row_view(made_of, m))
    hermes_shows, why, why_words = shown or (True, None, None)
    view["hermes_shows"], view["why"], view["why_words"] = hermes_shows, why, why_words
    text, formatted = view.pop("_text_len"), view.pop("_formatted")
    del view["_size"]
    view["html"] = view["code"] = None
    view["texts"] = []
    view["plain_reason"] = None
    view["render_pending"] = None
    if formatted and not budget.allows(m["id"], text):
        view["plain_reason"] = text  # shown as plain text, with "render anyway"
    elif formatted and budget.beyond_page(text):
        # Asked for on purpose and too large to format inline: rendered apart, within the
        # request's deadline, and kept (webui.present.slow_render).
        kind = "markdown" if view["role"] in MARKDOWN_ROLES else "json"
        done = slow_render.render(kind, view["raw"], budget.wait_s)
        if done.pending:
            view["plain_reason"], view["render_pending"] = text, done.pending
        elif kind == "markdown":
            view["html"] = Markup(done.value)
        else:
            view["code"], view["texts"] = Markup(done.value[0]), done.value[1]
    elif view["role"] in MARKDOWN_ROLES:
        view["html"] = markdown(view["raw"])
    elif formatted:
        view["code"], view["texts"] = json_result(view["raw"])
    view["tool_calls"] = [
        {**call, "result_href": _maybe(href, links.get(call["id"], {}).get("result"))}
        for call in view["tool_calls"]
    ]
    view["call_href"] = _maybe(href, links.get(m.get("tool_call_id") or "", {}).get("call"))
    # What the rendered message is made of (see present/fragments.py): the row and the
    # choices made here; its number and date line are added by the key.
    view["fragment"] = fragments.digest(
        made_of,
        shown,
        view["call_href"],
        [c["result_href"] for c in view["tool_calls"]],
        view["plain_reason"],
        view["render_pending"],
    )
    return view


def _row_key(m: dict[str, Any]) -> tuple:
    """The row as stored, as a key: its id and the hash of all its values. A digest of its
    text (fragments.digest) costs ~10 µs a message; Python's own hash of the values costs a
    tenth, and cannot be steered by the text stored (str hashing is SipHash with a key drawn
    per process), so two versions of one message id do not meet under one key."""
    try:
        return (m["id"], hash(tuple(m.items())))
    except TypeError:  # an unhashable value (none comes from SQLite): the full digest
        return (m["id"], fragments.digest(m))


_ROW_VIEWS = keep.SizedCache(4_000_000, getsizeof=lambda v: v["_size"])


def _row_view(made_of: tuple, m: dict[str, Any]) -> dict[str, Any]:
    """What a message shows that depends on its row alone (parsed content, tool calls,
    reasoning), kept under the row's key (_row_key): the same messages are shown again and
    again. Shared between requests: copy before changing."""
    hit = _ROW_VIEWS.get(made_of)
    if hit is not None:
        return hit
    role = m.get("role") or "unknown"
    parts = content_parts(m.get("content"))
    text = "\n\n".join(p["text"] for p in parts if p["kind"] == "text")
    reasoning = reasoning_blocks(m)
    view: dict[str, Any] = {
        "id": m["id"],
        "role": role,
        "timestamp": m.get("timestamp"),
        "token_count": m.get("token_count"),
        "finish_reason": m.get("finish_reason"),
        "tool_name": m.get("tool_name"),
        "tool_call_id": m.get("tool_call_id"),
        "raw": text,
        "placeholders": [p["text"] for p in parts if p["kind"] == "placeholder"],
        # Hermes 0.19: active = 0 is out of the conversation; compacted = 1 says /compact
        # summarised it away, otherwise /rewind undid it.
        "rewound": m.get("active") == 0 and not m.get("compacted"),
        "compacted": m.get("active") == 0 and bool(m.get("compacted")),
        "tool_calls": tool_calls_view(m.get("tool_calls")),
        "reasoning": reasoning,
        "_text_len": len(text),
        "_formatted": role in MARKDOWN_ROLES or looks_like_json(text),
    }
    view["_size"] = 2 * len(text) + sum(len(r["text"]) for r in reasoning) + 200
    _ROW_VIEWS.set(made_of, view)
    return view


@keep.memoize_text(4_000_000, cost=lambda calls: sum(len(c["pretty"]) * 2 for c in calls))
def tool_calls_view(raw: Any) -> tuple[dict[str, Any], ...]:
    """A message's tool calls, parsed, with highlighted arguments and the hint that tells
    one call from the next. Shared between requests: copy a call before adding to it."""
    return tuple(
        {
            **call,
            "pretty": highlight_code(pretty_json(call["arguments"]), "json")
            if not isinstance(call["arguments"], str)
            else call["arguments"],
            "hint": call_hint(call["arguments"]),
        }
        for call in parse_tool_calls(raw)
    )


def call_hint(arguments: Any) -> str:
    """The argument that tells one call of a tool from the next (a path, a command, a
    query): the first short string value, cut to 80 characters."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return plain_text(arguments, 80) if arguments else ""
    if isinstance(arguments, dict):
        for value in arguments.values():
            if isinstance(value, str) and value.strip():
                return plain_text(value, 80)
    return ""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            return [value]
        return _strings(decoded) if not isinstance(decoded, str) else [decoded]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _strings(v)]
    if isinstance(value, list):
        return [t for v in value for t in _strings(v)]
    return []


def reasoning_blocks(m: dict[str, Any]) -> list[dict[str, str]]:
    """The reasoning fields to show. Structured copies (``reasoning_details`` and the like)
    that only repeat the plain reasoning are left out: the reader sees it once."""
    plain = (m.get("reasoning") or "").strip()
    blocks = []
    for f in REASONING_FIELDS:
        if not m.get(f):
            continue
        if f == "reasoning":
            blocks.append({"field": f, "text": m[f]})
            continue
        texts, pretty = _structured(m[f])
        if plain and texts and all(t in plain for t in texts):
            continue
        blocks.append({"field": f, "text": pretty})
    return blocks


@keep.memoize_text(4_000_000, cost=lambda v: len(v[1]) + sum(map(len, v[0])))
def _structured(value: Any) -> tuple[tuple[str, ...], str]:
    """(its texts longer than 20 characters, indented JSON) of a structured reasoning field."""
    texts = tuple(t.strip() for t in _strings(value) if len(t.strip()) > 20)
    return texts, pretty_json(value)


def number_and_date(views: list[dict[str, Any]], first_n: int, day_of: Any) -> None:
    """Number a page's messages from ``first_n`` and mark those whose day differs from the
    message before (the first one: from the session's start), so a conversation that crosses
    midnight shows dates where they change."""
    previous = _day(day_of)
    for i, v in enumerate(views):
        v["n"] = first_n + i if first_n else None
        day = _day(v.get("timestamp"))
        v["show_date"] = day is not None and day != previous
        previous = day if day is not None else previous


def _day(ts: Any) -> date | None:
    try:
        return local_datetime(float(ts)).date()  # kept per timestamp (filters)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _maybe(href: Callable[[int], str], message_id: int | None) -> str | None:
    return href(message_id) if message_id is not None else None


def complete_snippets(rows: list[dict[str, Any]]) -> None:
    """Hits found without FTS5's snippet() (substring routes) get one cut around their terms,
    with the same private markers."""
    for row in rows:
        if row.get("snippet") is None:
            row["snippet"] = make_snippet(row.pop("_text", ""), row.pop("match_terms", []))


# A text longer than this is first cut around its first match, and only that window is read
# (a 10 MB tool result made whole into plain text took 170 ms per hit).
LONG_TEXT = 64 * 1024


def make_snippet(text: str | None, terms: list[str], width: int = 160) -> str:
    """A snippet with private markers around every term, for routes without snippet()."""
    text = text or ""
    before = after = False
    if len(text) > LONG_TEXT:
        low = text.lower()
        if len(low) == len(text):  # else lower() moved positions: the head is read
            first = min((i for i in (low.find(t.lower()) for t in terms) if i >= 0), default=0)
        else:
            first = 0
        lo, hi = max(0, first - 4 * width), first + 4 * width
        before, after = lo > 0, hi < len(text)
        text = text[lo:hi]
    text = plain_text(text) if text else ""
    low = text.lower()
    first = min((i for i in (low.find(t.lower()) for t in terms) if i >= 0), default=0)
    start = max(0, first - width // 3)
    piece = text[start : start + width]
    out = piece
    for t in sorted(set(terms), key=len, reverse=True):
        out = _mark_all(out, t)
    more = after or start + width < len(text)
    return ("..." if start or before else "") + out + ("..." if more else "")


def _mark_all(text: str, term: str) -> str:
    if not term:
        return text
    low, t = text.lower(), term.lower()
    out, i = [], 0
    while True:
        j = low.find(t, i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j] + MARK_START + text[j : j + len(term)] + MARK_END)
        i = j + len(term)


def snippet_html(snippet: str) -> Markup:
    """Escape first, then turn the private match markers into <mark>: HTML inside messages
    stays text, and literal ">>>"/"<<<" in them are never taken for markers."""
    text = str(escape(snippet))
    return Markup(text.replace(MARK_START, "<mark>").replace(MARK_END, "</mark>"))


def snippet_json(snippet: str) -> str:
    return snippet.replace(MARK_START, ">>>").replace(MARK_END, "<<<")


def readable_snippet(snippet: str) -> str:
    """Tool-call JSON in snippets (Hermes indexes the raw JSON) made readable: string escapes
    undone, runs of whitespace collapsed."""
    text = snippet.replace('\\"', '"').replace("\\n", " ").replace("\\t", " ")
    return re.sub(r"[ \t]{2,}", " ", text)


def _marked_terms(snippet: str) -> list[str]:
    pattern = re.escape(MARK_START) + "(.*?)" + re.escape(MARK_END)
    return sorted({t.lower() for t in re.findall(pattern, snippet or "", re.S) if t.strip()})


def _leaves(value: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """(dotted path, text) of every string or number inside parsed JSON, in document order."""
    if depth > 20:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k), depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value[:200]):
            yield from _leaves(v, f"{path}[{i}]", depth + 1)
    elif isinstance(value, bool):
        yield path, "true" if value else "false"  # as JSON writes it, not Python's True
    elif isinstance(value, (str, int, float)):
        yield path, str(value)


def _json_value(text: str) -> Any:
    t = (text or "").lstrip()
    if not t.startswith(("{", "[")):
        return None
    try:
        return json.loads(t)
    except (ValueError, RecursionError):
        return None


def tool_hit(row: dict[str, Any]) -> tuple[str, str] | None:
    """A hit inside a tool call or a JSON tool result, shown as what it is: ("web_search ·
    query", a snippet of that argument) or ("terminal result · output", the matching field).
    Hermes indexes a call's raw JSON, so its own snippet reads `[{"id": "call_…", ...`. None
    when the match is in the message's own words."""
    terms = _marked_terms(row.get("snippet") or "")
    if not terms:
        return None
    text = row.get("_text") or ""
    data = _json_value(text) if text else None
    if text and data is None and any(t in text.lower() for t in terms):
        return None
    for call in parse_tool_calls(row.get("tool_calls")):
        args = call["arguments"]
        leaves = _leaves(args) if isinstance(args, (dict, list)) else [("arguments", str(args))]
        for path, leaf in leaves:
            if any(t in leaf.lower() for t in terms):
                return f"{call['name']} · {path}", make_snippet(leaf, terms)
        if any(t in call["name"].lower() for t in terms):
            # The tool itself was searched for: say what it was asked, not its name twice.
            asked = _first_argument(args)
            if asked:
                return call["name"], asked
            return "tool call", make_snippet(f"{call['name']} (no arguments)", terms)
    if data is not None:
        for path, leaf in _leaves(data):
            if any(t in leaf.lower() for t in terms):
                what = f"{row['tool_name']} result" if row.get("tool_name") else "result"
                return f"{what} · {path}" if path else what, make_snippet(leaf, terms)
    name = row.get("tool_name") or ""
    if name and any(t in name.lower() for t in terms):
        # The tool was searched for by name (Hermes indexes it beside the result): say what
        # it answered, in words, rather than its raw JSON followed by its name.
        answered = readable_json(text) if data is not None else text
        return f"{name} result", make_snippet(str(answered or "(empty)"), terms)
    return None


def readable_json(text: Any, width: int = 200) -> Any:
    """A JSON text (a tool's result around a hit) as its fields, "key: value · key: value",
    instead of braces and escaped quotes; any other text as it is."""
    data = _json_value(text) if isinstance(text, str) else None
    if data is None:
        if isinstance(text, str) and text.lstrip().startswith(("{", "[")):
            return _loose_fields(text, width)  # JSON cut short (context is read in part)
        return text
    fields = [f"{path}: {value}" if path else value for path, value in _leaves(data)]
    return plain_text(" · ".join(fields), width) if fields else text


def _loose_fields(text: str, width: int) -> str:
    """JSON that does not parse (cut at a length) read as fields all the same: no braces,
    brackets or quotes, "key: value · key: value"."""
    flat = re.sub(r'\\"', "'", text)
    flat = re.sub(r'[{}\[\]"]', "", flat)
    flat = re.sub(r",\s*", " · ", flat)
    return plain_text(flat, width)


def _first_argument(args: Any) -> str:
    """A call's first argument as "key: value" (what a web_search searched for, the first of
    the urls a web_extract read)."""
    if isinstance(args, (dict, list)):
        for path, value in _leaves(args):
            text = plain_text(value, 120)
            if text.strip():
                return f"{path}: {text}" if path else text
    return ""


# Pieces of a tool call's raw JSON (Hermes indexes it beside the content, so FTS5's snippet
# may be cut from it): a snippet holding one is never shown as it is.
RAW_CALL = re.compile(r'\[\{"id"|"type": "function"|"function": \{|"arguments": ')


def search_hit_view(row: dict[str, Any]) -> dict[str, Any]:
    calls = parse_tool_calls(row.get("tool_calls"))
    found = tool_hit(row) if calls or row.get("tool_name") or row.get("role") == "tool" else None
    if found:
        hit_in, snippet = found
    else:
        hit_in = None
        snippet = row["snippet"]
        if calls and RAW_CALL.search(snippet or ""):
            # The words are the message's own too: cut the snippet from them instead.
            snippet = make_snippet(row.get("_text") or "", _marked_terms(snippet))
        elif calls or row.get("tool_name"):
            snippet = readable_snippet(snippet)
    return {
        **row,
        "context": [
            {**c, "content": readable_json(c.get("content"))} for c in row.get("context") or []
        ],
        "hit_in": hit_in,
        "snippet_html": snippet_html(snippet),
        # Each tool named once (a turn often calls the same tool several times).
        "tools": list(dict.fromkeys(c["name"] for c in calls))
        or ([row["tool_name"]] if row.get("tool_name") else []),
        "session_label": session_label(
            {"title": row.get("session_title"), "preview": row.get("session_preview")}
        ),
        "origin": origin_label(row, os.path.expanduser("~")),
    }


def search_hit_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "message_id": row["message_id"],
        "session_id": row["session_id"],
        "role": row["role"],
        "snippet": snippet_json(row["snippet"]),
        "timestamp": row["timestamp"],
        "source": row["source"],
        "model": row["model"],
        "tool_name": row.get("tool_name"),
        "session_title": row.get("session_title"),
        "session_started": row["session_started"],
        "origin": origin_label(row, os.path.expanduser("~")),
        "context": row.get("context", []),
        **({"profile": row["profile"]} if "profile" in row else {}),
        **({"store": row["store"]} if "store" in row else {}),
    }
