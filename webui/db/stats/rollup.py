"""An incremental rollup of the messages table, kept in the instance folder.

Tool usage, the activity heatmap and exact messages-per-source need every message; scanning
ten million rows per page view would stall the page. The rollup stores per-session counts
(by role, by tool name, by weekday × hour) in its own SQLite file, keyed by the highest
message id it has seen, and follows the file by what changed, never by counting it again
(the walk is webui.db.following's engine; the tables, RollupLedger in rollup_ledger.py):

* new messages: ids above the highest seen (Hermes's ids are AUTOINCREMENT: never reused, so
  a range of ids is read once), in batches sized to take about READ_TARGET_S each, so no
  read transaction is long enough to hold back Hermes's WAL checkpoints;
* new sessions: rowids above the highest seen; sessions gone: the number of sessions is not
  the number known plus the new ones, so the two lists are compared (once, in the
  background, one pass over the sessions, not the messages);
* a transcript rewritten in place (Hermes's /retry, /undo, /compress delete a session's rows
  and insert the new ones): a session that gets new messages and was counted before has its
  older rows counted again through Hermes's (session_id, timestamp) index, one session;
* anything else deleted (another tool deleting rows of a session that gets nothing new): the
  FTS index's own row count (one record Hermes's triggers keep, read in O(1)) no longer
  matches the messages counted plus the new ones, and an audit compares every session's count
  with the rollup's, in steps of SESSIONS_PER_AUDIT_STEP sessions through that index.

The first pass over a file is made by a background thread from start-up (Logbook.warm); it
is resumable after a restart (the file keeps how far it got) and yields to pages between
batches. Nothing is ever written into state.db.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from webui.db.following import Follower, Reads, Via
from webui.db.reader import Reader
from webui.db.stats.rollup_ledger import RollupLedger
from webui.db.stats.rollup_panels import Panels
from webui.db.stats.rollup_schema import PACE, Coverage

__all__ = ["Coverage", "Rollup"]


class Rollup:
    """The rollup of one database: its ledger (the tables), the engine that follows state.db
    into it, and the panels that read it."""

    def __init__(self, reader: Reader, path: Path, read_limit_s: float = 5.0):
        self.r = reader
        self.path = path
        # Every read of state.db has this time limit (the app's query limit); a batch is
        # sized to take half of it at most.
        self.read_limit_s = read_limit_s
        self.reads = Reads(reader, read_limit_s)
        self.ledger = RollupLedger(reader, path, self.reads)
        self.follower = Follower(reader, self.ledger, self.reads, PACE)
        self.lock: threading.Lock = self.follower.lock
        # The panels open the file through this object's _connect (one place to count them).
        self.panels = Panels(reader, lambda: self._connect())

    def _connect(self) -> sqlite3.Connection:
        return self.ledger.connect()

    # -- the engine, read through the rollup -------------------------------------------------

    _batch = Via("follower", "batch")  # ids in the next read
    warming = Via("follower", "warming")  # the start-up pass runs: requests read no batches
    longest_read_s = Via("reads", "longest_s")  # the longest single read of state.db
    # How far it read, without waiting for a refresh under way (Follower.coverage); up to date
    # or as far as the budget allows, ``wait=False`` for a request (Follower.refresh).
    coverage = Via("follower", "coverage")
    refresh = Via("follower", "refresh")

    def warm(self, budget_s: float = 0.25, pause_s: float = 0.02) -> Coverage:
        """Read the whole history into the rollup in short steps (a background thread from
        start-up), so the first stats page finds it complete (webui.db.following)."""
        return self.follower.warm(budget_s, pause_s)

    # -- the panels -------------------------------------------------------------------------

    def reading(self):
        return self.panels.reading()

    def query(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        return self.panels.query(sql, params)

    def tools(self, where: str, params: list[Any], span=None) -> list[dict[str, Any]]:
        return self.panels.tools(where, params, span)

    def heatmap(
        self, where: str, params: list[Any], offset_s: int = 0, span=None
    ) -> list[dict[str, Any]]:
        return self.panels.heatmap(where, params, offset_s, span)

    def messages_by_source(self) -> list[dict[str, Any]]:
        return self.panels.messages_by_source()
