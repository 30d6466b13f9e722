"""The files agents wrote or changed, read from the digest's ``changes`` (webui.db.digest),
and each version's text read back from the tool call in state.db itself (never from a disk).

Lists run newest first by (time, change id), paged by that key; a path's history oldest first.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from webui.db import sql as sqlh
from webui.db.reader import Reader
from webui.hermes import file_changes as fc

PAGE = 50
COLUMNS = ("id", "session_id", "message_id", "call_index", "change_index", "call_id", "tool",
           "action", "via", "path", "workspace", "rel", "timestamp", "full", "size", "other",
           "failed")  # fmt: skip
NO_WORKSPACE = "(none)"  # workspace= for the changes of sessions with no folder recorded


@dataclass
class ChangeQuery:
    workspace: str | None = None  # exact; NO_WORKSPACE: sessions without a folder
    session: str | None = None
    path: str | None = None  # a path's history: its changes and the copies made of it
    q: str | None = None  # part of the path
    via: str | None = None
    since: float | None = None
    until: float | None = None
    before: tuple[float, int] | None = None  # keyset: (timestamp, id) of the last row shown
    limit: int = PAGE

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = ["1"]
        params: list[Any] = []
        if self.workspace is not None:
            if self.workspace == NO_WORKSPACE:
                clauses.append("c.workspace IS NULL")
            else:
                clauses.append("c.workspace = ?")
                params.append(self.workspace)
        if self.session:
            clauses.append("c.session_id = ?")
            params.append(self.session)
        if self.path:
            # the path's own changes, and the copies made of it elsewhere (each side of the
            # OR has its index)
            clauses.append("(c.path = ? OR (c.other = ? AND c.action = 'copy_in'))")
            params += [self.path, self.path]
        if self.q:
            clauses.append("instr(lower(c.path), lower(?)) > 0")
            params.append(self.q)
        if self.via:
            clauses.append("(c.via = ? OR c.tool = ?)")
            params += [self.via, self.via]
        if self.since is not None:
            clauses.append("c.timestamp >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("c.timestamp < ?")
            params.append(self.until)
        return " AND ".join(clauses), params


def _select(conn: sqlite3.Connection) -> str:
    t = sqlh.attached_col(conn, "st", "title", "t")
    return (
        f"SELECT {', '.join('c.' + c for c in COLUMNS)}, {t} AS title, t.source AS source "
        "FROM main.changes c LEFT JOIN st.sessions t ON t.id = c.session_id"
    )


def _rows(conn: sqlite3.Connection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cur = conn.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def changes(conn: sqlite3.Connection, q: ChangeQuery) -> list[dict[str, Any]]:
    """A page of changes, newest first (one row more than ``q.limit`` says there is more).
    A path's history is read as its two halves, each through its own index in time order
    (its changes, the copies made of it), and merged: an OR of the two would gather every
    change of a busy path before the first page."""
    if q.path:
        halves = []
        for half in ("c.path = ?", "c.other = ? AND c.action = 'copy_in'"):
            sub = ChangeQuery(**{**q.__dict__, "path": None})
            where, params = sub.where()
            halves += _page(conn, f"{half} AND {where}", [q.path, *params], q)
        halves.sort(key=lambda r: (r["timestamp"] or 0, r["id"]), reverse=True)
        return halves[: q.limit + 1]
    where, params = q.where()
    return _page(conn, where, params, q)


def _page(
    conn: sqlite3.Connection, where: str, params: list[Any], q: ChangeQuery
) -> list[dict[str, Any]]:
    if q.before is not None:
        where += " AND (c.timestamp < ? OR (c.timestamp = ? AND c.id < ?))"
        params = [*params, q.before[0], q.before[0], q.before[1]]
    return _rows(
        conn,
        f"{_select(conn)} WHERE {where} ORDER BY c.timestamp DESC, c.id DESC LIMIT ?",
        [*params, q.limit + 1],
    )


def held(conn: sqlite3.Connection, key: tuple) -> bool:
    """Does this digest hold the change (session, message, place of the call, of the change)?"""
    return (
        conn.execute(
            "SELECT 1 FROM main.changes WHERE session_id = ? AND message_id = ? AND call_index = ? "
            "AND change_index = ?",
            key,
        ).fetchone()
        is not None
    )


def workspaces(conn: sqlite3.Connection, q: ChangeQuery) -> list[dict[str, Any]]:
    """Every workspace with changes: how many, of how many files, in how many sessions, the
    newest first."""
    where, params = q.where()
    return _rows(
        conn,
        "SELECT c.workspace AS workspace, COUNT(*) AS changes, COUNT(DISTINCT c.path) AS files, "
        "COUNT(DISTINCT c.session_id) AS sessions, MAX(c.timestamp) AS last FROM main.changes c "
        f"WHERE {where} GROUP BY 1 ORDER BY last DESC",
        params,
    )


def change(conn: sqlite3.Connection, change_id: int) -> dict[str, Any] | None:
    found = _rows(conn, f"{_select(conn)} WHERE c.id = ?", [change_id])
    return found[0] if found else None


def session_cwd(conn: sqlite3.Connection, session_id: str) -> str | None:
    row = conn.execute("SELECT cwd FROM main.sess WHERE session_id = ?", (session_id,)).fetchone()
    return row[0] if row else None


def text_of(reader: Reader, row: dict[str, Any], cwd: str | None) -> fc.FileChange | None:
    """The change as its tool call states it (content or patch), read again from the call's
    arguments in state.db and parsed by the same rule; None when the message or call is gone."""
    found = reader.one(
        "SELECT tool_calls FROM messages WHERE id = ? AND session_id = ?",
        [row["message_id"], row["session_id"]],
    )
    if found is None:
        return None
    try:
        calls = json.loads(found["tool_calls"] or "[]")
        call = calls[row["call_index"]]
        function = call.get("function") or {}
    except (ValueError, TypeError, IndexError, KeyError, AttributeError, RecursionError):
        return None
    found_changes = fc.changes(function.get("name"), function.get("arguments"), cwd)
    i = row["change_index"]
    return found_changes[i] if 0 <= i < len(found_changes) else None
