"""Cold storage: whole conversations moved out of the live file into a monthly archive file
(``hermes-archive-YYYY-MM.db`` in the archives folder), and back.

Hermes's own ``archive`` only sets a flag: the rows stay, the file does not shrink. A move here
takes the rows out, a conversation at a time (a compression chain with its branches and
delegate children, as Hermes's archive treats a lineage), each as one unit of the live file's
lane (webui.db.changes: the copy, its check read back from the file's path, the removal from
the live file, the transcripts — see webui.db.changes.moving). This module chooses the file
(webui.db.changes.archive_file.choose: only a plain file cold storage made itself, with the
live file's schema), decides which conversations stay and why, runs the jobs and says what
they did.

What stays: a conversation with a session that never ended, and — unless the user includes
them — one Hermes would still continue by its own rules (webui.hermes.continuing): a moved
conversation can no longer be continued by Hermes, until it is moved back. The preview and the
job ask the same question of the same rules, so the result names what the preview named.

Nothing here runs VACUUM on the live file: the freed pages are reused by the gateway, and
``hermes sessions optimize`` gives them back to the disk while the gateway is stopped."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.request import pathname2url

from webui.db import sql
from webui.db.changes import moving, rows
from webui.db.changes.archive_file import (
    ColdStoreError,
    Identity,
    Made,
    choose,
    link_problem,
)
from webui.db.changes.batches import LOCK_PATIENCE_S, Batches
from webui.db.changes.jobs import JOBS, Job
from webui.db.changes.lane import Lane
from webui.db.changes.writer import Writer
from webui.db.errors import LogbookDBError
from webui.db.reader import Reader
from webui.hermes import continuing as rules_of

if TYPE_CHECKING:
    from webui.db import Logbook

__all__ = ["ColdStoreError", "ColdStorage", "MoveJob", "archive_file", "job", "new_job"]

ROUTING_FILE_CAP = 8 << 20  # sessions/sessions.json is read up to this size


def archive_file(folder: Path, when: float | None = None) -> Path:
    """This month's archive file's first name (the one a move uses unless it must pass it)."""
    return folder / time.strftime("hermes-archive-%Y-%m.db", time.localtime(when or time.time()))


# -- the job ---------------------------------------------------------------------------------


@dataclass
class MoveJob(Job):
    kind: str = "coldstore"
    back: bool = False
    target: Path = field(default_factory=Path)
    total: int = 0  # conversations chosen
    include_resumable: bool = False
    sessions_moved: int = 0
    messages_moved: int = 0
    conversations_moved: int = 0
    files_moved: int = 0
    skipped_active: list[str] = field(default_factory=list)  # sessions that never ended
    stayed: list[dict[str, Any]] = field(default_factory=list)  # each conversation left, and why
    kept: list[str] = field(default_factory=list)  # changed during the move, or ids taken
    notes: list[str] = field(default_factory=list)
    passed_over: list[str] = field(default_factory=list)  # archive names not used, and why
    free_pages: int | None = None  # the live file's free pages after the move
    page_size: int | None = None

    @property
    def free_bytes(self) -> int | None:
        if self.free_pages is None or self.page_size is None:
            return None
        return self.free_pages * self.page_size

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
            "stayed": self.stayed,
            "kept": self.kept,
            "notes": self.notes,
            "archive_names_passed_over": self.passed_over,
            "include_resumable": self.include_resumable,
            "done": self.done,
            "error": self.error,
            "free_bytes": self.free_bytes,
            "free_pages": self.free_pages,
            "page_size": self.page_size,
            "longest_transaction_s": round(self.longest_txn_s, 4),
            "waiting_for": self.waiting_for,
        }


def new_job(target: Path, total: int, back: bool, include_resumable: bool = False) -> MoveJob:
    return JOBS.add(
        MoveJob(back=back, target=target, total=total, include_resumable=include_resumable)
    )


def job(job_id: str) -> MoveJob | None:
    return JOBS.get(job_id, MoveJob)


# -- which conversations -------------------------------------------------------------------


def whole_conversations(conn: sqlite3.Connection, ids: list[str]) -> list[list[str]]:
    """The whole conversations the sessions ``ids`` belong to, each once (in ``conn``)."""
    out: list[list[str]] = []
    seen: set[str] = set()
    for sid in ids:
        if sid not in seen:
            members = rows.conversation(conn, sid)
            seen.update(members)
            if members:
                out.append(members)
    return out


def archive_conversations(path: Path, ids: list[str]) -> list[list[str]]:
    conn = sqlite3.connect("file:" + pathname2url(str(path.resolve())) + "?mode=ro", uri=True)
    try:
        return whole_conversations(conn, ids)
    finally:
        conn.close()


@dataclass
class Continuing:
    """What Hermes would continue in the live file right now (webui.hermes.continuing)."""

    rules: rules_of.ContinueRules
    current: dict[str, str]  # session -> the chat whose current session it is
    newest: dict[str, str]  # session -> which `hermes -c` continues it


def _entry_session(text: Any) -> str | None:
    try:
        data = json.loads(text) if isinstance(text, (str, bytes)) else None
    except ValueError:
        return None
    sid = data.get("session_id") if isinstance(data, dict) else None
    return sid if isinstance(sid, str) and sid else None


def _routing_file(path: Path) -> dict[str, str]:
    """chat key -> session id from Hermes's sessions.json (a regular file, size-capped)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        data = json.loads(os.read(fd, ROUTING_FILE_CAP + 1)[:ROUTING_FILE_CAP] or b"{}")
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    out = {}
    for key, entry in data.items() if isinstance(data, dict) else ():
        sid = entry.get("session_id") if isinstance(entry, dict) else None
        if isinstance(sid, str) and sid and not str(key).startswith("_"):
            out[str(key)] = sid
    return out


