"""The replay of a move cut short (webui.db.changes.moving): finished or undone from what the
journal entry and the two files hold. Each replay can itself be cut and replayed again."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from webui.db import sql as sqlbits
from webui.db.changes import reindex, rows
from webui.db.changes.archive_file import ArchiveChanged, Identity
from webui.db.changes.batches import Batches
from webui.db.changes.carrying import (
    BACK_BATCH,
    carry_in,
    drop_copies,
    hold,
    send_off,
    transcripts_home,
    undo_copy,
    uri_ro,
)
from webui.db.changes.removal import Changed, remove_session

if TYPE_CHECKING:
    from webui.db.changes.journal import Entry
    from webui.db.changes.lane import Lane


def _when(entry: Entry) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.started))


def _open_if(lane: Lane, path: Path, ident: Identity) -> sqlite3.Connection | None:
    """The archive file of an entry, pinned, if its path still names it."""
    try:
        conn = hold(path, ident, lane.r.opened.path)
        conn.execute("BEGIN")
        return conn
    except (ArchiveChanged, sqlite3.Error):
        return None


def replay_out(lane: Lane, entry: Entry) -> tuple[str, list[str]]:
    """A move to cold storage cut short. Before its copy was verified the live file still
    holds the conversation whole: the copy (if the archive is still the file) goes again.
    After: the archive holds it verified. If that file is still there, unchanged, and no
    session got a new message or child, the removal from the live file is finished; if the
    conversation changed, what left the live file is put back and the copy goes; if the file is
    gone or replaced, what left the live file is put back from any file at that path that
    holds the same rows, else the loss is named."""
    path = Path(entry.facts.get("archive", ""))
    ident = Identity(int(entry.facts.get("dev", -1)), int(entry.facts.get("ino", -1)))
    members = list(entry.sessions)
    head = f"A move to cold storage begun at {_when(entry)} ({members[0] if members else '?'})"
    held = _open_if(lane, path, ident)
    try:
        verified = entry.marks.get("verified")
        home = {sid: lane.transcript_files(sid) for sid in members}
        if verified is None:
            if held is not None:
                there = _present(lane, members)
                undo_copy(held, path, ident, [m for m in members if m in there])
            drop_copies(path, members, home)
            return (
                f"{head} was cut short before its copy was checked; the conversation stays whole in the live database.",
                [],
            )
        wrote = verified.get("digest")
        newest = {k: int(v) for k, v in (verified.get("newest") or {}).items()}
        batches = Batches(lane.w)
        if held is not None and rows.digest(held, "main", members) == wrote:
            wal = verified.get("wal")
            try:
                if _grew(lane, members, newest):
                    raise Changed(members[0])
                for sid in reversed(members):
                    remove_session(
                        batches,
                        lane.r,
                        sid,
                        newest.get(sid, 0),
                        members=set(members),
                        check=lambda _conn: _still(ident, path, wal),
                        drop_prompts=lane.rules().removes_unreferenced_prompts,
                    )
            except (Changed, ArchiveChanged):
                carry_in(batches, held, members)
                undo_copy(held, path, ident, members)
                drop_copies(path, members, home)
                return (
                    f"{head} had been cut short as the conversation changed; it is whole in the live database again.",
                    [],
                )
            for sid in members:
                send_off(lane, path, sid)
            return (
                f"{head} had been cut short; it is now complete ({len(members)} sessions in {path.name}).",
                members,
            )
        other = _lookalike(path, members, wrote)
        if other is not None:
            try:
                carry_in(batches, other, members)
            finally:
                other.close()
            return (
                f"{head} had been cut short and {path.name} was replaced since; the conversation was put back whole in the live database from the file now there.",
                [],
            )
        lost = _missing(lane, members, verified.get("counts") or {})
        if not lost:
            return (
                f"{head} had been cut short; {path.name} was removed or replaced since, and the conversation is whole in the live database.",
                [],
            )
        return (
            f"{head} had been cut short and {path.name}, which held its only verified copy, "
            f"was removed or replaced since: {lost} of its messages could not be put back."
        ), []
    finally:
        if held is not None:
            held.close()


def _still(ident: Identity, path: Path, wal) -> None:
    if not ident.still_at(path, wal):
        raise ArchiveChanged(f"{path} changed")


def _present(lane: Lane, members: list[str]) -> set[str]:
    marks = sqlbits.in_list(len(members))
    return {r["id"] for r in lane.r.rows(f"SELECT id FROM sessions WHERE id IN ({marks})", members)}


def _grew(lane: Lane, members: list[str], newest: dict[str, int]) -> bool:
    """Did a session get a message newer than the copy, or the conversation a new child?"""
    mine = set(members)
    for sid in members:
        if lane.r.scalar(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ?",
            [sid, newest.get(sid, 0)],
        ):
            return True
        for r in lane.r.rows("SELECT id FROM sessions WHERE parent_session_id = ?", [sid]):
            if r["id"] not in mine:
                return True
    return False


def _missing(lane: Lane, members: list[str], counts: dict) -> int:
    left = 0
    for sid in members:
        have = lane.r.scalar("SELECT COUNT(*) FROM messages WHERE session_id = ?", [sid])
        left += max(0, int(counts.get(sid, 0)) - int(have or 0))
    return left


def _lookalike(path: Path, members: list[str], wrote) -> sqlite3.Connection | None:
    """A file now at ``path`` (not the one written) that holds exactly the verified rows: a
    sync tool's copy. Read only."""
    try:
        conn = sqlite3.connect(uri_ro(path), uri=True, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.execute("BEGIN")
        if wrote and rows.digest(conn, "main", members) == wrote:
            return conn
    except sqlite3.Error:
        pass
    conn.close()
    return None


def replay_back(lane: Lane, entry: Entry) -> tuple[str, list[str]]:
    """A move back cut short. Arrived (the session rows are in the live file and it holds every
    message the archive has): the archive's copy goes (if the path still names the file) and
    the transcripts move home. Not arrived: the messages it had carried, owned by no session
    in the live file, go again; the archive still holds the conversation whole."""
    path = Path(entry.facts.get("archive", ""))
    ident = Identity(int(entry.facts.get("dev", -1)), int(entry.facts.get("ino", -1)))
    members = list(entry.sessions)
    head = f"A move back from cold storage begun at {_when(entry)}"
    held = _open_if(lane, path, ident)
    try:
        there = _present(lane, members)
        arrived = "arrived" in entry.marks or (
            there == set(members) and held is not None and _holds_all(lane, held, members)
        )
        if arrived and there == set(members):
            reindex.index_missing(Batches(lane.w), members)  # a cut before it was done
            if held is not None and undo_copy(held, path, ident, members):
                transcripts_home(lane, path, members)
            return (
                f"{head} had been cut short after the conversation arrived; it is now complete.",
                [],
            )
        taken = _undo_orphans(lane, [m for m in members if m not in there])
        n = len(members)
        return f"{head} had been cut short; " + (
            f"the {taken} message{'s' if taken != 1 else ''} it had copied into the live file "
            f"were taken out again (the archive still holds the conversation of {n} "
            f"session{'s' if n != 1 else ''} whole: move it back again)."
            if taken
            else "nothing of it was left half done."
        ), []
    finally:
        if held is not None:
            held.close()


def _holds_all(lane: Lane, held: sqlite3.Connection, members: list[str]) -> bool:
    ids = list(rows.message_ids(held, "main", members))
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        n = lane.r.scalar(
            f"SELECT COUNT(*) FROM messages WHERE id IN ({sqlbits.in_list(len(chunk))})", chunk
        )
        if n != len(chunk):
            return False
    return True


def _undo_orphans(lane: Lane, sessions: list[str]) -> int:
    """Messages of ``sessions`` that no session row in the live file owns, out again."""
    batches = Batches(lane.w)
    taken = 0
    for sid in sessions:
        taken += batches.repeat(
            lambda c, n, sid=sid: (
                c.execute(
                    "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE "
                    "session_id = ? AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = ?) LIMIT ?)",
                    (sid, sid, n),
                ).rowcount
            ),
            size=BACK_BATCH,
            lo=20,
            hi=2000,
        )
    return taken
