"""Changes a user can make: rename, delete, prune. Hermes's semantics (reference §4–6), run
through the Writer in short transactions."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask import current_app

from webui import threads
from webui.db import backup, sql
from webui.db import deadline as request_deadline
from webui.db import selection as selection_sql
from webui.db.backup import Backup, ChangedSinceBackup
from webui.db.errors import DatabaseBusy, LogbookDBError
from webui.db.journal import Journal
from webui.db.reader import Reader
from webui.db.writer import (
    MESSAGE_BATCH,
    MESSAGE_BATCH_MAX,
    MESSAGE_BATCH_MIN,
    STATEMENTS_BUDGET_S,
    TARGET_TXN_S,
    TooSlow,
    Writer,
)
from webui.hermes.rules import Rules, rules_for
from webui.hermes.selection import Selection, describe
from webui.hermes.titles import sanitize_title

# At most this many messages go in the same transaction as their sessions' rows (Hermes's
# one-transaction delete); longer transcripts are trimmed to it first, in batches. A message
# costs ~0.15 ms to delete on the 1M-message file (both FTS indexes' triggers): 150 take
# ~25 ms alone. (60 was tried: the hostile benchmark's longest transactions did not shrink.)
ONE_TXN_MESSAGES = 150

# A prune or archive preview shows its sessions this many at a time (all reachable, in order).
PREVIEW_PAGE = 50


class NotFound(LogbookDBError):
    status = 404


class PartlyRemoved(LogbookDBError):
    """A removal stopped between its batches; the journal finishes it later."""

    status = 503


class BadCursor(LogbookDBError):
    status = 400

    def __init__(self) -> None:
        super().__init__("The preview's page cursor is not valid; start from the first page.")


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


class Actions:
    def __init__(
        self,
        reader: Reader,
        writer: Writer,
        on_change=lambda soft=False: None,
        journal: Journal | None = None,
    ):
        self.r = reader
        self.w = writer
        self.on_change = on_change  # caches of what was just changed are dropped
        self.jobs: dict[str, PruneJob] = {}
        self._jobs_lock = threading.Lock()
        self.journal = journal
        self.recovered: list[str] = []  # what resume_interrupted finished, said to the user
        self._resume_lock = threading.Lock()

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

    def delete(self, session_id: str, upto: dict[str, int] | None = None) -> Deleted:
        # Its transactions have budgets of their own; a long transcript's batches may outlast
        # the request's deadline, and stopping between them would leave the removal half done.
        with request_deadline.suspended():
            return self._delete(session_id, upto)

    def _delete(self, session_id: str, upto: dict[str, int] | None = None) -> Deleted:
        """Delete one session as the Hermes that wrote the database does. Hermes 0.19 (schema
        22): its delegate subagent runs go with it and the transcript files of every deleted
        session are removed from the Hermes home; other children are orphaned. Returns the
        ids deleted (empty when the session does not exist). A long transcript goes in batches
        first, so no single transaction holds the gateway off for long.

        ``upto`` (after a verified backup): the highest message id backed up per session. Only
        those messages are trimmed early, and the final transaction deletes nothing (raising
        ChangedSinceBackup) if any session got a newer message or a new subagent run."""
        finished = self._resume()[1]
        if self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [session_id]) is None:
            # Already gone, or its interrupted removal was just finished: the retry succeeded.
            return Deleted([session_id] if session_id in finished else [])
        cascade = self.rules.delete_cascades
        doomed = [session_id, *(self.delegate_children([session_id]) if cascade else [])]
        limits = {sid: (None if upto is None else upto.get(sid, -1)) for sid in doomed}
        entry = self._journal_open("delete", limits)
        trimmed = [0]  # messages removed ahead of the final transaction, counted as they go
        try:
            for sid, limit in limits.items():
                if limit != -1:
                    self._trim_messages(sid, limit, trimmed)
            deleted = self._final_delete(session_id, cascade, upto, trimmed[0])
        except ChangedSinceBackup:
            self._journal_close(entry)  # kept on purpose, and said so
            raise
        except LogbookDBError as exc:
            if not trimmed[0]:
                self._journal_close(entry)  # nothing was removed: nothing to finish later
                raise
            raise PartlyRemoved(
                f"{exc.message.split(';')[0]}, so removing {session_id} stopped part way: "
                f"{trimmed[0]:,} of its messages are gone and the session is still listed. "
                "Delete it again to finish (Logbook also finishes it at its next start)."
            ) from None
        if deleted and self.rules.removes_transcripts:
            # Hermes removes a deleted session's transcript files too; the journal entry
            # stays until they are gone, so a kill here is finished at the next start.
            deleted.files = sum(self.remove_transcripts(sid) for sid in deleted.ids)
        self._journal_close(entry)
        self.on_change()
        self.w.checkpoint()
        return deleted

    def _final_delete(
        self, session_id: str, cascade: bool, upto: dict[str, int] | None, trimmed: int
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

        return Deleted(self.w.run(fn))

    # -- the removal journal (webui/db/journal.py) -----------------------------------------

    def _journal_open(self, what: str, limits: dict[str, int | None]) -> Any:
        """Journal a removal before its first transaction, so that a kill at any point is
        finished at the next try or start: messages that went in an earlier transaction,
        the rows, and the transcript files that follow the rows. ``limits``: session -> the
        newest message id it may lose (None: all; -1: none)."""
        if self.journal is None or not limits:
            return None
        ids = list(limits)
        tops = {
            r["sid"]: int(r["top"] or 0)
            for r in self.r.rows(
                f"SELECT session_id AS sid, MAX(id) AS top FROM messages WHERE session_id IN "
                f"({sql.in_list(len(ids))}) GROUP BY session_id",
                ids,
            )
        }
        newest = {
            sid: 0
            if limit == -1
            else min(tops.get(sid, 0), limit if limit is not None else 1 << 62)
            for sid, limit in limits.items()
        }
        return self.journal.open(what, newest)

    def _journal_close(self, entry) -> None:
        if entry is not None and self.journal is not None:
            self.journal.close(entry)

    def resume_interrupted(self) -> list[str]:
        """Finish the removals the journal holds (cut short by a kill, a crash or a lock), or
        say why one is kept: a session that got a message after its removal began keeps what
        is left of it. Returns what was done, in sentences; they are also kept in
        ``recovered`` for the pages to show."""
        return self._resume()[0]

    def _resume(self) -> tuple[list[str], list[str]]:
        """resume_interrupted, also returning the sessions it removed."""
        notes: list[str] = []
        removed: list[str] = []
        if self.journal is None or self.w.refusal:
            return notes, removed
        with self._resume_lock:
            for entry in self.journal.pending():
                finished, kept = [], []
                try:
                    for sid, newest in entry.sessions.items():
                        if self._finish_removal(sid, newest):
                            finished.append(sid)
                        elif self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [sid]):
                            kept.append(sid)
                        elif self.rules.removes_transcripts:
                            # Its row went before the cut: the files that follow it.
                            self.remove_transcripts(sid)
                except LogbookDBError:
                    break  # still locked: the entry stays for the next try
                self.journal.close(entry)
                removed.extend(finished)
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.started))
                note = f"A {entry.what} begun at {when} had been cut short; "
                note += (
                    f"its removal of {len(finished)} session{'s' if len(finished) != 1 else ''}"
                    f" ({', '.join(finished[:5])}{', …' if len(finished) > 5 else ''}) "
                    "is now complete."
                    if finished
                    else "nothing more needed removing."
                )
                if kept:
                    note += (
                        f" Kept, because new messages arrived after the removal began: "
                        f"{', '.join(kept)} (the older part of their transcripts is gone)."
                    )
                notes.append(note)
        if notes:
            self.on_change()
            self.recovered.extend(notes)
        return notes, removed

    def _finish_removal(self, sid: str, newest: int) -> bool:
        """Remove what is left of one journaled session, unless it got a newer message."""
        if self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [sid]) is None:
            return False
        if self.r.scalar(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ?", [sid, newest]
        ):
            return False
        self._trim_messages(sid, newest)

        def fn(conn: sqlite3.Connection) -> bool:
            if conn.execute(
                "SELECT 1 FROM messages WHERE session_id = ? AND id > ?", (sid, newest)
            ).fetchone():
                return False
            conn.execute(
                "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?", (sid,)
            )
            conn.execute("DELETE FROM messages WHERE session_id = ?", (sid,))
            return conn.execute("DELETE FROM sessions WHERE id = ?", (sid,)).rowcount > 0

        done = self.w.run(fn)
        if done and self.rules.removes_transcripts:
            self.remove_transcripts(sid)
        return done

    def _trim_messages(
        self, session_id: str, upto_id: int | None = None, counter: list[int] | None = None
    ) -> int:
        """Delete a long transcript's messages ahead of the session, a batch per transaction,
        until one short transaction can take the rest. With ``upto_id``, only messages with
        ids up to it (the ones a backup holds). Returns how many went; ``counter[0]`` counts
        them as they go (so a failure part way still says how many)."""
        bound, params = ("", []) if upto_id is None else (" AND id <= ?", [upto_id])
        n = self.r.scalar(
            f"SELECT COUNT(*) FROM messages WHERE session_id = ?{bound}", [session_id, *params]
        )
        total = 0
        size = MESSAGE_BATCH
        slow = 0  # batches at the smallest size rolled back in a row
        while n > ONE_TXN_MESSAGES:
            used = size
            try:
                gone = self.w.run(
                    lambda c: (
                        c.execute(
                            "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE "
                            f"session_id = ?{bound} ORDER BY timestamp DESC, id DESC LIMIT ?)",
                            (session_id, *params, used),
                        ).rowcount
                    ),
                    give_up_after=_limit(used > MESSAGE_BATCH_MIN, slow),
                )
            except TooSlow:
                slow += used <= MESSAGE_BATCH_MIN
                size = max(MESSAGE_BATCH_MIN, used // 2)
                continue
            slow = 0
            if not gone:
                break
            size = _adapt(used, self.w.last_transaction_s, MESSAGE_BATCH_MIN, MESSAGE_BATCH_MAX)
            n -= gone
            total += gone
            if counter is not None:
                counter[0] += gone
        return total

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

    def _delete_into(self, session_id: str, exporter, folder: Path) -> tuple[Deleted, Backup]:
        cascade = self.rules.delete_cascades
        doomed = [session_id, *(self.delegate_children([session_id]) if cascade else [])]
        full = [r for r in (exporter.session_record(i, include_rewound=True) for i in doomed) if r]
        if not full or full[0]["id"] != session_id:
            raise NotFound(f"No session has the id “{session_id}”.")
        done = backup.write_and_verify(folder, full)
        deleted = self.delete(session_id, upto=backup.newest_message_ids(full))
        return deleted, done

    def transcript_files(self, session_id: str) -> list[Path]:
        """The files Hermes 0.19 removes with a session, inside this Hermes home only:
        ``sessions/<id>.json``, ``sessions/<id>.jsonl``, ``sessions/request_dump_<id>_*.json``.
        A sessions folder that is a link out of the home, or an id that is not a plain file
        name, gives nothing."""
        home = self.r.opened.path.parent
        folder = home / "sessions"
        if (
            not session_id
            or "/" in session_id
            or "\\" in session_id
            or session_id in (".", "..")
            or "\x00" in session_id
            or not folder.is_dir()
            or folder.is_symlink()
            or folder.resolve().parent != home.resolve()
        ):
            return []
        wanted = {f"{session_id}.json", f"{session_id}.jsonl"}
        dump = f"request_dump_{session_id}_"
        out = []
        try:
            for entry in os.scandir(folder):
                name = entry.name
                ours = name in wanted or (name.startswith(dump) and name.endswith(".json"))
                if ours and (entry.is_file(follow_symlinks=False) or entry.is_symlink()):
                    out.append(folder / name)
        except OSError:
            return []
        return out

    def remove_transcripts(self, session_id: str) -> int:
        """Remove them (a link is removed, never what it points to); errors are skipped, as
        Hermes skips them. Returns how many went."""
        n = 0
        for path in self.transcript_files(session_id):
            try:
                path.unlink()
                n += 1
            except OSError:
                pass
        return n

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

            found, n = self.w.run(fn)
            matched += found
            changed += n
        self.on_change()
        return matched, changed

    # -- prune -------------------------------------------------------------------------------

    def _rule(self, sel: Selection, alias: str = "sessions") -> tuple[str, list]:
        """Hermes's prune filter (webui.db.selection), ended sessions only."""
        return selection_sql.where(self.r.schema, sel, alias)

    def prune_preview(
        self, sel: Selection, limit: int = PREVIEW_PAGE, cursor: str | None = None
    ) -> dict[str, Any]:
        """Exactly what `hermes sessions prune <same filters>` would delete (its --dry-run):
        ended sessions matching every filter. Active sessions never. The summary and totals
        cover every session; ``sessions`` is one keyset page of them, oldest first."""
        where, params = self._rule(sel)
        cost = sql.cost(self.r.schema)
        tok = sql.tokens(self.r.schema)
        summary = (
            self.r.one(
                f"SELECT COUNT(*) AS count, {sql.total(tok)} AS tokens, "
                f"{sql.total(cost, integer=False)} AS cost, {sql.price_counts(self.r.schema)}, "
                "MIN(started_at) AS oldest, "
                f"MAX(started_at) AS newest, "
                f"{sql.total(sql.num(self.r.schema, 'message_count'))} AS messages "
                f"FROM sessions WHERE {where}",
                params,
            )
            or {}
        )
        page = self.selection_page(sel, cursor, limit, count=summary.get("count") or 0)
        cw, cp = self._rule(sel, "p")
        kw, kp = self._rule(sel, "c")
        title = "c.title" if self.r.schema.has("sessions", "title") else "NULL"
        orphans = self.r.rows(
            f"SELECT c.id AS id, {title} AS title, c.parent_session_id AS parent FROM sessions c JOIN sessions p ON "
            f"p.id = c.parent_session_id WHERE {cw} AND NOT ({kw}) ORDER BY c.started_at LIMIT 200",
            [*cp, *kp],
        )
        return {
            **summary,
            "selection": sel,
            "described": describe(sel),
            **page,
            "totals": self.selection_totals(sel) if summary.get("count") else {},
            "orphaned_children": orphans,
        }

    def selection_page(
        self,
        sel: Selection,
        cursor: str | None = None,
        limit: int = PREVIEW_PAGE,
        count: int | None = None,
    ) -> dict[str, Any]:
        """One page of the selected sessions, oldest first (the order `--dry-run` lists
        them in), after ``cursor``; with the position of its first row, the selection's
        ``count`` (counted here unless the caller knows it) and the next cursor. Keyset
        paging, so the last of 100,000 sessions costs what the first does."""
        where, params = self._rule(sel)
        if count is None:
            count = self.r.scalar(f"SELECT COUNT(*) FROM sessions WHERE {where}", params)
        s = self.r.schema
        key = "COALESCE(CAST(started_at AS REAL), 0)"
        before = 0
        if cursor:
            try:
                after = list(sql.decode_cursor(cursor))
            except Exception:  # noqa: BLE001 - decode_cursor words its error for the list
                raise BadCursor() from None
            before = self.r.scalar(
                f"SELECT COUNT(*) FROM sessions WHERE ({where}) AND ({key}, id) <= (?, ?)",
                [*params, *after],
            )
            where, params = f"({where}) AND ({key}, id) > (?, ?)", [*params, *after]
        title = "title" if s.has("sessions", "title") else "NULL"
        rows = self.r.rows(
            f"SELECT id, {title} AS title, source, {sql.col(s, 'model')} AS model, started_at, "
            f"{sql.col(s, 'ended_at')} AS ended_at, {key} AS _key, "
            f"{sql.num(s, 'message_count')} AS message_count, {sql.cost(s)} AS cost, "
            f"{sql.col(s, 'cost_status')} AS cost_status, "
            f"{sql.col(s, 'actual_cost_usd')} AS actual_cost_usd, "
            f"{sql.col(s, 'estimated_cost_usd')} AS estimated_cost_usd "
            f"FROM sessions WHERE {where} ORDER BY {key}, id LIMIT {int(limit) + 1}",
            params,
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "sessions": rows,
            "position": before,
            "count": count,
            "next_cursor": sql.encode_cursor(rows[-1]["_key"], rows[-1]["id"]) if more else None,
        }

    def selection_totals(self, sel: Selection, top: int = 8) -> dict[str, list[dict]]:
        """The selection by source, model and month it started: sessions, messages and cost
        in each, largest first; past ``top`` groups the rest are summed as one "other"."""
        where, params = self._rule(sel)
        s = self.r.schema
        groups = {
            "source": "COALESCE(source, '')",
            "model": f"COALESCE({sql.col(s, 'model')}, '')",
            "month": "COALESCE(strftime('%Y-%m', CAST(started_at AS REAL), 'unixepoch'), '')",
        }
        out: dict[str, list[dict]] = {}
        for name, expr in groups.items():
            # Months in order (a prune takes the oldest); sources and models largest first.
            order = "label" if name == "month" else "sessions DESC, label"
            cap = 3 * top if name == "month" else top
            rows = self.r.rows(
                f"SELECT {expr} AS label, COUNT(*) AS sessions, "
                f"{sql.total(sql.num(s, 'message_count'))} AS messages, "
                f"{sql.total(sql.cost(s), integer=False)} AS cost, {sql.price_counts(s)} "
                f"FROM sessions WHERE {where} "
                f"GROUP BY 1 ORDER BY {order}",
                params,
            )
            if len(rows) > cap:
                rest = rows[cap - 1 :]
                rows = [
                    *rows[: cap - 1],
                    {
                        "label": f"{len(rest)} {'later months' if name == 'month' else 'others'}",
                        "other": True,
                        "sessions": sum(r["sessions"] for r in rest),
                        "messages": sum(r["messages"] or 0 for r in rest),
                        "cost": sum(r["cost"] or 0 for r in rest),
                        "included_sessions": sum(r["included_sessions"] or 0 for r in rest),
                        "unpriced_sessions": sum(r["unpriced_sessions"] or 0 for r in rest),
                    },
                ]
            out[name] = rows
        return out

    def prune_ids(self, sel: Selection) -> list[str]:
        """The ids `hermes sessions prune --dry-run` lists, oldest first as it lists them."""
        where, params = self._rule(sel)
        return [
            r["id"]
            for r in self.r.rows(
                f"SELECT id FROM sessions WHERE {where} ORDER BY started_at, id",
                params,
                time_limit_s=60,
            )
        ]

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
                                give_up_after=_limit(size > MESSAGE_BATCH_MIN, slow),
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
                        msg_batch = _adapt(
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
                            give_up_after=_limit(whole_at > 0 and pending > 0, slow),
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
                batch = _adapt(batch, took, 1, 100)
                self.w.checkpoint()
        except Exception as exc:  # noqa: BLE001 - reported to the user through the job
            if entry is not None and not trimmed:
                # This batch changed nothing yet: nothing of it is left to finish.
                self._journal_close(entry)
                entry = None
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


# A prune waits this long in a row for a gateway that holds the write lock before it stops,
# pausing up to LOCK_PAUSE_MAX_S between tries.
LOCK_PATIENCE_S = 600.0
LOCK_PAUSE_MAX_S = 5.0

# A batch that cannot be cut smaller is still tried this many times under the time limit (a
# busy core or a merge passes) before it runs to the end: the work must make progress.
SMALLEST_TRIES = 3


def _limit(cut: bool, slow: int) -> float | None:
    """The statements' time limit for a batch that can still be cut smaller, or whose
    smallest size has not yet been rolled back SMALLEST_TRIES times in a row."""
    return STATEMENTS_BUDGET_S if cut or slow < SMALLEST_TRIES else None


def _adapt(size: int, took: float, lo: int, hi: int) -> int:
    """Grow a batch while transactions stay fast, shrink it when one gets slow."""
    if took < TARGET_TXN_S / 2:
        return min(hi, max(size + 1, size * 3 // 2))
    if took > TARGET_TXN_S:
        return max(lo, size // 2)
    return size
