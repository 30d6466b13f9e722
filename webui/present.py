"""Turns database rows into what the templates show (parsed, decoded, rendered Markdown).

Kept out of templates so they hold no logic, and out of the database layer so it holds no
presentation."""

from __future__ import annotations

import re

from typing import Any, Callable

from .content import content_parts, looks_like_json, parse_tool_calls, plain_text, pretty_json
from markupsafe import Markup, escape

from .db.search import MARK_END, MARK_START
from .render import highlight_code, markdown

MARKDOWN_ROLES = {"user", "assistant"}
REASONING_FIELDS = ("reasoning", "reasoning_content", "reasoning_details",
                    "codex_reasoning_items")


def session_label(row: dict[str, Any], limit: int = 80) -> str:
    """Title, else the first user message (as `hermes sessions list` shows), else the id."""
    if row.get("title"):
        return row["title"]
    preview = plain_text(row.get("preview"), limit) if row.get("preview") else ""
    return preview or "(untitled)"


def session_json(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: row.get(k) for k in (
        "id", "title", "source", "model", "started_at", "ended_at", "end_reason", "last_active",
        "message_count", "tool_call_count", "input_tokens", "output_tokens",
        "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "estimated_cost_usd",
        "actual_cost_usd", "cost_status", "parent_session_id", "child_count")}
    out["preview"] = plain_text(row.get("preview"), 120) if row.get("preview") else None
    if row.get("archived") is not None:
        out["archived"] = bool(row["archived"])
    if "chain" in row:
        out["conversation"] = row["chain"]
    if "profile" in row:
        out["profile"] = row["profile"]
    return out


def message_view(m: dict[str, Any], links: dict[str, dict],
                 href: Callable[[int], str]) -> dict[str, Any]:
    """``href(message_id)`` links to another message (same page or the page holding it)."""
    role = m.get("role") or "unknown"
    parts = content_parts(m.get("content"))
    text = "\n\n".join(p["text"] for p in parts if p["kind"] == "text")
    view: dict[str, Any] = {
        "id": m["id"], "role": role, "timestamp": m.get("timestamp"),
        "token_count": m.get("token_count"), "finish_reason": m.get("finish_reason"),
        "tool_name": m.get("tool_name"), "tool_call_id": m.get("tool_call_id"),
        "raw": text, "placeholders": [p["text"] for p in parts if p["kind"] == "placeholder"],
        "rewound": m.get("active") == 0,
        "html": None, "code": None,
    }
    if role in MARKDOWN_ROLES:
        view["html"] = markdown(text)
    elif looks_like_json(text):
        view["code"] = highlight_code(pretty_json(text), "json")
    view["tool_calls"] = [
        {**call, "pretty": highlight_code(pretty_json(call["arguments"]), "json")
         if not isinstance(call["arguments"], str) else call["arguments"],
         "result_href": _maybe(href, links.get(call["id"], {}).get("result"))}
        for call in parse_tool_calls(m.get("tool_calls"))]
    view["call_href"] = _maybe(href, links.get(m.get("tool_call_id") or "", {}).get("call"))
    view["reasoning"] = [
        {"field": f, "text": pretty_json(m[f]) if f != "reasoning" else m[f]}
        for f in REASONING_FIELDS if m.get(f)]
    return view


def _maybe(href: Callable[[int], str], message_id: int | None) -> str | None:
    return href(message_id) if message_id is not None else None


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


def search_hit_view(row: dict[str, Any]) -> dict[str, Any]:
    calls = parse_tool_calls(row.get("tool_calls"))
    snippet = readable_snippet(row["snippet"]) if calls or row.get("tool_name") else row["snippet"]
    return {
        **row,
        "snippet_html": snippet_html(snippet),
        "tools": [c["name"] for c in calls] or ([row["tool_name"]] if row.get("tool_name") else []),
        "session_label": row.get("session_title") or row["session_id"],
    }


def search_hit_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "message_id": row["message_id"], "session_id": row["session_id"], "role": row["role"],
        "snippet": snippet_json(row["snippet"]), "timestamp": row["timestamp"],
        "source": row["source"], "model": row["model"], "tool_name": row.get("tool_name"),
        "session_title": row.get("session_title"), "session_started": row["session_started"],
        "context": row.get("context", []),
        **({"profile": row["profile"]} if "profile" in row else {}),
    }
