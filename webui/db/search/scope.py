"""Search hits narrowed by what the index does not hold: a source (through the source map,
walking the index newest first), a session or chat's id range, dates and roles; each filter's
hits checked against the messages table in bounded batches. SearchStore holds one
(``search.scope``)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from webui.db import sql
from webui.db.search.basics import SearchBasics
from webui.db.search.limits import (
    HIDDEN_MAX,
    OVERFETCH_HITS,
    PAGE_SIZE,
    RANK_CAP,
    SearchFilters,
)
from webui.db.search.source_map import SourceMap


class Scoping:
    """Hits within filters."""

    def __init__(self, basics: SearchBasics, sources: SourceMap | None = None):
        # The file's reader, filters and hidden ids (webui.db.search.basics).
        self.basics = basics
        self.r = basics.r
        self.schema = basics.schema
        # Each message's source, for searches filtered by source (by_source); None: the
        # full query answers them.
        self.sources = sources

    def by_source(
        self,
        table: str,
        expression: str,
        f: SearchFilters,
        where: str,
        params: list[Any],
        offset: int,
        wide: str | None = None,
    ) -> tuple[int, list[int]] | None:
        """(matches, the page's ids and one more) for a search filtered by source alone,
        with every hit's source read from the in-memory map (webui.db.search.source_map) inside
        the FTS statement: the hits that pass are counted and only they are ranked, instead
        of joining every hit to its message and session row to count it and then ranking
        every hit of the index. Same order as the full query: (rank, id), or newest first
        past RANK_CAP. None when this route cannot answer (other filters, no map yet, too
        many hidden messages, or a page the map got wrong): the full query does."""
        if self.sources is None or not (f.sources or f.exclude_sources):
            return None
        if f.roles or f.session or f.session_key or f.since or f.until:
            return None
        hidden = self.basics.hidden_ids()
        if len(hidden) > HIDDEN_MAX or not self.sources.current():
            return None
        keep = self.sources.keep(f.sources, f.exclude_sources)
        cap = RANK_CAP + 1 + len(hidden)

        def matches(
            raw: sqlite3.Connection, statement: str, *args: Any, ranking: bool = False
        ) -> list[tuple]:
            # Ranked by the expression itself; counted and paged by its words (``wide``).
            raw.create_function("logbook_keep", 1, keep.test)
            match = expression if ranking or not wide else wide
            return raw.execute(statement, [match, *args]).fetchall()

        passing = f"FROM {table} WHERE {table} MATCH ? AND logbook_keep(rowid)"
        # Ranked in one pass when the hits that pass should be well under the cap: the
        # index's hits are counted (on the index alone) up to the number at which, by the
        # share of messages that pass, they would reach half of it. Otherwise they are
        # counted first, and ranked only if they are under the cap.
        expect_under = min(OVERFETCH_HITS, int(RANK_CAP / 2 / max(keep.share, 1e-9)))
        every = self.basics.index_hits(table, wide or expression, max(expect_under, RANK_CAP) + 1)
        if every <= max(expect_under, RANK_CAP):
            ranked = self.r.run(
                lambda raw: matches(raw, f"SELECT rank, rowid {passing} LIMIT ?", cap, ranking=True)
            )
            hits = [i for _, i in ranked]
            if len(hits) >= cap:  # more than expected: counted below, newest first
                ranked = None
        else:
            ranked = None
            hits = [
                r[0]
                for r in self.r.run(
                    lambda raw: matches(raw, f"SELECT rowid {passing} LIMIT ?", cap)
                )
            ]
        # Hits newer than the map (written since it caught up) are checked in SQL.
        unknown = [i for i in hits if i > keep.top]
        wrong = set(unknown) - self.passing(unknown, where, params) if unknown else set()
        left_out = hidden | wrong
        n = sum(1 for i in hits if i not in left_out)
        if n <= RANK_CAP:
            if ranked is None:
                ranked = self.r.run(
                    lambda raw: matches(raw, f"SELECT rank, rowid {passing}", ranking=True)
                )
            ranked.sort()
            ordered = [i for _, i in ranked if i not in left_out]
        else:  # newest first, as the full query orders a match set this large
            newest = self.r.run(
                lambda raw: matches(
                    raw,
                    f"SELECT rowid {passing} ORDER BY rowid DESC LIMIT ?",
                    offset + PAGE_SIZE + 1 + len(left_out),
                )
            )
            ordered = [r[0] for r in newest if r[0] not in left_out]
        page = ordered[offset : offset + PAGE_SIZE + 1]
        # The rows shown are checked against every filter in SQL (the hidden ids are shared
        # for a few seconds; a message rewound since then must not be shown).
        if page and len(self.passing(page, where, params)) != len(page):
            return None
        return n, page

    def in_scope(
        self,
        table: str,
        expression: str,
        bounds: tuple[int, int],
        f: SearchFilters,
        where: str,
        params: list[Any],
        offset: int,
    ) -> tuple[int, list[int]]:
        """(matches, the page's ids and one more) for a search scoped to one session or
        chat, with the index read once: every hit between the scope's first and last message
        id with its rank, kept when the message is the scope's own (and shown), checked
        against any other filter in SQL. Same order as the full query: (rank, id), or newest
        first past RANK_CAP. A prefix that expands to half the vocabulary is expanded once,
        as in the same search over everything, not once to count and once to rank."""
        column = sql.col(self.schema, "session_key")
        scope, scope_params = (
            ("session_id = ?", [f.session])
            if f.session
            else (f"session_id IN (SELECT id FROM sessions WHERE {column} = ?)", [f.session_key])
        )
        active = self.basics.active_clause().replace("m.", "")
        own = {
            r["id"]
            for r in self.r.rows(
                f"SELECT id FROM messages WHERE {scope}{f' AND {active}' if active else ''}",
                scope_params,
            )
        }
        hits = [
            (rank, rowid)
            for rank, rowid in self.r.run(
                lambda raw: raw.execute(
                    f"SELECT rank, rowid FROM {table} WHERE {table} MATCH ? "
                    "AND rowid BETWEEN ? AND ?",
                    [expression, *bounds],
                ).fetchall()
            )
            if rowid in own
        ]
        others = f.roles or f.since or f.until or f.sources or f.exclude_sources
        if others and hits:
            kept = self.passing([i for _, i in hits], where, params)
            hits = [h for h in hits if h[1] in kept]
        n = len(hits)
        ordered = (
            [i for _, i in sorted(hits)]
            if n <= RANK_CAP
            else sorted((i for _, i in hits), reverse=True)
        )
        return n, ordered[offset : offset + PAGE_SIZE + 1]

    def passing(self, ids: list[int], where: str, params: list[Any]) -> set[int]:
        """Those of ``ids`` whose message and session pass ``where`` (the filters in SQL)."""
        return {
            r["id"]
            for r in self.r.rows(
                # CROSS JOIN keeps this order: from the ids to their rows, never from a
                # filtered source's sessions to all their messages.
                "SELECT m.id AS id FROM json_each(?) c CROSS JOIN messages m ON m.id = c.value "
                f"CROSS JOIN sessions s ON s.id = m.session_id WHERE 1{where}",
                [json.dumps(ids), *params],
            )
        }
