"""Flags Hermes sets on a whole compression lineage at once — archived, pinned, hidden: the
session, every compression ancestor above it and every session continuing a compression-ended
one below it (``set_session_archived`` / ``_pinned`` / ``_hidden``; the desktop lists a
conversation by its first segment projected onto its tip, so a flag on one segment alone would
come back). The file's Hermes decides what goes with each flag (webui.hermes.rules: 0.22 clears
the idle sweep's ``auto_archived`` stamp on a deliberate archive and un-hides a lineage it
pins). Each function runs inside the caller's transaction and returns the rows it changed."""

from __future__ import annotations

import sqlite3
from typing import Any

from webui.hermes.changes import CANONICAL_BOT_CHAT_TITLE

LINEAGE = (
    "WITH RECURSIVE ancestors(id) AS (SELECT ? UNION SELECT parent.id FROM ancestors a "
    "JOIN sessions child ON child.id = a.id JOIN sessions parent ON parent.id = "
    "child.parent_session_id WHERE parent.end_reason = 'compression'), "
    "descendants(id) AS (SELECT ? UNION SELECT child.id FROM descendants d JOIN sessions "
    "parent ON parent.id = d.id JOIN sessions child ON child.parent_session_id = parent.id "
    "WHERE parent.end_reason = 'compression'), "
    "lineage(id) AS (SELECT id FROM ancestors UNION SELECT id FROM descendants) "
)


def _columns(conn: sqlite3.Connection) -> set[str]:
    return {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}


def set_on_lineage(conn: sqlite3.Connection, session_id: str, values: dict[str, Any]) -> int:
    """``values`` (column -> value) on every row of the lineage that does not hold them yet
    (Hermes writes every row; the rows that already hold the values end the same)."""
    cols = _columns(conn)
    values = {c: v for c, v in values.items() if c in cols}
    if not values:
        return 0
    sets = ", ".join(f"{c} = ?" for c in values)
    differs = " OR ".join(f"{c} IS NOT ?" for c in values)
    conn.execute(
        f"{LINEAGE}UPDATE sessions SET {sets} WHERE id IN (SELECT id FROM lineage) AND ({differs})",
        (session_id, session_id, *values.values(), *values.values()),
    )
    # changes(), not rowcount: Python's sqlite3 leaves rowcount at -1 for a statement that
    # starts with WITH.
    return conn.execute("SELECT changes()").fetchone()[0]


def archive(conn: sqlite3.Connection, session_id: str, archived: bool, rules) -> int:
    values: dict[str, Any] = {"archived": int(archived)}
    if rules.archive_clears_auto_stamp:
        values["auto_archived"] = (
            0  # a deliberate archive or unarchive: the user's, not the sweep's
        )
    return set_on_lineage(conn, session_id, values)


def pin(conn: sqlite3.Connection, session_id: str, pinned: bool, rules) -> int:
    """Pin or unpin the lineage; 0.22 un-hides it when pinning (a pin means "keep it
    visible"), except the hidden canonical Bot Chat, which stays reachable through its bot."""
    changed = set_on_lineage(conn, session_id, {"pinned": int(pinned)})
    if pinned and rules.pin_unhides and "hidden" in _columns(conn):
        row = conn.execute(
            "SELECT COALESCE(hidden, 0), COALESCE(title, '') FROM sessions WHERE id = ?",
            (session_id,),
        ).fetchone()
        if row is not None and not (row[0] and row[1] == CANONICAL_BOT_CHAT_TITLE):
            changed += set_on_lineage(conn, session_id, {"hidden": 0})
    return changed


def hide(conn: sqlite3.Connection, session_id: str, hidden: bool) -> int:
    return set_on_lineage(conn, session_id, {"hidden": int(hidden)})
