"""A rename as the file's Hermes makes it (``set_session_title``), inside one transaction: the
title already cleaned (webui.hermes.titles), its uniqueness rules, and (0.20+) who titled it.

Uniqueness: a title another session holds is refused ("Title 'X' is already in use by session
Y") unless that session is a compression ancestor of this one (the title moves to the tip: the
ancestor is hidden from the list and could not be freed otherwise) or, 0.22, an ended, empty,
unarchived and visible ghost (an abandoned new chat the lists filter out) or an archived hidden
"Bot Chat" taking the bot's own name back. 0.22 never renames the hidden canonical Bot Chat."""

from __future__ import annotations

import sqlite3

from webui.db.errors import LogbookDBError, NotFound
from webui.hermes.changes import CANONICAL_BOT_CHAT_TITLE, bot_chat_refusal
from webui.hermes.titles import TitleError


class TitleInUse(LogbookDBError):
    status = 409

    def __init__(self, title: str, other_id: str):
        super().__init__(f"Title '{title}' is already in use by session {other_id}")
        self.title = title
        self.other_id = other_id


def compression_ancestor(conn: sqlite3.Connection, ancestor: str, descendant: str) -> bool:
    """Is ``ancestor`` an earlier segment of ``descendant``'s compression chain (parents that
    ended 'compression', walked upwards)?"""
    if not ancestor or ancestor == descendant:
        return False
    row = conn.execute(
        "WITH RECURSIVE up(id) AS (SELECT ? UNION SELECT parent.id FROM up JOIN sessions "
        "child ON child.id = up.id JOIN sessions parent ON parent.id = "
        "child.parent_session_id WHERE parent.end_reason = 'compression') "
        "SELECT 1 FROM up WHERE id = ? LIMIT 1",
        (descendant, ancestor),
    ).fetchone()
    return row is not None


def _cols(conn: sqlite3.Connection) -> set[str]:
    return {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}


def _flag(cols: set[str], name: str, alias: str = "") -> str:
    return f"COALESCE({alias}{name}, 0)" if name in cols else "0"


def rename(conn: sqlite3.Connection, session_id: str, title: str | None, rules) -> None:
    cols = _cols(conn)
    hidden = _flag(cols, "hidden")
    current = conn.execute(
        f"SELECT title, {hidden} FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if current is None:
        raise NotFound(f"No session has the id “{session_id}”.")
    if (
        rules.rename_frees_ghost_titles
        and current[0] == CANONICAL_BOT_CHAT_TITLE
        and current[1]
        and title != CANONICAL_BOT_CHAT_TITLE
    ):
        raise TitleError(bot_chat_refusal())
    if title is not None:
        _free(conn, cols, session_id, title, rules)
    if rules.rename_records_source and "title_source" in cols:
        conn.execute(
            "UPDATE sessions SET title = ?, title_source = ? WHERE id = ?",
            (title, "user" if title else None, session_id),
        )
    else:
        conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, session_id))


def _free(conn: sqlite3.Connection, cols: set[str], session_id: str, title: str, rules) -> None:
    """Make ``title`` free for ``session_id`` or raise TitleInUse (the uniqueness rule)."""
    ghost = "0"
    if rules.rename_frees_ghost_titles and {"ended_at", "message_count"} <= cols:
        ghost = (
            f"(COALESCE(message_count, 0) = 0 AND ended_at IS NOT NULL AND "
            f"{_flag(cols, 'archived')} = 0 AND NOT EXISTS (SELECT 1 FROM messages m "
            "WHERE m.session_id = sessions.id))"
        )
    row = conn.execute(
        f"SELECT id, {_flag(cols, 'archived')}, {_flag(cols, 'hidden')}, {ghost} "
        "FROM sessions WHERE title = ? AND id != ?",
        (title, session_id),
    ).fetchone()
    if row is None:
        return
    other, archived, hidden, is_ghost = row
    if rules.rename_takes_from_ancestor and compression_ancestor(conn, other, session_id):
        # An earlier segment of this conversation, hidden from the list: the title moves on.
        conn.execute("UPDATE sessions SET title = NULL WHERE id = ?", (other,))
        return
    if rules.rename_frees_ghost_titles and (
        (title == CANONICAL_BOT_CHAT_TITLE and archived and hidden) or (is_ghost and not hidden)
    ):
        clear = ", title_source = NULL" if "title_source" in cols else ""
        conn.execute(f"UPDATE sessions SET title = NULL{clear} WHERE id = ?", (other,))
        return
    raise TitleInUse(title, other)
