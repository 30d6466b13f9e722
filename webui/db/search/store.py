"""Full-text search of one file: SearchStore composes the routes (webui.db.search.basics and the
route modules it is given to), plans a search and answers the plan. Routes follow Hermes's own
``search_messages`` (reference §3): FTS5 ``messages_fts`` ranked by bm25, the trigram table for
CJK, substrings (LIKE) where no index can answer. Two things differ on purpose (the SQL is in
webui.db.search.fts):

* Big match sets. Ranking every match of a very common word means scoring hundreds of
  thousands of rows. Logbook first counts matches (up to RANK_CAP); above it, results come
  newest first (FTS5 walks its doclists in rowid order and stops after a page) and a notice
  says so. Below it they are ranked by bm25 exactly as Hermes ranks them.
* Two phases. Page ids are chosen first (no snippets); ``snippet()`` then runs for the 50 rows
  on the page only, instead of for every row the sorter sees, in an in-memory mirror of those
  rows (webui.db.search.snippets) so that a prefix is not expanded over the whole index again.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from webui.db.errors import BadRequest
from webui.db.reader import Reader
from webui.db.search.across import Across
from webui.db.search.basics import SearchBasics
from webui.db.search.cjk import CjkRoute
from webui.db.search.fts import FtsRoute
from webui.db.search.limits import (  # noqa: F401 - named from here by the pages
    MARK_END,
    MARK_START,
    MAX_RESULTS,
    PAGE_SIZE,
    RECENT_TERMS,
    SearchFilters,
    SearchResult,
)
from webui.db.search.newer import NewerPlans
from webui.db.search.plan import SearchPlanner
from webui.db.search.scope import Scoping
from webui.db.search.source_map import SourceMap
from webui.db.search.substring import SubstringRoute
from webui.hermes.search import Plan, explain_fts_problem


class SearchStore:
    """Search of one file, composed of its parts: the shared basics (filters, hidden rows,
    counts, the reads of hits: ``basics``), the FTS route (``fts_route``), the CJK index
    (``cjk_route``), the substring route (``substring``), hits narrowed by scope (``scope``),
    answers to Hermes 0.20+ plans (``newer``), the planner (``planner``) and one store's part of
    a search across stores (``across``)."""

    def __init__(
        self,
        reader: Reader,
        shared: Callable[..., Any] | None = None,
        sources: SourceMap | None = None,
    ):
        self.r = reader
        self.schema = reader.schema
        # SessionStore.shared: one computation for a crowd, refreshed behind the requests.
        self.basics = SearchBasics(reader, shared)
        self.rules = self.basics.rules
        self.reading = self.basics.reading
        self.substring = SubstringRoute(self.basics)
        self.cjk_route = CjkRoute(self.basics)
        # Each message's source (webui.db.search.source_map), for searches filtered by source.
        self.scope = Scoping(self.basics, sources)
        self.fts_route = FtsRoute(self.basics, self.scope, self.substring)
        self.newer = NewerPlans(self.basics, self.fts_route, self.substring, self.cjk_route)
        self.planner = SearchPlanner(self.basics, self.cjk_route)
        self.across = Across(self.basics, self.substring)

    @property
    def sources(self) -> SourceMap | None:
        """The map of each message's source the scope reads (None: the full query answers)."""
        return self.scope.sources

    def facts(self, index: bool = True) -> dict[str, Any]:
        """What a plan depends on (webui.db.search.plan): how the server classes a search."""
        return self.planner.facts(index)

    def plan(self, query: str, f: SearchFilters | None = None, sort: str | None = None) -> Plan:
        return self.planner.plan(query, f, sort)

    def search(
        self,
        query: str,
        f: SearchFilters,
        page: int,
        sort: str | None = None,
        slot: Callable[[Plan], AbstractContextManager[Any]] | None = None,
    ) -> tuple[SearchResult, str, Plan]:
        """Planned here: (result, searched, plan). ``slot(plan)``: what a search waits for (the
        web layer's few search slots) unless the newest messages answer it (run_recent)."""
        p = self.plan(query, f, sort)
        if (quick := run_recent(self, p, f, page)) is not None:
            return (*quick, p)
        with slot(p) if slot is not None else nullcontext():
            result, searched = run(self, p, f, page)
        return result, searched, p


