"""What the session store caches between requests, each value under one of webui.keep's
policies: whole-table figures shared while no session appears or goes, Hermes's chains, the
sessions token. SessionStore holds one (``store.keeping``) over its ``cache`` (a
keep.StoreCache, one per store); Logbook's own changes drop them (Actions calls ``invalidate``)."""

from __future__ import annotations

import threading
from typing import Any

from webui import keep
from webui.db import deadline as request_deadline
from webui.db import sql
from webui.db.reader import Reader
from webui.db.sql import SESSION_FIGURES, decode_cursor, encode_cursor, is_cursor  # noqa: F401 - the list's cursor

# Figures that read every session row (counts, menus, facets) and Hermes's compression chains
# (webui.keep_inventory says how long each may lag).
SHARED = keep.SHARED_FIGURES
CHAINS = keep.CHAINS
# Kept across restarts as well: the values the first page waits for that read every session
# row (3-4 s on a 16 GB file whose pages are not in the cache).
PERSISTED = frozenset({"chains", "models", "sources"})


def persisted(key: str) -> bool:
    return key in PERSISTED or key.startswith("shared:")


def new_store_cache(persist_dir=None) -> keep.StoreCache:
    return keep.StoreCache(request_deadline.remaining, persist_dir=persist_dir, persisted=persisted)


class SessionKeeping:
    """Cached values of a SessionStore: its Reader's figures, kept in its StoreCache."""

    def __init__(self, reader: Reader, cache: keep.StoreCache):
        self.r = reader
        self.cache = cache
        # The sessions token as last read, under the file's data_version at that moment.
        self._token_kept = cache.versioned(1, purge_on_soft=True)
        self._token_lock = threading.Lock()

    def invalidate(self, soft: bool = False) -> None:
        """After one of Logbook's own writes (``soft``: one batch of a prune still running;
        a soft purge: see keep.StoreCache.invalidate)."""
        self.cache.invalidate(soft)

    def cached(self, key: str, version: Any, compute, policy: keep.Policy = SHARED):
        return self.cache.fetch(key, version, compute, policy)

    def order_marks(self) -> tuple[Any, Any, Any]:
        """(newest message id, number of sessions, newest start): moves whenever a message is
        added or a session appears or goes; cheap (a rowid maximum, and the sessions token
        this request has already read)."""
        token = self.sessions_token()
        return (self.r.scalar("SELECT MAX(id) FROM messages"), token.get("n"), token.get("s"))

    def shared_statement(self, statement: str, params: list[Any], run):
        """A count over the whole table (Hermes's rows read every row's parent link and
        markers), shared by the requests of the next seconds while no session appears or
        goes. Counts are a guide; the rows themselves are always read fresh."""
        return self.shared(f"{statement}:{params!r}", lambda: run(statement, params))

    def sessions_token(self) -> dict[str, Any]:
        """How many sessions there are and the newest start: read once per request (a page
        asks for several shared figures; on schema 22 each read costs over a millisecond)."""
        holder = request_deadline.memo()
        key = f"_sessions_token_{id(self)}"
        if holder is not None and key in holder:
            return holder[key]
        # One reader at a time: a page's queries run side by side (threads.Beside) and would
        # each count after a commit.
        with self._token_lock:
            if holder is not None and key in holder:
                return holder[key]
            # Nobody has committed since it was last read (data_version reads no page): the
            # same token, without counting every session's index entry again.
            token = self._token_kept.get_or_set(
                "token",
                self.r.data_version(),
                lambda: (
                    self.r.one("SELECT COUNT(*) AS n, MAX(started_at) AS s FROM sessions") or {}
                ),
            )
            if holder is not None:
                holder[key] = token
        return token

    def shared(self, name: str, compute, policy: keep.Policy = SHARED):
        """``compute()``, shared under the sessions token (while no session appears or goes,
        and until Logbook's own next change) as ``policy`` says: for figures that scan every
        session row, which a gateway's steady appends hardly move."""
        token = self.sessions_token()
        return self.cached(f"shared:{name}", (token.get("n"), token.get("s")), compute, policy)

    def change_token(self) -> str:
        """Cheap: MAX over two rowid/index orders and a count of live sessions."""
        row = (
            self.r.one(
                "SELECT (SELECT MAX(id) FROM messages) AS m, (SELECT MAX(started_at) FROM sessions) "
                f"AS s, (SELECT COUNT(*) FROM sessions WHERE {sql.col(self.r.schema, 'ended_at', 'sessions', 'sessions')} IS NULL) "
                "AS live"
            )
            or {}
        )
        return f"{row.get('m')}-{row.get('s')}-{row.get('live')}"
