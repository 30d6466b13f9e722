"""Cold storage: whole conversations moved out of the live file into a monthly archive file
(``hermes-archive-YYYY-MM.db`` in the archives folder), and back.

Hermes's own ``archive`` only sets a flag: the rows stay, the file does not shrink. A move here
takes the rows out. For each conversation (a compression chain with its branches and delegate
children, as Hermes's archive treats a lineage):

1. its rows are read from the live file in one read transaction (a snapshot) and written into
   the archive file in one transaction of its own — message ids kept, so the archive's search
   index (its FTS triggers, created with the live file's own ``sqlite_master``) and every link
   stay valid; a row already there (a move cut short and tried again) is left as it is;
2. the copy is verified: the archive is read back and must hold every session row and every
   message read, byte for byte (a SHA-256 over every column of every row, in id order);
3. only then the conversation leaves the live file through the same journaled, short
   transactions as a delete (Actions.delete with the verified message ids): a message that
   arrived after the copy keeps its session in the live file, named in the result; a kill at
   any point is finished at the next start, and what was copied stays in the archive, where
   the store merge shows the live copy first until the move is tried again.

Transcript files (``sessions/<id>.json``…) are copied beside the archive file first and leave
the Hermes home with the rows. Nothing here runs VACUUM on the live file: the freed pages are
reused by the gateway, and ``hermes sessions optimize`` gives them back to the disk while the
gateway is stopped.

Moving back is the same in reverse, journaled as a "return" (undone if cut short): messages in
short transactions, then the session rows, so no page shows half of it; ids kept (refused when
one is another session's in the live file); verified; then removed from the archive."""

from __future__ import annotations

import glob
import hashlib
import shutil
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.request import pathname2url

from webui.db import sql as sqlbits
from webui.db.backup import ChangedSinceBackup
from webui.db.errors import LogbookDBError

if TYPE_CHECKING:
    from webui.db import Logbook

# Tables whose rows belong to one session (besides sessions and messages): moved with it.
SESSION_TABLES = ("session_model_usage",)
# Small tables copied whole when an archive file is created: what says which Hermes wrote it.
META_TABLES = ("schema_version", "state_meta")
BACK_BATCH = 500  # messages per transaction when moving back into the live file


class ColdStoreError(LogbookDBError):
    status = 409


def archive_file(folder: Path, when: float | None = None) -> Path:
    """The archive file of the month of the move."""
    return folder / time.strftime("hermes-archive-%Y-%m.db", time.localtime(when or time.time()))


# -- the archive file's schema -------------------------------------------------------------


def _schema(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return [
        (t, n, s)
        for t, n, s in conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        )
    ]


def create_like(live: sqlite3.Connection, path: Path) -> None:
    """A new archive file with the live file's schema as its ``sqlite_master`` states it:
    full-text tables first (they make their own shadow tables), then the other tables, their
    indexes and triggers, and the rows that say which schema it is. Written to a temporary
    name and renamed, so a half-made file is never read as an archive."""
    entries = _schema(live)
    tmp = path.with_name(path.name + f".{uuid.uuid4().hex[:6]}.part")
    out = sqlite3.connect(tmp, isolation_level=None)
    try:
        out.execute("PRAGMA journal_mode = WAL")
        out.execute("BEGIN")
        virtual = [
            e for e in entries if e[0] == "table" and e[2].upper().startswith("CREATE VIRTUAL")
        ]
        for _t, _n, s in virtual:
            out.execute(s)
        made = {r[0] for r in out.execute("SELECT name FROM sqlite_master")}
        for kind in ("table", "index", "view", "trigger"):
            for t, n, s in entries:
                if t == kind and n not in made:
                    out.execute(s)
                    made.add(n)
        for table in META_TABLES:
            if table in made:
                cols, rows = _read(live, f"SELECT * FROM {_q(table)}", ())
                _insert(out, table, cols, rows)
        out.execute("COMMIT")
    except BaseException:
        out.close()
        tmp.unlink(missing_ok=True)
        raise
    out.close()
    tmp.rename(path)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _read(conn: sqlite3.Connection, query: str, params) -> tuple[list[str], list[tuple]]:
    cur = conn.execute(query, tuple(params))
    return [d[0] for d in cur.description], cur.fetchall()


