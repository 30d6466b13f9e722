"""SQL about one session's messages: keyset pages in the order the Hermes that wrote the file
reads them back (Hermes 0.19: by id, since a clock can jump back; before: by timestamp, then
id), and the links between tool calls and their results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webui.db.errors import BadRequest
from webui.db.reader import Reader
from webui.db.sql import decode_cursor, encode_cursor
from webui.hermes.content import parse_tool_calls
from webui.hermes.rules import rules_for
from webui.keep import Keeper

PAGE_SIZE = 100
# How many messages of context to show above a message opened by its anchor.
LEAD_IN = 3
# A cursor past every message: "before" it is the conversation's last page.
END_CURSOR = encode_cursor(2**53, 2**62)


# Messages read after a page to find the results of its last tool calls.
LOOK_AHEAD = 60


@dataclass
class MessagePage:
    messages: list[dict[str, Any]]
    next_cursor: str | None  # the page after this one
    prev_cursor: str | None  # the page before this one (when opened in the middle)


class MessageStore:
    def __init__(self, reader: Reader, keeper: Keeper | None = None):
        self.r = reader
        self.schema = reader.schema
        keeper = keeper or Keeper()
        # A session's tool-result count, under its index fingerprint (see counts()).
        self._tool_results = keeper.shelf(4096)
        # A session's header figures, under the file's data_version when they were read.
        self._counts_kept = keeper.shelf(256)

    @property
    def by_id(self) -> bool:
        return rules_for(self.schema.version).messages_by_id

    def _after(self, row_or_key) -> tuple[str, list]:
        """The keyset condition "after this message" and its parameters, in this file's
        order. ``row_or_key``: a message row, or a decoded cursor (timestamp, id)."""
        return self._beyond(row_or_key, ">")

    def _before(self, row_or_key) -> tuple[str, list]:
        return self._beyond(row_or_key, "<")

    def _beyond(self, row_or_key, op: str) -> tuple[str, list]:
        if isinstance(row_or_key, dict):
            ts, mid = row_or_key["timestamp"], row_or_key["id"]
        else:
            ts, mid = row_or_key
        if self.by_id:
            return f"id {op} ?", [mid]
        return f"(timestamp, id) {op} (?, ?)", [ts, mid]

    def _order(self, desc: bool = False) -> str:
        d = " DESC" if desc else ""
        return f"id{d}" if self.by_id else f"timestamp{d}, id{d}"

    def _rows(self, where: str, params: list, desc: bool, limit: int) -> list[dict[str, Any]]:
        """A page of messages. By id, the ids are found on the (session_id, active,
        timestamp) index alone and sorted there; only the page's rows are then read."""
        if not self.by_id:
            return self.r.rows(
                f"SELECT * FROM messages WHERE {where} ORDER BY {self._order(desc)} LIMIT ?",
                [*params, limit],
            )
        ids = [
            r["id"]
            for r in self.r.rows(
                f"SELECT id FROM messages WHERE {where} ORDER BY {self._order(desc)} LIMIT ?",
                [*params, limit],
            )
        ]
        if not ids:
            return []
        return self.r.rows(
            f"SELECT * FROM messages WHERE id IN ({','.join('?' * len(ids))}) "
            f"ORDER BY {self._order(desc)}",
            ids,
        )

    @property
    def has_active(self) -> bool:
        return self.schema.has("messages", "active")

    def _visible(self, include_rewound: bool) -> str:
        # Newer Hermes marks messages undone by /rewind with active = 0.
        if self.has_active and not include_rewound:
            return " AND COALESCE(active, 1) != 0"
        return ""

    def counts(self, session_id: str) -> dict[str, int]:
        """A conversation's header figures. Every figure but one comes from the session's
        entries in an index (no message row read): the count, first and last times, and the
        inactive ones; the rewound/compacted split reads only the inactive rows. Tool results
        need each row's role, which costs milliseconds on a long session: that count is kept
        per session under the index's own fingerprint (how many messages and the sum of
        their ids), which any message added or removed changes; a message's role is never
        rewritten in place.

        While nobody commits to the file (SQLite's data_version, which reads no page, and
        which Logbook's own writes move too), the figures last read are still true: a page
        reloaded, or paged through, does not walk the session's index entries again."""
        figures = self._counts_kept.get_or(
            session_id, self.r.data_version(), lambda: self._count(session_id)
        )
        return dict(figures)

    def _count(self, session_id: str) -> dict[str, int]:
        active = "COALESCE(SUM(active = 0), 0)" if self.has_active else "0"
        row = self.r.one(
            f"SELECT COUNT(*) AS total, MIN(timestamp) AS first_at, MAX(timestamp) AS last_at, "
            f"{active} AS inactive, TOTAL(id) AS id_sum FROM messages WHERE session_id = ?",
            [session_id],
        ) or {"total": 0, "first_at": None, "last_at": None, "inactive": 0, "id_sum": 0}
        compacted = 0
        if row["inactive"]:
            flag = "COALESCE(compacted, 0)" if self.r.schema.has("messages", "compacted") else "0"
            compacted = self.r.scalar(
                f"SELECT COALESCE(SUM({flag} != 0), 0) FROM messages WHERE session_id = ? "
                "AND active = 0",
                [session_id],
            )
        tool_results = self._tool_results.get_or(
            session_id,
            (row["total"], row["id_sum"]),
            lambda: self.r.scalar(
                "SELECT COUNT(*) FROM messages WHERE session_id = ? AND role = 'tool'",
                [session_id],
            ),
        )
        return {
            "total": row["total"],
            "tool_results": tool_results,
            "first_at": row["first_at"],
            "last_at": row["last_at"],
            "rewound": row["inactive"] - compacted,
            "compacted": compacted,
        }

    def position(
        self, session_id: str, first: dict[str, Any] | None, include_rewound: bool = False
    ) -> int:
        """How many shown messages come before ``first`` (one range count on
        idx_messages_session), so a page can say "messages 1,201–1,300 of 5,000"."""
        if first is None:
            return 0
        cond, params = self._before(first)
        return (
            self.r.scalar(
                f"SELECT COUNT(*) FROM messages WHERE session_id = ?{self._visible(include_rewound)}"
                f" AND {cond}",
                [session_id, *params],
            )
            or 0
        )

    def locate(
        self,
        session_id: str,
        *,
        question: str | None = None,
        start: int | None = None,
        n: int | None = None,
        at_time: float | None = None,
        include_rewound: bool = False,
    ) -> int | None:
        """A message to open the conversation at, wherever the reader is: the next or
        previous user message (``question``) from message ``start``; the ``n``-th shown
        message (1 = the first); the first message at or after ``at_time``. None when there
        is none (past the last question, beyond the end)."""
        vis = f"session_id = ?{self._visible(include_rewound)}"
        if question is not None:
            anchor = self.r.one(
                "SELECT timestamp, id FROM messages WHERE id = ? AND session_id = ?",
                [start, session_id],
            )
            if anchor is None:
                raise BadRequest(f"Message {start} is not part of this session.")
            cond, params = self._after(anchor) if question == "next" else self._before(anchor)
            row = self.r.one(
                f"SELECT id FROM messages WHERE {vis} AND role = 'user' AND {cond} "
                f"ORDER BY {self._order(desc=question != 'next')} LIMIT 1",
                [session_id, *params],
            )
        elif n is not None:
            row = self.r.one(
                f"SELECT id FROM messages WHERE {vis} ORDER BY {self._order()} LIMIT 1 OFFSET ?",
                [session_id, max(0, n - 1)],
            )
        elif at_time is not None:
            row = self.r.one(
                f"SELECT id FROM messages WHERE {vis} AND timestamp >= ? "
                "ORDER BY timestamp, id LIMIT 1",
                [session_id, at_time],
            )
        else:
            return None
        return int(row["id"]) if row else None

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
        vis = f"session_id = ?{self._visible(include_rewound)}"

        def forward(key, n):
            cond, params = self._after(key)
            return self._rows(f"{vis} AND {cond}", [session_id, *params], False, n)

        def backward(key, n):
            cond, params = self._before(key)
            return self._rows(f"{vis} AND {cond}", [session_id, *params], True, n)

        if before:
            rows = backward(decode_cursor(before), limit + 1)
            has_prev = len(rows) > limit
            rows = list(reversed(rows[:limit]))
            # Going backwards, the page after this one exists: it is where we came from
            # (unless we came from past the end).
            has_next = bool(rows) and before != END_CURSOR
        else:
            start_key: Any = None
            if at is not None:
                anchor = self.r.one(
                    "SELECT timestamp, id FROM messages WHERE id = ? AND session_id = ?",
                    [at, session_id],
                )
                if anchor is None:
                    raise BadRequest(f"Message {at} is not part of this session.")
                lead = backward(anchor, LEAD_IN + 1)
                # Start just after the message LEAD_IN places before the anchor.
                start = lead[LEAD_IN] if len(lead) > LEAD_IN else None
                start_key = (start["timestamp"], start["id"]) if start else None
            else:
                start_key = decode_cursor(after) if after else None
            if start_key is None:
                rows = self._rows(vis, [session_id], False, limit + 1)
                has_prev = False
            else:
                rows = forward(start_key, limit + 1)
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
            # A result follows its call: read the next few messages first, on the
            # (session_id, timestamp) index (a whole long session's scan costs milliseconds),
            # then look everywhere for whatever is still missing.
            for r in self.r.rows(
                "SELECT id, tool_call_id FROM (SELECT id, tool_call_id FROM messages "
                "WHERE session_id = ? AND timestamp >= ? ORDER BY timestamp, id LIMIT ?) "
                "WHERE tool_call_id IS NOT NULL",
                [session_id, rows[-1].get("timestamp"), LOOK_AHEAD],
            ):
                if r["tool_call_id"] in links:
                    links[r["tool_call_id"]].setdefault("result", r["id"])
            need_result = [cid for cid in need_result if "result" not in links[cid]]
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
            cond, params = self._before(rows[0])
            for r in self.r.rows(
                "SELECT id, tool_calls FROM messages WHERE session_id = ? AND tool_calls IS "
                f"NOT NULL AND {cond} ORDER BY {self._order(desc=True)} LIMIT 50",
                [session_id, *params],
            ):
                for call in parse_tool_calls(r["tool_calls"]):
                    if call["id"] in links:
                        links[call["id"]].setdefault("call", r["id"])
        return links
