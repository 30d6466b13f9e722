"""Work the journal holds (webui/db/journal.py): opening an entry before a multi-transaction
change, and finishing or undoing one that was cut short (killed, a power cut, a lock held past
the retries). A mixin of Actions, which holds the reader, the writer and the journal.

A removal ("delete", "prune") cut short is finished: what is left of each session goes, unless
it got a newer message since (then it is kept, and named). A move back from cold storage
("return") cut short is undone: the messages it had copied into the live file, owned by no
session there, go again; the archive still holds the conversation whole.

Entries are claimed one at a time and let go at once, so a resume never holds work it is not
doing; an entry someone else holds (another thread or Logbook process working on it) is left
alone."""

from __future__ import annotations

import time
from typing import Any

from webui.db import sql
from webui.db.errors import DatabaseBusy, LogbookDBError
from webui.db.journal import Entry
from webui.db.writer import MESSAGE_BATCH

SETTLE_WAIT_S = 30.0  # a move back waits this long for work on its sessions held elsewhere


class Resuming:
    # -- opening ------------------------------------------------------------------------------

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

    def _journal_release(self, entry) -> None:
        """The removal stopped part way (a lock, an error): the next resume finishes it."""
        if entry is not None and self.journal is not None:
            self.journal.release(entry)

    # -- resuming -----------------------------------------------------------------------------

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
            for path in self.journal.candidates():
                entry = self.journal.claim(path)
                if entry is None:
                    continue  # worked on elsewhere right now, or gone
                if entry.what == "return" and set(entry.sessions) & self.journal.held_sessions(
                    [entry]
                ):
                    self.journal.release(entry)  # moved back again right now: that move undoes it
                    continue
                try:
                    note, gone = self._settle(entry)
                except LogbookDBError:
                    self.journal.release(entry)
                    break  # still locked: the entry stays for the next try
                except BaseException:
                    self.journal.release(entry)
                    raise
                self.journal.close(entry)
                notes.append(note)
                removed.extend(gone)
        if notes:
            self.on_change()
            self.recovered.extend(notes)
        return notes, removed

    def _settle(self, entry: Entry) -> tuple[str, list[str]]:
        """Finish (a removal) or undo (a move back) one claimed entry: what was done, in a
        sentence, and the sessions it removed."""
        if entry.what == "return":
            return self._undo_return(entry), []
        finished, kept = [], []
        for sid, newest in entry.sessions.items():
            if self._finish_removal(sid, newest):
                finished.append(sid)
            elif self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [sid]):
                kept.append(sid)
            elif self.rules.removes_transcripts:
                # Its row went before the cut: the files that follow it.
                self.remove_transcripts(sid)
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
        return note, finished

    def settle_before_return(self, own: Entry) -> None:
        """A move back of ``own``'s sessions has just been journaled and copied nothing yet.
        Whatever else the journal holds for those sessions is settled first: a removal cut
        short is finished (a move out killed while deleting them: the archive holds the
        verified copy, and the move back then brings them in whole; left for later, it would
        delete them again after the archive let them go), an earlier move back cut short is
        undone. Work on them held elsewhere is waited for, up to SETTLE_WAIT_S; only entries
        older than ``own`` are waited for, so two moves never wait on each other."""
        gives_up = time.monotonic() + SETTLE_WAIT_S
        while others := [
            p for p in self.journal.others_of(set(own.sessions), own) if p.name < own.path.name
        ]:
            progressed = False
            for path in others:
                entry = self.journal.claim(path)
                if entry is None:
                    continue
                try:
                    note, _gone = self._settle(entry)
                except BaseException:
                    self.journal.release(entry)
                    raise
                self.journal.close(entry)
                self.recovered.append(note)
                progressed = True
            if progressed:
                self.on_change()
                continue
            if time.monotonic() > gives_up:
                raise DatabaseBusy(
                    "Another change to this conversation is still under way; nothing was moved. "
                    "Try again in a minute."
                )
            time.sleep(0.05)

    def _undo_return(self, entry: Entry) -> str:
        """A move back from cold storage cut short before its session rows entered the live
        file: the messages it had copied belong to no session there; they go again, in short
        transactions, each checking that the session row is still absent. A conversation
        whose rows did arrive stays (the archive's copy goes at the next move back)."""
        taken = 0
        for sid in entry.sessions:
            while True:
                gone = self.w.run(
                    lambda c, sid=sid: (
                        c.execute(
                            "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE "
                            "session_id = ? AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = ?) "
                            "LIMIT ?)",
                            (sid, sid, MESSAGE_BATCH),
                        ).rowcount
                    )
                )
                if not gone:
                    break
                taken += gone
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.started))
        n = len(entry.sessions)
        return f"A move back from cold storage begun at {when} had been cut short; " + (
            f"the {taken} message{'s' if taken != 1 else ''} it had copied into the live file "
            f"were taken out again (the archive still holds the conversation of {n} "
            f"session{'s' if n != 1 else ''} whole: move it back again)."
            if taken
            else "nothing of it was left half done."
        )

    def _finish_removal(self, sid: str, newest: int) -> bool:
        """Remove what is left of one journaled session, unless it got a newer message."""
        if self.r.one("SELECT 1 AS x FROM sessions WHERE id = ?", [sid]) is None:
            return False
        if self.r.scalar(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ?", [sid, newest]
        ):
            return False
        self._trim_messages(sid, newest)

        def fn(conn) -> bool:
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
