"""Answering a Hermes 0.20/0.22 search plan (webui.hermes.search_newer): its route, the
unindexed ids of a pending rebuild after the index's hits, and its zero-hit retries. SearchStore
holds one (``search.newer``)."""

from __future__ import annotations

from collections.abc import Callable

from webui.db.search.basics import SearchBasics
from webui.db.search.cjk import CjkRoute
from webui.db.search.fts import FtsRoute
from webui.db.search.limits import PAGE_SIZE, SearchFilters, SearchResult
from webui.db.search.substring import SubstringRoute
from webui.hermes import cjk_bigram
from webui.hermes.search import Plan, explain_fts_problem

TABLES = {"fts": "messages_fts", "trigram": "messages_fts_trigram", "cjk": "messages_fts_cjk"}


class NewerPlans:
    """Answers to Hermes 0.20/0.22 plans, from the file's routes."""

    def __init__(
        self, basics: SearchBasics, fts: FtsRoute, substring: SubstringRoute, cjk: CjkRoute
    ):
        self.basics = basics
        self.fts = fts
        self.substring = substring
        self.cjk = cjk

    def run(self, plan: Plan, f: SearchFilters, page: int) -> tuple[SearchResult, str]:
        """The plan's answer and what was searched. A retry is asked only when the route found
        nothing at all (on any page), as Hermes retries an empty answer."""
        notices = list(plan.notices)
        if plan.route == "none":
            return SearchResult([], 0, False, False, False, notices), plan.searched
        result, searched, said, final = self._attempt(plan, f, page)
        notices += said
        if not final and not result.total and not result.rows:
            for retry in plan.retries:
                again, also, said, _ = self._attempt(retry, f, page)
                if again.total or again.rows:
                    result, searched = again, also
                    notices += [retry.answered, *said]
                    break
        return self.basics.finish(result, notices), searched

    def _attempt(
        self, p: Plan, f: SearchFilters, page: int
    ) -> tuple[SearchResult, str, list, bool]:
        """(result, what was searched, notices, final: no retry may follow — Hermes returns its
        empty answer as it is when the query cannot be read)."""
        said: list[str] = []
        if p.route == "like_bool":
            if p.sanitize_note:
                said.append(p.sanitize_note)
            return self.substring.like_groups(p.groups, f, page, p.sort), p.searched, said, False
        if p.route == "like":
            if p.sanitize_note:
                said.append(p.sanitize_note)
            result = self.substring.like(
                p.terms, f, page, any_term=p.like_any, include_inactive=False, ties="ASC"
            )
            if p.like_any and page == 1:
                self.substring.learn_recent_bound()
            return result, p.searched, said, False
        if p.route == "cjk":
            try:
                cjk_bigram.parse(p.match)
            except cjk_bigram.QueryError:
                if p.instead is None:
                    return SearchResult([], 0, False, False, False, []), p.searched, said, False
                return self._attempt(p.instead, f, page)
            if p.sanitize_note:
                said.append(p.sanitize_note)
            if not p.answered:
                said.append(
                    f"{p.hermes} answers this from its Chinese, Japanese and Korean index; Logbook "
                    "cannot load that index's tokenizer, so it found the same messages from their "
                    "text and ranked them as the index does."
                )
            result = self._with_gap(p, f, page, lambda n: self.cjk.cjk(p.match, f, n, p.sort))
            return result, p.searched, said, False
        table = TABLES[p.route]
        expression, searched, literal = p.match, p.searched, None
        problem = self.basics.valid_match(table, expression)
        final = False
        if problem:
            if p.answered:  # a retry SQLite cannot read finds nothing, as in Hermes
                return SearchResult([], 0, False, False, False, []), searched, said, False
            final = True
            why = explain_fts_problem(problem)
            if not p.fallback:
                said.append(f"{p.hermes} finds nothing for “{p.typed or searched}”: {why}.")
                return SearchResult([], 0, False, False, False, []), searched, said, True
            words = p.literal_terms or (p.typed or searched).split()
            said.append(
                f"{p.hermes} finds nothing for “{p.typed or searched}” ({why}), so Logbook looked "
                f"for messages holding each word as you typed it: "
                f"{', '.join(f'“{w}”' for w in words)}."
            )
            expression = searched = p.fallback
            literal = p.literal_terms
        elif p.sanitize_note:
            said.append(p.sanitize_note)
        result = self._with_gap(
            p,
            f,
            page,
            lambda n: self.fts.fts(table, expression, f, n, literal_terms=literal, sort=p.sort),
        )
        return result, searched, said, final

    def _with_gap(
        self, p: Plan, f: SearchFilters, page: int, main: Callable[[int], SearchResult]
    ) -> SearchResult:
        """The route's page, then — while Hermes's rebuild of its indexes is pending — the
        messages it has not indexed yet that hold every word, newest first (Hermes's top-up)."""
        result = main(page)
        span = self.cjk.index_state().rebuild if p.gap_terms else None
        if span is None or result.capped:
            return result
        offset = (page - 1) * PAGE_SIZE
        shown = len(result.rows)
        before = result.total  # exact below the cap
        take = 0 if result.has_more else PAGE_SIZE + 1 - shown
        n, ids = self.substring.unindexed_hits(p.gap_terms, f, span, max(0, offset - before), take)
        room = PAGE_SIZE - shown
        rows = result.rows + self.substring.substring_page(ids[:room], 0, p.gap_terms).rows
        has_more = result.has_more or len(ids) > room
        result.notices.append(
            f"{p.hermes} is still rebuilding this file's search index ({span[0]:,} of "
            f"{span[1]:,} messages done): as it does, the messages it has not reached were read "
            "as plain text, and those holding every word follow the index's hits."
        )
        return SearchResult(
            rows, before + n, False, result.ranked and not n, has_more, result.notices
        )
