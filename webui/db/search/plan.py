"""How a store plans a search: the facts the plan depends on (the file's indexes, its Hermes's
search dialect and rules, and for Hermes 0.20+ what its markers say of the CJK index) and the
plan itself (webui.hermes.search.plan), with the notice a sort the file's Hermes lacks earns.
SearchStore holds one (``search.planner``)."""

from __future__ import annotations

from typing import Any

from webui.db.search.basics import SearchBasics
from webui.db.search.cjk import CjkRoute
from webui.db.search.limits import SearchFilters
from webui.hermes.search import Plan, plan


class SearchPlanner:
    """Plans for one file, from its basics (schema, rules) and its CJK index's markers."""

    def __init__(self, basics: SearchBasics, cjk: CjkRoute):
        self.basics = basics
        self.cjk = cjk

    def facts(self, index: bool = True) -> dict[str, Any]:
        """The file's indexes and its Hermes's search rules (and, for Hermes 0.20+, what
        Hermes's markers say of its indexes: a point read of state_meta, left out when
        ``index`` is False)."""
        schema = self.basics.r.opened.schema
        rules = self.basics.rules
        found: dict[str, Any] = {
            "has_fts": schema.has_fts,
            "has_trigram": schema.has_trigram,
            "dialect": rules.search,
            "rules": rules,
        }
        if index and rules.search == "v26":
            found["index"] = self.cjk.index_state()
        return found

    def plan(self, query: str, f: SearchFilters | None = None, sort: str | None = None) -> Plan:
        """The plan for this file: its indexes, and the search rules of its Hermes."""
        rules = self.basics.rules
        found = plan(
            query,
            **self.facts(),
            roles=f.roles if f else (),
            sources=f.sources if f else (),
            sort=sort,
        )
        if sort and not rules.search_sorts:
            found.notices.append(
                f"{rules.hermes} ranks its hits by relevance only, so they are ranked here too."
            )
        return found
