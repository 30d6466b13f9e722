"""Changes a user can make: rename, delete, prune. Hermes's semantics (reference §4–6), run
through the Writer in short transactions."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from webui.db import backup, sql
from webui.db import deadline as request_deadline
from webui.db.backup import Backup, ChangedSinceBackup
from webui.db.changes import transcripts
from webui.db.changes.batches import Batches
from webui.db.changes.jobs import Job
from webui.db.changes.lane import Lane
from webui.db.changes.removal import trim
from webui.db.errors import LogbookDBError, NotFound
from webui.db.prune import Pruning
from webui.db.reader import Reader
from webui.db.selected import SelectionReads
from webui.db.writer import Writer
from webui.hermes.rules import Rules, rules_for
from webui.hermes.titles import sanitize_title


class PartlyRemoved(LogbookDBError):
    """A removal stopped between its batches; the journal finishes it later."""

    status = 503


class TitleInUse(LogbookDBError):
    status = 409

    def __init__(self, title: str, other_id: str):
        super().__init__(f"Title '{title}' is already in use by session {other_id}")
        self.title = title
        self.other_id = other_id


@dataclass
class Deleted:
    """What a delete removed: the sessions (the one asked for first, then its delegate
    subagent runs) and how many transcript files."""

    ids: list[str]
    files: int = 0

    def __bool__(self) -> bool:
        return bool(self.ids)

    @property
    def subagents(self) -> int:
        return max(len(self.ids) - 1, 0)


class Actions(SelectionReads, Pruning):
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
    ):
        self.r = reader
        self.w = writer
        self.on_change = on_change  # caches of what was just changed are dropped
        self.lane = Lane(
            journal_folder,
            writer,
            reader,
            rules=lambda: self.rules,
            on_change=on_change,
            legacy=legacy_journals,
        )

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
        """Hermes's set_session_title: cleaned, ≤ 100 chars, unique (case-sensitive) among
        titles, empty clears. Raises TitleError / TitleInUse / NotFound; changes nothing then."""
        title = sanitize_title(raw_title)
        take_from_ancestor = self.rules.rename_takes_from_ancestor

        def fn(conn: sqlite3.Connection) -> None:
            if (
                conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
                is None
            ):
                raise NotFound(f"No session has the id “{session_id}”.")
            if title is not None:
                row = conn.execute(
                    "SELECT id FROM sessions WHERE title = ? AND id != ?", (title, session_id)
                ).fetchone()
                if (
                    row
                    and take_from_ancestor
                    and self._compression_ancestor(conn, row[0], session_id)
                ):
                    # The title sits on an earlier segment of this conversation, hidden
                    # from the list: Hermes 0.19 moves it to the live segment.
                    conn.execute("UPDATE sessions SET title = NULL WHERE id = ?", (row[0],))
                elif row:
                    raise TitleInUse(title, row[0])
            conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, session_id))

        with self.lane.unit("rename"):
            self.w.run(fn)
        self.on_change()
        return title

    @staticmethod
    def _compression_ancestor(conn: sqlite3.Connection, ancestor: str, descendant: str) -> bool:
        """Is ``ancestor`` an earlier segment of ``descendant``'s compression chain (parents
        that ended 'compression', walked upwards)? Hermes's _is_compression_ancestor."""
        if not ancestor or ancestor == descendant:
            return False
        row = conn.execute(
            "WITH RECURSIVE up(id) AS (SELECT ? UNION SELECT parent.id FROM up JOIN sessions "
            "child ON child.id = up.id JOIN sessions parent ON parent.id = "
            "child.parent_session_id WHERE parent.end_reason = 'compression') "
            "SELECT 1 FROM up WHERE id = ? LIMIT 1",
            (descendant, ancestor),
        ).fetchone()
        return row is not None

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
        wait = {"wait_s": None, "job": job} if job is not None else {}
        with self.lane.unit("delete", **wait) as unit:
            if self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [session_id]) is None:
                # Already gone, or its interrupted removal was just finished: the retry succeeded.
                return Deleted([session_id] if session_id in unit.replayed else [])
            cascade = self.rules.delete_cascades
            doomed = [session_id, *(self.delegate_children([session_id]) if cascade else [])]
            limits = {sid: (None if upto is None else upto.get(sid, -1)) for sid in doomed}
            unit.intend(self._newest(limits))
            trimmed = [0]  # messages removed ahead of the final transaction, as they go
            batches = Batches(self.w, job=job)
            try:
                for sid, most in limits.items():
                    if most != -1:
                        trim(batches, self.r, sid, most, trimmed)
                deleted = self._final_delete(batches, session_id, cascade, upto, trimmed[0])
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
            if deleted and self.rules.removes_transcripts:
                # Hermes removes a deleted session's transcript files too; the entry stays
                # until they are gone, so a kill here is finished at the next start.
                deleted.files = sum(self.remove_transcripts(sid) for sid in deleted.ids)
        self.on_change()
        self.w.checkpoint()
        return deleted

    def _newest(self, limits: dict[str, int | None]) -> dict[str, int]:
        """The journal's intent for a removal: per session, the newest message id it may
        lose (None: all it has now; -1: none)."""
        ids = list(limits)
        tops = {
            r["sid"]: int(r["top"] or 0)
            for r in self.r.rows(
                f"SELECT session_id AS sid, MAX(id) AS top FROM messages WHERE session_id IN "
                f"({sql.in_list(len(ids))}) GROUP BY session_id",
                ids,
            )
        }
        return {
            sid: 0 if most == -1 else min(tops.get(sid, 0), most if most is not None else 1 << 62)
            for sid, most in limits.items()
        }

    def _final_delete(
        self,
        batches: Batches,
        session_id: str,
        cascade: bool,
        upto: dict[str, int] | None,
        trimmed: int,
    ) -> Deleted:
        """The one transaction that takes the session row, what is left of its messages and
        (Hermes 0.19) its delegate subagent runs."""

        def fn(conn: sqlite3.Connection) -> list[str]:
            if (
                conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
                is None
            ):
                return []
            children = self.delegate_children([session_id], conn) if cascade else []
            if upto is not None:
                self._check_unchanged(conn, [session_id, *children], upto, trimmed)
            if children:
                marks = sql.in_list(len(children))
                conn.execute(f"DELETE FROM messages WHERE session_id IN ({marks})", children)
                conn.execute(
                    f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id "
                    f"IN ({marks})",
                    children,
                )
                conn.execute(f"DELETE FROM sessions WHERE id IN ({marks})", children)
            conn.execute(
                "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?",
                (session_id,),
            )
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            return [session_id, *children]

        return Deleted(batches.once(fn))

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
        back from disk, then delete exactly what they hold (webui.db.backup). Raises
        BackupFailed or ChangedSinceBackup, having deleted nothing the backup lacks."""
        if self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [session_id]) is None:
            raise NotFound(f"No session has the id “{session_id}”.")
        return self._delete_into(session_id, exporter, backup.new_folder(root, session_id))

    def _delete_into(
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
        return transcripts.home_files(self.r.opened.path, session_id)

    def remove_transcripts(self, session_id: str) -> int:
        """Remove them (a link is removed, never what it points to); errors are skipped, as
        Hermes skips them. Returns how many went."""
        return transcripts.remove(self.transcript_files(session_id))

    # -- archive -----------------------------------------------------------------------------

    def set_archived(self, ids: list[str], archived: bool) -> tuple[int, int]:
        """Hermes 0.19's set_session_archived for each id: the session with its compression
        ancestors and its compression continuations, so a conversation is archived whole (an
        unarchived root would bring it back into the list). One short transaction per id.
        Returns (sessions matched, rows changed)."""
        lineage = (
            "WITH RECURSIVE ancestors(id) AS (SELECT ? UNION SELECT parent.id FROM ancestors a "
            "JOIN sessions child ON child.id = a.id JOIN sessions parent ON parent.id = "
            "child.parent_session_id WHERE parent.end_reason = 'compression'), "
            "descendants(id) AS (SELECT ? UNION SELECT child.id FROM descendants d JOIN "
            "sessions parent ON parent.id = d.id JOIN sessions child ON child.parent_session_id "
            "= parent.id WHERE parent.end_reason = 'compression'), "
            "lineage(id) AS (SELECT id FROM ancestors UNION SELECT id FROM descendants) "
            "UPDATE sessions SET archived = ? WHERE id IN (SELECT id FROM lineage) "
            "AND COALESCE(archived, 0) != ?"
        )
        matched = changed = 0
        for sid in ids:

            def fn(c: sqlite3.Connection, sid: str = sid) -> tuple[bool, int]:
                found = c.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone()
                c.execute(lineage, (sid, sid, int(archived), int(archived)))
                # changes(), not rowcount: Python's sqlite3 leaves rowcount at -1 for a
                # statement that starts with WITH (it once read "0 rows changed" here).
                n = c.execute("SELECT changes()").fetchone()[0]
                return found is not None, n

            with self.lane.unit("archive"):
                found, n = self.w.run(fn)
            matched += found
            changed += n
        self.on_change()
        return matched, changed
