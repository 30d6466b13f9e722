"""A conversation moved between the live file and an archive file, as one unit of the lane, and
the replay of one cut short.

Out (to cold storage), under the live file's lane:

1. the intent names the conversation and the archive file (path, device, inode);
2. one transaction on the archive (its write lock held, the live file attached read-only, so
   both are one snapshot): the archive's schema is checked to be exactly the live file's,
   the rows are copied, and a digest of what was read is taken;
3. the archive is read back through a NEW connection opened on its path, known to hold the
   same file (webui.db.changes.archive_file.open_checked), and must give the same digest; that
   connection keeps its snapshot (and the file open) until the unit ends;
4. the ``verified`` mark: from here a replay finishes the move instead of undoing it;
5. the sessions leave the live file, leaves first, in the short transactions of a delete;
   inside each, before anything is deleted, the archive's path must still name the file
   checked, its ``-wal`` unwritten. If it does not, or a session got a new message or a new
   child, what already left is put back from the pinned snapshot — the rows come from the file
   the connection holds, whatever the path names now — and the move of that conversation
   stops (a changed archive stops the whole job and says so);
6. the transcripts, copied beside the archive before the mark, leave the Hermes home.

Back: the archive file opened and pinned the same way; its messages enter the live file a
batch at a time before its session rows (one last transaction), through the Writer and its
pause; the live file is read back and must give the archive's digest; the ``arrived`` mark;
then the rows leave the archive (through the pinned connection, after checking the path still
names it) and the transcripts move home (never over a file there).

A replay finishes or undoes from what the journal and the two files hold
(webui.db.changes.move_replay)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from webui.db import sql as sqlbits
from webui.db.changes import prompts, rows
from webui.db.changes import transcripts as tfiles
from webui.db.changes.archive_file import (
    ArchiveChanged,
    ColdStoreError,
    Identity,
    open_checked,
    schema_problem,
    wal_state,
)
from webui.db.changes.batches import Batches
from webui.db.changes.carrying import (
    carry_in,
    drop_copies,
    hold,
    live_ro,
    send_off,
    transcripts_home,
    undo_copy,
    uri_ro,
)
from webui.db.changes.removal import Changed, remove_session

if TYPE_CHECKING:
    from webui.db.changes.lane import Lane, Unit

# (kind, the sessions concerned, sentences) when a conversation must stay where it is:
# "running" (a session never ended), "resumable" (Hermes would still continue it); None: move.
Judge = Callable[[sqlite3.Connection, str, list[str]], "tuple[str, list[str], list[str]] | None"]


@dataclass
class Moved:
    """What one unit did with one conversation."""

    members: list[str] = field(default_factory=list)
    messages: int = 0
    files: int = 0
    stayed: str | None = None  # why it did not move: running, resumable, changed, taken, gone
    who: list[str] = field(default_factory=list)  # the sessions that made it stay
    why: list[str] = field(default_factory=list)  # in words, for the result
    notes: list[str] = field(default_factory=list)


# -- out ---------------------------------------------------------------------------------------


def changed_under(target: Path, root: str) -> ColdStoreError:
    return ColdStoreError(
        f"The move stopped: {target.name} was deleted, replaced or changed by something else "
        f"while {root} was moving. That conversation is whole in the live database; nothing "
        "was lost, and nothing more is written into that file."
    )


def out_one(
    lane: Lane,
    unit: Unit,
    batches: Batches,
    target: Path,
    ident: Identity,
    root: str,
    judge: Judge,
) -> Moved:
    """One conversation (the one ``root`` belongs to, as the live file holds it now) into
    ``target``, which must be the file ``ident``. Raises ColdStoreError when the archive file
    misbehaves (the job stops); every session is then whole in the live file."""
    try:
        return _out(lane, unit, batches, target, ident, root, judge)
    except ArchiveChanged:
        # Before the verified mark nothing left the live file: nothing is left to finish.
        if unit.entry is not None and "verified" not in unit.entry.marks:
            unit.finish()
        raise changed_under(target, root) from None
    except sqlite3.Error:
        if ident.still_at(target, check_wal=False):
            raise
        if unit.entry is not None and "verified" not in unit.entry.marks:
            unit.finish()
        raise changed_under(target, root) from None


def _out(
    lane: Lane,
    unit: Unit,
    batches: Batches,
    target: Path,
    ident: Identity,
    root: str,
    judge: Judge,
) -> Moved:
    live_path = lane.r.opened.path
    copy = open_checked(target, ident, "rw")
    try:
        copy.execute("ATTACH DATABASE ? AS live", (uri_ro(live_path),))
        members = rows.conversation(copy, root, "live")
        if not members:
            return Moved(stayed="gone")
        verdict = judge(copy, "live", members)
        if verdict:
            return Moved(members, stayed=verdict[0], who=verdict[1], why=verdict[2])
        unit.intend(dict.fromkeys(members, 0), archive=str(target), **ident.facts())
        # The archive's write lock; the live file is only read.
        with sqlbits.transaction(copy):
            if not ident.still_at(target, check_wal=False):
                raise ArchiveChanged(f"{target} changed")
            problem = schema_problem(copy, "main", "live")
            if problem:
                raise ColdStoreError(
                    f"Nothing more was moved: {target.name} changed under cold storage ({problem})."
                )
            # The same snapshot as the copy: the conversation and its state again (changed:
            # nothing written yet, so the transaction ends with nothing to commit).
            if rows.conversation(copy, root, "live") != members or judge(copy, "live", members):
                return Moved(members, stayed="changed", why=["it changed as the move began"])
            _copy_rows(copy, members)
            wrote = rows.digest(copy, "live", members)
            tops = rows.newest(copy, "live", members)
        unit.touched("archive copy")
        if copy.execute("PRAGMA main.journal_mode").fetchone()[0] == "wal":
            copy.execute("PRAGMA main.wal_checkpoint(TRUNCATE)")
    finally:
        copy.close()
    wal = wal_state(target)
    held = hold(target, ident, live_path)  # a NEW connection, by path: read back
    try:
        held.execute("BEGIN")
        if rows.digest(held, "main", members) != wrote:
            undo_copy(held, target, ident, members)
            unit.finish()
            raise ColdStoreError(
                f"Nothing more was moved: {target.name} did not read back what was written "
                f"for {members[0]} (changed, replaced or emptied under cold storage); that "
                "conversation is whole in the live database."
            )
        originals = {
            sid: [p for p in lane.transcript_files(sid) if not p.is_symlink()] for sid in members
        }
        files = tfiles.copy_into(
            [p for ps in originals.values() for p in ps], target.parent / "sessions"
        )
        if files:
            unit.touched("transcripts copied")
        newest = {sid: top for sid, (top, _n) in tops.items()}
        unit.mark(
            "verified",
            newest=newest,
            counts={sid: n for sid, (_top, n) in tops.items()},
            digest=wrote,
            wal=list(wal) if wal else None,
        )

        def still_there(_conn=None) -> None:
            if not ident.still_at(target, wal):
                raise ArchiveChanged(f"{target} changed during the move")

        try:
            for sid in reversed(members):  # leaves first: no parent outlives its children
                remove_session(
                    batches,
                    lane.r,
                    sid,
                    newest[sid],
                    members=set(members),
                    check=still_there,
                    drop_prompts=lane.rules().removes_unreferenced_prompts,
                )
            still_there()  # the last removal committed while the file was still the one
        except (Changed, ArchiveChanged) as exc:
            carry_in(batches, held, members)  # what left the live file, from the snapshot
            if isinstance(exc, ArchiveChanged):
                unit.finish()
                raise changed_under(target, root) from None
            undo_copy(held, target, ident, members)
            drop_copies(target, members, originals)
            unit.finish()
            return Moved(
                members,
                stayed="changed",
                why=["a session got a new message or a new child as it moved"],
            )
        gone = sum(send_off(lane, target, sid) for sid in members)
        if gone:
            unit.touched("transcripts removed")
        return Moved(members, messages=sum(n for _top, n in tops.values()), files=files)
    finally:
        held.close()


def _copy_rows(conn: sqlite3.Connection, members: list[str]) -> None:
    """Inside the archive's transaction: the conversation's rows from ``live`` into ``main``,
    SQLite to SQLite (every value keeps its bytes and type), columns named. A copy left by an
    earlier try is replaced (deleted through the archive's own triggers first)."""
    marks = sqlbits.in_list(len(members))
    tables = ["sessions", "messages", *rows.session_tables(conn, "live")]
    key = {t: "id" if t == "sessions" else "session_id" for t in tables}
    for t in reversed(tables):
        conn.execute(f"DELETE FROM main.{rows.q(t)} WHERE {key[t]} IN ({marks})", members)
    for t in tables:
        want = rows.columns(conn, "live", t)
        missing = [c for c in want if c not in rows.columns(conn, "main", t)]
        if missing:
            raise ColdStoreError(
                f"Nothing more was moved: the archive file lacks the column "
                f"{', '.join(missing)} of {t} (another Hermes schema)."
            )
        names = ", ".join(rows.q(c) for c in want)
        conn.execute(
            f"INSERT INTO main.{rows.q(t)} ({names}) SELECT {names} FROM live.{rows.q(t)} "
            f"WHERE {key[t]} IN ({marks})",
            members,
        )
    # The system prompts its sessions reference (content-addressed: a row the archive has
    # already is the same text), so the archive shows and exports them as the live file did.
    hashes = prompts.referenced(conn, members, "live")
    if hashes and prompts.refs(conn, "main"):
        names = ", ".join(rows.q(c) for c in rows.columns(conn, "live", "system_prompts"))
        conn.execute(
            f"INSERT OR IGNORE INTO main.system_prompts ({names}) SELECT {names} FROM "
            f"live.system_prompts WHERE hash IN ({sqlbits.in_list(len(hashes))})",
            hashes,
        )


# -- back --------------------------------------------------------------------------------------


def back_one(
    lane: Lane, unit: Unit, batches: Batches, source: Path, ident: Identity, root: str
) -> Moved:
    """One conversation of the archive file ``source`` (which must be the file ``ident``) into
    the live file, verified there, then out of the archive."""
    live_path = lane.r.opened.path
    held = hold(source, ident, live_path)
    try:
        held.execute("BEGIN")  # pinned: every read below sees one state of the archive
        members = rows.conversation(held, root)
        if not members:
            return Moved(stayed="gone")
        taken = _taken(held, live_path, members)
        if taken:
            return Moved(members, stayed="taken", why=taken)
        unit.intend(dict.fromkeys(members, 0), archive=str(source), **ident.facts())
        carried = carry_in(batches, held, members)
        live = live_ro(live_path)
        try:
            arrived = rows.digest(live, "main", members) == rows.digest(held, "main", members)
        finally:
            live.close()
        if not arrived:
            raise ColdStoreError(
                f"The move back stopped: {members[0]} did not read back from the live database "
                "as the archive holds it (Hermes may have written to it as it arrived); the "
                "next change settles it."
            )
        unit.mark("arrived")
        moved = Moved(members, messages=carried)
        if not undo_copy(held, source, ident, members):
            moved.notes.append(
                f"{source.name} was replaced during the move back; the conversation is whole "
                "in the live database and the file now there was left alone."
            )
        moved.files, left = transcripts_home(lane, source, members)
        if moved.files:
            unit.touched("transcripts moved home")
        if left:
            moved.notes.append(
                "Kept beside the archive (a newer file of that name is in the Hermes home): "
                + ", ".join(left)
            )
        return moved
    finally:
        held.close()


def _taken(held: sqlite3.Connection, live_path: Path, members: list[str]) -> list[str]:
    """Why the conversation cannot come back as it is (its ids or titles are others' in the
    live file, or its columns are not the live file's), in words; empty when it can."""
    live = live_ro(live_path)
    try:
        marks = sqlbits.in_list(len(members))
        out = []
        for (sid,) in live.execute(f"SELECT id FROM sessions WHERE id IN ({marks})", members):
            out.append(f"session {sid} is already in the live database")
        ids = list(rows.message_ids(held, "main", members))
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            if live.execute(
                f"SELECT 1 FROM messages WHERE id IN ({sqlbits.in_list(len(chunk))}) LIMIT 1",
                chunk,
            ).fetchone():
                out.append("its message ids are another conversation's in the live database")
                break
        if "title" in rows.columns(held, "main", "sessions"):
            titles = [
                t
                for (t,) in held.execute(
                    f"SELECT title FROM sessions WHERE id IN ({marks}) AND title IS NOT NULL",
                    members,
                )
            ]
            for t in titles:
                row = live.execute("SELECT id FROM sessions WHERE title = ?", (t,)).fetchone()
                if row:
                    out.append(f"its title “{t}” is {row[0]}'s in the live database")
        for t in ("sessions", "messages", *rows.session_tables(held)):
            have = set(rows.columns(live, "main", t))
            lacking = [c for c in rows.columns(held, "main", t) if c not in have]
            if lacking:
                out.append(f"the live database lacks the column {lacking[0]} of {t}")
        return out
    finally:
        live.close()
