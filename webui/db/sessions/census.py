"""The SQL behind one session's display census (``webui.hermes.display.Census``): the rows that
are not simply their own item in the conversation as its Hermes shows it.

Two reads, bounded by what is unusual in the session, not by how much of it is shown:

* every row out of the display set and every row with a ``display_kind`` or
  ``display_metadata``, in one pass over the session's rows (on a 0.19 file, which has neither
  column, the inactive rows off Hermes's (session_id, active) index);
* the rows that share their timestamp with another (copies of one message always do: a
  compaction copies role, content and timestamp), found on Hermes's (session_id, timestamp)
  index without reading a row, then read (kept as digests); on a 0.22 file that keeps
  ``display_order``, also the display groups of more than one row (on its display index).

A census is brought up to date, not read again, while a session only grows (a live gateway
appends): the rows up to the last one read still count, sum and flag as they did, so only the
newer rows are read (``extend``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webui.db.reader import Reader
from webui.db.sql import col, in_list
from webui.hermes import display as rule

# How many values one IN (...) list binds (SQLite's old limit is 999 variables).
CHUNK = 900


def display_set_sql(schema, display: str) -> str:
    """The SQL condition "in the display set" for this generation ("1" when every row is)."""
    # Never a column the file lacks: a file whose schema says a newer Hermes but whose table
    # has no flag reads every row as live (Logbook never assumes a column).
    active = schema.has("messages", "active")
    if display == rule.LIVE or (display in (rule.DEDUPE, rule.GROUPS) and active):
        if display != rule.LIVE and schema.has("messages", "compacted"):
            return "(active = 1 OR compacted = 1)"
        return "COALESCE(active, 1) != 0" if active else "1"
    return "1"


@dataclass
class Reading:
    """A census and what it was made from: the rows read (up to id ``upto``), the session's
    (count, id sum, inactive count) up to there, and whether groups follow display_order."""

    upto: int
    base: tuple
    twins: dict[int, dict[str, Any]]
    marked: dict[int, dict[str, Any]]
    by_order: bool
    census: rule.Census
    tool_results: int = 0


def _newer(r: Reader, session_id: str, after: int) -> dict[str, Any]:
    inactive = f"COALESCE(SUM({col(r.schema, 'active', table='messages')} = 0), 0)"
    return r.one(
        f"SELECT COUNT(*) AS total, TOTAL(id) AS id_sum, {inactive} AS inactive, "
        "COALESCE(MAX(id), 0) AS top FROM messages WHERE session_id = ? AND id > ?",
        [session_id, after],
    ) or {"total": 0, "id_sum": 0.0, "inactive": 0, "top": 0}


def _base(figures: dict[str, Any]) -> tuple:
    return (figures["total"], figures["id_sum"], figures["inactive"])


def read(r: Reader, session_id: str, display: str, figures: dict[str, Any]) -> Reading:
    """The census of a session, read whole. ``figures``: the session's count, id sum, inactive
    count and highest id, read before its rows (a row written meanwhile is read again by the
    next ``extend``)."""
    by_order = display == rule.GROUPS and _keeps_display_order(r, session_id)
    twins = _twins(r, session_id, by_order) if rule.dedupes(display) else {}
    marked = _marked(r, session_id, display)
    return Reading(
        figures["top"] or 0,
        _base(figures),
        twins,
        marked,
        by_order,
        rule.census(display, twins.values(), marked.values(), by_order),
        tool_results(r, session_id),
    )


def extend(
    r: Reader, session_id: str, display: str, old: Reading, figures: dict[str, Any]
) -> Reading | None:
    """``old`` brought up to date with the rows written since, or None when an older row
    changed (a compaction, a rewind, a deletion): then read it whole."""
    new = _newer(r, session_id, old.upto)
    if tuple(a - b for a, b in zip(_base(figures), _base(new), strict=True)) != old.base:
        return None
    if not new["total"]:
        return old
    twins = dict(old.twins)
    if rule.dedupes(display):
        twins.update(_twins(r, session_id, old.by_order, after=old.upto))
    marked = {**old.marked, **_marked(r, session_id, display, after=old.upto)}
    return Reading(
        new["top"],
        _base(figures),
        twins,
        marked,
        old.by_order,
        rule.census(display, twins.values(), marked.values(), old.by_order),
        old.tool_results + tool_results(r, session_id, after=old.upto),
    )


def _marked(
    r: Reader, session_id: str, display: str, after: int | None = None
) -> dict[int, dict[str, Any]]:
    schema = r.schema
    in_set = display_set_sql(schema, display)
    extra = [c for c in ("display_kind", "display_metadata") if schema.has("messages", c)]
    flags = [c for c in ("active", "compacted") if schema.has("messages", c)]
    cond, params = ("", [session_id]) if after is None else (" AND id > ?", [session_id, after])
    if not extra:
        if in_set == "1" or "active" not in flags:
            return {}
        # Hermes 0.19: out of the set means active = 0, on its (session_id, active) index.
        return {
            row["id"]: row
            for row in r.rows(
                f"SELECT {', '.join(['id', *flags])} FROM messages WHERE session_id = ? "
                f"AND active = 0{cond}",
                params,
            )
        }
    wanted = [f"{c} IS NOT NULL" for c in extra] + ([f"NOT {in_set}"] if in_set != "1" else [])
    return {
        row["id"]: row
        for row in r.rows(
            f"SELECT {', '.join(['id', *flags, *extra])} FROM messages "
            f"WHERE session_id = ?{cond} AND ({' OR '.join(wanted)})",
            params,
        )
    }


def _keeps_display_order(r: Reader, session_id: str) -> bool:
    """Does every display row of the session carry its display group (0.22 keeps it by
    triggers; a file migrated from older Hermes leaves old rows without until a writer backfills
    them, and Hermes then reads them by its key)? On Hermes's partial backfill index."""
    has = r.schema.has
    if not (has("messages", "display_order") and has("messages", "display_identity")):
        return False
    return (
        r.scalar(
            f"SELECT 1 FROM messages WHERE session_id = ? AND {display_set_sql(r.schema, rule.GROUPS)} "
            "AND (display_order IS NULL OR display_identity IS NULL) LIMIT 1",
            [session_id],
        )
        is None
    )


