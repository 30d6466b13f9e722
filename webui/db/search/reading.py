"""What a page of hits shows: FTS5 snippets for the rows on the page only, each hit's session
and origin, and the messages around it. SearchStore holds one (``search.reading``)."""

from __future__ import annotations

import sqlite3
from typing import Any

from webui.db import deadline as request_deadline
from webui.db import sql
from webui.db.errors import QueryTimeout
from webui.db.reader import TOOK_TOO_LONG, Reader
from webui.db.search import snippet_source
from webui.db.search.limits import MARK_END, MARK_START, SNIPPET_TOKENS
from webui.db.search.snippets import mirror_declaration
from webui.db.search.snippets import snippets as mirror_snippets
from webui.hermes.content import plain_text
from webui.hermes.origin import ORIGIN_COLUMNS

# How much of a hit's own text a page reads (what it shows of it is far less), and how far
# before the substring route's first term a window of it starts.
TEXT_CHARS = 256 * 1024
TEXT_LEAD = 4_000


class HitReading:
    """Snippets, rows and context of a page of hits, read with ``reader``."""

    def __init__(self, reader: Reader):
        self.r = reader
        self.schema = reader.schema

    # -- shared --------------------------------------------------------------------------

    @property
    def _content(self) -> str:
        return sql.col(self.schema, "content", "m", "messages")

    def snippets(self, table: str, expression: str, ids: list[int]) -> dict[int, str]:
        """rowid -> snippet for a page's hits: from a mirror of the page's rows
        (webui.db.search.snippets) when the table's declaration can be copied, else from the table.
        Either way a row whose matches may be many is never given to snippet() whole
        (webui.db.search.snippet_source): its snippet costs what a short row's does."""
        declaration = mirror_declaration(
            self.r.scalar("SELECT sql FROM sqlite_master WHERE name = ?", [table]) or ""
        )
        docs = self.r.rows(
            f"SELECT rowid AS id, * FROM {table} WHERE rowid IN ({sql.in_list(len(ids))})", ids
        )
        # One column (Hermes 0.19's inline index: content, tool name and calls in one): its
        # snippet. Several (the v23 layout of 0.20+: content, tool_name, tool_calls): the
        # best column's, as Hermes's snippet(…, -1, …) gives it.
        column = -1 if docs and len(docs[0]) > 2 else 0
        if declaration is not None:
            try:
                return mirror_snippets(
                    declaration, docs, expression, (MARK_START, MARK_END), SNIPPET_TOKENS, column
                )
            except sqlite3.Error:
                left = request_deadline.remaining()
                if left is not None and left <= 0:
                    raise QueryTimeout(TOOK_TOO_LONG) from None
                # else the table itself answers
        words = snippet_source.query_words(expression)
        out: dict[int, str] = {}
        light = []
        for d in docs:
            text = next((v for k, v in d.items() if k != "id"), None)  # column 0
            if isinstance(text, str) and not snippet_source.whole(text, words):
                out[d["id"]] = snippet_source.literal_snippet(
                    text, words, (MARK_START, MARK_END), SNIPPET_TOKENS
                )
            else:
                light.append(d["id"])
        if not light:
            return out
        # Only the page's own light rows: a range scan would make snippets of every match in
        # the range, large rows not on the page included.
        rows = self.r.rows(
            f"SELECT rowid AS id, snippet({table}, {column}, ?, ?, '...', {SNIPPET_TOKENS}) "
            f"AS snippet FROM {table} WHERE {table} MATCH ? AND "
            f"rowid IN ({sql.in_list(len(light))})",
            [MARK_START, MARK_END, expression, *light],
        )
        out.update((r["id"], r["snippet"]) for r in rows)
        return out

    def hydrate(self, ids: list[int], around: str | None = None) -> list[dict[str, Any]]:
        """The page's hits with their sessions. A hit's own text (``_text``: what presentation
        cuts a snippet from and reads a tool result's fields in) is at most TEXT_CHARS of it:
        from its start, or from shortly before ``around`` (the substring route's first term)
        where that lies further in. A 10 MB tool result was read and decoded whole for each
        search it matched."""
        if not ids:
            return []
        content = self._content
        if content != "NULL":
            if around:
                start = f"max(1, instr(lower({content}), lower(?)) - {TEXT_LEAD})"
                ids_params: list[Any] = [around.replace("\x00", ""), *ids]
            else:
                start, ids_params = "1", list(ids)
            text = f"substr({content}, {start}, {TEXT_CHARS})"
        else:
            text, ids_params = "NULL", list(ids)
        title = sql.col(self.schema, "title", "s")
        model = sql.col(self.schema, "model", "s")
        tool_calls = sql.col(self.schema, "tool_calls", "m", "messages")
        tool_name = "m.tool_name" if self.schema.has("messages", "tool_name") else "NULL"
        rows = self.r.rows(
            f"SELECT m.id AS message_id, m.session_id AS session_id, m.role AS role, "
            f"m.timestamp AS timestamp, {tool_name} AS tool_name, {tool_calls} AS tool_calls, "
            f"{text} AS _text, s.source AS source, {model} AS model, {title} AS session_title, "
            # An untitled session is named by its first user message, as in the list.
            f"CASE WHEN {title} IS NULL THEN (SELECT substr({content.replace('m.', 'p.')}, 1, 300) FROM messages p "
            f"WHERE p.session_id = s.id AND p.role = 'user' ORDER BY p.timestamp, p.id LIMIT 1) "
            f"END AS session_preview, "
            f"s.started_at AS session_started, {self._origin_columns()} FROM messages m "
            "JOIN sessions s ON "
            f"s.id = m.session_id WHERE m.id IN ({sql.in_list(len(ids))})",
            ids_params,
        )
        by_id = {r["message_id"]: r for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def _origin_columns(self) -> str:
        """Where each hit's conversation came from (schema 22; NULL before)."""
        return ", ".join(f"{sql.col(self.schema, c, 's')} AS {c}" for c in ORIGIN_COLUMNS)

    def contexts(self, rows: list[dict[str, Any]]) -> None:
        """Set each hit's ``context``: the message before it, itself and the one after, in its
        session, as Hermes returns them. One statement for the whole page of hits."""
        if not rows:
            return
        content = self._content
        values = ", ".join("(?, ?, ?)" for _ in rows)
        params = [x for r in rows for x in (r["message_id"], r["session_id"], r["timestamp"])]
        neighbours = self.r.rows(
            f"WITH hits(hid, sid, ts) AS (VALUES {values}), "
            "near AS (SELECT hid, "
            " (SELECT m.id FROM messages m WHERE m.session_id = h.sid AND (m.timestamp, m.id) < "
            "  (h.ts, h.hid) ORDER BY m.timestamp DESC, m.id DESC LIMIT 1) AS before_id, "
            " (SELECT m.id FROM messages m WHERE m.session_id = h.sid AND (m.timestamp, m.id) > "
            "  (h.ts, h.hid) ORDER BY m.timestamp, m.id LIMIT 1) AS after_id FROM hits h) "
            f"SELECT n.hid AS hid, n.side AS side, m.role AS role, {content} AS content FROM ("
            " SELECT hid, 0 AS side, before_id AS mid FROM near UNION ALL "
            " SELECT hid, 1 AS side, after_id AS mid FROM near) n "
            "JOIN messages m ON m.id = n.mid",
            params,
        )
        by_hit: dict[Any, dict[int, dict[str, str]]] = {}
        for n in neighbours:
            by_hit.setdefault(n["hid"], {})[n["side"]] = {
                "role": n["role"],
                "content": plain_text(n["content"], 200) if n["content"] else "",
            }
        for row in rows:
            near = by_hit.get(row["message_id"], {})
            current = {"role": row["role"], "content": plain_text(row.get("_text") or "", 200)}
            row["context"] = (
                ([near[0]] if 0 in near else []) + [current] + ([near[1]] if 1 in near else [])
            )
