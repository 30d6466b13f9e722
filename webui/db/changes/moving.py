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

A replay finishes or undoes from what the journal and the two files hold: see replay_out and
replay_back."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.request import pathname2url

from webui.db import sql as sqlbits
from webui.db.changes import rows
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
from webui.db.changes.lane import step
from webui.db.changes.removal import Changed, remove_session

if TYPE_CHECKING:
    from webui.db.changes.journal import Entry
    from webui.db.changes.lane import Lane, Unit

BACK_BATCH = 500  # messages per transaction into the live file, to begin with

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


def _live_ro(path: Path) -> sqlite3.Connection:
    uri = "file:" + pathname2url(os.path.abspath(path)) + "?mode=ro"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def _end_read(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("COMMIT")


# -- out ---------------------------------------------------------------------------------------


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
    live_path = lane.r.opened.path
    copy = open_checked(target, ident, "rw")
    try:
        copy.execute("ATTACH DATABASE ? AS live", (_uri_ro(live_path),))
        members = rows.conversation(copy, root, "live")
        if not members:
            return Moved(stayed="gone")
        verdict = judge(copy, "live", members)
        if verdict:
            return Moved(members, stayed=verdict[0], who=verdict[1], why=verdict[2])
        unit.intend(dict.fromkeys(members, 0), archive=str(target), **ident.facts())
        copy.execute("BEGIN IMMEDIATE")  # the archive's write lock; the live file is only read
        try:
            problem = schema_problem(copy, "main", "live")
            if problem:
                raise ColdStoreError(
                    f"Nothing more was moved: {target.name} changed under cold storage ({problem})."
                )
            # The same snapshot as the copy: the conversation and its state again.
            if rows.conversation(copy, root, "live") != members or judge(copy, "live", members):
                copy.execute("ROLLBACK")
                return Moved(members, stayed="changed", why=["it changed as the move began"])
            _copy_rows(copy, members)
            wrote = rows.digest(copy, "live", members)
            tops = rows.newest(copy, "live", members)
            copy.execute("COMMIT")
        finally:
            if copy.in_transaction:
                copy.execute("ROLLBACK")
        unit.touched("archive copy")
        if copy.execute("PRAGMA main.journal_mode").fetchone()[0] == "wal":
            copy.execute("PRAGMA main.wal_checkpoint(TRUNCATE)")
    finally:
        copy.close()
    wal = wal_state(target)
    held = _hold(target, ident, live_path)  # a NEW connection, by path: read back
    try:
        held.execute("BEGIN")
        if rows.digest(held, "main", members) != wrote:
            _undo_copy(held, target, ident, members)
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

        def still_there() -> None:
            if not ident.still_at(target, wal):
                raise ArchiveChanged(f"{target} changed during the move")

        try:
            for sid in reversed(members):  # leaves first: no parent outlives its children
                remove_session(
                    batches, lane.r, sid, newest[sid], members=set(members), check=still_there
                )
            still_there()  # the last removal committed while the file was still the one
        except (Changed, ArchiveChanged) as exc:
            carry_in(batches, held, members)  # what left the live file, from the snapshot
            if isinstance(exc, ArchiveChanged):
                unit.finish()
                raise ColdStoreError(
                    f"The move stopped: {target.name} was deleted, replaced or written to by "
                    f"something else while {members[0]} was moving. That conversation was "
                    "put back whole in the live database; nothing was lost."
                ) from None
            _undo_copy(held, target, ident, members)
            _drop_copies(target, members, originals)
            unit.finish()
            return Moved(
                members,
                stayed="changed",
                why=["a session got a new message or a new child as it moved"],
            )
        gone = sum(_send_off(lane, target, sid) for sid in members)
        if gone:
            unit.touched("transcripts removed")
        return Moved(members, messages=sum(n for _top, n in tops.values()), files=files)
    finally:
        held.close()


def _hold(path: Path, ident: Identity, live_path: Path) -> sqlite3.Connection:
    """The archive file ``ident`` opened by its path, the live file attached read-only as
    ``live`` (to compare schemas inside its own write transactions)."""
    conn = open_checked(path, ident, "rw")
    try:
        conn.execute("ATTACH DATABASE ? AS live", (_uri_ro(live_path),))
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _uri_ro(path: Path) -> str:
    return "file:" + pathname2url(os.path.abspath(path)) + "?mode=ro"


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


def _undo_copy(held: sqlite3.Connection, path: Path, ident: Identity, members: list[str]) -> bool:
    """The conversation's rows out of the archive again, through ``held`` (the file it holds),
    if the path still names that file. False when it does not (then it is not ours to touch)."""
    _end_read(held)
    held.execute("BEGIN IMMEDIATE")
    try:
        # Only our own file, and only while it has no trigger or view of someone else's (one
        # could turn this delete into anything).
        if not ident.still_at(path, check_wal=False) or schema_problem(
            held, "main", "live", strict=False
        ):
            return False
        marks = sqlbits.in_list(len(members))
        for t in (*rows.session_tables(held), "messages"):
            held.execute(f"DELETE FROM main.{rows.q(t)} WHERE session_id IN ({marks})", members)
        held.execute(f"DELETE FROM main.sessions WHERE id IN ({marks})", members)
        held.execute("COMMIT")
    finally:
        if held.in_transaction:
            held.execute("ROLLBACK")
    step("archive rows removed")
    return True


def _send_off(lane: Lane, target: Path, session_id: str) -> int:
    """The session's transcript files out of the Hermes home, each only if its copy is beside
    the archive (made before the move was verified)."""
    there = target.parent / "sessions"
    return tfiles.remove(
        [
            p
            for p in lane.transcript_files(session_id)
            if p.is_symlink() or (there / p.name).is_file()
        ]
    )


def _drop_copies(target: Path, members: list[str], originals: dict[str, list[Path]]) -> None:
    """The transcript copies beside the archive, where the originals are still home."""
    for sid in members:
        kept = {p.name for p in originals.get(sid, []) if p.exists()}
        tfiles.remove([p for p in tfiles.files(target.parent / "sessions", sid) if p.name in kept])


# -- carrying rows into the live file ------------------------------------------------------


def carry_in(batches: Batches, src: sqlite3.Connection, members: list[str]) -> int:
    """What the live file lacks of the conversation, from ``src`` (an archive connection,
    its snapshot pinned): messages first, a batch per transaction, then the session rows (and
    their per-session rows) in one, so a page shows the conversation whole or not at all.
    Rows the live file has are left as they are. Returns the messages carried."""
    cursor, ahead = [0], [0]
    id_at = rows.columns(src, "main", "messages").index("id") * 2

    def step_in(conn: sqlite3.Connection, n: int) -> int:
        cols, got = rows.read(src, "messages", members, after=cursor[0], limit=n)
        if not got:
            return 0
        ahead[0] = int(got[-1][id_at])
        rows.write(conn, "messages", cols, got, or_ignore=True)
        return len(got)

    carried = batches.repeat(
        step_in,
        size=BACK_BATCH,
        lo=20,
        hi=2000,
        foreign_keys=False,
        committed=lambda: cursor.__setitem__(0, ahead[0]),
    )
    order = {sid: i for i, sid in enumerate(members)}

    def last(conn: sqlite3.Connection) -> None:
        marks = sqlbits.in_list(len(members))
        there = {
            r[0] for r in conn.execute(f"SELECT id FROM sessions WHERE id IN ({marks})", members)
        }
        missing = [m for m in members if m not in there]
        if missing:
            cols, got = rows.read(src, "sessions", missing)
            at = cols.index("id") * 2
            got.sort(key=lambda r: order.get(_text(r[at]), 0))  # parents before children
            rows.write(conn, "sessions", cols, got, or_ignore=False)
        for t in rows.session_tables(src):
            cols, got = rows.read(src, t, members)
            rows.write(conn, t, cols, got, or_ignore=True)

    batches.once(last, foreign_keys=False)
    return carried


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# -- back --------------------------------------------------------------------------------------


def back_one(
    lane: Lane, unit: Unit, batches: Batches, source: Path, ident: Identity, root: str
) -> Moved:
    """One conversation of the archive file ``source`` (which must be the file ``ident``) into
    the live file, verified there, then out of the archive."""
    live_path = lane.r.opened.path
    held = _hold(source, ident, live_path)
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
        live = _live_ro(live_path)
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
        if not _undo_copy(held, source, ident, members):
            moved.notes.append(
                f"{source.name} was replaced during the move back; the conversation is whole "
                "in the live database and the file now there was left alone."
            )
        moved.files, left = _transcripts_home(lane, source, members)
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
    live = _live_ro(live_path)
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


def _transcripts_home(lane: Lane, source: Path, members: list[str]) -> tuple[int, list[str]]:
    home = lane.r.opened.path.parent
    folder = home / "sessions"
    if folder.is_symlink():
        return 0, []
    found = [p for sid in members for p in tfiles.files(source.parent / "sessions", sid)]
    return tfiles.move_into(found, folder)


# -- replays -----------------------------------------------------------------------------------


def _when(entry: Entry) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.started))


def _open_if(lane: Lane, path: Path, ident: Identity) -> sqlite3.Connection | None:
    """The archive file of an entry, pinned, if its path still names it."""
    try:
        conn = _hold(path, ident, lane.r.opened.path)
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
                _undo_copy(held, path, ident, [m for m in members if m in there])
            _drop_copies(path, members, home)
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
                        check=lambda: _still(ident, path, wal),
                    )
            except (Changed, ArchiveChanged):
                carry_in(batches, held, members)
                _undo_copy(held, path, ident, members)
                _drop_copies(path, members, home)
                return (
                    f"{head} had been cut short as the conversation changed; it is whole in the live database again.",
                    [],
                )
            for sid in members:
                _send_off(lane, path, sid)
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
        conn = sqlite3.connect(_uri_ro(path), uri=True, isolation_level=None)
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
            if held is not None and _undo_copy(held, path, ident, members):
                _transcripts_home(lane, path, members)
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
