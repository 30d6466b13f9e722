"""Prune as a job: Hermes's prune run in short, journaled batches beside a writing gateway
(or, with a verified backup, one session at a time), its progress and result kept for the
job page. A mixin of Actions, which holds the writer, the journal and the delete."""

from __future__ import annotations

import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask import current_app

from webui import threads
from webui.db import backup
from webui.db import deadline as request_deadline
from webui.db.backup import ChangedSinceBackup
from webui.db.batches import (
    LOCK_PATIENCE_S,
    LOCK_PAUSE_MAX_S,
    ONE_TXN_MESSAGES,
    adapt,
    limit,
)
from webui.db.errors import DatabaseBusy, NotFound
from webui.db.writer import MESSAGE_BATCH, MESSAGE_BATCH_MAX, MESSAGE_BATCH_MIN, TooSlow
from webui.hermes.selection import Selection


@dataclass
class PruneJob:
    id: str
    selection: Selection
    total: int
    deleted: int = 0
    messages_deleted: int = 0
    done: bool = False
    error: str | None = None
    started: float = field(default_factory=time.time)
    finished: float | None = None
    longest_txn_s: float = 0.0
    transactions: int = 0
    txn_times: list[float] = field(default_factory=list, repr=False)
    abandoned: int = 0  # transactions rolled back as too slow and retried smaller
    # "Export, then delete what was verifiably exported": the backup folder, and the sessions
    # kept because a message arrived after their backup.
    backup_folder: Path | None = None
    backed_up_messages: int = 0
    kept: list[str] = field(default_factory=list)
    # Sessions whose messages were partly removed and whose row was then kept because they
    # stopped matching (a new message resumed them): named, never silently half-done.
    partial: list[str] = field(default_factory=list)
    files_removed: int = 0  # transcript files in the Hermes home's sessions/ folder
    # Seconds spent waiting for the gateway's write lock (Hermes merges its search index
    # every thousand writes, holding the lock for seconds to minutes on a large file).
    lock_waited_s: float = 0.0
    waiting_since: float | None = None  # now waiting for the lock (the job page says so)


