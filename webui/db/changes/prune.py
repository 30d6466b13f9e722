"""Prune as a job: Hermes's prune run in short, journaled batches beside a writing gateway
(or, with a verified backup, one session at a time), its progress and result kept for the
job page. Actions holds one (``actions.pruning``), made with the reader, writer, lane, selection
reads and backed-up delete it uses. Each batch is one unit of the lane (webui.db.changes), so a
delete or a conversation moving to cold storage runs between two batches, never inside one."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webui import threads
from webui.db import deadline as request_deadline
from webui.db import sql
from webui.db.changes import backup, guards, prompts, removal, rows
from webui.db.changes import selection as selection_sql
from webui.db.changes.backup import ChangedSinceBackup
from webui.db.changes.batches import (
    LOCK_PATIENCE_S,
    ONE_TXN_MESSAGES,
    Batches,
    adapt,
    limit,
)
from webui.db.changes.jobs import JOBS, Job
from webui.db.changes.lane import Lane
from webui.db.changes.removal import Deleted
from webui.db.changes.selected import SelectionReads
from webui.db.changes.writer import (
    MESSAGE_BATCH,
    MESSAGE_BATCH_MAX,
    MESSAGE_BATCH_MIN,
    TooSlow,
    Writer,
)
from webui.db.errors import NotFound
from webui.db.reader import Reader
from webui.hermes import pruning
from webui.hermes.selection import Selection

# Sessions in a prune's first batch (then adapted to the time each batch took, 1 to 100; a
# conversation is never cut, so a batch may hold more).
PRUNE_BATCH = 20


@dataclass
class PruneJob(Job):
    kind: str = "prune"
    selection: Selection | None = None
    total: int = 0
    deleted: int = 0
    messages_deleted: int = 0
    # "Export, then delete what was verifiably exported": the backup folder, and the sessions
    # kept because a message arrived after their backup.
    backup_folder: Path | None = None
    backed_up_messages: int = 0
    kept: list[str] = field(default_factory=list)
    # Sessions whose messages were partly removed and whose row was then kept because they
    # stopped matching (a new message resumed them): named, never silently half-done.
    partial: list[str] = field(default_factory=list)
    files_removed: int = 0  # transcript files in the Hermes home's sessions/ folder
    prompts_removed: int = 0  # system_prompts rows no session references any more (0.20+)
    # Sessions left because a live turn lease or compression lock protects them (0.22 skips
    # them too, silently): named.
    busy: list[str] = field(default_factory=list)


class Pruning:
    """Prune jobs on one live file; the jobs of this server are kept in webui.db.changes.jobs.

    ``selected``: what a selection holds and the rules of the file's Hermes; ``delete_into``:
    Actions.delete_into, the verified backup then delete of one session (a backed-up prune);
    ``context``: what a background job runs inside (the Flask app's context)."""

    def __init__(
        self,
        reader: Reader,
        writer: Writer,
        lane: Lane,
        selected: SelectionReads,
        *,
        delete_into: Callable[[str, Any, Path, Job | None], tuple[Deleted, backup.Backup]],
        on_change: Callable[..., None],
        context: Callable[[], AbstractContextManager[Any]],
    ):
        self.r = reader
        self.w = writer
        self.lane = lane
        self.selected = selected
        self.delete_into = delete_into
        self.on_change = on_change
        self.context = context

    def start_prune(self, sel: Selection, backup_to: tuple[Any, Path] | None = None) -> PruneJob:
        """Prune in a background thread. ``backup_to`` = (exporter, folder root): back every
        session up first and delete only what verifiably was (webui.db.changes.backup)."""
        self.w.require_removals()
        where, params = self.selected.rule(sel)
        total = self.r.scalar(f"SELECT COUNT(*) FROM sessions WHERE {where}", params)
        job = JOBS.add(PruneJob(selection=sel, total=total))

        def work() -> None:
            with self.context():  # the app's context, where its connection pool lives
                if backup_to:
                    self._run_backed_up_prune(job, *backup_to)
                else:
                    self._run_prune(job)

        threads.start(work, f"prune-{job.id}")
        return job

    def run_prune(self, sel: Selection, backup_to: tuple[Any, Path] | None = None) -> PruneJob:
        """The same as start_prune, in the calling thread (CLI, tests)."""
        self.w.require_removals()
        where, params = self.selected.rule(sel)
        job = JOBS.add(
            PruneJob(
                selection=sel,
                total=self.r.scalar(f"SELECT COUNT(*) FROM sessions WHERE {where}", params),
            )
        )
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
            for sid in self.selected.prune_ids(job.selection):
                if sid in seen:
                    continue  # already gone as a subagent run of an earlier one
                try:
                    deleted, done = self.delete_into(sid, exporter, job.backup_folder, job)
                except ChangedSinceBackup:
                    job.kept.append(sid)
                    continue
                except guards.ActiveSession:
                    job.busy.append(sid)
                    continue
                except NotFound:
                    continue
                seen.update(deleted.ids)
                job.files_removed += deleted.files
                job.deleted += len(deleted.ids)
                job.backed_up_messages += done.messages
                job.messages_deleted += done.messages
        except Exception as exc:  # noqa: BLE001 - reported to the user through the job
            job.error = getattr(exc, "message", None) or str(exc)
        finally:
            job.end()

    def _run_prune(self, job: PruneJob) -> None:
        """The selection read once (the preview's set, in its order), cut into batches of whole
        conversations (webui.hermes.pruning), each batch one unit of the lane; then the system
        prompts no session references any more."""
        size = PRUNE_BATCH
        state = {"msg_batch": MESSAGE_BATCH}
        cut = None  # the unit of a batch cut short (its entry finishes it later)
        batches = Batches(self.w, job=job, patience_s=LOCK_PATIENCE_S)
        rules = self.selected.rules
        try:
            chosen = self.selected.prune_ids(job.selection)
            job.total = len(chosen)
            links = self.r.run(
                lambda c: selection_sql.compression_links(c, chosen), time_limit_s=120
            )
            left = pruning.groups(chosen, links)
            while left:
                ids, left = pruning.batches(left, size)
                # One batch, one unit: the lane's lock held from its intent to its end, the
                # journal replayed before it.
                with self.lane.unit("prune", wait_s=None, job=job) as unit:
                    cut = unit
                    ids = [
                        r["id"]
                        for r in self.r.rows(
                            f"SELECT id FROM sessions WHERE id IN ({sql.in_list(len(ids))})", ids
                        )
                    ]
                    if not ids:
                        continue
                    unit.intend(removal.newest(self.r, dict.fromkeys(ids)))
                    removed, messages_gone, trimmed = self._prune_batch(batches, job, ids, state)
                    # As `hermes sessions prune`: the transcript files of what went.
                    if rules.removes_transcripts:
                        job.files_removed += sum(
                            self.lane.remove_transcripts(sid) for sid in removed
                        )
                    if trimmed:
                        # A session that stopped matching between the steps (a new message
                        # resumed it) keeps its row and what is left of its transcript: named.
                        job.partial.extend(
                            sid
                            for sid in ids
                            if sid not in removed
                            and self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [sid])
                        )
                # A batch: pages read its effect on rows at once; whole-table figures catch
                # up in the background (webui.db.sessions.store), the last batch makes them exact.
                self.on_change(soft=True)
                job.deleted += len(removed)
                job.messages_deleted += messages_gone
                size = adapt(size, self.w.last_transaction_s, 1, 100)
                self.w.checkpoint()
            cut = None
            if rules.removes_unreferenced_prompts:
                with self.lane.unit("prune", wait_s=None, job=job):
                    job.prompts_removed += removal.sweep_prompts(batches)
        except Exception as exc:  # noqa: BLE001 - reported to the user through the job
            reason = (getattr(exc, "message", None) or str(exc)).split(";")[0].rstrip(".")
            pending = cut.entry if cut is not None else None
            job.error = (
                f"{reason}. The prune stopped after removing {job.deleted:,} "
                f"session{'s' if job.deleted != 1 else ''} and {job.messages_deleted:,} "
                "messages"
                + (
                    f"; the removal of {len(pending.sessions)} more had begun and is finished "
                    "at the next prune or delete, or when Logbook next starts."
                    if pending is not None
                    else "."
                )
            )
        finally:
            self.on_change()
            job.end()

    def _prune_batch(
        self, batches: Batches, job: PruneJob, ids: list[str], state: dict[str, int]
    ) -> tuple[list[str], int, bool]:
        """One batch's transactions: (removed sessions, messages that went with their rows,
        whether some messages went ahead of the rows)."""
        marks = sql.in_list(len(ids))
        sw, sp = selection_sql.where(self.r.schema, job.selection, "s", rules=self.selected.rules)
        pending = self.r.scalar(f"SELECT COUNT(*) FROM messages WHERE session_id IN ({marks})", ids)
        whole_at = ONE_TXN_MESSAGES
        slow = 0  # transactions that could not be cut smaller, rolled back in a row
        trimmed = False
        while True:
            # 1. Only when the batch's transcripts are too long for one short transaction:
            #    their messages first, a bounded number per transaction, only of sessions
            #    that still match the rule (one may have been resumed meanwhile) and that no
            #    live turn protects (0.22). Usually the batch goes whole in step 2, as Hermes
            #    does it: one transaction.
            while pending > whole_at:
                size = min(state["msg_batch"], pending - whole_at)
                try:
                    n = batches.once(
                        lambda c, size=size: self._trim_batch(c, ids, marks, sw, sp, size),
                        give_up_after=limit(size > MESSAGE_BATCH_MIN, slow),
                    )
                except TooSlow:
                    slow += size <= MESSAGE_BATCH_MIN
                    state["msg_batch"] = max(MESSAGE_BATCH_MIN, size // 2)
                    continue
                slow = 0
                trimmed = trimmed or n > 0
                job.messages_deleted += n
                state["msg_batch"] = adapt(
                    size, self.w.last_transaction_s, MESSAGE_BATCH_MIN, MESSAGE_BATCH_MAX
                )
                pending -= n
                if n == 0:
                    break
            # 2. the rows themselves, Hermes's order: orphan children, messages, sessions.
            #    Too slow (a merge, a busy core): rolled back whole, and the same sessions are
            #    tried again with fewer messages left to go with them.
            try:
                busy: set[str] = set()
                removed, gone = batches.once(
                    lambda c: self._remove_rows(c, ids, marks, sw, sp, busy),
                    give_up_after=limit(whole_at > 0 and pending > 0, slow),
                )
                job.busy.extend(sorted(busy - set(job.busy)))
                return removed, gone, trimmed
            except TooSlow:
                if whole_at > 0 and pending > 0:
                    whole_at = min(whole_at, pending) // 2
                else:
                    slow += 1

    def _going(
        self,
        conn: sqlite3.Connection,
        ids: list[str],
        marks: str,
        rule: str,
        params: list,
        seen: set[str] | None = None,
    ) -> list[str]:
        """Inside a batch's transaction: of ``ids``, the sessions the prune takes now — those
        that still match the filters, less (0.22) the compression ancestors of a continuation
        that is not going and the sessions a live turn protects (stale guards reclaimed)."""
        going = [
            r[0]
            for r in conn.execute(
                f"SELECT id FROM sessions s WHERE id IN ({marks}) AND {rule}", [*ids, *params]
            )
        ]
        rules = self.selected.rules
        if going and rules.selection_whole_lineages:
            kept = pruning.kept(set(going), selection_sql.continuations(conn, going))
            going = [sid for sid in going if sid not in kept]
        if going and rules.removal_respects_guards:
            busy = guards.guarded(conn, going)
            going = [sid for sid in going if sid not in busy]
            if seen is not None:
                seen.update(busy)
        return going

    def _trim_batch(
        self, conn: sqlite3.Connection, ids: list[str], marks: str, rule: str, params: list, n: int
    ) -> int:
        going = self._going(conn, ids, marks, rule, params)
        if not going:
            return 0
        gm = sql.in_list(len(going))
        return conn.execute(
            f"DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE session_id IN "
            f"({gm}) LIMIT ?)",
            [*going, n],
        ).rowcount

    def _remove_rows(
        self,
        conn: sqlite3.Connection,
        ids: list[str],
        marks: str,
        rule: str,
        params: list,
        busy: set[str] | None = None,
    ) -> tuple[list[str], int]:
        """A prune batch's own transaction: of ``ids``, the sessions going now (``_going``)
        go, with what is left of their messages, their per-session rows and the system prompts
        no session references any more; their children are orphaned. Returns the ids removed
        and how many messages went with them."""
        live = self._going(conn, ids, marks, rule, params, busy)
        if not live:
            return [], 0
        lm = sql.in_list(len(live))
        hashes = (
            prompts.referenced(conn, live)
            if self.selected.rules.removes_unreferenced_prompts
            else []
        )
        conn.execute(
            f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN ({lm})", live
        )
        msgs = conn.execute(f"DELETE FROM messages WHERE session_id IN ({lm})", live).rowcount
        for t in rows.session_tables(conn):  # as their foreign key's cascade would
            conn.execute(f"DELETE FROM {rows.q(t)} WHERE session_id IN ({lm})", live)
        conn.execute(f"DELETE FROM sessions WHERE id IN ({lm})", live)
        prompts.drop_unreferenced(conn, hashes)
        return live, msgs

    def job(self, job_id: str) -> PruneJob:
        job = JOBS.get(job_id, PruneJob)
        if job is None:
            raise NotFound("No such prune job (the server may have restarted).")
        return job
