"""The FTS5 route of one file: a page of an expression's hits on ``messages_fts`` or the trigram
table, ranked by bm25 as Hermes ranks them, or newest first past RANK_CAP (see
webui.db.search.store), with the cheaper ways to the same page: ranked on the index first and
then filtered, or narrowed by scope (webui.db.search.scope). SearchStore holds one
(``search.fts_route``)."""

from __future__ import annotations

from typing import Any

from webui.db.search.basics import SearchBasics
from webui.db.search.limits import (
    MAX_RESULTS,
    OVERFETCH_CANDIDATES,
    OVERFETCH_HITS,
    OVERFETCH_MAX,
    PAGE_SIZE,
    RANK_CAP,
    SearchFilters,
    SearchResult,
)
from webui.db.search.scope import Scoping
from webui.db.search.substring import SubstringRoute


class FtsRoute:
    """Pages of FTS5 hits, with the basics, the scope's narrower ways and the substring route's
    clauses (the literal fallback's words must also be in the message)."""

    def __init__(self, basics: SearchBasics, scope: Scoping, substring: SubstringRoute):
        self.basics = basics
        self.r = basics.r
        self.schema = basics.schema
        self.scope = scope
        self.substring = substring

    def _scope_bounds(self, f: SearchFilters) -> tuple[int, int] | None:
        """The first and last message id of the session or chat a search is scoped to, read
        on Hermes's (session_id, timestamp) index; (1, 0) when it has none."""
        if f.session:
            row = self.r.one(
                "SELECT MIN(id) AS lo, MAX(id) AS hi FROM messages WHERE session_id = ?",
                [f.session],
            )
        elif f.session_key and self.schema.has("sessions", "session_key"):
            row = self.r.one(
                "SELECT MIN(m.id) AS lo, MAX(m.id) AS hi FROM messages m WHERE m.session_id IN "
                "(SELECT id FROM sessions WHERE session_key = ?)",
                [f.session_key],
            )
        else:
            return None
        if not row or row["lo"] is None:
            return (1, 0)
        return int(row["lo"]), int(row["hi"])

    def _ranked_on_index(
        self,
        table: str,
        expression: str,
        where: str,
        params: list[Any],
        offset: int,
        n: int,
        filtered: bool,
    ) -> list[int] | None:
        """A ranked page's ids (PAGE_SIZE + 1 from ``offset``), ranked on the FTS index alone
        and then filtered: joining every hit to its message and session row before ranking
        costs twice the ranking itself (76 ms against 23 for a word with 13,700 hits on a
        million messages). The best hits by (rank, rowid) are read from the index, as many
        as should hold the page once filtered (``n`` of the index's hits pass the filters:
        1.5 times the share that implies, plus 50; without user filters, ``n`` is about all
        of them), and only those are checked against the filters (rewound, the session's
        row, the user's); in that order, the survivors' first ones are the full query's.
        None when too few survive and more hits lie beyond (then the full query answers)."""
        needed = offset + PAGE_SIZE + 1
        if needed > OVERFETCH_MAX:
            return None
        hits = self.basics.index_hits(table, expression, OVERFETCH_HITS) if filtered else n
        wanted = int(needed * max(hits, 1) / max(n, 1) * 1.5) + 50
        if wanted > OVERFETCH_CANDIDATES:
            return None  # filters so narrow that checking candidates would not pay
        candidates = [
            r["id"]
            for r in self.r.rows(
                f"SELECT rowid AS id FROM {table} WHERE {table} MATCH ? "
                "ORDER BY rank, rowid LIMIT ?",
                [expression, wanted + 1],
            )
        ]
        beyond = len(candidates) > wanted  # hits past the candidates exist
        candidates = candidates[:wanted]
        if not candidates:
            return []
        kept = self.scope.passing(candidates, where, params)
        survivors = [i for i in candidates if i in kept]
        if len(survivors) < needed and beyond:
            return None  # the page may hold hits past the candidates: the full query decides
        return survivors[offset:needed]

    def fts(
        self,
        table: str,
        expression: str,
        f: SearchFilters,
        page: int,
        literal_terms: list[str] | None = None,
        sort: str | None = None,
    ) -> SearchResult:
        """A page of the expression's hits: ranked by bm25 (rank, then id), or with ``sort``
        ("newest" / "oldest", Hermes 0.20+) by time, then rank."""
        user_where, params = self.basics.filters(f, include_inactive=True)
        if literal_terms:
            # The literal fallback: every word as typed must be in the message (an FTS5
            # phrase ignores punctuation, so "100%" would also match a bare "100").
            like_sql, like_params = self.substring.like_clauses(literal_terms, any_term=False)
            user_where += f" AND {like_sql}"
            params = [*params, *like_params]
        active = self.basics.active_clause()
        # The user's filters in SQL that any message row can be checked against.
        row_where = user_where + (f" AND {active}" if active else "")
        row_params = list(params)
        bounds = self._scope_bounds(f)
        if bounds is not None:
            # A search within one session (or chat) reads only the index's entries between
            # its first and last message id: FTS5 seeks to them, so a prefix that expands to
            # half the vocabulary costs what the session holds, not what the file holds.
            # (Naming the FTS table here also keeps the ranked-on-index route, which reads
            # the whole index, out of it.)
            user_where += f" AND {table}.rowid BETWEEN ? AND ?"
            params = [*params, *bounds]
        active = self.basics.active_clause()
        where = user_where + (f" AND {active}" if active else "")
        # Scoped to a session, the index is read first within the session's ids: SQLite
        # would otherwise start from the session's messages and run the whole MATCH again
        # for each of them (3.3 s against 40 ms for the* in a 5,000-message session).
        join = "CROSS JOIN" if bounds is not None else "JOIN"
        base = (
            f"FROM {table} {join} messages m ON m.id = {table}.rowid "
            f"{join} sessions s ON s.id = m.session_id WHERE {table} MATCH ?{where}"
        )
        offset = (page - 1) * PAGE_SIZE
        # One prefix: counted (and paged newest first) as the OR of its words.
        wide = (
            self.basics.prefix_words(table, expression)
            if not literal_terms and bounds is None
            else None
        )
        one_pass = None
        ids: list[int] | None
        if not literal_terms and not sort:
            if bounds is not None:
                one_pass = self.scope.in_scope(
                    table, expression, bounds, f, row_where, row_params, offset
                )
            else:
                one_pass = self.scope.by_source(table, expression, f, where, params, offset, wide)
        if one_pass is not None:
            n, ids = one_pass
        else:
            n = self.basics.count(
                table, wide or expression, user_where, params, fts_first=bounds is not None
            )
            ids = (
                self._ranked_on_index(table, expression, where, params, offset, n, bool(user_where))
                if n <= RANK_CAP and table not in where and not sort
                else None
            )
        ranked = n <= RANK_CAP
        if sort:
            way = "ASC" if sort == "oldest" else "DESC"
            # Past RANK_CAP, by id (the order messages were written in) rather than sorting
            # every match by its time.
            order = f"m.timestamp {way}, {table}.rank, m.id" if ranked else f"{table}.rowid {way}"
        else:
            order = f"{table}.rank, m.id" if ranked else f"{table}.rowid DESC"
        if ids is None:
            ids = [
                r["id"]
                for r in self.r.rows(
                    f"SELECT m.id AS id {base} ORDER BY {order} LIMIT ? OFFSET ?",
                    [expression if ranked or not wide else wide, *params, PAGE_SIZE + 1, offset],
                )
            ]
        has_more = len(ids) > PAGE_SIZE and offset + PAGE_SIZE < MAX_RESULTS
        ids = ids[:PAGE_SIZE]
        snippets = self.basics.reading.snippets(table, expression, ids) if ids else {}
        rows = self.basics.reading.hydrate(ids)
        for row in rows:
            row["snippet"] = snippets.get(row["message_id"], "")
        if ranked:
            notices = []
        elif sort:
            notices = [
                f"More than {RANK_CAP:,} messages match, so they are listed in the order they "
                f"were written ({sort} first) rather than sorted by their times."
            ]
        else:
            notices = [
                f"More than {RANK_CAP:,} messages match, so they are shown newest first instead of "
                "ranked by relevance. Add words or filters to rank them."
            ]
        return SearchResult(
            rows, min(n, RANK_CAP), n > RANK_CAP, ranked and not sort, has_more, notices
        )
