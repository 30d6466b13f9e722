"""The digest: what every message holds (its bytes, its tool calls and their outcomes, the
files it changed), kept in a file of its own in the instance folder and following state.db by
what changed with the stats rollup's engine (webui.db.following; the digest's tables are
DigestLedger here), never by reading it again:

* new messages: ids above the highest read (Hermes's ids are never reused), in batches sized
  to take about READ_TARGET_S, each read its own short read transaction;
* new sessions by rowid; sessions gone (a delete, a prune, cold storage) when the number of
  sessions is not the number known plus the new ones: the lists are compared and the gone
  ones taken out of every table;
* a transcript rewritten in place (Hermes's /retry, /undo, /compress): a session that gets new
  messages and holds fewer rows than were read is read again, alone;
* anything else deleted: the FTS index's own row count no longer matches the messages read,
  and an audit compares every session's count, SESSIONS_PER_AUDIT_STEP sessions a step.

The first pass runs in a background thread (from start-up for the primary database, on first
use for other profiles and stores), resumable after a restart, stepping aside for pages. Pages
answer from what it has read and say how far it got. Nothing is ever written into state.db.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from webui import threads
from webui.db import sql as sqlh
from webui.db.digest.applying import Applier
from webui.db.digest.objects import Objects
from webui.db.digest.reading import Reading
from webui.db.digest.tables import PACE, SCHEMA, VERSION, Coverage
from webui.db.following import Follower, Reads, Via
from webui.db.ledger_file import chunks, known, meta, open_own_file, sessions_gone, set_meta
from webui.db.reader import Reader
from webui.hermes.file_changes import FILE_TOOLS
from webui.hermes.tool_results import generation

# Background passes run one at a time (the live file's, then other profiles' and stores').
ONE_PASS = threading.Lock()
TABLES = ("sess", "bytes_month", "tool_use", "tool_day", "model_day", "failed_turns", "pending",
          "runs", "loops", "changes", "meta")  # fmt: skip


class Digest:
    """The digest of one database: its ledger (the tables), the engine that follows state.db
    into it, and the measure of its file's objects."""

    def __init__(self, reader: Reader, path: Path, read_limit_s: float = 5.0):
        self.r = reader
        self.path = path
        self.read_limit_s = read_limit_s
        self.reads = Reads(reader, read_limit_s)
        self.ledger = DigestLedger(reader, path, self.reads)
        self.follower = Follower(reader, self.ledger, self.reads, PACE)
        self.lock: threading.Lock = self.follower.lock
        self.reading = self.ledger.reading
        self.generation = self.ledger.generation
        self.thread: threading.Thread | None = None
        self.objects = Objects(reader, self.ledger.connect)
        # Set while the start-up warmer reads the statistics first: the pass waits its turn.
        self.held = False

    def connect(self) -> sqlite3.Connection:
        return self.ledger.connect()

    def meta(self, conn: sqlite3.Connection) -> dict[str, str]:
        return meta(conn)

    # -- the engine's state, read through the digest ----------------------------------------

    _batch = Via("follower", "batch")  # ids in the next read
    warming = Via("follower", "warming")  # the background pass runs
    refreshed_at = Via("follower", "refreshed_at")  # when it last caught up with the file
    longest_read_s = Via("reads", "longest_s")  # the longest single read of state.db
    coverage = Via("follower", "coverage")  # how far it read (Follower.coverage)
    refresh = Via("follower", "refresh")  # up to date, as far as a budget allows

    # -- bringing it up to date ---------------------------------------------------------------

    def warm(self, budget_s: float = 0.25, pause_s: float = 0.02) -> Coverage:
        """Read the whole history in short steps (a background thread), then measure the
        file's tables and indexes (webui.db.digest.objects), one at a time."""
        return self.follower.warm(budget_s, pause_s, then=self.objects.step)

    def ensure_warming(self, app) -> None:
        """Start the background pass if it is not complete and no thread runs it (pages of
        other profiles and stores start theirs on first use)."""
        if not app.config.get("LOGBOOK_ROLLUP_WARM") or app.testing or self.held:
            return
        if self.thread is not None and self.thread.is_alive():
            return

        def work() -> None:
            with app.app_context(), ONE_PASS:  # one store's pass at a time: the cores are few
                try:
                    self.warm()
                except Exception:  # noqa: BLE001 - pages refresh it themselves anyway
                    app.logger.exception("the digest could not be built in the background")

        self.thread = threads.start(work, f"digest-{self.path.stem}")


