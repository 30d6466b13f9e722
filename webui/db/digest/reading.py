"""The digest's reads of state.db: for a range of message ids (or one session's messages), the
bytes each session's messages hold, the tool calls in assistants' messages and the facts of
each tool result Hermes's failure rule reads — each as one statement that hands Python small
values only (lengths, names, the first characters), never a 100 KB tool output."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from webui.db import sql
from webui.db.digest.tables import ARGS_CHUNK, ARGS_MAX, chunks
from webui.db.schema import Schema
from webui.hermes.file_changes import FILE_TOOLS
from webui.hermes.tool_results import HEAD_CHARS, KEYS, KEYS_TEXT, JsonValue, ResultFacts
from webui.hermes.tool_runs import SIGNATURE_CHARS

Read = Callable[[str, Sequence[Any]], list[dict[str, Any]]]

REASONING = ("reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items")
# Columns that are no stored text worth counting (numbers, flags, the keys).
NOT_TEXT = {
    "id",
    "session_id",
    "role",
    "content",
    "tool_calls",
    "timestamp",
    "token_count",
    "observed",
    "active",
    "compacted",
    "_compressed_summary",
    "display_order",
}


def _bytes(col: str) -> str:
    return f"length(CAST(m.{col} AS BLOB))"


class Reading:
    def __init__(self, schema: Schema, read: Read):
        self.schema = schema
        self.read = read
        cols = schema.message_columns
        self.reasoning = [c for c in REASONING if c in cols]
        self.other = [c for c in cols if c not in NOT_TEXT and c not in REASONING]
        self.has_calls = "tool_calls" in cols
        # A file without the column (damaged or hand-made) reads as messages without text.
        self.content = sql.col(schema, "content", "m", table="messages")
        # Hermes's FTS index reads content (schema 8) or content, tool name and tool calls.
        self.fts_calls = schema.has_fts and not schema.fts_external_content

    # -- bytes ------------------------------------------------------------------------------

    def sizes(self, where: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        def total(parts: list[str]) -> str:
            return f"TOTAL({' + '.join(f'IFNULL({p}, 0)' for p in parts)})" if parts else "0"

        calls = _bytes("tool_calls") if self.has_calls else "0"
        text = _bytes("content") if self.content != "NULL" else "0"
        return self.read(
            "SELECT m.session_id AS session_id, COUNT(*) AS n, "
            f"TOTAL(CASE WHEN m.role != 'tool' THEN {text} END) AS text_b, "
            f"TOTAL(CASE WHEN m.role = 'tool' THEN {text} END) AS tool_b, "
            f"TOTAL({calls}) AS call_b, "
            f"{total([_bytes(c) for c in self.reasoning])} AS reasoning_b, "
            f"{total([_bytes(c) for c in self.other])} AS other_b "
            f"FROM messages m WHERE {where} GROUP BY 1",
            params,
        )

    def fts_bytes(self, row: dict[str, Any]) -> int:
        """The text a session's messages gave the search index (an estimate of its share)."""
        base = int(row["text_b"]) + int(row["tool_b"])
        return base + (int(row["call_b"]) if self.fts_calls else 0)

    # -- calls ------------------------------------------------------------------------------

    def calls(self, where: str, params: Sequence[Any], range_scan: bool) -> list[dict[str, Any]]:
        """Every entry of assistants' tool_calls lists: its message, place, id, function name,
        the length of its arguments and their first SIGNATURE_CHARS characters; for the file
        tools, their path when the arguments are too long to read whole."""
        if not self.has_calls:
            return []
        hint = "NOT INDEXED " if range_scan else ""
        args = "json_extract(j.value, '$.function.arguments')"
        tools = ",".join(f"'{t}'" for t in FILE_TOOLS)
        rows = self.read(
            "SELECT message_id, session_id, timestamp, idx, call_id, tool, length(args) AS "
            f"args_len, substr(args, 1, {SIGNATURE_CHARS}) AS args_head, "
            f"CASE WHEN tool IN ({tools}) AND length(args) > {ARGS_MAX} AND json_valid(args) "
            "THEN json_extract(args, '$.path') END AS big_path FROM ("
            "SELECT m.id AS message_id, m.session_id AS session_id, m.timestamp AS timestamp, "
            "CAST(j.key AS INTEGER) AS idx, json_extract(j.value, '$.id') AS call_id, "
            f"json_extract(j.value, '$.function.name') AS tool, {args} AS args "
            f"FROM messages m {hint}, json_each(CASE WHEN json_valid(m.tool_calls) AND "
            "json_type(m.tool_calls) = 'array' THEN m.tool_calls ELSE '[]' END) j "
            f"WHERE {where} AND m.role = 'assistant' AND m.tool_calls IS NOT NULL "
            "AND json_type(j.value) = 'object') ORDER BY message_id, idx",
            params,
        )
        for r in rows:
            if not isinstance(r["tool"], str):
                r["tool"] = None
            if not isinstance(r["call_id"], str):
                r["call_id"] = None if r["call_id"] is None else str(r["call_id"])
        return rows

    def file_arguments(self, wanted: list[dict[str, Any]]) -> dict[tuple[int, int], str]:
        """The whole arguments of these calls (file tools), read in chunks of at most
        ARGS_CHUNK characters: {(message id, place): arguments}."""
        out: dict[tuple[int, int], str] = {}
        todo = [w for w in wanted if (w["args_len"] or 0) <= ARGS_MAX]
        batch: list[dict[str, Any]] = []
        size = 0

        def fetch(batch: list[dict[str, Any]]) -> None:
            ids = sorted({w["message_id"] for w in batch})
            keep = {(w["message_id"], w["idx"]) for w in batch}
            for part in chunks(ids):
                for r in self.read(
                    "SELECT m.id AS message_id, CAST(j.key AS INTEGER) AS idx, "
                    "json_extract(j.value, '$.function.arguments') AS args FROM messages m, "
                    "json_each(CASE WHEN json_valid(m.tool_calls) AND json_type(m.tool_calls) = "
                    "'array' THEN m.tool_calls ELSE '[]' END) j "
                    f"WHERE m.id IN ({sql.in_list(len(part))}) AND json_type(j.value) = 'object'",
                    part,
                ):
                    if (r["message_id"], r["idx"]) in keep:
                        out[(r["message_id"], r["idx"])] = r["args"]

        for w in todo:
            batch.append(w)
            size += w["args_len"] or 0
            if size >= ARGS_CHUNK:
                fetch(batch)
                batch, size = [], 0
        if batch:
            fetch(batch)
        return out

    # -- results ----------------------------------------------------------------------------

    def results(self, where: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        """Every tool result: its message, call id, tool name and the facts of its content."""
        c = self.content
        valid = f"json_valid({c})"
        keys = []
        for k in (*KEYS, *KEYS_TEXT):
            keys.append(f"CASE WHEN {valid} THEN json_type({c}, '$.{k}') END AS k_{k}")
            keys.append(f"CASE WHEN {valid} THEN json_extract({c}, '$.{k}') END AS v_{k}")
        call_id = sql.col(self.schema, "tool_call_id", "m", table="messages")
        tool = sql.col(self.schema, "tool_name", "m", table="messages")
        return self.read(
            f"SELECT m.id AS message_id, m.session_id AS session_id, {call_id} AS call_id, "
            f"{tool} AS tool, {c} IS NULL AS is_null, "
            f"CASE WHEN {valid} THEN json_type({c}) END AS kind, "
            f"substr({c}, 1, {HEAD_CHARS}) AS head, {', '.join(keys)} "
            f"FROM messages m WHERE {where} AND m.role = 'tool' ORDER BY m.id",
            params,
        )


def facts(row: dict[str, Any]) -> ResultFacts:
    """The facts of one result row read by :meth:`Reading.results`."""
    if row["is_null"]:
        return ResultFacts(is_null=True)
    keys = tuple(
        (k, JsonValue(row[f"k_{k}"], row[f"v_{k}"]))
        for k in (*KEYS, *KEYS_TEXT)
        if row.get(f"k_{k}") is not None
    )
    head = row["head"]
    if isinstance(head, (bytes, bytearray, memoryview)):
        head = bytes(head).decode("utf-8", "replace")
    return ResultFacts(is_object=row["kind"] == "object", head=head or "", keys=keys)