def judge(cont: Continuing, include_resumable: bool) -> moving.Judge:
    """Whether a conversation stays where it is, and why (webui.db.changes.moving.Judge)."""

    def verdict(conn: sqlite3.Connection, schema: str, members: list[str]):
        have = set(rows.columns(conn, schema, "sessions"))
        pick = ", ".join(
            c if c in have else f"NULL AS {c}"
            for c in ("id", "ended_at", "end_reason", "handoff_state")
        )
        marks = sql.in_list(len(members))
        found = [
            dict(zip(("id", "ended_at", "end_reason", "handoff_state"), r, strict=True))
            for r in conn.execute(
                f"SELECT {pick} FROM {schema}.sessions WHERE id IN ({marks})", members
            )
        ]
        running = [s["id"] for s in found if s["ended_at"] is None]
        if running:
            return "running", running, [f"{sid} never ended" for sid in running]
        if include_resumable:
            return None
        why, who = [], []
        for s in found:
            for reason in rules_of.reasons(s, cont.rules, cont.current, cont.newest):
                who.append(s["id"])
                why.append(f"{s['id']}: {reason}")
        return ("resumable", who, why) if why else None

    return verdict


# -- cold storage of the live file ---------------------------------------------------------


class ColdStorage:
    """Cold storage of one live file, given the parts it uses: the file's reader and path, its
    lane (every move a unit of it: webui.db.changes), the Writer whose rules say whether this
    process may remove rows, and what drops kept answers after a change."""

    def __init__(
        self,
        reader: Reader,
        live: Path,
        lane: Lane,
        writer: Writer,
        on_change: Callable[[], None],
    ):
        self.reader = reader
        self.live = live
        self.lane = lane
        self.writer = writer
        self.on_change = on_change

    @classmethod
    def of(cls, lb: Logbook) -> ColdStorage:
        """The parts of a served file's Logbook that cold storage uses."""
        a = lb.actions
        return cls(lb.reader, lb.opened.path, a.lane, a.w, a.on_change)

    # -- which conversations, and which stay

    def conversations_of(self, ids: list[str]) -> list[list[str]]:
        """The whole conversations the chosen sessions of the live file belong to, each once."""
        return self.reader.run(lambda conn: whole_conversations(conn, ids), time_limit_s=120)

    def continuing(self) -> Continuing:
        """Read once per preview and per job: the gateway's routing index (its table, and the
        ``sessions/sessions.json`` mirror beside the database) and the CLI's latest sessions."""
        schema = self.reader.schema
        rules = rules_of.rules_for(schema.version)
        current: dict[str, str] = {}
        if schema.has("gateway_routing"):
            for r in self.reader.rows(
                "SELECT session_key, entry_json FROM gateway_routing", [], time_limit_s=30
            ):
                sid = _entry_session(r["entry_json"])
                if sid:
                    current.setdefault(sid, str(r["session_key"]))
        for key, sid in _routing_file(self.live.parent / "sessions" / "sessions.json").items():
            current.setdefault(sid, key)
        cols = {
            c: (c if schema.has("sessions", c) else f"NULL AS {c}")
            for c in ("cwd", "git_repo_root")
        }
        activity = sql.col(schema, "last_activity_at", "s")
        sources = [*rules.cli_sources, "tui"]
        marks = sql.in_list(len(sources))
        found = self.reader.rows(
            f"SELECT s.id AS id, s.source AS source, s.started_at AS started_at, "
            f"{cols['cwd']}, {cols['git_repo_root']}, "
            f"MAX(COALESCE({activity}, 0), COALESCE((SELECT MAX(m.timestamp) FROM messages m "
            f"WHERE m.session_id = s.id), 0)) AS last_active "
            f"FROM sessions s WHERE s.source IN ({marks})",
            sources,
            time_limit_s=60,
        )
        for r in found:
            if not r["last_active"]:
                r["last_active"] = r["started_at"]
        return Continuing(rules, current, rules_of.latest(found, rules))

    def staying(self, groups: list[list[str]], include_resumable: bool) -> list[dict[str, Any]]:
        """For the preview: each conversation that would stay, with why (the job's own rule)."""
        verdict = judge(self.continuing(), include_resumable)
        out: list[dict[str, Any]] = []

        def fn(conn: sqlite3.Connection) -> None:
            for members in groups:
                v = verdict(conn, "main", members)
                if v:
                    out.append(
                        {"conversation": members[0], "kind": v[0], "sessions": v[1], "why": v[2]}
                    )

        self.reader.run(fn, time_limit_s=120)
        return out

    # -- the moves

    def move_out(
        self,
        roots: list[str],
        j: MoveJob,
        *,
        forbidden: list[Path] | tuple[Path, ...] = (),
    ) -> MoveJob:
        """Each chosen conversation (one of its sessions in ``roots``) into this month's archive
        file in ``j.target``'s folder, one unit at a time (webui.db.changes.moving.out_one)."""
        lane = self.lane
        failure: BaseException | None = None
        try:
            self.writer.require_removals()  # messages this process cannot write: nothing moves
            with lane.unit("choose", wait_s=None, job=j):  # two jobs never make one file twice
                path, ident, j.passed_over = choose(
                    j.target, self.live, Made(lane.folder), list(forbidden)
                )
            j.target = path
            verdict = judge(self.continuing(), j.include_resumable)
            self._each_conversation(
                "out",
                roots,
                j,
                lambda unit, batches, root: moving.out_one(
                    lane, unit, batches, path, ident, root, verdict
                ),
            )
        except Exception as exc:  # noqa: BLE001 - said to the user through the job
            failure = exc
        finally:
            self._finish(j, failure)
        return j

    def move_back(self, path: Path, roots: list[str], j: MoveJob) -> MoveJob:
        """Conversations of an archive file into the live file, verified, out of the archive."""
        lane = self.lane
        failure: BaseException | None = None
        try:
            self.writer.require_removals()
            problem = link_problem(path)
            ident = Identity.of(path)
            if problem or ident is None or ident == Identity.of(self.live):
                raise ColdStoreError(
                    f"Nothing was moved back: {problem or f'{path} is not an archive file here'}."
                )
            self._each_conversation(
                "back",
                roots,
                j,
                lambda unit, batches, root: moving.back_one(lane, unit, batches, path, ident, root),
            )
        except Exception as exc:  # noqa: BLE001 - said to the user through the job
            failure = exc
        finally:
            self._finish(j, failure)
        return j

    def _each_conversation(
        self,
        kind: str,
        roots: list[str],
        j: MoveJob,
        move: Callable[[Any, Batches, str], moving.Moved],
    ) -> None:
        """``move`` each conversation of ``roots`` as one unit of the lane, each once."""
        batches = Batches(self.lane.w, job=j, patience_s=LOCK_PATIENCE_S)
        seen: set[str] = set()
        for root in roots:
            if root in seen:
                continue  # its conversation was judged already (moved or left)
            with self.lane.unit(kind, wait_s=None, job=j) as unit:
                moved = move(unit, batches, root)
            seen.update(moved.members)
            _record(j, moved)

    def _finish(self, j: MoveJob, exc: BaseException | None) -> None:
        if isinstance(exc, LogbookDBError):
            j.error = exc.message
        elif exc is not None:
            j.error = f"The move stopped: {exc}."
        self.on_change()
        j.free_pages, j.page_size = free_pages(self.live)
        j.end()


