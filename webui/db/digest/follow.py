"""The digest: what every message holds (its bytes, its tool calls and their outcomes, the
files it changed), kept in a file of its own in the instance folder and following state.db by
what changed, as the stats rollup does (webui/db/rollup.py), never by reading it again:

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

import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from webui import threads
from webui.db import fts_record, sql
from webui.db.digest.applying import Applier
from webui.db.digest.objects import Objects
from webui.db.digest.reading import Reading
from webui.db.digest.tables import (
    FIRST_BATCH,
    MAX_BATCH,
    MIN_BATCH,
    READ_TARGET_S,
    REWRITE_CHECK_MAX,
    SCHEMA,
    SESSIONS_PER_AUDIT_STEP,
    SESSIONS_PER_READ,
    VERSION,
    Coverage,
    chunks,
    has_meta,
)
from webui.db.errors import LogbookDBError, QueryTimeout
from webui.db.reader import Reader
from webui.db.schema import readonly_uri
from webui.hermes.file_changes import FILE_TOOLS
from webui.hermes.tool_results import generation

log = logging.getLogger(__name__)
# Background passes run one at a time (the live file's, then other profiles' and stores').
ONE_PASS = threading.Lock()
TABLES = ("sess", "bytes_month", "tool_use", "tool_day", "model_day", "failed_turns", "pending",
          "runs", "loops", "changes", "meta")  # fmt: skip


class Digest:
    def __init__(self, reader: Reader, path: Path, read_limit_s: float = 5.0):
        self.r = reader
        self.path = path
        self.read_limit_s = read_limit_s
        self.patience = 1.0
        self.read_target_s = min(READ_TARGET_S, read_limit_s / 2)
        self.lock = threading.Lock()
        self.reading = Reading(reader.schema, self._read)
        self.generation = generation(reader.schema.version)
        self._batch = FIRST_BATCH
        self._fts = fts_record.index_table(reader)
        self.longest_read_s = 0.0
        self.warming = False
        self.thread: threading.Thread | None = None
        self.objects = Objects(reader)
        self.objects.connect = self.connect
        self.refreshed_at: float | None = None  # when the digest last caught up with the file
        # Set while the start-up warmer reads the statistics first: the pass waits its turn.
        self.held = False

    # -- the digest's file -------------------------------------------------------------------

    def connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=5, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA synchronous = NORMAL")  # a cache: a crash costs a re-read
        version = (
            conn.execute("SELECT value FROM main.meta WHERE key = 'version'").fetchone()
            if has_meta(conn)
            else None
        )
        if version is None or version[0] != VERSION:
            conn.execute("PRAGMA journal_mode = WAL")  # kept by the file: readers beside the pass
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            ).fetchall():
                conn.execute(f"DROP TABLE IF EXISTS main.{name}")
            conn.executescript(SCHEMA)
        conn.execute(
            "ATTACH DATABASE ? AS st", (readonly_uri(self.r.opened.path, self.r.opened.immutable),)
        )
        return conn

    def meta(self, conn: sqlite3.Connection) -> dict[str, str]:
        return dict(conn.execute("SELECT key, value FROM main.meta").fetchall())

    @staticmethod
    def _set(conn: sqlite3.Connection, **values: Any) -> None:
        conn.executemany(
            "INSERT OR REPLACE INTO main.meta VALUES (?, ?)",
            [(k, str(v)) for k, v in values.items()],
        )

    def _reset(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN")
        for table in TABLES:
            conn.execute(f"DELETE FROM main.{table}")
        self._set(conn, version=VERSION, max_id=0, counted=0, sess_rowid=0, sess_n=0, fts_base=0)
        conn.execute("COMMIT")

    def _read(self, statement: str, params=(), raw: bool = True) -> list[dict[str, Any]]:
        """One statement on state.db (its own read transaction), timed; values as stored."""
        began = time.monotonic()

        def fetch(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            cur = conn.execute(statement, tuple(params))
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

        rows = self.r.run(fetch, time_limit_s=self.read_limit_s * self.patience)
        self.longest_read_s = max(self.longest_read_s, time.monotonic() - began)
        return rows

    # -- how far it got ----------------------------------------------------------------------

    def coverage(self) -> Coverage:
        conn = self.connect()
        try:
            meta = self.meta(conn)
        finally:
            conn.close()
        db_max = self.r.scalar("SELECT COALESCE(MAX(id), 0) FROM messages") or 0
        if meta.get("version") != VERSION:
            return Coverage(0, db_max, 0)
        return Coverage(int(meta["max_id"]), db_max, int(meta["counted"]), "audit_after" in meta)

    # -- bringing it up to date ---------------------------------------------------------------

    def warm(self, budget_s: float = 0.25, pause_s: float = 0.02) -> Coverage:
        """Read the whole history in short steps (a background thread), then measure the
        file's tables and indexes (webui.db.digest.objects), one at a time."""
        self.warming = True
        failures = 0
        try:
            while True:
                try:
                    cov = self.refresh(budget_s)
                    failures, self.patience = 0, 1.0
                except (LogbookDBError, sqlite3.Error) as exc:
                    failures += 1
                    if isinstance(exc, QueryTimeout) and self._batch <= MIN_BATCH and failures >= 2:
                        self.patience = min(self.patience * 4, 60.0 / max(self.read_limit_s, 1e-3))
                    self._batch = max(MIN_BATCH, self._batch // 4)
                    if failures >= 20:
                        raise
                    log.warning("the digest paused (%s); trying again", exc)
                    time.sleep(min(60.0, 0.5 * 2 ** min(failures, 4)))
                    continue
                if cov.complete:
                    break
                time.sleep(pause_s)
                threads.make_way(budget_s)
            while self.objects.step():
                time.sleep(pause_s)
                threads.make_way(budget_s)
            return cov
        finally:
            self.warming = False

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

    def refresh(self, budget_s: float = 0.4, wait: bool = True) -> Coverage:
        """Up to date, or as far as the budget allows; ``wait=False`` (a page): when the
        background pass is running, answer at once with how far it got."""
        if not wait and self.warming:
            return self.coverage()
        if not self.lock.acquire(blocking=wait):
            return self.coverage()
        try:
            return self._refresh(budget_s)
        finally:
            self.lock.release()

    def _refresh(self, budget_s: float) -> Coverage:
        deadline = time.monotonic() + budget_s
        conn = self.connect()
        try:
            meta = self.meta(conn)
            if meta.get("version") != VERSION:
                self._reset(conn)
            self._follow_sessions(conn, self.meta(conn))
            max_id = int(self.meta(conn)["max_id"])
            db_max = self.r.scalar("SELECT COALESCE(MAX(id), 0) FROM messages") or 0
            first = True
            while max_id < db_max and (first or time.monotonic() < deadline):
                first = False
                hi = min(max_id + self._batch, db_max)
                try:
                    self._add_range(conn, max_id, hi, last=hi == db_max)
                except QueryTimeout:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    if self._batch <= MIN_BATCH:
                        raise
                    self._batch = max(MIN_BATCH, self._batch // 4)
                    continue
                max_id = hi
            meta = self.meta(conn)
            if max_id >= db_max and "audit_after" not in meta and self._unexplained(meta):
                log.info("messages went away unexplained: the digest checks every session")
                self._set(conn, audit_after="")
                meta = self.meta(conn)
            while "audit_after" in meta and max_id >= db_max and time.monotonic() < deadline:
                self._audit_step(conn, meta)
                meta = self.meta(conn)
            cov = Coverage(max_id, db_max, int(meta["counted"]), "audit_after" in meta)
            if cov.complete:
                self.refreshed_at = time.time()
            return cov
        finally:
            conn.close()

    # -- sessions -----------------------------------------------------------------------------

    def _session_sql(self) -> str:
        s = self.r.schema
        model = "model" if s.has("sessions", "model") else "NULL"
        cwd = "cwd" if s.has("sessions", "cwd") else "NULL"
        repo = "git_repo_root" if s.has("sessions", "git_repo_root") else "NULL"
        return (
            f"rowid AS rid, id, started_at, source, {model} AS model, {cwd} AS cwd, "
            f"COALESCE(NULLIF({repo}, ''), NULLIF({cwd}, '')) AS workspace"
        )

    def _follow_sessions(self, conn: sqlite3.Connection, meta: dict[str, str]) -> None:
        seen_rowid, seen_n = int(meta.get("sess_rowid", 0)), int(meta.get("sess_n", 0))
        applier = Applier(conn, self.reading, self.generation)
        added = 0
        while True:
            rows = self._read(
                f"SELECT {self._session_sql()} FROM sessions WHERE rowid > ? ORDER BY rowid LIMIT ?",
                [seen_rowid, SESSIONS_PER_READ],
            )
            if len(rows) < SESSIONS_PER_READ:
                break
            conn.execute("BEGIN")
            added += applier.add_sessions(rows)
            seen_rowid = rows[-1]["rid"]
            self._set(conn, sess_rowid=seen_rowid)
            conn.execute("COMMIT")
        # The count and the last new rows in one statement: the same moment.
        both = self._read(
            "SELECT NULL AS rid, NULL AS id, NULL AS started_at, NULL AS source, NULL AS model, "
            "NULL AS cwd, NULL AS workspace, COUNT(*) AS n FROM sessions UNION ALL "
            f"SELECT {self._session_sql()}, NULL FROM sessions WHERE rowid > ?",
            [seen_rowid],
        )
        total, rows = both[0]["n"], both[1:]
        if total == seen_n and not rows and not added:
            return
        conn.execute("BEGIN")
        added += applier.add_sessions(rows)
        top = max([seen_rowid, *(r["rid"] for r in rows)])
        if total != seen_n + added:
            self._reconcile(conn, applier)
        self._set(conn, sess_rowid=top, sess_n=total)
        conn.execute("COMMIT")

    def _reconcile(self, conn: sqlite3.Connection, applier: Applier) -> None:
        """The sessions known against state.db's: the gone ones leave every table, the
        missing ones (a reused rowid) come in."""
        gone = [
            r[0]
            for r in conn.execute(
                "SELECT session_id FROM main.sess WHERE session_id NOT IN (SELECT id FROM st.sessions)"
            ).fetchall()
        ]
        if gone:
            counted = int(self.meta(conn)["counted"]) - applier.drop(gone, keep_session=False)
            self._set(conn, counted=counted)
        have = {r[0] for r in conn.execute("SELECT session_id FROM main.sess")}
        missing = [
            r
            for r in self._read(f"SELECT {self._session_sql()} FROM sessions")
            if r["id"] not in have
        ]
        applier.add_sessions(missing)

    def _unknown(self, conn: sqlite3.Connection, ids: set[str]) -> set[str]:
        have: set[str] = set()
        for part in chunks(sorted(ids)):
            have |= {
                r[0]
                for r in conn.execute(
                    f"SELECT session_id FROM main.sess WHERE session_id IN ({sql.in_list(len(part))})",
                    part,
                )
            }
        return ids - have

    def _session_rows(self, ids: set[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for part in chunks(sorted(ids)):
            out += self._read(
                f"SELECT {self._session_sql()} FROM sessions WHERE id IN ({sql.in_list(len(part))})",
                part,
            )
        return out

    def _note_sessions(self, conn: sqlite3.Connection, applier: Applier, rows: list[dict]) -> None:
        """Sessions that got messages: new ones in; one whose source, start or model changed
        is counted again (its figures move to another month, day or model); a changed folder
        is taken as it is."""
        if not rows:
            return
        applier.add_sessions(rows)
        kept: dict[str, Any] = {}
        for part in chunks([r["id"] for r in rows]):
            kept.update(
                (k[0], k[1:])
                for k in conn.execute(
                    "SELECT session_id, source, started_at, model, workspace, cwd FROM "
                    f"main.sess WHERE session_id IN ({sql.in_list(len(part))})",
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
                self._set(conn, counted=int(self.meta(conn)["counted"]) - n)
                applier.add_sessions([r])
                self._recount(conn, applier, r["id"], int(self.meta(conn)["max_id"]))
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

    @staticmethod
    def _apply(applier: Applier, read: tuple) -> int:
        """A read's messages into the digest; returns how many were counted (those of
        sessions state.db has: a message whose session row is missing is left out)."""
        sizes, calls, args, results = read
        counted = applier.sizes(sizes)
        applier.calls(calls, args)
        applier.results(results)
        return counted

    def _add_range(self, conn: sqlite3.Connection, lo: int, hi: int, last: bool) -> None:
        began = time.monotonic()
        read = self._read_messages("m.id > ? AND m.id <= ?", [lo, hi], range_scan=True)
        took = time.monotonic() - began
        rate = (hi - lo) / max(took / 3, 1e-4)  # three reads: each sized to the target
        self._batch = int(min(MAX_BATCH, max(MIN_BATCH, rate * self.read_target_s)))
        touched = {r["session_id"] for r in read[0]}
        rewritten = self._rewritten(conn, touched, lo) if last else []
        info = self._session_rows(touched if last else self._unknown(conn, touched))
        applier = Applier(conn, self.reading, self.generation)
        conn.execute("BEGIN")
        self._note_sessions(conn, applier, info)
        for sid in rewritten:
            self._recount(conn, applier, sid, lo)
        counted = int(self.meta(conn)["counted"]) + self._apply(applier, read)
        self._set(conn, max_id=hi, counted=counted)
        conn.execute("COMMIT")

    def _rewritten(self, conn: sqlite3.Connection, touched: set[str], lo: int) -> list[str]:
        before: dict[str, int] = {}
        for part in chunks(sorted(touched)):
            before.update(
                conn.execute(
                    "SELECT session_id, n FROM main.sess WHERE n > 0 AND session_id IN "
                    f"({sql.in_list(len(part))})",
                    part,
                ).fetchall()
            )
        if not before or len(before) > REWRITE_CHECK_MAX:
            return []
        now: dict[str, int] = {}
        for part in chunks(sorted(before)):
            now.update(
                (r["session_id"], r["n"])
                for r in self._read(
                    "SELECT session_id, COUNT(*) AS n FROM messages WHERE session_id IN "
                    f"({sql.in_list(len(part))}) AND id <= ? GROUP BY 1",
                    [*part, lo],
                )
            )
        return [sid for sid, n in before.items() if now.get(sid, 0) != n]

    def _recount(self, conn: sqlite3.Connection, applier: Applier, sid: str, upto: int) -> None:
        """One session read again, its messages up to ``upto`` (inside the caller's
        transaction)."""
        if not self._read("SELECT 1 AS x FROM sessions WHERE id = ?", [sid]):
            # gone from state.db (its rowid taken by another, so the count did not tell)
            gone = applier.drop([sid], keep_session=False)
            self._set(conn, counted=int(self.meta(conn)["counted"]) - gone)
            return
        gone = applier.drop([sid], keep_session=True)
        read = self._read_messages("m.session_id = ? AND m.id <= ?", [sid, upto], range_scan=False)
        counted = int(self.meta(conn)["counted"]) - gone + self._apply(applier, read)
        self._set(conn, counted=counted)

    # -- rows that went away unexplained ----------------------------------------------------------

    def _unexplained(self, meta: dict[str, str]) -> bool:
        row = self._read(
            f"SELECT {fts_record.averages_sql(self._fts)} AS avg, "
            "EXISTS (SELECT 1 FROM messages WHERE id > ?) AS waiting",
            [int(meta["max_id"])],
        )[0]
        total = fts_record.row_count(row["avg"])
        if total is None or row["waiting"]:
            return False
        return total - int(meta["counted"]) != int(meta.get("fts_base", 0))

    def _audit_step(self, conn: sqlite3.Connection, meta: dict[str, str]) -> None:
        after, upto = meta["audit_after"], int(meta["max_id"])
        counts = {
            r["session_id"]: r["n"]
            for r in self._read(
                "SELECT session_id, COUNT(*) AS n FROM messages WHERE session_id > ? AND id <= ? "
                "GROUP BY session_id ORDER BY session_id LIMIT ?",
                [after, upto, SESSIONS_PER_AUDIT_STEP],
            )
        }
        last = max(counts) if len(counts) >= SESSIONS_PER_AUDIT_STEP else None
        bound = "AND session_id <= ?" if last is not None else ""
        mine = dict(
            conn.execute(
                f"SELECT session_id, n FROM main.sess WHERE session_id > ? {bound} AND n > 0",
                [after, *([last] if last is not None else [])],
            ).fetchall()
        )
        known = set(mine) | (set(counts) - self._unknown(conn, set(counts)))
        differ = [s for s in known if counts.get(s, 0) != mine.get(s, 0)]
        applier = Applier(conn, self.reading, self.generation)
        conn.execute("BEGIN")
        for sid in differ:
            self._recount(conn, applier, sid, upto)
        if last is None:
            conn.execute("DELETE FROM main.meta WHERE key = 'audit_after'")
        else:
            self._set(conn, audit_after=last)
        conn.execute("COMMIT")
        if last is None:
            self._measure_base(conn)

    def _measure_base(self, conn: sqlite3.Connection) -> None:
        meta = self.meta(conn)
        row = self._read(
            f"SELECT {fts_record.averages_sql(self._fts)} AS avg, "
            "(SELECT COUNT(*) FROM messages WHERE id > ?) AS tail",
            [int(meta["max_id"])],
        )[0]
        total = fts_record.row_count(row["avg"])
        if total is not None:
            self._set(conn, fts_base=total - row["tail"] - int(meta["counted"]))