class Pruning:
    """Prune jobs (``self.w``: the Writer; ``self.jobs``: the jobs of this server)."""

    def start_prune(self, sel: Selection, backup_to: tuple[Any, Path] | None = None) -> PruneJob:
        """Prune in a background thread. ``backup_to`` = (exporter, folder root): back every
        session up first and delete only what verifiably was (webui.db.backup)."""
        where, params = self._rule(sel)
        total = self.r.scalar(f"SELECT COUNT(*) FROM sessions WHERE {where}", params)
        job = PruneJob(uuid.uuid4().hex[:12], sel, total)
        with self._jobs_lock:
            self.jobs[job.id] = job
        app = current_app._get_current_object()  # the pool lives in the app's context

        def work() -> None:
            with app.app_context():
                if backup_to:
                    self._run_backed_up_prune(job, *backup_to)
                else:
                    self._run_prune(job)

        threads.start(work, f"prune-{job.id}")
        return job

    def run_prune(self, sel: Selection, backup_to: tuple[Any, Path] | None = None) -> PruneJob:
        """The same as start_prune, in the calling thread (CLI, tests)."""
        where, params = self._rule(sel)
        job = PruneJob(
            uuid.uuid4().hex[:12],
            sel,
            self.r.scalar(f"SELECT COUNT(*) FROM sessions WHERE {where}", params),
        )
        with self._jobs_lock:
            self.jobs[job.id] = job
        with request_deadline.suspended():  # the prune's batches have budgets of their own
            if backup_to:
                self._run_backed_up_prune(job, *backup_to)
            else:
                self._run_prune(job)
        return job

    def _run_backed_up_prune(self, job: PruneJob, exporter, root: Path) -> None:
        """The prune's sessions one at a time, each backed up, verified and then deleted
        (delete_backed_up) into one folder. A session that changed after its backup is kept
        and named; the rest go on."""
        try:
            job.backup_folder = backup.new_folder(root, "prune")
            seen: set[str] = set()
            for sid in self.prune_ids(job.selection):
                if sid in seen:
                    continue  # already gone as a subagent run of an earlier one
                try:
                    deleted, done = self._delete_into(sid, exporter, job.backup_folder)
                except ChangedSinceBackup:
                    job.kept.append(sid)
                    continue
                except NotFound:
                    continue
                seen.update(deleted.ids)
                job.files_removed += deleted.files
                job.deleted += len(deleted.ids)
                job.backed_up_messages += done.messages
                job.messages_deleted += done.messages
                self._note(job, self.w.last_transaction_s)
        except Exception as exc:  # noqa: BLE001 - reported to the user through the job
            job.error = getattr(exc, "message", None) or str(exc)
        finally:
            job.done = True
            job.finished = time.time()

    def _run_prune(self, job: PruneJob) -> None:
        entry = None
        trimmed = False
        try:
            self.resume_interrupted()
            batch = 20
            msg_batch = MESSAGE_BATCH
            while True:
                where, params = self._rule(job.selection)
                ids = [
                    r["id"]
                    for r in self.r.rows(
                        f"SELECT id FROM sessions WHERE {where} ORDER BY started_at, id LIMIT ?",
                        [*params, batch],
                    )
                ]
                if not ids:
                    break
                marks = ",".join("?" * len(ids))
                sw, sp = self._rule(job.selection, "s")
                pending = self.r.scalar(
                    f"SELECT COUNT(*) FROM messages WHERE session_id IN ({marks})", ids
                )
                whole_at = ONE_TXN_MESSAGES
                slow = 0  # transactions that could not be cut smaller, rolled back in a row
                # Journaled before its first transaction, closed once its rows and transcript
                # files are gone: a kill anywhere in between is finished at the next start.
                entry = self._journal_open("prune", dict.fromkeys(ids))
                trimmed = False  # some messages went ahead of the rows (step 1)
                while True:
                    # 1. Only when the batch's transcripts are too long for one short
                    #    transaction: their messages first, a bounded number per transaction,
                    #    only of sessions that still match the rule (one may have been resumed
                    #    meanwhile). Usually the batch goes whole in step 2, as Hermes does it:
                    #    one transaction.
                    while pending > whole_at:
                        size = min(msg_batch, pending - whole_at)
                        try:
                            n = self._patient(
                                job,
                                lambda c, size=size: (
                                    c.execute(
                                        f"DELETE FROM messages WHERE id IN (SELECT m.id FROM "
                                        f"messages m JOIN sessions s ON s.id = m.session_id "
                                        f"WHERE m.session_id IN ({marks}) AND {sw} LIMIT ?)",
                                        [*ids, *sp, size],
                                    ).rowcount
                                ),
                                give_up_after=limit(size > MESSAGE_BATCH_MIN, slow),
                            )
                        except TooSlow:
                            self._note(job, self.w.last_transaction_s, abandoned=True)
                            slow += size <= MESSAGE_BATCH_MIN
                            msg_batch = max(MESSAGE_BATCH_MIN, size // 2)
                            continue
                        slow = 0
                        trimmed = trimmed or n > 0
                        self._note(job, self.w.last_transaction_s)
                        job.messages_deleted += n
                        msg_batch = adapt(
                            size, self.w.last_transaction_s, MESSAGE_BATCH_MIN, MESSAGE_BATCH_MAX
                        )
                        pending -= n
                        if n == 0:
                            break

                    # 2. the rows themselves, Hermes's order: orphan children, messages,
                    #    sessions. Too slow (a merge, a busy core): rolled back whole, and the
                    #    same sessions are tried again with fewer messages left to go with them.
                    try:
                        removed, messages_gone = self._patient(
                            job,
                            lambda c: self._remove_rows(c, ids, marks, sw, sp),
                            give_up_after=limit(whole_at > 0 and pending > 0, slow),
                        )
                        break
                    except TooSlow:
                        self._note(job, self.w.last_transaction_s, abandoned=True)
                        if whole_at > 0 and pending > 0:
                            whole_at = min(whole_at, pending) // 2
                        else:
                            slow += 1
                        batch = max(1, batch // 2)
                # As `hermes sessions prune`: the transcript files of what went.
                if self.rules.removes_transcripts:
                    job.files_removed += sum(self.remove_transcripts(sid) for sid in removed)
                if trimmed:
                    # A session that stopped matching between the steps (a new message resumed
                    # it) keeps its row and what is left of its transcript: named in the result.
                    job.partial.extend(
                        sid
                        for sid in ids
                        if sid not in removed
                        and self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [sid])
                    )
                self._journal_close(entry)
                entry = None
                sessions_gone = len(removed)
                # A batch: pages read its effect on rows at once; whole-table figures catch
                # up in the background (webui.db.sessions), the last batch makes them exact.
                self.on_change(soft=True)
                job.deleted += sessions_gone
                job.messages_deleted += messages_gone
                took = self.w.last_transaction_s
                self._note(job, took)
                batch = adapt(batch, took, 1, 100)
                self.w.checkpoint()
        except Exception as exc:  # noqa: BLE001 - reported to the user through the job
            if entry is not None and not trimmed:
                # This batch changed nothing yet: nothing of it is left to finish.
                self._journal_close(entry)
                entry = None
            self._journal_release(entry)  # finished by the next prune, delete or start
            reason = (getattr(exc, "message", None) or str(exc)).split(";")[0].rstrip(".")
            job.error = (
                f"{reason}. The prune stopped after removing {job.deleted:,} "
                f"session{'s' if job.deleted != 1 else ''} and {job.messages_deleted:,} "
                "messages"
                + (
                    f"; the removal of {len(entry.sessions)} more had begun and is finished at "
                    "the next prune or delete, or when Logbook next starts."
                    if entry is not None
                    else "."
                )
            )
        finally:
            self.on_change()
            job.done = True
            job.finished = time.time()

    @staticmethod
    def _remove_rows(
        conn: sqlite3.Connection, ids: list[str], marks: str, rule: str, params: list
    ) -> tuple[list[str], int]:
        """A prune batch's own transaction: of ``ids``, the sessions that still match the
        rule go, with what is left of their messages; their children are orphaned. Returns
        the ids removed and how many messages went with them."""
        live = [
            r[0]
            for r in conn.execute(
                f"SELECT id FROM sessions s WHERE id IN ({marks}) AND {rule}", [*ids, *params]
            )
        ]
        if not live:
            return [], 0
        lm = ",".join("?" * len(live))
        conn.execute(
            f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN ({lm})", live
        )
        msgs = conn.execute(f"DELETE FROM messages WHERE session_id IN ({lm})", live).rowcount
        conn.execute(f"DELETE FROM sessions WHERE id IN ({lm})", live)
        return live, msgs

    def _patient(self, job: PruneJob, fn, give_up_after: float | None):
        """A prune batch's transaction, waiting out a gateway that holds the write lock for
        long (Hermes's own index merge): each try is a short BEGIN IMMEDIATE with retries
        (webui.db.writer), and between tries the job waits, a pause that grows to
        LOCK_PAUSE_MAX_S, for up to LOCK_PATIENCE_S in a row before it stops. Nothing is held
        while it waits."""
        pause = 0.5
        began = None
        while True:
            try:
                result = self.w.run(fn, give_up_after=give_up_after)
            except DatabaseBusy:
                now = time.monotonic()
                began = began if began is not None else now
                if now - began > LOCK_PATIENCE_S:
                    job.waiting_since = None
                    raise
                job.waiting_since = job.waiting_since or time.time()
                time.sleep(pause)
                job.lock_waited_s += pause
                pause = min(LOCK_PAUSE_MAX_S, pause * 2)
                continue
            job.waiting_since = None
            return result

    def _note(self, job: PruneJob, took: float, abandoned: bool = False) -> None:
        job.abandoned += abandoned
        job.transactions += 1
        job.longest_txn_s = max(job.longest_txn_s, took)
        job.txn_times.append(took)

    def job(self, job_id: str) -> PruneJob:
        job = self.jobs.get(job_id)
        if job is None:
            raise NotFound("No such prune job (the server may have restarted).")
        return job