def _insert(conn: sqlite3.Connection, table: str, cols: list[str], rows: list[tuple]) -> int:
    """INSERT OR IGNORE: a row already there (an earlier try) stays as it is."""
    if not rows:
        return 0
    names = ", ".join(_q(c) for c in cols)
    marks = ", ".join("?" * len(cols))
    cur = conn.executemany(f"INSERT OR IGNORE INTO {_q(table)} ({names}) VALUES ({marks})", rows)
    return cur.rowcount


# -- what a conversation is --------------------------------------------------------------


def conversation(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """Every session of the conversation ``session_id`` belongs to: up its parent links to the
    first, then every session below that (compression continuations, branches, delegate
    children), parents before children."""
    root, seen = session_id, {session_id}
    while True:
        row = conn.execute(
            "SELECT parent_session_id FROM sessions WHERE id = ?", (root,)
        ).fetchone()
        if row is None or not row[0] or row[0] in seen:
            break
        exists = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (row[0],)).fetchone()
        if not exists:
            break
        seen.add(row[0])
        root = row[0]
    out, level = [root], [root]
    done = {root}
    while level:
        marks = sqlbits.in_list(len(level))
        level = [
            r[0]
            for r in conn.execute(
                f"SELECT id FROM sessions WHERE parent_session_id IN ({marks}) ORDER BY started_at, id",
                level,
            )
            if r[0] not in done
        ]
        done.update(level)
        out.extend(level)
    return out


@dataclass
class Copied:
    """What one transaction copied of a conversation (read from one snapshot of the source)."""

    ids: list[str]
    sessions: int
    messages: int
    newest: dict[str, int]  # session -> its newest message id in the copy
    active: list[str]


def _columns(conn: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA {schema}.table_info({_q(table)})")]


def copy_rows(
    conn: sqlite3.Connection, src: str, dst: str, ids: list[str], tables: set[str]
) -> Copied:
    """Inside the caller's transaction on ``conn`` (both files attached): the conversation's
    rows from schema ``src`` into ``dst``, SQLite to SQLite, so every value keeps its bytes
    and type. Columns are named; a column the destination lacks refuses the copy."""
    marks = sqlbits.in_list(len(ids))
    where = {"sessions": f"id IN ({marks})", "messages": f"session_id IN ({marks})"}
    for t in SESSION_TABLES:
        if t in tables:
            where[t] = f"session_id IN ({marks})"
    # A copy left by an earlier try (cut short, or of rows changed since) is replaced whole:
    # deleted through the destination's own triggers, so its search index stays exact.
    for table, cond in reversed(list(where.items())):
        conn.execute(f"DELETE FROM {dst}.{_q(table)} WHERE {cond}", ids)
    for table, cond in where.items():
        have, want = _columns(conn, dst, table), _columns(conn, src, table)
        missing = [c for c in want if c not in have]
        if missing:
            raise ColdStoreError(
                f"The file written to lacks the column{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)} of {table} (it was made by another Hermes schema); "
                "nothing was moved."
            )
        names = ", ".join(_q(c) for c in want)
        conn.execute(
            f"INSERT INTO {dst}.{_q(table)} ({names}) "
            f"SELECT {names} FROM {src}.{_q(table)} WHERE {cond}",
            ids,
        )
    sessions = conn.execute(
        f"SELECT id, ended_at FROM {src}.sessions WHERE id IN ({marks})", ids
    ).fetchall()
    newest = dict.fromkeys(ids, 0)
    count = 0
    for sid, top, n in conn.execute(
        f"SELECT session_id, MAX(id), COUNT(*) FROM {src}.messages WHERE session_id IN ({marks}) "
        "GROUP BY session_id",
        ids,
    ):
        newest[sid], count = top, count + n
    return Copied(ids, len(sessions), count, newest, [s for s, end in sessions if end is None])


def verify(conn: sqlite3.Connection, src: str, dst: str, c: Copied) -> None:
    """The copy holds exactly what was read: every session row and every message up to the
    copied ones, compared byte for byte (a SHA-256 over every column and its type)."""
    marks = sqlbits.in_list(len(c.ids))
    columns = {t: _columns(conn, src, t) for t in ("sessions", "messages")}
    conn.text_factory = bytes  # compared as stored, whatever the text's encoding
    try:
        for table, cond, params in (
            ("sessions", f"id IN ({marks})", c.ids),
            (
                "messages",
                f"session_id IN ({marks}) AND id <= ?",
                [*c.ids, max(c.newest.values(), default=0)],
            ),
        ):
            cols = columns[table]
            names = ", ".join(f"{_q(x)}, typeof({_q(x)})" for x in cols)
            order = "id"
            got = {}
            for schema in (src, dst):
                h = hashlib.sha256()
                n = 0
                for row in conn.execute(
                    f"SELECT {names} FROM {schema}.{_q(table)} WHERE {cond} ORDER BY {order}",
                    params,
                ):
                    h.update(repr(row).encode())
                    n += 1
                got[schema] = (n, h.hexdigest())
            if got[src] != got[dst]:
                raise ColdStoreError(
                    f"The copy of {c.ids[0]} did not verify ({table}: {got[dst][0]} rows copied "
                    f"of {got[src][0]}, or their bytes differ); nothing was removed."
                )
    finally:
        conn.text_factory = str


# -- a move --------------------------------------------------------------------------------


@dataclass
class MoveJob:
    id: str
    back: bool
    target: Path
    total: int  # conversations chosen
    sessions_moved: int = 0
    messages_moved: int = 0
    conversations_moved: int = 0
    files_moved: int = 0
    skipped_active: list[str] = field(default_factory=list)  # a member is still running
    kept: list[str] = field(default_factory=list)  # changed after the copy: stays where it was
    done: bool = False
    error: str | None = None
    started: float = field(default_factory=time.time)
    finished: float | None = None
    free_bytes: int | None = None  # the live file's free pages after the move
    longest_txn_s: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "direction": "back" if self.back else "out",
            "archive": str(self.target),
            "conversations": self.total,
            "conversations_moved": self.conversations_moved,
            "sessions_moved": self.sessions_moved,
            "messages_moved": self.messages_moved,
            "transcript_files_moved": self.files_moved,
            "skipped_active": self.skipped_active,
            "kept": self.kept,
            "done": self.done,
            "error": self.error,
            "free_bytes": self.free_bytes,
            "longest_transaction_s": round(self.longest_txn_s, 4),
        }


