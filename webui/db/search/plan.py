"""How a store plans a search: the facts the plan depends on (the file's indexes, its Hermes's
search dialect and rules, and for Hermes 0.20+ what its markers say of the CJK index) and the
plan itself (webui.hermes.search.plan), with the notice a sort the file's Hermes lacks earns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from webui.db.search.limits import SearchFilters
from webui.hermes.search import Plan, plan

if TYPE_CHECKING:
    from webui.db.search.store import SearchStore


def facts(store: SearchStore, index: bool = True) -> dict[str, Any]:
    """The file's indexes and its Hermes's search rules (and, for Hermes 0.20+, what Hermes's
    markers say of its indexes: a point read of state_meta, left out when ``index`` is
    False)."""
    schema = store.r.opened.schema
    found: dict[str, Any] = {
        "has_fts": schema.has_fts,
        "has_trigram": schema.has_trigram,
        "dialect": store.rules.search,
        "rules": store.rules,
    }
    if index and store.rules.search == "v26":
        found["index"] = store.cjk_route.index_state()
    return found


def plan_for(
    store: SearchStore, query: str, f: SearchFilters | None = None, sort: str | None = None
) -> Plan:
    """The plan for this file: its indexes, and the search rules of its Hermes."""
    found = plan(
        query,
        **facts(store),
        roles=f.roles if f else (),
        sources=f.sources if f else (),
        sort=sort,
    )
    if sort and not store.rules.search_sorts:
        found.notices.append(
            f"{store.rules.hermes} ranks its hits by relevance only, so they are ranked here too."
        )
    return found
