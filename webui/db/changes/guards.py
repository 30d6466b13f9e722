"""Sessions Hermes is working on right now (0.22): a live turn lease on their conversation or a
compression lock on the session. Hermes 0.22 refuses to delete such a session and leaves it
out of a prune; a lease or lock whose holder expired or provably died is reclaimed (its row
deleted) on the way, as Hermes reclaims it, inside the caller's transaction
(webui.hermes.changes: the staleness rule and the conversation a lease is kept under)."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable

from webui.db.errors import LogbookDBError
from webui.hermes.changes import guard_is_stale, lease_key, own_pid_namespace


class ActiveSession(LogbookDBError):
    """0.22: a live turn lease or compression lock protects the session (or a delegate run
    going with it); nothing was deleted."""

    status = 409


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN "
            "('session_turn_leases', 'compression_locks')"
        )
    }


def guarded(conn: sqlite3.Connection, ids: Iterable[str]) -> set[str]:
    """Of ``ids``, those a live guard protects; stale guards met are deleted (they go with the
    caller's transaction, so a refusal that rolls back keeps them, as in Hermes)."""
    have = _tables(conn)
    if not have:
        return set()
    now = time.time()
    pid, namespace = os.getpid(), own_pid_namespace()

    def stale(row) -> bool:
        return guard_is_stale(row[0], row[1], now, own_pid=pid, own_namespace=namespace)

    def row_of(sid: str):
        r = conn.execute(
            "SELECT id, parent_session_id, source, model_config, end_reason FROM sessions "
            "WHERE id = ?",
            (sid,),
        ).fetchone()
        if r is None:
            return None
        keys = ("id", "parent_session_id", "source", "model_config", "end_reason")
        return dict(zip(keys, r, strict=True))

    out: set[str] = set()
    for sid in ids:
        if "compression_locks" in have:
            lock = conn.execute(
                "SELECT holder, expires_at FROM compression_locks WHERE session_id = ?", (sid,)
            ).fetchone()
            if lock is not None:
                if not stale(lock):
                    out.add(sid)
                    continue
                conn.execute(
                    "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?",
                    (sid, lock[0]),
                )
        if "session_turn_leases" in have:
            key = lease_key(sid, row_of)
            lease = conn.execute(
                "SELECT holder, expires_at FROM session_turn_leases WHERE conversation_id = ?",
                (key,),
            ).fetchone()
            if lease is not None:
                if not stale(lease):
                    out.add(sid)
                    continue
                conn.execute(
                    "DELETE FROM session_turn_leases WHERE conversation_id = ? AND holder = ?",
                    (key, lease[0]),
                )
    return out
