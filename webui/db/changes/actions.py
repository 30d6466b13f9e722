"""Changes a user can make: rename, delete, prune. Hermes's semantics (reference §4–6), run
through the Writer in short transactions."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from webui.db import deadline as request_deadline
from webui.db import sql
from webui.db.changes import backup, flags, guards, holders, prompts, removal, renaming, rows
from webui.db.changes.backup import Backup, ChangedSinceBackup
from webui.db.changes.batches import Batches
from webui.db.changes.jobs import Job
from webui.db.changes.lane import Lane
from webui.db.changes.prune import Pruning
from webui.db.changes.removal import Deleted, trim
from webui.db.changes.renaming import TitleInUse  # noqa: F401 - the views import it here
from webui.db.changes.replaying import replay_entry
from webui.db.changes.selected import SelectionReads
from webui.db.changes.writer import Writer
from webui.db.errors import LogbookDBError, NotFound
from webui.db.reader import Reader
from webui.hermes.changes import active_refusal, held_store_refusal, pinned_warning
from webui.hermes.rules import Rules, rules_for
from webui.hermes.titles import sanitize_title


class PartlyRemoved(LogbookDBError):
    """A removal stopped between its batches; the journal finishes it later."""

    status = 503


class Actions:
    """Every change goes through ``self.lane`` (webui.db.changes): one unit at a time per live
    file, journaled, what a kill cut short replayed before the next."""

    def __init__(
        self,
        reader: Reader,
        writer: Writer,
        on_change=lambda soft=False: None,
        *,
        journal_folder: Path,
        legacy_journals: tuple[Path, ...] = (),
        context: Callable[[], AbstractContextManager[Any]] = nullcontext,
    ):
        """``context``: what a background job runs inside (the Flask app's context, where the
        primary database's connection pool lives)."""
        self.r = reader
        self.context = context
        self.w = writer
        self.on_change = on_change  # caches of what was just changed are dropped
        self.lane = Lane(
            journal_folder,
            writer,
            reader,
            rules=lambda: self.rules,
            replay_entry=replay_entry,
            on_change=on_change,
            legacy=legacy_journals,
        )
        # What a selection holds (webui.db.changes.selected) and prune jobs (webui.db.changes.prune).
        self.selected = SelectionReads(reader)
        self.prune_preview = self.selected.prune_preview
        self.selection_spared = self.selected.selection_spared
        self.selection_page = self.selected.selection_page
        self.selection_totals = self.selected.selection_totals
        self.prune_ids = self.selected.prune_ids
        self.pruning = Pruning(
            reader,
            writer,
            self.lane,
            self.selected,
            delete_into=self.delete_into,
            on_change=on_change,
            context=context,
        )
        self.start_prune = self.pruning.start_prune
        self.run_prune = self.pruning.run_prune
        self.job = self.pruning.job

    @property
    def recovered(self) -> list[str]:
        """What replays finished or undid, in sentences, for the pages."""
        return self.lane.recovered

    @property
    def journal(self):
        return self.lane.journal

    def resume_interrupted(self) -> list[str]:
        """Replay what the journal holds (at start-up): what was done, in sentences."""
        return self.lane.replay()

    # -- rename ------------------------------------------------------------------------------

    def rename(self, session_id: str, raw_title: str | None) -> str | None:
        """The file's Hermes's set_session_title: cleaned, ≤ 100 chars, unique (case-sensitive)
        among titles, empty clears; 0.20+ records title_source = 'user'. A title a compression
        ancestor holds moves to this session; 0.22 also takes it from a ghost the lists never
        show, and never renames the hidden canonical Bot Chat. Raises TitleError / TitleInUse /
        NotFound; changes nothing then."""
        title = sanitize_title(raw_title)
        rules = self.rules
        with self.lane.unit("rename"):
            self.w.run(lambda conn: renaming.rename(conn, session_id, title, rules))
        self.on_change()
        return title

    # -- delete ------------------------------------------------------------------------------

    def delegate_children(self, session_ids: list[str], conn=None) -> list[str]:
        """Delegate subagent runs to delete with these sessions, as Hermes 0.19's
        _collect_delegate_child_ids finds them: rows whose ``_delegate_from`` marker names one
        of them (or whose parent is one of them and who carry any marker), recursively; never
        the sessions themselves."""
        if not self.r.schema.has("sessions", "model_config"):
            return []
        marker = (
            "(CASE WHEN json_valid(model_config) THEN json_extract(model_config, "
            "'$._delegate_from') END)"
        )
        seeds = [s for s in session_ids if s]
        found = set(seeds)
        frontier = list(seeds)
        while frontier:
            marks = sql.in_list(len(frontier))
            query = (
                f"SELECT id FROM sessions WHERE {marker} IN ({marks}) OR "
                f"(parent_session_id IN ({marks}) AND {marker} IS NOT NULL)"
            )
            rows = (
                [r[0] for r in conn.execute(query, frontier + frontier)]
                if conn is not None
                else [r["id"] for r in self.r.rows(query, frontier + frontier)]
            )
            frontier = [i for i in rows if i not in found]
            found.update(frontier)
        return sorted(found - set(seeds))

    @property
    def rules(self) -> Rules:
        return rules_for(self.r.schema.version)

    def delete(
        self, session_id: str, upto: dict[str, int] | None = None, job: Job | None = None
    ) -> Deleted:
        # Its transactions have budgets of their own; a long transcript's batches may outlast
        # the request's deadline, and stopping between them would leave the removal half done.
        with request_deadline.suspended():
            return self._delete(session_id, upto, job)

    def _delete(
        self, session_id: str, upto: dict[str, int] | None = None, job: Job | None = None
    ) -> Deleted:
        """Delete one session as the Hermes that wrote the database does. Hermes 0.19 (schema
        22): its delegate subagent runs go with it and the transcript files of every deleted
        session are removed from the Hermes home; other children are orphaned. Returns the
        ids deleted (empty when the session does not exist). A long transcript goes in batches
        first, so no single transaction holds the gateway off for long. One unit of the lane:
        journaled before its first batch, so a kill anywhere is finished by the next change
        or start.

        ``upto`` (after a verified backup): the highest message id backed up per session. Only
        those messages are trimmed early, and the final transaction deletes nothing (raising
        ChangedSinceBackup) if any session got a newer message or a new subagent run."""
        self.w.require_removals()  # a file whose messages this process cannot write
        wait = {"wait_s": None, "job": job} if job is not None else {}
        rules = self.rules
        with self.lane.unit("delete", **wait) as unit:
            if self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [session_id]) is None:
                # Already gone, or its interrupted removal was just finished: the retry succeeded.
                return Deleted([session_id] if session_id in unit.replayed else [])
            cascade = rules.delete_cascades
            doomed = [session_id, *(self.delegate_children([session_id]) if cascade else [])]
            batches = Batches(self.w, job=job)
            check = None
            if rules.removal_respects_guards:
                # Hermes asks inside its one transaction; here before the first batch and
                # inside every one after it, so an active session loses nothing.
                def check(conn: sqlite3.Connection) -> None:
                    ids = [session_id, *self.delegate_children([session_id], conn)]
                    if guards.guarded(conn, ids):
                        raise guards.ActiveSession(active_refusal(session_id))

                batches.once(check)
            pinned = rules.warns_deleting_pinned and self.r.one(
                "SELECT 1 AS x FROM sessions WHERE id = ? AND COALESCE(pinned, 0) = 1",
                [session_id],
            )
            limits = {sid: (None if upto is None else upto.get(sid, -1)) for sid in doomed}
            unit.intend(removal.newest(self.r, limits))
            trimmed = [0]  # messages removed ahead of the final transaction, as they go
            try:
                for sid, most in limits.items():
                    if most != -1:
                        trim(batches, self.r, sid, most, trimmed, check=check)
                deleted = self._final_delete(batches, session_id, cascade, upto, trimmed[0], check)
            except ChangedSinceBackup:
                unit.finish()  # kept on purpose, and said so
                raise
            except LogbookDBError as exc:
                if not trimmed[0]:
                    raise  # nothing was removed: nothing to finish later
                raise PartlyRemoved(
                    f"{exc.message.split(';')[0]}, so removing {session_id} stopped part way: "
                    f"{trimmed[0]:,} of its messages are gone and the session is still listed. "
                    "Delete it again to finish (Logbook also finishes it at its next start)."
                ) from None
            if deleted and rules.removes_transcripts:
                # Hermes removes a deleted session's transcript files too; the entry stays
                # until they are gone, so a kill here is finished at the next start.
                deleted.files = sum(self.lane.remove_transcripts(sid) for sid in deleted.ids)
            if deleted and rules.removes_unreferenced_prompts:
                deleted.prompts += removal.sweep_prompts(batches)
            if deleted and pinned:
                deleted.warning = pinned_warning(session_id)
        self.on_change()
        self.w.checkpoint()
        return deleted

    def _final_delete(
        self,
        batches: Batches,
        session_id: str,
        cascade: bool,
        upto: dict[str, int] | None,
        trimmed: int,
        check=None,
    ) -> Deleted:
        """The one transaction that takes the session row, what is left of its messages, its
        per-session rows (per-model usage: Hermes's foreign key cascades them; deleted here by
        name, so the end is the same on any connection), its delegate subagent runs and the
        system prompts no session references any more."""
        out = Deleted([])

        def fn(conn: sqlite3.Connection) -> list[str]:
            if (
                conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
                is None
            ):
                return []
            if check is not None:
                check(conn)
            children = self.delegate_children([session_id], conn) if cascade else []
            if upto is not None:
                self._check_unchanged(conn, [session_id, *children], upto, trimmed)
            hashes = prompts.referenced(conn, [session_id, *children])
            for ids in ([*children], [session_id]):
                if not ids:
                    continue
                marks = sql.in_list(len(ids))
                conn.execute(f"DELETE FROM messages WHERE session_id IN ({marks})", ids)
                for t in rows.session_tables(conn):
                    conn.execute(f"DELETE FROM {rows.q(t)} WHERE session_id IN ({marks})", ids)
                conn.execute(
                    f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id "
                    f"IN ({marks})",
                    ids,
                )
                conn.execute(f"DELETE FROM sessions WHERE id IN ({marks})", ids)
            out.prompts = prompts.drop_unreferenced(conn, hashes)
            return [session_id, *children]

        out.ids = batches.once(fn)
        return out

    @staticmethod
    def _check_unchanged(
        conn: sqlite3.Connection, ids: list[str], upto: dict[str, int], trimmed: int
    ) -> None:
        """Inside the delete's transaction: nothing the backup lacks may be deleted."""
        kept = (
            f" {trimmed} of its backed-up messages were already removed; the backup holds them."
            if trimmed
            else " Nothing was deleted."
        )
        for sid in ids:
            if sid not in upto:
                raise ChangedSinceBackup(
                    f"Subagent run {sid} appeared after the backup, so {ids[0]} was kept.{kept}"
                )
            newer = conn.execute(
                "SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ?", (sid, upto[sid])
            ).fetchone()[0]
            if newer:
                raise ChangedSinceBackup(
                    f"{newer} new message{'s' if newer != 1 else ''} arrived in {sid} after the "
                    f"backup, so it was kept.{kept} Back it up again to delete it."
                )

    def delete_backed_up(self, session_id: str, exporter, root: Path) -> tuple[Deleted, Backup]:
        """Export the session (and the subagent runs that go with it), verify the files read
        back from disk, then delete exactly what they hold (webui.db.changes.backup). Raises
        BackupFailed or ChangedSinceBackup, having deleted nothing the backup lacks."""
        if self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [session_id]) is None:
            raise NotFound(f"No session has the id “{session_id}”.")
        return self.delete_into(session_id, exporter, backup.new_folder(root, session_id))

    def delete_into(
        self, session_id: str, exporter, folder: Path, job: Job | None = None
    ) -> tuple[Deleted, Backup]:
        cascade = self.rules.delete_cascades
        doomed = [session_id, *(self.delegate_children([session_id]) if cascade else [])]
        full = [r for r in (exporter.session_record(i, include_rewound=True) for i in doomed) if r]
        if not full or full[0]["id"] != session_id:
            raise NotFound(f"No session has the id “{session_id}”.")
        done = backup.write_and_verify(folder, full)
        deleted = self.delete(session_id, upto=backup.newest_message_ids(full), job=job)
        return deleted, done

    def transcript_files(self, session_id: str) -> list[Path]:
        """The files Hermes 0.19 removes with a session, inside this Hermes home only:
        ``sessions/<id>.json``, ``sessions/<id>.jsonl``, ``sessions/request_dump_<id>_*.json``
        (webui.db.changes.transcripts)."""
        return self.lane.transcript_files(session_id)

    # -- living beside 0.22 -------------------------------------------------------------------

    def held_store(self, action: str) -> str | None:
        """0.22 files: the refusal of a bulk removal (``action``: "prune", "move to cold
        storage") while other processes hold the file, naming them; None when none does, or on
        files whose Hermes makes no such check."""
        if not self.rules.bulk_refuses_held_store:
            return None
        path = self.r.opened.path
        return held_store_refusal(path, holders.foreign_holders(path), action)

    # -- flags on a whole lineage: archive, pin, hide -----------------------------------------

    def set_archived(self, ids: list[str], archived: bool) -> tuple[int, int]:
        """The file's Hermes's set_session_archived for each id: the session with its
        compression ancestors and continuations, so a conversation is archived whole (an
        unarchived root would bring it back into the list); 0.22 clears the idle sweep's
        stamp. One short transaction per id. Returns (sessions matched, rows changed)."""
        return self._on_lineages(
            "archive", ids, lambda c, sid: flags.archive(c, sid, archived, self.rules)
        )

    def set_pinned(self, ids: list[str], pinned: bool) -> tuple[int, int]:
        """set_session_pinned: the whole lineage; 0.22 un-hides it when pinning."""
        return self._on_lineages("pin", ids, lambda c, sid: flags.pin(c, sid, pinned, self.rules))

    def session_flags(self, session_id: str) -> dict[str, int]:
        """The session's pinned / hidden / archived flags (those this file has)."""
        cols = [c for c in ("pinned", "hidden", "archived") if self.r.schema.has("sessions", c)]
        if not cols:
            return {}
        row = self.r.one(
            f"SELECT {', '.join(f'COALESCE({c}, 0) AS {c}' for c in cols)} FROM sessions "
            "WHERE id = ?",
            [session_id],
        )
        return dict(row or {})

    def set_hidden(self, ids: list[str], hidden: bool) -> tuple[int, int]:
        """set_session_hidden: the whole lineage."""
        return self._on_lineages("hide", ids, lambda c, sid: flags.hide(c, sid, hidden))

    def _on_lineages(self, kind: str, ids: list[str], change) -> tuple[int, int]:
        matched = changed = 0
        for sid in ids:

            def fn(c: sqlite3.Connection, sid: str = sid) -> tuple[bool, int]:
                if c.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None:
                    return False, 0
                return True, change(c, sid)

            with self.lane.unit(kind):
                found, n = self.w.run(fn)
            matched += found
            changed += n
        self.on_change()
        return matched, changed
