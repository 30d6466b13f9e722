"""What the session store keeps between requests, each value in one line of the house's
one way to keep values (webui.keep): whole-table figures shared while no session appears or
goes, Hermes's chains, the sessions token. SessionStore holds one (``store.keeping``) over its
``keeper`` (one per store); Logbook's own changes drop them (Actions calls ``invalidate``)."""

from __future__ import annotations

import threading
from typing import Any

from webui import keep
from webui.db import deadline as request_deadline
from webui.db import sql
from webui.db.reader import Reader
from webui.db.sql import SESSION_FIGURES, decode_cursor, encode_cursor, is_cursor  # noqa: F401 - the list's cursor

# Figures that read every session row (counts, menus, facets): in-place edits by others (a
# title, an end) show within 10 s; when no session appeared or went, one up to a minute old is
# served while one background refresh works out the next (a crowd never rescans together).
SHARED = keep.Rule(fresh_s=10.0, stale_s=60.0)
# Hermes's compression chains: a new session or an end moves the sessions token at once.
CHAINS = keep.Rule(fresh_s=5.0, stale_s=60.0)
# Kept across restarts as well: the values the first page waits for that read every session
# row (3-4 s on a 16 GB file whose pages are not in the cache).
PERSISTED = frozenset({"chains", "models", "sources"})


def persisted(slot: str) -> bool:
    return slot in PERSISTED or slot.startswith("shared:")


def new_keeper(disk_dir=None) -> keep.Keeper:
    return keep.Keeper(request_deadline.remaining, disk_dir=disk_dir, persisted=persisted)


class SessionKeeping:
    """Kept values of a SessionStore: its Reader's figures, kept by its Keeper."""

    def __init__(self, reader: Reader, keeper: keep.Keeper):
        self.r = reader
        self.keeper = keeper
        # The sessions token as last read, under the file's data_version at that moment.
        self._token_kept = keeper.shelf(1, soft_clear=True)
        self._token_lock = threading.Lock()

    def invalidate(self, soft: bool = False) -> None:
        """After one of Logbook's own writes (``soft``: one batch of a prune still running;
        see keep.Keeper.changed)."""
        self.keeper.changed(soft)

    def kept(self, slot: str, mark: Any, compute, rule: keep.Rule = SHARED):
        return self.keeper.get(slot, mark, compute, rule)

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
            token = self._token_kept.get_or(
                "token",
                self.r.data_version(),
                lambda: (
                    self.r.one("SELECT COUNT(*) AS n, MAX(started_at) AS s FROM sessions") or {}
                ),
            )
            if holder is not None:
                holder[key] = token
        return token

    def shared(self, name: str, compute, rule: keep.Rule = SHARED):
        """``compute()``, shared under the sessions token (while no session appears or goes,
        and until Logbook's own next change) as ``rule`` says: for figures that scan every
        session row, which a gateway's steady appends hardly move."""
        token = self.sessions_token()
        return self.kept(f"shared:{name}", (token.get("n"), token.get("s")), compute, rule)

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
