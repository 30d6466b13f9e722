"""What moves in both directions share: the archive file held open (and pinned) while a unit
needs it, rows carried into the live file from such a connection, the archive's copy of a
conversation taken out again, and the transcript files beside it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.request import pathname2url

from webui.db import sql as sqlbits
from webui.db.changes import prompts, reindex, rows
from webui.db.changes import transcripts as tfiles
from webui.db.changes.archive_file import Identity, open_checked, schema_problem
from webui.db.changes.batches import Batches
from webui.db.changes.lane import step

if TYPE_CHECKING:
    from webui.db.changes.lane import Lane

BACK_BATCH = 500  # messages per transaction into the live file, to begin with


def live_ro(path: Path) -> sqlite3.Connection:
    uri = "file:" + pathname2url(os.path.abspath(path)) + "?mode=ro"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def end_read(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("COMMIT")


def hold(path: Path, ident: Identity, live_path: Path) -> sqlite3.Connection:
    """The archive file ``ident`` opened by its path, the live file attached read-only as
    ``live`` (to compare schemas inside its own write transactions)."""
    conn = open_checked(path, ident, "rw")
    try:
        conn.execute("ATTACH DATABASE ? AS live", (uri_ro(live_path),))
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def uri_ro(path: Path) -> str:
    return "file:" + pathname2url(os.path.abspath(path)) + "?mode=ro"


def undo_copy(held: sqlite3.Connection, path: Path, ident: Identity, members: list[str]) -> bool:
    """The conversation's rows out of the archive again, through ``held`` (the file it holds),
    if the path still names that file. False when it does not (then it is not ours to touch)."""
    end_read(held)
    with sqlbits.transaction(held):
        # Only our own file, and only while it has no trigger or view of someone else's (one
        # could turn this delete into anything). Not ours: nothing written, nothing to commit.
        if not ident.still_at(path, check_wal=False) or schema_problem(
            held, "main", "live", strict=False
        ):
            return False
        marks = sqlbits.in_list(len(members))
        hashes = prompts.referenced(held, members)
        for t in (*rows.session_tables(held), "messages"):
            held.execute(f"DELETE FROM main.{rows.q(t)} WHERE session_id IN ({marks})", members)
        held.execute(f"DELETE FROM main.sessions WHERE id IN ({marks})", members)
        prompts.drop_unreferenced(held, hashes)  # none left that no conversation there needs
    step("archive rows removed")
    return True


def send_off(lane: Lane, target: Path, session_id: str) -> int:
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


def drop_copies(target: Path, members: list[str], originals: dict[str, list[Path]]) -> None:
    """The transcript copies beside the archive, where the originals are still home."""
    for sid in members:
        kept = {p.name for p in originals.get(sid, []) if p.exists()}
        tfiles.remove(
            [
                p
                for p in tfiles.files(target.parent / "sessions", sid, snapshot=True)
                if p.name in kept
            ]
        )


def carry_in(batches: Batches, src: sqlite3.Connection, members: list[str]) -> int:
    """What the live file lacks of the conversation, from ``src`` (an archive connection,
    its snapshot pinned): messages first, a batch per transaction, then the session rows (and
    their per-session rows and system prompts) in one, so a page shows the conversation whole
    or not at all; then what an index that needs the session missed. Rows the live file has
    are left as they are. Returns the messages carried."""
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
        # The system prompts they reference; one the live file has already is the same text
        # (content-addressed), kept as it is: never a second copy.
        hashes = prompts.referenced(src, members)
        if hashes and prompts.refs(conn):
            cols, got = rows.read(src, "system_prompts", hashes, key="hash")
            rows.write(conn, "system_prompts", cols, got, or_ignore=True)

    batches.once(last, foreign_keys=False)
    # An index whose trigger needs the session (0.22's trigram) missed the messages that
    # came first: completed now that the sessions are in (webui.db.changes.reindex).
    reindex.index_missing(batches, members)
    return carried


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def transcripts_home(lane: Lane, source: Path, members: list[str]) -> tuple[int, list[str]]:
    home = lane.r.opened.path.parent
    folder = home / "sessions"
    if folder.is_symlink():
        return 0, []
    found = [
        p for sid in members for p in tfiles.files(source.parent / "sessions", sid, snapshot=True)
    ]
    return tfiles.move_into(found, folder)
