"""One store's part of a search across stores: how many hits it has, its best ones with their
scores (or its newest ones), and what their bm25 is made of (webui.db.search.bm25), so that the hits
of every store can be put in one order. SearchStore holds one (``search.across``)."""

from __future__ import annotations

import json
from typing import Any

from webui.db import sql
from webui.db.search import bm25
from webui.db.search.basics import SearchBasics
from webui.db.search.limits import SearchFilters
from webui.db.search.substring import SubstringRoute


class Across:
    """One store's hits, counted and read for a search across stores."""

    def __init__(self, basics: SearchBasics, substring: SubstringRoute):
        # The file's reader, filters, counts and reads of hits (webui.db.search.basics), and
        # its substring route (a literal fallback's words, a search no index answers).
        self.basics = basics
        self.substring = substring
        self.r = basics.r
        self.schema = basics.schema

    def _across_where(
        self, table: str, f: SearchFilters, literal: list[str] | None
    ) -> tuple[str, list[Any], str, list[Any]]:
        """(the user's filters without the active clause, their parameters, all of them)."""
        user_where, params = self.basics.filters(f, include_inactive=True)
        if literal:
            like_sql, like_params = self.substring.like_clauses(literal, any_term=False)
            user_where += f" AND {like_sql}"
            params = [*params, *like_params]
        active = self.basics.active_clause()
        return user_where, params, user_where + (f" AND {active}" if active else ""), params

    def hit_count(self, table: str, expression: str, f: SearchFilters, literal=None) -> int:
        """Matches, up to RANK_CAP + 1 (as a search of this store alone counts them)."""
        user_where, params, _w, _p = self._across_where(table, f, literal)
        wide = self.basics.prefix_words(table, expression) if not literal else None
        return self.basics.count(table, wide or expression, user_where, params)

    def best_hits(
        self,
        table: str,
        expression: str,
        f: SearchFilters,
        depth: int,
        ranked: bool,
        literal: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The store's first ``depth`` hits: by bm25 (``score``) or newest first (by id, as
        a search of one file pages them), each with its time and session."""
        _uw, _up, where, params = self._across_where(table, f, literal)
        wide = None if ranked or literal else self.basics.prefix_words(table, expression)
        order = "score, m.id" if ranked else f"{table}.rowid DESC"
        return self.r.rows(
            f"SELECT m.id AS id, m.timestamp AS ts, m.session_id AS session_id, "
            f"{'bm25(' + table + ')' if ranked else 'NULL'} AS score FROM {table} "
            f"JOIN messages m ON m.id = {table}.rowid JOIN sessions s ON s.id = m.session_id "
            f"WHERE {table} MATCH ?{where} ORDER BY {order} LIMIT ?",
            [wide or expression, *params, depth],
        )

    def newest_like(
        self, terms: list[str], f: SearchFilters, depth: int, any_term: bool, inactive: bool
    ) -> list[dict[str, Any]]:
        """A substring search's first ``depth`` hits, in its own order (newest first)."""
        out: list[dict[str, Any]] = []
        page = 1
        while len(out) < depth:
            result = self.substring.like(
                terms, f, page, any_term=any_term, include_inactive=inactive
            )
            out += [
                {"id": r["message_id"], "ts": r.get("timestamp"), "session_id": r["session_id"]}
                for r in result.rows
            ]
            if not result.has_more:
                break
            page += 1
        return out[:depth]

    # -- what a score is made of ------------------------------------------------------------

    def index_figures(self, table: str) -> tuple[int, int] | None:
        """(rows, tokens) of an FTS index, from its averages record."""
        return bm25.averages(self.r.scalar(f"SELECT block FROM {table}_data WHERE id = 1"))

    def phrase_figures(
        self, table: str, phrase: str, ids: list[int], scores: dict[int, float] | None = None
    ) -> tuple[int, dict[int, float]]:
        """(rows holding the phrase, each of these hits' score for the phrase alone). The
        hits are tested as a filter on the phrase's own scan (``+rowid``): passed to FTS5 as
        constraints, each would make it count the phrase's rows again."""
        hits = self.r.scalar(f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH ?", [phrase])
        if scores is not None or not ids:
            return hits, scores or {}
        rows = self.r.rows(
            f"SELECT rowid AS id, bm25({table}) AS score FROM {table} WHERE {table} MATCH ? "
            "AND +rowid IN (SELECT value FROM json_each(?))",
            [phrase, json.dumps(ids)],
        )
        return hits, {r["id"]: r["score"] for r in rows}

    def doc_lengths(self, table: str, ids: list[int]) -> dict[int, int]:
        """Each hit's length in tokens, from the index's ``%_docsize`` records (read as the
        bytes they are)."""
        if not ids:
            return {}
        found = self.r.run(
            lambda raw: raw.execute(
                f"SELECT id, sz FROM {table}_docsize WHERE id IN ({sql.in_list(len(ids))})", ids
            ).fetchall()
        )
        out = {}
        for rowid, sz in found:
            n = bm25.doc_length(sz)
            if n is not None:
                out[rowid] = n
        return out

    # -- the page ---------------------------------------------------------------------------

    def page_hits(
        self, table: str, expression: str, ids: list[int], like_terms: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """The page's hits of this store, as a search of it alone shows them (snippets,
        session names, context)."""
        if not ids:
            return []
        rows = self.basics.reading.hydrate(ids)
        if like_terms is not None:
            for row in rows:
                row["snippet"] = None
                row["match_terms"] = like_terms
        else:
            snippets = self.basics.reading.snippets(table, expression, ids)
            for row in rows:
                row["snippet"] = snippets.get(row["message_id"], "")
        return rows