_JOBS: dict[str, MoveJob] = {}
_JOBS_LOCK = threading.Lock()
_MOVES = threading.Lock()  # one move at a time per server: they share the archive files


def job(job_id: str) -> MoveJob | None:
    with _JOBS_LOCK:
        return _JOBS.get(job_id)


def _attach(archive: Path, live: Path, live_mode: str) -> sqlite3.Connection:
    """One connection on the archive file (``main``) with the live file attached as ``live``
    (``ro`` to move out: reading never blocks the gateway; ``rw`` to move back)."""
    conn = sqlite3.connect(archive, isolation_level=None, timeout=30, check_same_thread=False)
    conn.execute("PRAGMA foreign_keys = OFF")
    uri = "file:" + pathname2url(str(live.resolve())) + f"?mode={live_mode}"
    conn.execute("ATTACH DATABASE ? AS live", (uri,))
    return conn


def _tables(conn: sqlite3.Connection, schema: str) -> set[str]:
    return {
        r[0] for r in conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")
    }


def conversations_of(lb: Logbook, ids: list[str]) -> list[list[str]]:
    """The whole conversations the chosen sessions belong to, each once."""
    out: list[list[str]] = []
    seen: set[str] = set()

    def fn(conn: sqlite3.Connection) -> None:
        for sid in ids:
            if sid in seen:
                continue
            members = conversation(conn, sid)
            seen.update(members)
            out.append(members)

    lb.reader.run(fn, time_limit_s=120)
    return out


def archive_conversations(path: Path, ids: list[str]) -> list[list[str]]:
    conn = sqlite3.connect("file:" + pathname2url(str(path.resolve())) + "?mode=ro", uri=True)
    try:
        out: list[list[str]] = []
        seen: set[str] = set()
        for sid in ids:
            if sid not in seen:
                members = conversation(conn, sid)
                seen.update(members)
                out.append(members)
        return out
    finally:
        conn.close()


