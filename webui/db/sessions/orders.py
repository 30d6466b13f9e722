"""List orders no index serves (last activity, tokens, cost, messages), worked out once per
filter and kept (webui.db.sessions.kept_order); when a gateway only appends messages, just the sessions
that got them are moved. SessionStore holds one (``store.orders``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webui.db import sql
from webui.db.reader import Reader
from webui.db.sessions.keeping import SessionKeeping
from webui.db.sessions.kept_order import KeptOrder
from webui.db.sessions.query import (
    APPENDED_MAX,
    ORDER_MAX_AGE_S,
    WALK_SHARE,
    SessionQuery,
)
from webui.db.sql import SESSION_FIGURES, decode_cursor, encode_cursor, is_cursor  # noqa: F401 - the list's cursor


class KeptOrders:
    """Pages in a kept order: ``keeping`` holds the orders and says when the file moved,
    ``chains`` is the store's walk of Hermes's compression chains."""

    def __init__(
        self, reader: Reader, keeping: SessionKeeping, chains: Callable[[], dict[str, list[str]]]
    ):
        self.r = reader
        self.shared = keeping.shared
        self.order_marks = keeping.order_marks
        self.chains = chains
        # Kept orders of the list, a prune's batches clear them too.
        self._order_cache = keeping.cache.versioned(8, purge_on_soft=True)

    def walk_started(self, q: SessionQuery) -> bool:
        """Newest first within common sources: walking the start-time index and testing each
        row's source stops after a page's worth (about limit / share rows read), where the
        source index would read every row of the source to sort them (a third of the table
        for 'cli'). Rare sources keep the source index. Sizes come from the source index
        alone (shared)."""
        if not q.sources or q.sort_key != "started":
            return False
        sizes = self.shared(
            "source-sizes",
            lambda: {
                r["source"]: r["n"]
                for r in self.r.rows("SELECT source, COUNT(*) AS n FROM sessions GROUP BY source")
            },
        )
        total = sum(sizes.values())
        return total > 0 and sum(sizes.get(src, 0) for src in q.sources) >= WALK_SHARE * total

    def page(
        self,
        q: SessionQuery,
        source: tuple[str, str, list[Any]],
        where: str,
        params: list[Any],
        key: str,
        direction: str,
    ) -> list[dict[str, Any]]:
        """Orders no index serves (last activity: one index seek per session; tokens, cost,
        message count: every wide session row read and sorted) are worked out once per
        filter and kept: the (key, id) list is reused until the database changes, and moved
        in place when messages were only appended (see _order_after_appends). Counters that
        Hermes updates without a message (tokens after a turn) may leave an order out by
        one turn for at most ORDER_MAX_AGE_S; the rows shown are always read fresh."""
        with_sql, from_sql, from_params = source
        token = self.order_marks()
        cache_key = (key, with_sql, from_sql, tuple(from_params), where, tuple(params), direction)
        # (mark, order, when ordered); an order of counters older than ORDER_MAX_AGE_S is
        # worked out again (last activity moves only with messages, which the mark sees).
        hit = self._order_cache.peek(
            cache_key, max_age=None if q.sort_key == "last_active" else ORDER_MAX_AGE_S
        )
        if hit is not None and hit[0] != token and _only_appended(hit[0], token):
            hit = self._order_after_appends(hit, token, source, where, params, key, q)
            if hit is not None:
                self._order_cache.set(cache_key, hit[1], hit[0], created=hit[2])
        if hit is None or hit[0] != token:
            statement = (
                f"{with_sql}SELECT {key} AS k, s.id AS id FROM {from_sql} WHERE {where} "
                f"ORDER BY k {direction}, s.id {direction}"
            )
            # Tuples as SQLite gives them: 200,000 dicts for a moment are 60 MB more.
            pairs = self.r.run(
                lambda raw: raw.execute(statement, [*from_params, *params]).fetchall()
            )
            order = self._order_cache.set(cache_key, KeptOrder(pairs, q.descending), token)
            return order.page(decode_cursor(q.after) if q.after else None, q.limit + 1)
        return hit[1].page(decode_cursor(q.after) if q.after else None, q.limit + 1)

    def _order_after_appends(self, hit, token, source, where, params, key, q):
        """A kept last-activity order brought up to date after messages were only appended
        (a live gateway's steady state): just the sessions that got them (and, in Hermes's
        rows, the compression roots they are the tip of) are read again and moved, instead
        of one index seek per session. None when too much changed: order afresh."""
        changed = {
            r["session_id"]
            for r in self.r.rows(
                # NOT INDEXED: a rowid range, where the planner would rather walk the whole
                # session index to get DISTINCT for free.
                "SELECT DISTINCT session_id FROM messages NOT INDEXED WHERE id > ? LIMIT ?",
                [hit[0][0], APPENDED_MAX + 1],
            )
        }
        if len(changed) > APPENDED_MAX:
            return None
        if q.conversations:
            tip_of = {chain[-1]: root for root, chain in self.chains().items()}
            changed |= {tip_of[i] for i in changed if i in tip_of}
        with_sql, from_sql, from_params = source
        fresh = []
        if changed:
            fresh = self.r.rows(
                f"{with_sql}SELECT s.id AS id, {key} AS k FROM {from_sql} WHERE {where} "
                f"AND s.id IN ({sql.in_list(len(changed))})",
                [*from_params, *params, *changed],
            )
        ordered = hit[1].without(changed)
        for r in fresh:
            ordered.insert(r["k"], r["id"])
        return (token, ordered, hit[2])


def _only_appended(old: tuple, new: tuple) -> bool:
    """Between two order_marks: messages were added and no session appeared or went."""
    return (
        old[1:] == new[1:]
        and isinstance(old[0], int)
        and isinstance(new[0], int)
        and new[0] > old[0]
    )