def _twins(
    r: Reader, session_id: str, by_order: bool, after: int | None = None
) -> dict[int, dict[str, Any]]:
    """Rows that share a timestamp (or 0.22 display group) with another, as digests; with
    ``after``, only the groups a row newer than that id belongs to."""
    stamps = _shared(r, session_id, "timestamp", "1", after)
    orders: list[Any] = []
    if by_order:
        orders = _shared(
            r, session_id, "display_order", display_set_sql(r.schema, rule.GROUPS), after
        )
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
                found[row["id"]] = rule.compact(row)
    return found


def _shared(r: Reader, session_id: str, column: str, cond: str, after: int | None) -> list:
    """Values of ``column`` more than one row of the session holds (all, or only those of the
    rows newer than ``after``), on the index that leads with (session_id, column)."""
    if after is None:
        return r.column(
            f"SELECT {column} FROM messages WHERE session_id = ? AND {cond} "
            f"GROUP BY {column} HAVING COUNT(*) > 1",
            [session_id],
        )
    # The new rows by id (few), their values deduplicated here: DISTINCT would walk the
    # (session_id, column) index over the whole session instead.
    mine = list(
        dict.fromkeys(
            r.column(
                f"SELECT {column} FROM messages WHERE session_id = ? AND id > ? AND {cond}",
                [session_id, after],
            )
        )
    )
    out = []
    for start in range(0, len(mine), CHUNK):
        part = [v for v in mine[start : start + CHUNK] if v is not None]
        if part:
            out += r.column(
                f"SELECT {column} FROM messages WHERE session_id = ? AND {cond} AND {column} "
                f"IN ({in_list(len(part))}) GROUP BY {column} HAVING COUNT(*) > 1",
                [session_id, *part],
            )
    return out


def tool_results(r: Reader, session_id: str, after: int | None = None) -> int:
    """How many tool results the session holds (after a row): each row's role is read."""
    cond, params = ("", [session_id]) if after is None else (" AND id > ?", [session_id, after])
    return r.scalar(
        f"SELECT COUNT(*) FROM messages WHERE session_id = ?{cond} AND role = 'tool'", params
    )


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
