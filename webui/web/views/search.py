"""Full-text search over every message (or one session's)."""

from __future__ import annotations

import itertools
from dataclasses import replace

from flask import Blueprint, current_app, g, jsonify, request, url_for

from webui.db import BadRequest, LogbookDBError, SearchFilters, get_logbook
from webui.db.search import SearchResult, run, run_recent
from webui.db.stores import LIVE
from webui.hermes.search import plan, query_problem
from webui.present.rows import complete_snippets, search_hit_json, search_hit_view
from webui.web.limits import search_slot
from webui.web.profiles import merged_logbooks
from webui.web.stores import kept_answer, readable, request_stores
from webui.web.views import render_page, wants_json
from webui.workclass import is_heavy

bp = Blueprint("search", __name__)

ROLES = ("user", "assistant", "tool", "system")


def _filters() -> SearchFilters:
    a = request.args
    f = SearchFilters(
        sources=[s for s in a.getlist("source") if s],
        exclude_sources=[s for s in a.getlist("exclude_source") if s],
        roles=[r for r in a.getlist("role") if r],
        session=a.get("session") or None,
        session_key=a.get("session_key") or None,
        since=a.get("since") or None,
        until=a.get("until") or None,
    )
    for role in f.roles:
        if role not in ROLES:
            raise BadRequest(f"role must be one of {', '.join(ROLES)}.")
    return f


def _page() -> int:
    try:
        return int(request.args.get("page") or 1)
    except ValueError:
        raise BadRequest("page must be a number.") from None


def search_facts(book, index: bool = True) -> dict:
    """The database's indexes and its Hermes's search rules (and, for Hermes 0.20+, what
    Hermes's markers say of its indexes: a point read of state_meta)."""
    facts = {
        "has_fts": book.schema.has_fts,
        "has_trigram": book.schema.has_trigram,
        "dialect": book.rules.search,
        "rules": book.rules,
    }
    if index and book.rules.search == "v26":
        facts["index"] = book.search.index_state()
    return facts


SORTS = ("newest", "oldest")


def _sort() -> str | None:
    """``sort=newest|oldest`` (Hermes 0.20+ offers them; relevance without)."""
    value = request.args.get("sort") or None
    if value in (None, "rank", "relevance"):
        return None
    if value not in SORTS:
        raise BadRequest("sort must be relevance, newest or oldest.")
    return value


def _plan(book, query: str, f: SearchFilters | None = None, sort: str | None = None):
    """The plan for this database: its indexes, and the search rules of its Hermes."""
    found = plan(
        query,
        **search_facts(book),
        roles=f.roles if f else (),
        sources=f.sources if f else (),
        sort=sort,
    )
    if sort and not book.rules.search_sorts:
        found.notices.append(
            f"{book.rules.hermes} ranks its hits by relevance only, so they are ranked here too."
        )
    return found


def _merged(query: str, f: SearchFilters, page: int, books=None, label: str = "profile"):
    """Each database's own ranked page, interleaved (rank 1 of each, then rank 2, …): scores
    from different databases are not comparable, positions are. Across stores (``label``
    "store") a hit in a session that an earlier store also holds (an old backup beside the
    live file) is left out, and the notice says how many were."""
    books = books if books is not None else merged_logbooks(current_app)
    per: list[list[dict]] = []
    total, capped, more, notices, searched, p = 0, False, False, [], query, None
    folded = 0
    for i, (name, book) in enumerate(books):
        try:
            p = _plan(book, query, f, _sort())
            if i and label == "store":
                # An archive's or replica's hits: kept while its file stands still.
                res, searched = kept_answer(
                    book,
                    ("search", query, repr(f), page),
                    lambda book=book, p=p: run(book.search, p, f, page),
                )
                res = replace(res, rows=[dict(r) for r in res.rows])
            else:
                res, searched = run(book.search, p, f, page)
        except LogbookDBError as exc:
            if not i:
                raise
            # An archive or replica that is slow, locked or gone: named, the others shown.
            notices.append(f"{name} was not searched: {exc.message}")
            continue
        rows = res.rows
        if label == "store" and i:
            ids = list({r["session_id"] for r in rows})
            earlier: set[str] = set()
            for _before, other in books[:i]:
                earlier |= other.sessions.existing(ids)
            kept = [r for r in rows if r["session_id"] not in earlier]
            folded += len(rows) - len(kept)
            rows = kept
        complete_snippets(rows)
        for row in rows:
            row[label] = name
        per.append(rows)
        total += res.total
        capped = capped or res.capped
        more = more or res.has_more
        notices += [
            n if n.startswith(name) else f"{name}: {n}" for n in res.notices if n not in notices
        ]
    if folded:
        notices.append(
            f"{folded} hit{'s' if folded != 1 else ''} in copies of sessions already shown "
            "from another store left out."
        )
    rows = [r for group in itertools.zip_longest(*per) for r in group if r is not None]
    result = SearchResult(rows, total, capped, False, more, list(dict.fromkeys(notices)))
    return result, searched, p


