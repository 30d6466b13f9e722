"""Sessions leaving the live file, as Hermes deletes them, in short transactions: a long
transcript's messages first (a bounded number per transaction, never past the newest message
the unit may take), then the session row with what is left of its messages in one.

And the replay of a delete or prune cut short: what is left of each journaled session goes,
unless it got a message newer than the ones its removal may take (then it is kept, named).

What a delete and a prune share (webui.db.changes.actions and .prune): the journal's intent of a
removal (``newest``), the sweep of unreferenced system prompts and what a delete reports
(``Deleted``)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from webui.db import sql
from webui.db.changes import prompts, rows
from webui.db.changes.batches import ONE_TXN_MESSAGES, Batches
from webui.db.changes.writer import MESSAGE_BATCH, MESSAGE_BATCH_MAX, MESSAGE_BATCH_MIN
from webui.db.errors import LogbookDBError

if TYPE_CHECKING:
    from webui.db.changes.journal import Entry
    from webui.db.changes.lane import Lane


class Changed(Exception):
    """The session got a newer message (or a new child) since the unit began: not removed."""


@dataclass
class Deleted:
    """What a delete removed: the sessions (the one asked for first, then its delegate
    subagent runs) and how many transcript files."""

    ids: list[str]
    files: int = 0
    prompts: int = 0  # system_prompts rows no session references any more, removed with it
    warning: str | None = None  # said beside the result (0.22: a pinned session was deleted)

    def __bool__(self) -> bool:
        return bool(self.ids)

    @property
    def subagents(self) -> int:
        return max(len(self.ids) - 1, 0)


def newest(reader, limits: dict[str, int | None]) -> dict[str, int]:
    """The journal's intent for a removal: per session, the newest message id it may
    lose (None: all it has now; -1: none)."""
    ids = list(limits)
    tops = {
        r["sid"]: int(r["top"] or 0)
        for r in reader.rows(
            f"SELECT session_id AS sid, MAX(id) AS top FROM messages WHERE session_id IN "
            f"({sql.in_list(len(ids))}) GROUP BY session_id",
            ids,
        )
    }
    return {
        sid: 0 if most == -1 else min(tops.get(sid, 0), most if most is not None else 1 << 62)
        for sid, most in limits.items()
    }


def sweep_prompts(batches: Batches) -> int:
    """Every other unreferenced system prompt (Hermes's delete leaves none), in short
    batches; a lock that outlasts the retries leaves them for the next removal."""
    try:
        return prompts.sweep(batches)
    except LogbookDBError:
        return 0


def trim(
    batches: Batches,
    reader,
    session_id: str,
    upto_id: int | None = None,
    counter: list[int] | None = None,
    check: Callable[[sqlite3.Connection], None] | None = None,
) -> int:
    """A long transcript's messages (up to ``upto_id``), newest first, a batch per
    transaction, until one short transaction can take the rest with the row. ``check(conn)``
    runs inside each transaction before it deletes anything (it raises to stop). Returns how many
    went; ``counter[0]`` counts them as they commit."""
    bound, params = ("", []) if upto_id is None else (" AND id <= ?", [upto_id])
    total = reader.scalar(
        f"SELECT COUNT(*) FROM messages WHERE session_id = ?{bound}", [session_id, *params]
    )
    if total <= ONE_TXN_MESSAGES:
        return 0
    done = [0]

    def step(conn: sqlite3.Connection, n: int) -> int:
        n = min(n, total - done[0] - ONE_TXN_MESSAGES)
        if n <= 0:
            return 0
        if check is not None:
            check(conn)
        return conn.execute(
            "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE "
            f"session_id = ?{bound} ORDER BY timestamp DESC, id DESC LIMIT ?)",
            (session_id, *params, n),
        ).rowcount

    try:
        return batches.repeat(
            step, size=MESSAGE_BATCH, lo=MESSAGE_BATCH_MIN, hi=MESSAGE_BATCH_MAX, counter=done
        )
    finally:
        if counter is not None:
            counter[0] += done[0]


def remove_session(
    batches: Batches,
    reader,
    session_id: str,
    newest: int,
    *,
    members: set[str] | None = None,
    check: Callable[[sqlite3.Connection], None] | None = None,
    drop_prompts: bool = False,
) -> bool:
    """Remove one session whose messages up to ``newest`` may go (False: it is not there),
    with its per-session rows and (``drop_prompts``, 0.20+) the system prompts no session
    references any more. Raises Changed, having removed only messages up to ``newest``, when
    it has a newer one (or, with ``members``, a child outside them: a conversation grew while
    it moved)."""
    if reader.one("SELECT 1 AS x FROM sessions WHERE id = ?", [session_id]) is None:
        return False
    if reader.scalar(
        "SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ?", [session_id, newest]
    ):
        raise Changed(session_id)
    trim(batches, reader, session_id, newest, check=check)

    def fn(conn: sqlite3.Connection) -> bool:
        if check is not None:
            check(conn)
        if conn.execute(
            "SELECT 1 FROM messages WHERE session_id = ? AND id > ?", (session_id, newest)
        ).fetchone():
            raise Changed(session_id)
        if members is not None:
            for (child,) in conn.execute(
                "SELECT id FROM sessions WHERE parent_session_id = ?", (session_id,)
            ):
                if child not in members:
                    raise Changed(session_id)
        hashes = prompts.referenced(conn, [session_id]) if drop_prompts else []
        conn.execute(
            "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?",
            (session_id,),
        )
        conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
        for t in rows.session_tables(conn):  # as their foreign key's cascade would
            conn.execute(f"DELETE FROM {rows.q(t)} WHERE session_id = ?", (session_id,))
        gone = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0
        prompts.drop_unreferenced(conn, hashes)
        return gone

    return batches.once(fn)


def replay(lane: Lane, entry: Entry) -> tuple[str, list[str]]:
    """Finish a delete or a prune batch cut short: what was done, in a sentence, and the
    sessions it removed."""
    finished, kept = [], []
    batches = Batches(lane.w)
    drop = lane.rules().removes_unreferenced_prompts
    for sid, newest in entry.sessions.items():
        try:
            gone = remove_session(batches, lane.r, sid, newest, drop_prompts=drop)
        except Changed:
            kept.append(sid)
            continue
        if gone:
            finished.append(sid)
        # Its row went (now or before the cut): the transcript files that follow it.
        if lane.removes_transcripts():
            lane.remove_transcripts(sid)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.started))
    note = f"A {entry.kind} begun at {when} had been cut short; "
    note += (
        f"its removal of {len(finished)} session{'s' if len(finished) != 1 else ''}"
        f" ({', '.join(finished[:5])}{', …' if len(finished) > 5 else ''}) "
        "is now complete."
        if finished
        else "nothing more needed removing."
    )
    if kept:
        note += (
            f" Kept, because new messages arrived after the removal began: "
            f"{', '.join(kept)} (the older part of their transcripts is gone)."
        )
    return note, finished