def new_job(target: Path, total: int, back: bool) -> MoveJob:
    j = MoveJob(uuid.uuid4().hex[:12], back, target, total)
    with _JOBS_LOCK:
        _JOBS[j.id] = j
    return j


def _finish(lb: Logbook, j: MoveJob, exc: BaseException | None) -> None:
    if isinstance(exc, LogbookDBError):
        j.error = exc.message
    elif exc is not None:
        j.error = f"The move stopped: {exc}."
    lb.actions.on_change()
    try:
        j.free_bytes = lb.maintenance.state().get("reclaimable_bytes")
    except LogbookDBError:
        j.free_bytes = None
    j.done, j.finished = True, time.time()


def move_out(lb: Logbook, groups: list[list[str]], j: MoveJob) -> MoveJob:
    """Each conversation copied into ``j.target``, verified, then removed from the live
    file (see the module's text)."""
    live_path = lb.opened.path
    failure: BaseException | None = None
    with _MOVES:
        try:
            if not j.target.exists():
                j.target.parent.mkdir(parents=True, exist_ok=True)
                src = sqlite3.connect(
                    "file:" + pathname2url(str(live_path.resolve())) + "?mode=ro", uri=True
                )
                try:
                    create_like(src, j.target)
                finally:
                    src.close()
            conn = _attach(j.target, live_path, "ro")
            _each(conn, groups, lambda tables, members: _move_one(lb, conn, tables, members, j))
        except Exception as exc:  # noqa: BLE001 - said to the user through the job
            failure = exc
        finally:
            _finish(lb, j, failure)
    return j


def _each(conn: sqlite3.Connection, groups: list[list[str]], step) -> None:
    """``step(tables, members)`` for each conversation, over the tables both files hold;
    the connection is closed however it ends."""
    try:
        tables = _tables(conn, "live") & _tables(conn, "main")
        for members in groups:
            step(tables, members)
    finally:
        conn.close()


def _move_one(lb, conn, tables, members: list[str], j: MoveJob) -> None:
    conn.execute("BEGIN IMMEDIATE")  # the archive's lock; the live file is only read
    try:
        copied = copy_rows(conn, "live", "main", members, tables)
        if copied.active or not copied.sessions:
            conn.execute("ROLLBACK")
            if copied.active:
                j.skipped_active.append(members[0])
            return
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    try:
        verify(conn, "live", "main", copied)
    except ColdStoreError:
        j.kept.append(members[0])  # changed while it was copied: stays, tried at the next move
        return
    files = _copy_transcripts(lb, members, j.target.parent / "sessions")
    # Leaves first: a parent never outlives its children in the live file, even when cut short.
    removed = 0
    try:
        for sid in reversed(members):
            gone = lb.actions.delete(sid, upto=copied.newest)
            removed += len(gone.ids)
            j.longest_txn_s = max(j.longest_txn_s, lb.actions.w.last_transaction_s)
    except ChangedSinceBackup:
        j.kept.append(members[0])
        return
    j.files_moved += files
    j.sessions_moved += removed
    j.messages_moved += copied.messages
    j.conversations_moved += 1


def _copy_transcripts(lb, members: list[str], folder: Path) -> int:
    files = [p for sid in members for p in lb.actions.transcript_files(sid)]
    for path in files:
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, folder / path.name)
    return len(files)


def move_back(lb: Logbook, archive_path: Path, groups: list[list[str]], j: MoveJob) -> MoveJob:
    """Conversations of an archive file into the live file, verified, out of the archive."""
    failure: BaseException | None = None
    with _MOVES:
        try:
            conn = _attach(archive_path, lb.opened.path, "rw")
            conn.execute("PRAGMA live.synchronous = NORMAL")  # per connection, as Logbook's writer
            _each(
                conn,
                groups,
                lambda tables, members: _back_one(lb, conn, tables, archive_path, members, j),
            )
        except Exception as exc:  # noqa: BLE001 - said to the user through the job
            failure = exc
        finally:
            _finish(lb, j, failure)
    return j


