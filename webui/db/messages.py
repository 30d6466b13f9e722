"""SQL about one session's messages: keyset pages in (timestamp, id) order, and the links
between tool calls and their results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webui.db.errors import BadRequest
from webui.db.reader import Reader
from webui.db.sql import decode_cursor, encode_cursor
from webui.hermes.content import parse_tool_calls

PAGE_SIZE = 100
# How many messages of context to show above a message opened by its anchor.
LEAD_IN = 3
# A cursor past every message: "before" it is the conversation's last page.
END_CURSOR = encode_cursor(2**53, 2**62)


@dataclass
class MessagePage:
    messages: list[dict[str, Any]]
    next_cursor: str | None  # the page after this one
    prev_cursor: str | None  # the page before this one (when opened in the middle)


class MessageStore:
    def __init__(self, reader: Reader):
        self.r = reader
        self.schema = reader.schema

    @property
    def has_active(self) -> bool:
        return self.schema.has("messages", "active")

    def _visible(self, include_rewound: bool) -> str:
        # Newer Hermes marks messages undone by /rewind with active = 0.
        if self.has_active and not include_rewound:
            return " AND COALESCE(active, 1) != 0"
        return ""

    def counts(self, session_id: str) -> dict[str, int]:
        compacted = "compacted" if self.r.schema.has("messages", "compacted") else "0"
        extra = (
            f", COALESCE(SUM(CASE WHEN active = 0 AND NOT COALESCE({compacted}, 0) THEN 1 "
            f"ELSE 0 END), 0) AS rewound, COALESCE(SUM(CASE WHEN active = 0 AND "
            f"COALESCE({compacted}, 0) THEN 1 ELSE 0 END), 0) AS compacted"
            if self.has_active
            else ", 0 AS rewound, 0 AS compacted"
        )
        row = self.r.one(
            "SELECT COUNT(*) AS total, COALESCE(SUM(role = 'tool'), 0) AS tool_results, "
            "MIN(timestamp) AS first_at, MAX(timestamp) AS last_at"
            + extra
            + " FROM messages WHERE session_id = ?",
            [session_id],
        )
        return row or {
            "total": 0,
            "tool_results": 0,
            "rewound": 0,
            "compacted": 0,
            "first_at": None,
            "last_at": None,
        }

    def position(
        self, session_id: str, first: dict[str, Any] | None, include_rewound: bool = False
    ) -> int:
        """How many shown messages come before ``first`` (one range count on
        idx_messages_session), so a page can say "messages 1,201–1,300 of 5,000"."""
        if first is None:
            return 0
        return (
            self.r.scalar(
                f"SELECT COUNT(*) FROM messages WHERE session_id = ?{self._visible(include_rewound)}"
                " AND (timestamp, id) < (?, ?)",
                [session_id, first["timestamp"], first["id"]],
            )
            or 0
        )

    def page(
        self,
        session_id: str,
        *,
        after: str | None = None,
        before: str | None = None,
        at: int | None = None,
        include_rewound: bool = False,
        limit: int = PAGE_SIZE,
    ) -> MessagePage:
        vis = self._visible(include_rewound)
        base = f"SELECT * FROM messages WHERE session_id = ?{vis}"
        forward = f"{base} AND (timestamp, id) > (?, ?) ORDER BY timestamp, id LIMIT ?"
        backward = f"{base} AND (timestamp, id) < (?, ?) ORDER BY timestamp DESC, id DESC LIMIT ?"
        if before:
            key, mid = decode_cursor(before)
            rows = self.r.rows(backward, [session_id, key, mid, limit + 1])
            has_prev = len(rows) > limit
            rows = list(reversed(rows[:limit]))
            # Going backwards, the page after this one exists: it is where we came from
            # (unless we came from past the end).
            has_next = bool(rows) and before != END_CURSOR
        else:
            if at is not None:
                anchor = self.r.one(
                    "SELECT timestamp, id FROM messages WHERE id = ? AND session_id = ?",
                    [at, session_id],
                )
                if anchor is None:
                    raise BadRequest(f"Message {at} is not part of this session.")
                lead = self.r.rows(
                    backward, [session_id, anchor["timestamp"], anchor["id"], LEAD_IN + 1]
                )
                # Start just after the message LEAD_IN places before the anchor.
                start = lead[LEAD_IN] if len(lead) > LEAD_IN else None
                start_key = (start["timestamp"], start["id"]) if start else None
            else:
                start_key = decode_cursor(after) if after else None
            if start_key is None:
                rows = self.r.rows(
                    f"{base} ORDER BY timestamp, id LIMIT ?", [session_id, limit + 1]
                )
                has_prev = False
            else:
                rows = self.r.rows(forward, [session_id, *start_key, limit + 1])
                has_prev = True
            has_next = len(rows) > limit
            rows = rows[:limit]
        next_cursor = (
            encode_cursor(rows[-1]["timestamp"], rows[-1]["id"]) if has_next and rows else None
        )
        prev_cursor = (
            encode_cursor(rows[0]["timestamp"], rows[0]["id"]) if has_prev and rows else None
        )
        return MessagePage(rows, next_cursor, prev_cursor)

    def tool_links(self, session_id: str, rows: list[dict[str, Any]]) -> dict[str, dict]:
        """Map tool_call_id → {"call": message id, "result": message id} for the calls and
        results on this page, looking outside the page only where a partner is missing."""
        links: dict[str, dict] = {}
        for m in rows:
            for call in parse_tool_calls(m.get("tool_calls")):
                if call["id"]:
                    links.setdefault(call["id"], {})["call"] = m["id"]
            if m.get("tool_call_id"):
                links.setdefault(m["tool_call_id"], {})["result"] = m["id"]
        if not rows:
            return links
        need_result = [cid for cid, v in links.items() if "result" not in v]
        if need_result:
            for r in self.r.rows(
                "SELECT id, tool_call_id FROM messages WHERE session_id = ? AND tool_call_id "
                f"IN ({','.join('?' * len(need_result))})",
                [session_id, *need_result],
            ):
                links[r["tool_call_id"]].setdefault("result", r["id"])
        has_calls = self.r.schema.has("messages", "tool_calls")
        if has_calls and any("call" not in v for v in links.values()):
            # The calling turn sits just before its results: look back a bounded distance.
            first = rows[0]
            for r in self.r.rows(
                "SELECT id, tool_calls FROM messages WHERE session_id = ? AND tool_calls IS "
                "NOT NULL AND (timestamp, id) < (?, ?) ORDER BY timestamp DESC, id DESC "
                "LIMIT 50",
                [session_id, first["timestamp"], first["id"]],
            ):
                for call in parse_tool_calls(r["tool_calls"]):
                    if call["id"] in links:
                        links[call["id"]].setdefault("call", r["id"])
        return links
