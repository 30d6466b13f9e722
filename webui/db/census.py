"""The SQL behind one session's display census (``webui.hermes.display.Census``): the rows that
are not simply their own item in the conversation as its Hermes shows it.

Two reads, both bounded by what is unusual in the session, not by its length in rows shown:

* every row out of the display set, every row with a ``display_kind`` or ``display_metadata``,
  and every tool result (counted), in one pass over the session's rows;
* the rows that share their timestamp with another (copies of one message always do: a
  compaction copies role, content and timestamp), found on Hermes's (session_id, timestamp)
  index without reading a row, then read; on a 0.22 file that keeps ``display_order``, also
  the display groups of more than one row (on its display index).
"""

from __future__ import annotations

from typing import Any

from webui.db.reader import Reader
from webui.db.sql import in_list
from webui.hermes import display as rule

# How many ids one IN (...) list binds (SQLite's old limit is 999 variables).
CHUNK = 900


def display_set_sql(schema, display: str) -> str:
    """The SQL condition "in the display set" for this generation ("1" when every row is)."""
    if display == rule.LIVE:
        return "COALESCE(active, 1) != 0" if schema.has("messages", "active") else "1"
    if display in (rule.DEDUPE, rule.GROUPS):
        return "(active = 1 OR compacted = 1)"
    return "1"


def read_census(r: Reader, session_id: str, display: str) -> rule.Census:
    schema = r.schema
    has = schema.has
    in_set = display_set_sql(schema, display)
    extra = [c for c in ("compacted", "display_kind", "display_metadata") if has("messages", c)]
    wanted = " OR ".join(
        ["role = 'tool'"]
        + ([f"NOT {in_set}"] if in_set != "1" else [])
        + [f"{c} IS NOT NULL" for c in ("display_kind", "display_metadata") if c in extra]
    )
    flags = ", ".join(["id", "role", *(["active"] if has("messages", "active") else []), *extra])
    tools = 0
    marked: list[dict[str, Any]] = []
    for row in r.rows(
        f"SELECT {flags} FROM messages WHERE session_id = ? AND ({wanted})", [session_id]
    ):
        if row["role"] == "tool":
            tools += 1
        if (
            row.get("display_kind") is not None
            or row.get("display_metadata") is not None
            or not rule.in_display_set(row, display)
        ):
            marked.append(row)
    twins: list[dict[str, Any]] = []
    by_order = False
    if rule.dedupes(display):
        by_order = display == rule.GROUPS and _keeps_display_order(r, session_id)
        twins = _twins(r, session_id, by_order)
    return rule.census(display, twins, marked, by_order=by_order, tool_results=tools)


def _keeps_display_order(r: Reader, session_id: str) -> bool:
    """Does every display row of the session carry its display group (0.22 keeps it by
    triggers; a file migrated from older Hermes leaves old rows without until a writer backfills
    them, and Hermes then reads them by its key)? On Hermes's partial backfill index."""
    if not (
        r.schema.has("messages", "display_order") and r.schema.has("messages", "display_identity")
    ):
        return False
    return (
        r.scalar(
            "SELECT 1 FROM messages WHERE session_id = ? AND (active = 1 OR compacted = 1) "
            "AND (display_order IS NULL OR display_identity IS NULL) LIMIT 1",
            [session_id],
        )
        is None
    )


def _twins(r: Reader, session_id: str, by_order: bool) -> list[dict[str, Any]]:
    stamps = r.column(
        "SELECT timestamp FROM messages WHERE session_id = ? GROUP BY timestamp "
        "HAVING COUNT(*) > 1",
        [session_id],
    )
    orders: list[Any] = []
    if by_order:
        orders = r.column(
            "SELECT display_order FROM messages WHERE session_id = ? AND "
            "(active = 1 OR compacted = 1) GROUP BY display_order HAVING COUNT(*) > 1",
            [session_id],
        )
    if not stamps and not orders:
        return []
    cols = ", ".join(
        c
        for c in (
            "id",
            "active",
            "compacted",
            *rule.KEY_COLUMNS,
            "display_order",
            "display_kind",
            "display_metadata",
        )
        if r.schema.has("messages", c)
    )
    found: dict[int, dict[str, Any]] = {}
    for column, values in (("timestamp", stamps), ("display_order", orders)):
        for start in range(0, len(values), CHUNK):
            part = values[start : start + CHUNK]
            for row in r.rows(
                f"SELECT {cols} FROM messages WHERE session_id = ? AND {column} IN "
                f"({in_list(len(part))})",
                [session_id, *part],
            ):
                found[row["id"]] = row
    return list(found.values())


def summaries_after(r: Reader, session_id: str, after_id: int, limit: int = 20) -> list[int]:
    """The ids of the first compaction summaries after a message (0.19's compacted rows point
    to the summary that took their place). Reads forward from ``after_id`` until it finds
    them: a compacted stretch ends at its summary."""
    cond = " OR ".join(["content LIKE ? ESCAPE '\\'"] * len(rule.SUMMARY_PREFIXES))
    if r.schema.has("messages", "_compressed_summary"):
        cond = f"_compressed_summary = 1 OR {cond}"
    likes = [p.replace("%", "\\%").replace("_", "\\_") + "%" for p in rule.SUMMARY_PREFIXES]
    return r.column(
        f"SELECT id FROM messages WHERE session_id = ? AND id > ? AND role = 'user' "
        f"AND ({cond}) ORDER BY id LIMIT ?",
        [session_id, after_id, *likes, limit],
    )