def _short(conn: sqlite3.Connection, j: MoveJob, statements: list[tuple[str, list]]) -> None:
    """One short write transaction on the live file (BEGIN IMMEDIATE; SQLite's busy wait
    while the gateway holds the lock)."""
    t0 = time.monotonic()
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql_text, params in statements:
            conn.execute(sql_text, params)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    j.longest_txn_s = max(j.longest_txn_s, time.monotonic() - t0)


def _back_one(lb, conn, tables, archive_path: Path, members: list[str], j: MoveJob) -> None:
    marks = sqlbits.in_list(len(members))
    taken = conn.execute(
        f"SELECT COUNT(*) FROM live.messages l JOIN main.messages a ON a.id = l.id "
        f"WHERE a.session_id IN ({marks}) AND l.session_id <> a.session_id",
        members,
    ).fetchone()[0]
    if taken:
        j.kept.append(members[0])  # its message ids are another conversation's in the live file
        return
    # Messages first, then the session rows (_copy_back): the conversation appears whole or
    # not at all; a move cut short is undone at the next start and tried again by the next.
    ids = [
        r[0]
        for r in conn.execute(
            f"SELECT id FROM main.messages WHERE session_id IN ({marks}) ORDER BY id", members
        )
    ]
    journal = lb.actions.journal
    # Journaled before the first of those transactions: one cut short is undone at the next
    # start (webui/db/journal.py), so no message is left in the live file without its session.
    entry = journal.open("return", dict.fromkeys(members, 0)) if journal and ids else None
    if entry is not None:
        try:  # what the journal still holds for these sessions, settled before any copy
            lb.actions.settle_before_return(entry)
        except BaseException:
            journal.close(entry)  # nothing was copied: nothing to undo later
            raise
    try:
        _copy_back(conn, j, tables, members, ids)
    except BaseException:
        if entry is not None:
            journal.release(entry)  # cut short here: the next resume undoes it
        raise
    if entry is not None:
        journal.close(entry)
    copied = Copied(
        members, len(members), len(ids), dict.fromkeys(members, ids[-1] if ids else 0), []
    )
    verify(conn, "main", "live", copied)
    # Verified in the live file: out of the archive, in one transaction (the file is ours).
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(f"DELETE FROM main.messages WHERE session_id IN ({marks})", members)
        for t in SESSION_TABLES:
            if t in tables:
                conn.execute(f"DELETE FROM main.{_q(t)} WHERE session_id IN ({marks})", members)
        conn.execute(f"DELETE FROM main.sessions WHERE id IN ({marks})", members)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    home = lb.opened.path.parent / "sessions"
    src = archive_path.parent / "sessions"
    if src.is_dir():
        for sid in members:
            for p in [
                *src.glob(f"{glob.escape(sid)}.json*"),
                *src.glob(f"request_dump_{glob.escape(sid)}_*.json"),
            ]:
                home.mkdir(exist_ok=True)
                shutil.move(str(p), home / p.name)
                j.files_moved += 1
    j.sessions_moved += len(members)
    j.messages_moved += len(ids)
    j.conversations_moved += 1


def _copy_back(conn, j: MoveJob, tables, members: list[str], ids: list[int]) -> None:
    """The conversation's messages into the live file, a bounded number per transaction, then
    its session rows in one: until that last one no page shows the messages."""
    marks = sqlbits.in_list(len(members))
    mc = ", ".join(_q(c) for c in _columns(conn, "main", "messages"))
    for i in range(0, len(ids), BACK_BATCH):
        lo, hi = ids[i], ids[min(i + BACK_BATCH, len(ids)) - 1]
        _short(
            conn,
            j,
            [
                (
                    f"INSERT OR IGNORE INTO live.messages ({mc}) SELECT {mc} FROM main.messages "
                    f"WHERE session_id IN ({marks}) AND id BETWEEN ? AND ?",
                    [*members, lo, hi],
                )
            ],
        )
    last = []
    for t in ("sessions", *(t for t in SESSION_TABLES if t in tables)):
        tc = ", ".join(_q(c) for c in _columns(conn, "main", t))
        where = "id" if t == "sessions" else "session_id"
        last.append(
            (
                f"INSERT OR IGNORE INTO live.{_q(t)} ({tc}) SELECT {tc} FROM main.{_q(t)} "
                f"WHERE {where} IN ({marks})",
                members,
            )
        )
    _short(conn, j, last)