def _store_books(lb) -> list | None:
    """The stores this search spans when there are several (live first), else None."""
    if g.get("all_profiles") or g.get("store_pin"):
        return None
    books = [(s.name, s.logbook) for s in readable(request_stores(lb))]
    return books if len(books) > 1 or (books and books[0][0] != LIVE) else None


@bp.get("/search")
def search():
    lb = get_logbook()
    query = request.args.get("q", "")
    problem = query_problem(query, lb.rules.search)
    if problem:
        raise BadRequest(problem)
    f = _filters()
    page = _page()
    group = request.args.get("group") == "session"
    # Only searches whose plan may read the whole index take one of the few search slots;
    # the others run like any page (the server's dispatcher classes them the same way).
    stores = _store_books(lb) if not f.session else None
    sort = _sort()
    p = None if g.get("all_profiles") or stores else _plan(lb, query, f, sort)
    heavy = is_heavy(request.path, request.query_string.decode("latin-1"), search_facts(lb))
    # A substring search's first page often lies among the newest messages: answered from
    # them without a slot when they prove it (webui.db.search.run_recent).
    quick = run_recent(lb.search, p, f, page) if p is not None else None
    if quick is not None:
        result, searched = quick
        complete_snippets(result.rows)
    else:
        with search_slot(heavy=heavy or (p is not None and p.route == "like")):
            if stores:
                result, searched, p = _merged(query, f, page, stores, label="store")
            elif p is None:
                result, searched, p = _merged(query, f, page)
            else:
                result, searched = run(lb.search, p, f, page)
                complete_snippets(result.rows)
    args = {
        k: request.args.getlist(k)
        for k in request.args
        if k not in ("page", "format") and not k.startswith("_")
    }
    notice = " ".join(result.notices) or None
    if wants_json():
        nxt = (
            url_for("search.search", **args, page=page + 1, format="json")
            if result.has_more
            else None
        )
        return jsonify(
            {
                "results": [search_hit_json(r) for r in result.rows],
                "query": searched,
                "notice": notice,
                "next": nxt,
                "total": result.total,
                "total_capped": result.capped,
                "ranked": result.ranked,
            }
        )
    hits = [search_hit_view(r) for r in result.rows]
    groups: list[dict] = []
    if group:
        index: dict[tuple, dict] = {}
        for h in hits:
            key = (h.get("profile"), h.get("store"), h["session_id"])
            grp = index.get(key)
            if grp is None:
                grp = index[key] = {
                    "session_id": h["session_id"],
                    "hits": [],
                    "label": h["session_label"],
                    "source": h["source"],
                    "model": h["model"],
                    "started": h["session_started"],
                    "profile": h.get("profile"),
                    "store": h.get("store"),
                    "origin": h.get("origin"),
                }
                groups.append(grp)
            grp["hits"].append(h)
    session = lb.sessions.brief(f.session) if f.session else None
    chat = lb.origins.chat(f.session_key) if f.session_key else None
    return render_page(
        "search.html",
        {"search-results": "results"},
        q=query,
        searched=searched,
        notice=notice,
        hits=hits,
        groups=groups,
        group=group,
        result=result,
        filters=f,
        page=page,
        session=session,
        chat=chat,
        roles=ROLES,
        # Hermes 0.20+ offers newest / oldest first besides relevance
        sorts=SORTS if lb.rules.search_sorts else (),
        sort=sort,
        sources=lb.sessions.all_sources(),
        terms=p.terms,
        next_url=url_for("search.search", **args, page=page + 1) if result.has_more else None,
        prev_url=url_for("search.search", **args, page=page - 1) if page > 1 else None,
        json_url=url_for("search.search", **args, format="json"),
    )
