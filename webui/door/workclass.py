"""Which requests are heavy: the class the server's dispatcher (webui.door.serve) runs them in, and
the search page's slot, decided the same way from the request line alone."""

from __future__ import annotations

from urllib.parse import parse_qs

from webui.hermes.search import is_costly, plan, query_problem

DEFAULT_SEARCH_FACTS = {"has_fts": True, "has_trigram": True, "dialect": "v22"}

# A page costs what it shows: the default pages (50 sessions, 50 hits, 100 messages) are
# cheap, ``/sessions?limit=500`` (0.9 MB of HTML, ten times the work) is not. A flood of it
# counted as cheap took every page worker (issue 49, N-7).
CHEAP_ROWS = 100
# Search pages past this one read more than the first thousand hits (the ranked route's
# overfetch, webui.db.search.limits.OVERFETCH_MAX) and page by OFFSET: dear.
CHEAP_SEARCH_PAGES = 20


def work_class(path: str, query: str, facts: dict | None = None) -> str:
    """ "heavy" (exports, a message rendered on request, searches that may read much of the
    index), "dear" (a page whose size or depth makes it cost many times a page's work), or
    "cheap". Heavy and dear requests run on the heavy workers; dear ones one at a time."""
    if path.startswith("/export."):
        return "heavy"
    args = parse_qs(query)
    if path.startswith("/sessions/") and args.get("render"):
        return "heavy"
    if _number(args.get("limit")) > CHEAP_ROWS:
        return "dear"
    if path != "/search":
        return "cheap"
    if _number(args.get("page")) > CHEAP_SEARCH_PAGES:
        return "dear"
    q = " ".join(args.get("q", []))
    if not q.strip():
        return "cheap"
    facts = facts or DEFAULT_SEARCH_FACTS
    if query_problem(q, facts["dialect"]):
        # Answered 400 at once, but on the heavy workers: a client looping on a refused bomb
        # (64 prefixes OR-ed: 160 refusals a second) must not take the pages' turns.
        return "heavy"
    planned = plan(q, **facts, roles=args.get("role", ()), sources=args.get("source", ()))
    return "heavy" if is_costly(planned, scoped=bool(args.get("session"))) else "cheap"


def is_heavy(path: str, query: str, facts: dict | None = None) -> bool:
    """Exports; a message rendered on request ("render it anyway"); searches whose plan may
    read much of the whole index (webui.hermes.search.is_costly: a substring scan of every
    message, a short prefix, OR, NEAR, many words); and dear pages (work_class). The class
    follows the plan the search will run, not the words typed: a search scoped to one session
    reads only that session's index entries, so it is cheap whatever it asks. A search too
    big to run is refused at once, on the heavy workers too: looped, refusals are a flood."""
    return work_class(path, query, facts) != "cheap"


def _number(values: list[str] | None) -> int:
    """The largest whole number given (0 for none: the page refuses what is not one)."""
    numbers = [v.strip() for v in values or []]
    return max((int(v) for v in numbers if v.isascii() and v.isdigit() and len(v) < 10), default=0)