def _record(j: MoveJob, moved: moving.Moved) -> None:
    j.notes.extend(moved.notes)
    if moved.stayed is None:
        j.conversations_moved += 1
        j.sessions_moved += len(moved.members)
        j.messages_moved += moved.messages
        j.files_moved += moved.files
        return
    if moved.stayed == "gone":
        return  # moved already with an earlier one, or removed since
    if moved.stayed == "running":
        j.skipped_active.extend(moved.who)
    elif moved.stayed in ("changed", "taken"):
        j.kept.append(moved.members[0])
    j.stayed.append(
        {
            "conversation": moved.members[0],
            "kind": moved.stayed,
            "sessions": moved.who,
            "why": moved.why,
        }
    )


def free_pages(path: Path) -> tuple[int | None, int | None]:
    """The live file's free pages and page size, read fresh after the move: what a VACUUM
    (``hermes sessions optimize``) gives back for certain. It also packs half-filled pages
    and merges the search index's segments, so it usually gives back more."""
    try:
        conn = sqlite3.connect(
            "file:" + pathname2url(os.path.abspath(path)) + "?mode=ro", uri=True, timeout=2
        )
    except sqlite3.Error:
        return None, None
    try:
        return (
            int(conn.execute("PRAGMA freelist_count").fetchone()[0]),
            int(conn.execute("PRAGMA page_size").fetchone()[0]),
        )
    except sqlite3.Error:
        return None, None
    finally:
        conn.close()
