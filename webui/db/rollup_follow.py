"""How the rollup follows the sessions table and notices rows that went: sessions copied by
rowid in chunks, counted in the same snapshot, reconciled when the counts differ (a rowid
reused), dropped with their daily sums, and deletions the rollup cannot place sent to the
background audit. Rollup holds one (``rollup.following``), over its timed reads of state.db."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import Any

from webui.db import fts_record, sql
from webui.db.reader import Reader
from webui.db.rollup_schema import (
    DAY_OF,
    PER_SESSION,
    SESSIONS_PER_READ,
    _pick,
    meta_of,
    set_meta,
)


class TimedReads:
    """The rollup's reads of state.db: each its own read transaction under ``read_limit_s``
    times ``patience`` (which the start-up pass raises on a busy machine), the longest one
    remembered for the stats page."""

    def __init__(self, reader: Reader, read_limit_s: float):
        self.r = reader
        self.read_limit_s = read_limit_s
        # Grows when even the smallest read keeps running out of time (a busy machine, a cold
        # disk): the pass must move forward, if more slowly; back to 1 after a good step.
        self.patience = 1.0
        self.longest_read_s = 0.0  # the longest single read of state.db (a read transaction)

    def read(
        self, statement: str, params: Sequence[Any] = (), raw: bool = False
    ) -> list[dict[str, Any]]:
        """One statement on state.db (its own read transaction), timed. ``raw``: values as
        SQLite gives them (an FTS record is a BLOB; rows for pages are coerced to their
        columns' types, webui.db.values)."""
        began = time.monotonic()
        if raw:

            def fetch(conn: sqlite3.Connection) -> list[dict[str, Any]]:
                cur = conn.execute(statement, tuple(params))
                names = [d[0] for d in cur.description]
                return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

            rows = self.r.run(fetch, time_limit_s=self.read_limit_s * self.patience)
        else:
            rows = self.r.rows(statement, params, time_limit_s=self.read_limit_s * self.patience)
        self.longest_read_s = max(self.longest_read_s, time.monotonic() - began)
        return rows


class SessionFollowing:
    """The sessions side of Rollup: ``reads`` of state.db, ``fts`` its FTS index table."""

    def __init__(self, reads: TimedReads, fts: str | None):
        self.r = reads.r
        self._read = reads.read
        self._fts = fts

    def unexplained(self, conn: sqlite3.Connection, meta: dict[str, str]) -> bool:
        """Did rows go away that no batch explained? Read once the rollup has caught up: the
        FTS index's row count against the messages counted, in a moment when no message is
        waiting to be read (a rewritten transcript's new rows, not read yet, would make its
        deleted ones look unexplained). The difference measured after an audit (an index out
        of step with the table) is the one expected from then on."""
        max_id, counted = int(meta["max_id"]), int(meta["counted"])
        row = self._read(
            f"SELECT {fts_record.averages_sql(self._fts)} AS avg, "
            "EXISTS (SELECT 1 FROM messages WHERE id > ?) AS waiting",
            [max_id],
            raw=True,
        )[0]
        total = fts_record.row_count(row["avg"])
        if total is None or row["waiting"]:
            return False
        return total - counted != int(meta.get("fts_base", 0))

    def measure_base(self, conn: sqlite3.Connection) -> None:
        """After an audit the counts are exact: the index's difference from them, from now."""
        meta = meta_of(conn)
        row = self._read(
            f"SELECT {fts_record.averages_sql(self._fts)} AS avg, "
            "(SELECT COUNT(*) FROM messages WHERE id > ?) AS tail",
            [int(meta["max_id"])],
            raw=True,
        )[0]
        total = fts_record.row_count(row["avg"])
        if total is not None:
            set_meta(conn, fts_base=total - row["tail"] - int(meta["counted"]))

    def follow_sessions(self, conn: sqlite3.Connection, meta: dict[str, str]) -> None:
        """New sessions (rowids above the highest seen) into ``sess``; when the count says some
        went (or a rowid was reused), the lists are compared. One read gives both the count
        and the new rows, so they describe the same moment."""
        model = sql.col(self.r.schema, "model")
        seen_rowid, seen_n = int(meta.get("sess_rowid", 0)), int(meta.get("sess_n", 0))
        added = 0
        # A first copy (200,000 sessions on ten million messages) in chunks, each its own
        # short read; the last part comes with the count.
        while True:
            rows = self._read(
                f"SELECT rowid AS rid, id, started_at, source, {model} AS model FROM sessions "
                "WHERE rowid > ? ORDER BY rowid LIMIT ?",
                [seen_rowid, SESSIONS_PER_READ],
            )
            if len(rows) < SESSIONS_PER_READ:
                break
            conn.execute("BEGIN")
            added += self.add_sessions(conn, rows)
            seen_rowid = rows[-1]["rid"]
            conn.execute("COMMIT")
        rows = self._read(
            "SELECT NULL AS rid, NULL AS id, NULL AS started_at, NULL AS source, NULL AS model, "
            "COUNT(*) AS n FROM sessions UNION ALL "
            f"SELECT rowid, id, started_at, source, {model}, NULL FROM sessions WHERE rowid > ?",
            [seen_rowid],
        )
        total, new = rows[0]["n"], rows[1:]
        if total == seen_n and not new and not added:
            return
        conn.execute("BEGIN")
        added += self.add_sessions(conn, new)
        top = max([seen_rowid, *(r["rid"] for r in new)])
        if total != seen_n + added:
            self.reconcile_sessions(conn)
        set_meta(conn, sess_rowid=top, sess_n=total)
        conn.execute("COMMIT")

    def add_sessions(self, conn: sqlite3.Connection, rows: Iterable[dict[str, Any]]) -> int:
        """Sessions into ``sess`` (those already there left alone); the counts rolled up for
        them before they were known go into the daily sums. Returns how many were new."""
        rows = list(rows)
        if not rows:
            return 0
        _pick(conn, (r["id"] for r in rows))
        conn.execute("DELETE FROM temp.pick WHERE session_id IN (SELECT session_id FROM main.sess)")
        new = conn.execute("SELECT COUNT(*) FROM temp.pick").fetchone()[0]
        conn.executemany(
            "INSERT INTO main.sess (session_id, started_at, source, model) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [(r["id"], r["started_at"], r["source"], r["model"]) for r in rows],
        )
        self.date_and_add_picked(conn)
        return new

    def reconcile_sessions(self, conn: sqlite3.Connection) -> None:
        """Compare the sessions known with state.db's (one pass over the sessions' primary
        key): those gone leave every sum, those missing (a reused rowid) come in."""
        gone = [
            r[0]
            for r in conn.execute(
                "SELECT session_id FROM main.sess WHERE session_id NOT IN "
                "(SELECT id FROM st.sessions)"
            ).fetchall()
        ]
        if gone:
            self.drop(conn, gone, keep_session=False)
        model = sql.col(self.r.schema, "model")
        missing = conn.execute(
            f"SELECT id, started_at, source, {model} FROM st.sessions WHERE id NOT IN "
            "(SELECT session_id FROM main.sess)"
        ).fetchall()
        self.add_sessions(
            conn,
            ({"id": m[0], "started_at": m[1], "source": m[2], "model": m[3]} for m in missing),
        )

    def drop(self, conn: sqlite3.Connection, ids: Sequence[str], keep_session: bool) -> None:
        """Take these sessions' counts out of every sum (inside the caller's transaction)."""
        _pick(conn, ids)
        self.daily(conn, -1)
        n = conn.execute(
            "SELECT TOTAL(n) FROM main.roles WHERE session_id IN (SELECT session_id FROM temp.pick)"
        ).fetchone()[0]
        for table in PER_SESSION:
            conn.execute(
                f"DELETE FROM main.{table} WHERE session_id IN (SELECT session_id FROM temp.pick)"
            )
        if not keep_session:
            conn.execute(
                "DELETE FROM main.sess WHERE session_id IN (SELECT session_id FROM temp.pick)"
            )
        counted = int(meta_of(conn)["counted"]) - int(n)
        set_meta(conn, counted=counted)

    def date_and_add_picked(self, conn: sqlite3.Connection) -> None:
        """The sessions in temp.pick, their start just written: each one's day worked out
        from it, then their per-session rows added to the daily sums."""
        conn.execute(
            f"UPDATE main.sess SET day = {DAY_OF} "
            "WHERE session_id IN (SELECT session_id FROM temp.pick)"
        )
        self.daily(conn, +1)

    def daily(self, conn: sqlite3.Connection, sign: int) -> None:
        """Add (``sign`` +1) or take away (-1) the per-session rows of the sessions in
        temp.pick to or from the daily sums, by each session's day and source."""
        picked = "SELECT session_id FROM temp.pick"
        conn.execute(
            f"INSERT INTO main.tools_day SELECT s.day, t.tool_name, {sign} * SUM(t.n), 0 "
            f"FROM main.sess s JOIN main.tools t ON t.session_id = s.session_id "
            f"WHERE s.session_id IN ({picked}) AND s.day IS NOT NULL GROUP BY 1, 2 "
            "ON CONFLICT DO UPDATE SET results = results + excluded.results"
        )
        conn.execute(
            f"INSERT INTO main.tools_day SELECT s.day, c.tool_name, 0, {sign} * SUM(c.n) "
            f"FROM main.sess s JOIN main.calls c ON c.session_id = s.session_id "
            f"WHERE s.session_id IN ({picked}) AND s.day IS NOT NULL GROUP BY 1, 2 "
            "ON CONFLICT DO UPDATE SET entries = entries + excluded.entries"
        )
        conn.execute(
            f"INSERT INTO main.hours_day SELECT s.day, h.dow, h.hour, {sign} * SUM(h.n) "
            f"FROM main.sess s JOIN main.hours h ON h.session_id = s.session_id "
            f"WHERE s.session_id IN ({picked}) AND s.day IS NOT NULL AND h.dow IS NOT NULL "
            "AND h.hour IS NOT NULL GROUP BY 1, 2, 3 ON CONFLICT DO UPDATE SET n = n + excluded.n"
        )
        conn.execute(
            f"INSERT INTO main.source_messages SELECT IFNULL(s.source, '(none)'), {sign} * SUM(r.n) "
            f"FROM main.sess s JOIN main.roles r ON r.session_id = s.session_id "
            f"WHERE s.session_id IN ({picked}) GROUP BY 1 "
            "ON CONFLICT DO UPDATE SET n = n + excluded.n"
        )
        if sign < 0:
            conn.execute("DELETE FROM main.tools_day WHERE results = 0 AND entries = 0")
            conn.execute("DELETE FROM main.hours_day WHERE n = 0")