class DigestLedger:
    """The digest's tables (webui.db.digest.tables) as the following engine keeps them: what a
    batch of messages adds (through an Applier, inside the engine's transaction), what a
    session that went or changed takes out."""

    version = VERSION
    tables = TABLES
    raw = True  # values as stored: sizes are measured on them

    def __init__(self, reader: Reader, path: Path, reads: Reads):
        self.r = reader
        self.path = path
        self._read = functools.partial(reads, raw=True)
        self.reading = Reading(reader.schema, self._read)
        self.generation = generation(reader.schema.version)

    def connect(self) -> sqlite3.Connection:
        return open_own_file(self.path, self.r.opened, VERSION, SCHEMA)

    def _applier(self, conn: sqlite3.Connection) -> Applier:
        return Applier(conn, self.reading, self.generation)

    # -- sessions -----------------------------------------------------------------------------

    def session_columns(self) -> list[tuple[str, str]]:
        s = self.r.schema
        model, cwd, repo = (sqlh.col(s, c) for c in ("model", "cwd", "git_repo_root"))
        return [("id", "id"), ("started_at", "started_at"), ("source", "source"),
                ("model", model), ("cwd", cwd),
                ("workspace", f"COALESCE(NULLIF({repo}, ''), NULLIF({cwd}, ''))")]  # fmt: skip

    def add_sessions(self, conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> int:
        return self._applier(conn).add_sessions(rows)

    def reconcile(self, conn: sqlite3.Connection) -> None:
        """The sessions known against state.db's: the gone ones leave every table, the
        missing ones (a reused rowid) come in."""
        applier = self._applier(conn)
        gone = sessions_gone(conn)
        if gone:
            counted = int(meta(conn)["counted"]) - applier.drop(gone, keep_session=False)
            set_meta(conn, counted=counted)
        have = {r[0] for r in conn.execute("SELECT session_id FROM main.sess")}
        columns = ", ".join(f"{sql} AS {name}" for name, sql in self.session_columns())
        missing = [r for r in self._read(f"SELECT {columns} FROM sessions") if r["id"] not in have]
        applier.add_sessions(missing)

    def note_sessions(self, conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
        """Sessions that got messages: new ones in; one whose source, start or model changed
        is counted again (its figures move to another month, day or model); a changed folder
        is taken as it is."""
        if not rows:
            return
        applier = self._applier(conn)
        applier.add_sessions(rows)
        kept: dict[str, tuple] = {}
        for part in chunks([r["id"] for r in rows]):
            kept.update(
                (k[0], k[1:])
                for k in conn.execute(
                    "SELECT session_id, source, started_at, model, workspace, cwd FROM "
                    f"main.sess WHERE session_id IN ({sqlh.in_list(len(part))})",
                    part,
                )
            )
        for r in rows:
            old = kept.get(r["id"])
            now = (r["source"], r["started_at"], r["model"], r["workspace"], r["cwd"])
            if old is None or tuple(old) == now:
                continue
            if tuple(old[:3]) != now[:3]:
                n = applier.drop([r["id"]], keep_session=False)
                set_meta(conn, counted=int(meta(conn)["counted"]) - n)
                applier.add_sessions([r])
                self.recount(conn, r["id"], int(meta(conn)["max_id"]))
            else:
                conn.execute(
                    "UPDATE main.sess SET workspace = ?, cwd = ? WHERE session_id = ?",
                    (r["workspace"], r["cwd"], r["id"]),
                )

    # -- messages -----------------------------------------------------------------------------

    def _read_messages(self, where: str, params: list[Any], range_scan: bool) -> tuple:
        sizes = self.reading.sizes(where, params)
        calls = self.reading.calls(where, params, range_scan)
        wanted = [c for c in calls if c["tool"] in FILE_TOOLS]
        args = self.reading.file_arguments(wanted)
        results = self.reading.results(where, params)
        return sizes, calls, args, results

    def read_range(self, lo: int, hi: int) -> tuple[tuple, set[str], float]:
        """Messages with ids in (lo, hi], the sessions they touch, and the time of one of the
        batch's three reads (each sized to the target)."""
        began = time.monotonic()
        read = self._read_messages("m.id > ? AND m.id <= ?", [lo, hi], range_scan=True)
        return read, {r["session_id"] for r in read[0]}, (time.monotonic() - began) / 3

    def apply(self, conn: sqlite3.Connection, read: tuple) -> int:
        """A read's messages into the digest; returns how many were counted (those of
        sessions state.db has: a message whose session row is missing is left out)."""
        applier = self._applier(conn)
        sizes, calls, args, results = read
        counted = applier.sizes(sizes)
        applier.calls(calls, args)
        applier.results(results)
        return counted

    def counts(self, conn: sqlite3.Connection, where: str, params: list) -> dict[str, int]:
        """Messages counted per session, of the sessions ``where`` picks."""
        return dict(
            conn.execute(
                f"SELECT session_id, n FROM main.sess WHERE {where} AND n > 0", params
            ).fetchall()
        )

    def kept(self, conn: sqlite3.Connection, ids: set[str]) -> set[str]:
        """Only the messages of sessions the digest knows are counted."""
        return known(conn, ids)

    def recount(self, conn: sqlite3.Connection, sid: str, upto: int) -> None:
        """One session read again, its messages up to ``upto`` (inside the caller's
        transaction)."""
        applier = self._applier(conn)
        if not self._read("SELECT 1 AS x FROM sessions WHERE id = ?", [sid]):
            # gone from state.db (its rowid taken by another, so the count did not tell)
            gone = applier.drop([sid], keep_session=False)
            set_meta(conn, counted=int(meta(conn)["counted"]) - gone)
            return
        gone = applier.drop([sid], keep_session=True)
        read = self._read_messages("m.session_id = ? AND m.id <= ?", [sid, upto], range_scan=False)
        counted = int(meta(conn)["counted"]) - gone + self.apply(conn, read)
        set_meta(conn, counted=counted)
