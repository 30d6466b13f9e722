"""Search indexes whose insert trigger reads the message's session, completed for messages that
arrived before their session row.

A move back from cold storage writes a conversation's messages before its session rows, so no
page ever shows half a conversation (webui.db.changes.carrying). Hermes 0.22's trigram index
(``messages_fts_trigram``, external content ``messages_fts_trigram_src``) indexes a message
only when its session exists and is neither a cron run nor a delegate run: its trigger asks the
``sessions`` table, so messages written first are left out of it. Once the session rows are in,
``index_missing`` adds each such message the index lacks, through the file's own content view
(which holds exactly the rows the index should: the same filter as the trigger), a batch per
transaction. It is idempotent — a row the index holds (its ``_docsize`` row) is never added
twice — so a replay can run it again after a cut; and it leaves alone the id range an
interrupted rebuild of Hermes's own will index (``state_meta`` keys the trigger names)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from webui.db import sql as sqlbits


@dataclass(frozen=True)
class Index:
    table: str  # the FTS5 table
    view: str  # its external content (a view over messages and sessions)
    rowid: str  # the view's column that is the message id
    columns: tuple[str, ...]
    high_water: str | None  # state_meta keys of a pending rebuild's window, if the trigger has
    progress: str | None


def session_dependent(conn: sqlite3.Connection) -> list[Index]:
    """The FTS tables an insert trigger on ``messages`` fills only when it finds the session
    (and that have a ``_docsize`` table to tell which rows they hold)."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    out = []
    for (body,) in conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages' "
        "AND sql LIKE '%AFTER INSERT%'"
    ):
        body = body or ""
        if not re.search(r"\bFROM\s+sessions\b", body, re.IGNORECASE):
            continue
        into = re.search(r"INSERT\s+INTO\s+(\w+)\s*\(", body, re.IGNORECASE)
        if not into or f"{into.group(1)}_docsize" not in names:
            continue
        table = into.group(1)
        spec = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = ? AND type = 'table'", (table,)
        ).fetchone()
        view = re.search(r"content\s*=\s*'(\w+)'", (spec or [""])[0] or "")
        rowid = re.search(r"content_rowid\s*=\s*'(\w+)'", (spec or [""])[0] or "")
        if not view or view.group(1) not in names:
            continue
        cols = tuple(r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] != table)
        keys = re.findall(r"key\s*=\s*'(\w+)'", body)
        out.append(
            Index(
                table,
                view.group(1),
                rowid.group(1) if rowid else "rowid",
                cols,
                next((k for k in keys if k.endswith("high_water")), None),
                next((k for k in keys if k.endswith("progress")), None),
            )
        )
    return out


def _window(conn: sqlite3.Connection, index: Index) -> tuple[int, int]:
    """(high water, progress) of a pending rebuild of ``index``; (-1, -1) when none."""

    def value(key: str | None) -> int:
        if key is None:
            return -1
        row = conn.execute("SELECT value FROM state_meta WHERE key = ?", (key,)).fetchone()
        try:
            return int(row[0]) if row and row[0] is not None else -1
        except (TypeError, ValueError):
            return -1

    return value(index.high_water), value(index.progress)


def index_missing(batches, members: Sequence[str], size: int = 200) -> int:
    """Every message of the sessions ``members`` that such an index should hold and does not,
    added in short transactions. Returns how many rows were added."""
    cursor = [0]
    ahead = [0, 0]  # (last message id looked at, rows added) until the transaction commits
    added = [0]
    members = list(members)
    if not members:
        return 0

    def step(conn: sqlite3.Connection, n: int) -> int:
        indexes = session_dependent(conn)
        if not indexes:
            return 0
        marks = sqlbits.in_list(len(members))
        ids = [
            r[0]
            for r in conn.execute(
                f"SELECT id FROM messages WHERE session_id IN ({marks}) AND id > ? "
                "ORDER BY id LIMIT ?",
                [*members, cursor[0], n],
            )
        ]
        if not ids:
            return 0
        ahead[0], ahead[1] = ids[-1], 0
        chunk = sqlbits.in_list(len(ids))
        for ix in indexes:
            high, progress = _window(conn, ix)
            cols = ", ".join(ix.columns)
            ahead[1] += conn.execute(
                f"INSERT INTO {ix.table}(rowid, {cols}) SELECT {ix.rowid}, {cols} FROM {ix.view} "
                f"WHERE {ix.rowid} IN ({chunk}) AND {ix.rowid} NOT IN (SELECT id FROM "
                f"{ix.table}_docsize WHERE id IN ({chunk})) AND ({ix.rowid} > ? OR {ix.rowid} <= ?)",
                [*ids, *ids, high, progress],
            ).rowcount
        return len(ids)

    def committed() -> None:
        cursor[0] = ahead[0]
        added[0] += ahead[1]

    batches.repeat(step, size=size, lo=20, hi=2000, committed=committed)
    return added[0]