def run(store: SearchStore, plan: Plan, f: SearchFilters, page: int) -> tuple[SearchResult, str]:
    """Answer a plan; returns the result and what was really searched."""
    if page < 1 or (page - 1) * PAGE_SIZE >= MAX_RESULTS:
        raise BadRequest(f"page must be between 1 and {MAX_RESULTS // PAGE_SIZE}.")
    if plan.dialect == "v26":  # Hermes 0.20 / 0.22
        return store.newer.run(plan, f, page)
    notices = list(plan.notices)
    searched = plan.searched
    if plan.route == "none":
        return SearchResult([], 0, False, False, False, notices), searched
    if plan.route in ("fts", "trigram"):
        way = resolve(store, plan, notices)
        if way.route == "like":
            result = store.substring.like(way.terms, f, page, any_term=True, include_inactive=True)
            result.notices = [n for n in notices + result.notices if n]
            store.reading.contexts(result.rows)
            return result, searched
        if way.route == "none":
            return SearchResult([], 0, False, False, False, notices), searched
        table, expression, literal = way.table, way.expression, way.literal
        searched = way.searched or searched
        result = store.fts_route.fts(table, expression, f, page, literal_terms=literal)
    else:
        if plan.sanitize_note:
            notices.append(plan.sanitize_note)
        result = store.substring.like(
            plan.terms, f, page, any_term=plan.like_any, include_inactive=plan.like_inactive
        )
        if plan.like_any and page == 1:
            store.substring.learn_recent_bound()  # for the next search of this kind (like_recent)
    return store.basics.finish(result, notices), searched


@dataclass
class Way:
    """How one store answers a plan: its FTS table and expression (``literal``: the words
    that must also be in the message, for the literal fallback), or the substring route."""

    route: str  # "fts", "like" or "none"
    table: str = ""
    expression: str = ""
    literal: list[str] | None = None
    terms: list[str] = field(default_factory=list)
    searched: str = ""


def resolve(store: SearchStore, plan: Plan, notices: list[str]) -> Way:
    """For an FTS plan: the expression this store runs (the plan's, or its literal fallback
    when FTS5 refuses it), adding to ``notices`` what was changed and why."""
    table = "messages_fts" if plan.route == "fts" else "messages_fts_trigram"
    expression = plan.match
    problem = store.basics.valid_match(table, expression)
    if problem and plan.route == "trigram" and plan.trigram_error_terms:
        notices.append(
            f"“{plan.typed or plan.searched}” cannot be read as a search "
            f"({explain_fts_problem(problem)}), so, as Hermes 0.19 does, the messages "
            "holding any of its words are listed, newest first."
        )
        return Way("like", terms=list(plan.trigram_error_terms))
    if problem:
        why = explain_fts_problem(problem)
        typed = plan.typed or plan.searched
        if not plan.fallback:
            notices.append(f"“{typed}” cannot be read as a search: {why}.")
            return Way("none")
        hermes = "Hermes 0.19" if plan.dialect == "v22" else "Hermes"
        words = plan.literal_terms or typed.split()
        notices.append(
            f"{hermes} finds nothing for “{typed}” ({why}), so Logbook looked for "
            f"messages holding each word as you typed it: {', '.join(f'“{w}”' for w in words)}."
        )
        return Way("fts", table, plan.fallback, plan.literal_terms, searched=plan.fallback)
    if plan.sanitize_note:
        notices.append(plan.sanitize_note)
    return Way("fts", table, expression)


def run_recent(
    store: SearchStore, plan: Plan, f: SearchFilters, page: int
) -> tuple[SearchResult, str] | None:
    """A substring search's first page from the newest messages alone, when they prove it
    (see SubstringRoute.like_recent); None otherwise. Cheap: needs no search slot."""
    if plan.route != "like" or page != 1 or len(plan.terms) > RECENT_TERMS:
        return None
    result = store.substring.like_recent(
        plan.terms,
        f,
        any_term=plan.like_any,
        include_inactive=plan.like_inactive,
        ties="ASC" if plan.dialect == "v26" else "DESC",
    )
    if result is None:
        return None
    notices = list(plan.notices) + ([plan.sanitize_note] if plan.sanitize_note else [])
    return store.basics.finish(result, notices), plan.searched
