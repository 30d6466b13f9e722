"""Which requests are heavy: the class the server's dispatcher (webui.serve) runs them in, and
the search page's slot, decided the same way from the request line alone."""

from __future__ import annotations

from urllib.parse import parse_qs

from webui.hermes.search import is_costly, plan, query_problem

DEFAULT_SEARCH_FACTS = {"has_fts": True, "has_trigram": True, "dialect": "v22"}


def is_heavy(path: str, query: str, facts: dict | None = None) -> bool:
    """Exports; a message rendered on request ("render it anyway"); and searches whose plan
    may read much of the whole index (webui.hermes.search.is_costly: a substring scan of
    every message, a short prefix, OR, NEAR, many words). The class follows the plan the
    search will run, not the words typed: a search scoped to one session reads only that
    session's index entries, so it is cheap whatever it asks. A search too big to run is
    refused at once, on the heavy workers too: looped, refusals are a flood."""
    if path.startswith("/export."):
        return True
    args = parse_qs(query)
    if path.startswith("/sessions/") and args.get("render"):
        return True
    if path != "/search":
        return False
    q = " ".join(args.get("q", []))
    if not q.strip():
        return False
    facts = facts or DEFAULT_SEARCH_FACTS
    if query_problem(q, facts["dialect"]):
        # Answered 400 at once, but on the heavy workers: a client looping on a refused bomb
        # (64 prefixes OR-ed: 160 refusals a second) must not take the pages' turns.
        return True
    return is_costly(plan(q, **facts), scoped=bool(args.get("session")))
