"""SQL about one session's messages: keyset pages of the conversation as the Hermes that wrote
the file shows it (``webui.hermes.display``), or of every stored row with what Hermes does not
show labelled; the figures a conversation's header gives; the links between tool calls and
their results.

A page walks the session's ids on Hermes's (session_id, id) or (session_id, timestamp) index
without reading a row, leaves out what the session's census (``webui.db.sessions.census``, kept until
the session changes) says is not an item, and reads only the rows it shows. Order: Hermes 0.19
and newer read back by id (a clock can jump back); older files by timestamp, then id."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

from webui.db.errors import BadRequest
from webui.db.reader import Reader
from webui.db.sessions import census as census_sql
from webui.db.sessions.census import display_set_sql, summaries_after
from webui.db.sql import decode_cursor, encode_cursor, in_list
from webui.hermes import display as rule
from webui.hermes.content import parse_tool_calls
from webui.hermes.rules import rules_for
from webui.keep import StoreCache

PAGE_SIZE = 100
# How many messages of context to show above a message opened by its anchor.
LEAD_IN = 3
# A cursor past every message: "before" it is the conversation's last page.
END_CURSOR = encode_cursor(2**53, 2**62)
# Messages read after a page to find the results of its last tool calls.
LOOK_AHEAD = 60


@dataclass
class Mark:
    """What Hermes does with a row a page holds: ``hermes_shows`` (it is Hermes's row for its
    message), ``painted`` (Logbook draws it: never a ``display_kind = 'hidden'`` row),
    ``label`` (why Hermes does not show it)."""

    hermes_shows: bool
    painted: bool
    label: rule.Label | None = None


@dataclass
class MessagePage:
    messages: list[dict[str, Any]]
    next_cursor: str | None  # the page after this one
    prev_cursor: str | None  # the page before this one (when opened in the middle)
    marks: dict[int, Mark] = field(default_factory=dict)


class MessageStore:
    def __init__(self, reader: Reader, cache: StoreCache | None = None):
        self.r = reader
        self.schema = reader.schema
        cache = cache or StoreCache()
        # A session's census (webui.hermes.display.Census) or tool-result count, under its
        # index fingerprint (see _count): any message added, removed or moved out of the
        # conversation changes it; a row's role and content are never rewritten in place.
        self._census = cache.versioned(64)
        self._tool_results = cache.versioned(4096)
        # A session's header figures, under the file's data_version when they were read.
        self._counts_kept = cache.versioned(256)

    @property
    def rules(self):
        return rules_for(self.schema.version)

    @property
    def by_id(self) -> bool:
        return self.rules.messages_by_id

    @property
    def display(self) -> str:
        return self.rules.display

    @property
    def has_active(self) -> bool:
        return self.schema.has("messages", "active")

    # -- the census and the header's figures -------------------------------------------------

    def _count(self, session_id: str) -> dict[str, Any]:
        """Figures read off an index, no message row: the count, first and last times, the
        inactive ones, the sum of ids (the index's fingerprint)."""
        active = "COALESCE(SUM(active = 0), 0)" if self.has_active else "0"
        return self.r.one(
            f"SELECT COUNT(*) AS total, MIN(timestamp) AS first_at, MAX(timestamp) AS last_at, "
            f"{active} AS inactive, TOTAL(id) AS id_sum, MAX(id) AS top FROM messages "
            "WHERE session_id = ?",
            [session_id],
        ) or {"total": 0, "first_at": None, "last_at": None, "inactive": 0, "id_sum": 0, "top": 0}

    def _fingerprint(self, session_id: str) -> tuple:
        row = self._counts_kept.get_or_set(
            ("index", session_id), self.r.data_version(), lambda: self._count(session_id)
        )
        return row, (row["total"], row["id_sum"], row["inactive"])

    def census(self, session_id: str) -> rule.Census:
        """The session's census (an empty one where every row is its own item: files before
        Hermes 0.19, which flag nothing)."""
        if self.display == rule.ALL:
            return rule.Census(rule.ALL)
        return self._reading(session_id).census

    def _reading(self, session_id: str) -> census_sql.Reading:
        figures, mark = self._fingerprint(session_id)
        hit = self._census.peek(session_id)
        if hit is not None and hit[0] == mark:
            return hit[1]
        reading = None
        if hit is not None:  # a session that grew: read only its new rows
            reading = census_sql.extend(self.r, session_id, self.display, hit[1], figures)
        if reading is None:
            reading = census_sql.read(self.r, session_id, self.display, figures)
        self._census.set(session_id, reading, mark)
        return reading

    def counts(self, session_id: str) -> dict[str, Any]:
        """A conversation's header figures: stored rows, tool results, first and last times,
        rows undone by /rewind and compacted away, and how many messages each view paints:
        ``shown`` (as Hermes shows the conversation) and ``shown_all`` (every stored row), less
        the ``hidden`` ones (``display_kind = 'hidden'``: never painted), with why the rest are
        left out (``copies``, ``carried``, ``model_only``)."""
        figures = self._counts_kept.get_or_set(
            ("figures", session_id), self.r.data_version(), lambda: self._figures(session_id)
        )
        return dict(figures)

    def _figures(self, session_id: str) -> dict[str, Any]:
        row, mark = self._fingerprint(session_id)
        if self.display == rule.ALL:
            c = self.census(session_id)
            tools = self._tool_results.get_or_set(
                session_id, mark, lambda: census_sql.tool_results(self.r, session_id)
            )
            compacted = 0
            if row["inactive"] and self.schema.has("messages", "compacted"):
                compacted = self.r.scalar(
                    "SELECT COALESCE(SUM(COALESCE(compacted, 0) != 0), 0) FROM messages "
                    "WHERE session_id = ? AND active = 0",
                    [session_id],
                )
        else:
            reading = self._reading(session_id)
            c, tools = reading.census, reading.tool_results
            # Rows with active = 0 are compacted or undone; the census holds every one of
            # them (0.19) or the undone ones (0.20 on: compacted rows are in the display set).
            inactive = [m for m in reading.marked.values() if m.get("active") == 0]
            if rule.dedupes(self.display):
                compacted = row["inactive"] - sum(1 for m in inactive if not m.get("compacted"))
            else:
                compacted = sum(1 for m in inactive if m.get("compacted"))
        why = [label.why for label in c.labels.values()]
        return {
            "total": row["total"],
            "tool_results": tools,
            "first_at": row["first_at"],
            "last_at": row["last_at"],
            "rewound": row["inactive"] - compacted - why.count("carried"),
            "compacted": compacted,
            "hidden": len(c.hidden),
            "copies": why.count("copy"),
            "carried": why.count("carried"),
            "model_only": why.count("model_only"),
            "shown": row["total"] - len(self._unpainted(c, all_rows=False)),
            "shown_all": row["total"] - len(c.hidden),
            # Compacted rows Hermes shows (0.20 on) are history, not left out.
            "compacted_shown": compacted if rule.dedupes(self.display) else 0,
        }

    @staticmethod
    def _unpainted(c: rule.Census, all_rows: bool) -> list[int]:
        """Rows no item paints, sorted: hidden ones; in Hermes's view also the rows that are
        not items (out of the display set, later copies)."""
        return c.hidden if all_rows else c.unpainted

    # -- walking the conversation ------------------------------------------------------------

    def _order(self, desc: bool = False) -> str:
        d = " DESC" if desc else ""
        return f"id{d}" if self.by_id else f"timestamp{d}, id{d}"

    def _beyond(self, key: tuple, op: str) -> tuple[str, list]:
        ts, mid = key
        if self.by_id:
            return f"id {op} ?", [mid]
        return f"(timestamp, id) {op} (?, ?)", [ts, mid]

    def _keys(self, session_id: str, start: tuple | None, desc: bool, n: int) -> list[tuple]:
        """Keys of the next ``n`` rows after (or before) ``start``, off the index without
        reading a row: (timestamp, id), or (0, id) where the order is by id alone."""
        cond, params = ("", []) if start is None else self._beyond(start, "<" if desc else ">")
        stamp = "0" if self.by_id else "timestamp"
        return [
            (r["ts"], r["id"])
            for r in self.r.rows(
                f"SELECT {stamp} AS ts, id FROM messages WHERE session_id = ?"
                f"{' AND ' + cond if cond else ''} ORDER BY {self._order(desc)} LIMIT ?",
                [session_id, *params, n],
            )
        ]

    def _walk(
        self, session_id: str, c: rule.Census, start: tuple | None, desc: bool, n: int, every: bool
    ) -> list[tuple[tuple, list[int]]]:
        """Up to ``n`` items from ``start`` (exclusive) on, each (its slot key, the rows it
        shows): Hermes's items (``every`` false) or every stored row, a logical message's rows
        together at its first row's place (0.22)."""
        items: list[tuple[tuple, list[int]]] = []
        skip = c.slot_of if every else c.not_items
        batch = max(4 * n, 256)
        while len(items) < n:
            keys = self._keys(session_id, start, desc, batch)
            for key in keys:
                start = key
                mid = key[1]
                if mid in skip:
                    continue
                if every:
                    rows = c.members(mid) if mid in c.groups else [mid]
                else:
                    rows = [c.rep_of.get(mid, mid)]
                items.append((key, rows))
                if len(items) == n:
                    break
            if len(keys) < batch:
                break
        return items

    def _slot(self, c: rule.Census, message_id: int) -> int:
        return c.slot_of.get(message_id, message_id)

    def _anchor(self, session_id: str, message_id: int, c: rule.Census) -> tuple:
        """The slot key of a message (where it is painted)."""
        row = self.r.one(
            "SELECT timestamp, id FROM messages WHERE id = ? AND session_id = ?",
            [message_id, session_id],
        )
        if row is None:
            raise BadRequest(f"Message {message_id} is not part of this session.")
        if self.by_id:
            return (0, self._slot(c, message_id))
        return (row["timestamp"], row["id"])

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
        """A page of the conversation: Hermes's rows, or (``include_rewound``) every stored
        row, with a Mark for each. Cursors are slot keys (webui.db.sql's codec)."""
        c = self.census(session_id)
        every = include_rewound or self.display == rule.ALL
        if before:
            items = self._walk(session_id, c, decode_cursor(before), True, limit + 1, every)
            has_prev = len(items) > limit
            items = list(reversed(items[:limit]))
            # Going backwards, the page after this one exists: it is where we came from
            # (unless we came from past the end).
            has_next = bool(items) and before != END_CURSOR
        else:
            start: tuple | None = None
            if at is not None:
                anchor = self._anchor(session_id, at, c)
                lead = self._walk(session_id, c, anchor, True, LEAD_IN + 1, every)
                # Start just after the item LEAD_IN places before the anchor.
                start = lead[LEAD_IN][0] if len(lead) > LEAD_IN else None
            elif after:
                start = decode_cursor(after)
            items = self._walk(session_id, c, start, False, limit + 1, every)
            has_prev = start is not None
            has_next = len(items) > limit
            items = items[:limit]
        rows = self._read(session_id, [i for _key, ids in items for i in ids])
        marks = self._marks(session_id, rows, c)
        next_cursor = encode_cursor(*items[-1][0]) if has_next and items else None
        prev_cursor = encode_cursor(*items[0][0]) if has_prev and items else None
        return MessagePage(rows, next_cursor, prev_cursor, marks)

    def _read(self, session_id: str, ids: list[int]) -> list[dict[str, Any]]:
        """The rows of these ids, in this order."""
        found: dict[int, dict[str, Any]] = {}
        for start in range(0, len(ids), 900):
            part = ids[start : start + 900]
            for row in self.r.rows(
                f"SELECT * FROM messages WHERE session_id = ? AND id IN ({in_list(len(part))})",
                [session_id, *part],
            ):
                found[row["id"]] = row
        return [found[i] for i in ids if i in found]

    def _marks(self, session_id: str, rows: list[dict], c: rule.Census) -> dict[int, Mark]:
        marks = {}
        summaries: list[int] | None = None
        for row in rows:
            label = rule.label_of(row, c, self.display) if self.display != rule.ALL else None
            if label is not None and label.why == "compacted":
                # 0.19's compacted rows name the summary that took their place.
                if summaries is None:
                    last = max(r["id"] for r in rows if r.get("compacted"))
                    summaries = sorted(
                        {r["id"] for r in rows if rule.is_summary(r)}
                        | set(summaries_after(self.r, session_id, last))
                    )
                label = rule.Label("compacted", rule.summary_after(row["id"], summaries))
            marks[row["id"]] = Mark(label is None, not rule.is_hidden(row), label)
        return marks

    def painted_in_view(self, session_id: str, message_id: int) -> bool:
        """Does Hermes's view of the conversation paint this message (a search hit in compacted
        history of a 0.19 file, or on an earlier copy, is painted only with every row)?"""
        c = self.census(session_id)
        return message_id not in c.not_items and message_id not in c.hidden

    # -- positions and jumps -----------------------------------------------------------------

    def position(
        self, session_id: str, first: dict[str, Any] | None, include_rewound: bool = False
    ) -> int:
        """How many painted items come before ``first`` (an item's row), so a page can say
        "messages 1,201–1,300 of 5,000": one range count on the session's index, less the
        census's rows before it that no item paints."""
        if first is None:
            return 0
        c = self.census(session_id)
        every = include_rewound or self.display == rule.ALL
        slot = self._slot(c, first["id"])
        cond, params = self._beyond((first["timestamp"], slot), "<")
        before = (
            self.r.scalar(
                f"SELECT COUNT(*) FROM messages WHERE session_id = ? AND {cond}",
                [session_id, *params],
            )
            or 0
        )
        if not self.by_id:
            return before
        unpainted = self._unpainted(c, all_rows=every)
        before -= bisect_left(unpainted, slot)
        if every:
            # 0.22's later copies painted with their message, before where they are stored.
            before += sum(1 for i, s in c.slot_of.items() if s < slot <= i and i not in c.hidden)
        return max(0, before)

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
        previous user message (``question``) from message ``start``; the ``n``-th painted
        message (1 = the first); the first message at or after ``at_time``. None when there
        is none (past the last question, beyond the end)."""
        c = self.census(session_id)
        every = include_rewound or self.display == rule.ALL
        unpainted = set(self._unpainted(c, all_rows=every))
        if every:
            unpainted |= set(c.slot_of)

        def item(candidates: list[int]) -> int | None:
            for i in candidates:
                if i not in unpainted:
                    return i if every else c.rep_of.get(i, i)
            return None

        if question is not None:
            anchor = self._anchor(session_id, start, c)
            cond, params = self._beyond(anchor, ">" if question == "next" else "<")
            found = None
            while found is None:
                ids = self.r.rows(
                    f"SELECT timestamp, id FROM messages WHERE session_id = ? AND role = 'user' "
                    f"AND {cond} ORDER BY {self._order(desc=question != 'next')} LIMIT 200",
                    [session_id, *params],
                )
                if not ids:
                    return None
                found = item([r["id"] for r in ids])
                cond, params = self._beyond(
                    (ids[-1]["timestamp"], ids[-1]["id"]), ">" if question == "next" else "<"
                )
            return found
        if n is not None:
            # The n-th row by the index, moved on past the unpainted rows up to it.
            skipped = sorted(unpainted)
            k = 0
            for _ in range(64):
                row = self.r.one(
                    f"SELECT id FROM messages WHERE session_id = ? ORDER BY {self._order()} "
                    "LIMIT 1 OFFSET ?",
                    [session_id, max(0, n - 1) + k],
                )
                if row is None:
                    return None
                seen = bisect_right(skipped, row["id"]) if self.by_id else 0
                if seen == k and row["id"] not in unpainted:
                    return item([row["id"]])
                k = max(seen, k + 1) if seen == k else seen
            return None
        if at_time is not None:
            rows = self.r.rows(
                "SELECT id FROM messages WHERE session_id = ? AND timestamp >= ? "
                "ORDER BY timestamp, id LIMIT 500",
                [session_id, at_time],
            )
            return item([r["id"] for r in rows])
        return None

    # -- the live end ------------------------------------------------------------------------

    def tail(self, session_id: str, after: str | None, limit: int = 200) -> MessagePage:
        """What an open session wrote after ``after``, as it arrives: the rows of the display
        set, in the file's order, without the census (a live session changes it with every
        message; a reload places what a compaction moved)."""
        cond, params = ("", []) if not after else self._beyond(decode_cursor(after), ">")
        in_set = display_set_sql(self.schema, self.display)
        rows = self.r.rows(
            f"SELECT * FROM messages WHERE session_id = ?{' AND ' + cond if cond else ''} "
            f"AND {in_set} ORDER BY {self._order()} LIMIT ?",
            [session_id, *params, limit + 1],
        )
        more = len(rows) > limit
        rows = [r for r in rows[:limit] if rule.in_display_set(r, self.display)]
        marks = {r["id"]: Mark(True, not rule.is_hidden(r)) for r in rows}
        cursor = encode_cursor(rows[-1]["timestamp"], rows[-1]["id"]) if more and rows else None
        return MessagePage(rows, cursor, None, marks)

    # -- tool calls and their results --------------------------------------------------------

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
                f"IN ({in_list(len(need_result))})",
                [session_id, *need_result],
            ):
                links[r["tool_call_id"]].setdefault("result", r["id"])
        has_calls = self.r.schema.has("messages", "tool_calls")
        if has_calls and any("call" not in v for v in links.values()):
            # The calling turn sits just before its results: look back a bounded distance.
            first = min(
                rows, key=lambda m: (m["timestamp"], m["id"]) if not self.by_id else m["id"]
            )
            cond, params = self._beyond((first["timestamp"], first["id"]), "<")
            for r in self.r.rows(
                "SELECT id, tool_calls FROM messages WHERE session_id = ? AND tool_calls IS "
                f"NOT NULL AND {cond} ORDER BY {self._order(desc=True)} LIMIT 50",
                [session_id, *params],
            ):
                for call in parse_tool_calls(r["tool_calls"]):
                    if call["id"] in links:
                        links[call["id"]].setdefault("call", r["id"])
        return links
