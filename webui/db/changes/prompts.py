"""Content-addressed system prompts (Hermes 0.20+: ``system_prompts(hash, prompt)``, referenced
by ``sessions.system_prompt_hash`` and, since 0.22, by ``sessions.tool_names``). A delete or a
prune removes the rows no session references any more, as Hermes does: the prompts of the
sessions a transaction removed, in that transaction (``drop_unreferenced``), then every other
unreferenced row in short keyset batches (``sweep``), so that the file ends as Hermes's one
transaction leaves it. Cold storage carries the rows a conversation's sessions reference with
it (``referenced``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from webui.db import sql as sqlbits

# Columns of ``sessions`` that name a row of system_prompts (those the file has are used).
REFERENCING = ("system_prompt_hash", "tool_names")


def refs(conn: sqlite3.Connection, schema: str = "main") -> list[str]:
    """The referencing columns this file's sessions table has (none: no system_prompts)."""
    have = {
        r[0]
        for r in conn.execute(
            f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table' AND name = "
            "'system_prompts'"
        )
    }
    if not have:
        return []
    cols = {r[1] for r in conn.execute(f"PRAGMA {schema}.table_info(sessions)")}
    return [c for c in REFERENCING if c in cols]


def _unreferenced(cols: list[str], alias: str = "system_prompts") -> str:
    return " AND ".join(
        f"NOT EXISTS (SELECT 1 FROM sessions WHERE sessions.{c} = {alias}.hash)" for c in cols
    )


def referenced(conn: sqlite3.Connection, ids: Sequence[str], schema: str = "main") -> list[str]:
    """The hashes the sessions ``ids`` reference (prompt and tool names), each once."""
    cols = refs(conn, schema)
    if not cols or not ids:
        return []
    marks = sqlbits.in_list(len(ids))
    found: set[str] = set()
    for c in cols:
        found.update(
            r[0]
            for r in conn.execute(
                f"SELECT DISTINCT {c} FROM {schema}.sessions WHERE id IN ({marks}) "
                f"AND {c} IS NOT NULL",
                list(ids),
            )
        )
    return sorted(found)


def drop_unreferenced(conn: sqlite3.Connection, hashes: Iterable[str]) -> int:
    """Inside the removal's transaction, after its rows went: those of ``hashes`` no session
    references any more."""
    cols = refs(conn)
    hashes = list(hashes)
    if not cols or not hashes:
        return 0
    n = 0
    for i in range(0, len(hashes), 500):
        chunk = hashes[i : i + 500]
        n += conn.execute(
            f"DELETE FROM system_prompts WHERE hash IN ({sqlbits.in_list(len(chunk))}) "
            f"AND {_unreferenced(cols)}",
            chunk,
        ).rowcount
    return n


def sweep(batches) -> int:
    """Every unreferenced row, ``batches`` (webui.db.changes.batches.Batches) of hashes in
    order, one short transaction each. Returns how many went."""
    cursor = [""]
    ahead: list = ["", 0]  # (the window's last hash, rows it removed) until it commits
    gone = [0]

    def step(conn: sqlite3.Connection, n: int) -> int:
        cols = refs(conn)
        if not cols:
            return 0
        window = conn.execute(
            "SELECT hash FROM system_prompts WHERE hash > ? ORDER BY hash LIMIT ?",
            (cursor[0], n),
        ).fetchall()
        if not window:
            return 0
        ahead[0] = window[-1][0]
        ahead[1] = conn.execute(
            "DELETE FROM system_prompts WHERE hash > ? AND hash <= ? AND " + _unreferenced(cols),
            (cursor[0], ahead[0]),
        ).rowcount
        return len(window)

    def committed() -> None:
        cursor[0] = ahead[0]
        gone[0] += ahead[1]

    batches.repeat(step, size=500, lo=50, hi=5000, committed=committed)
    return gone[0]
