"""Full-text search over every message (or one session's)."""

from __future__ import annotations

from functools import partial

from flask import Blueprint, current_app, g, jsonify, redirect, request, url_for

from webui.db import BadRequest, SearchFilters
from webui.db.search.stores import Budget, Searched, search_profiles, search_stores
from webui.db.stores.history import history_of, store_answer
from webui.db.stores.store_set import LIVE, Store
from webui.door.workclass import is_heavy
from webui.hermes.search import query_problem
from webui.present.rows import complete_snippets, search_hit_json, search_hit_view
from webui.web.limits import search_slot
from webui.web.logbooks import get_logbook, live_logbook
from webui.web.profiles import merged_logbooks
from webui.web.stores import (
    OUT_OF_TIME,
    find_session,
    readable,
    request_stores,
    short_of_time,
    unreadable,
)
from webui.web.views import render_page, wants_json

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
    """The database's indexes and its Hermes's search rules (webui.db.search.plan): how the
    server's dispatcher classes a search before it runs."""
    return book.search.facts(index)


def app_search_facts(app) -> dict | None:
    """The served database's search facts for the server's dispatcher (make_server's
    ``facts``); None before a database is opened."""
    book = app.extensions.get("logbook")
    if book is None:
        return None
    try:
        return search_facts(book)
    except Exception:  # noqa: BLE001 - the markers unreadable now: classed without them
        return search_facts(book, index=False)


SORTS = ("newest", "oldest")


def _sort() -> str | None:
    """``sort=newest|oldest`` (Hermes 0.20+ offers them; relevance without)."""
    value = request.args.get("sort") or None
    if value in (None, "rank", "relevance"):
        return None
    if value not in SORTS:
        raise BadRequest("sort must be relevance, newest or oldest.")
    return value


def _searched(stores: list[Store]) -> list[Searched]:
    """The readable stores of this request as a search across them asks them
    (webui.db.search.stores): each one's copies of sessions an earlier store holds, and its
    answers kept until its file changes."""
    history = history_of(stores)
    names = [s.name for s in stores]
    return [
        Searched(
            s.name,
            s.logbook.search,
            live=s.kind == LIVE,
            copies=tuple(history.copies_in(s.name, names)),
            ask=partial(store_answer, s),
        )
        for s in stores
        if s.logbook is not None
    ]


def _across(lb) -> tuple[list, list[str]] | None:
    """The stores this search spans when there are several (live first) or some cannot be
    read now (then named), else None."""
    if g.get("all_profiles") or g.get("store_pin"):
        return None
    every = request_stores(lb)
    stores, unread = readable(every), unreadable(every)
    if len(stores) > 1 or unread or (stores and stores[0].name != LIVE):
        return stores, [
            f"{line.split(':', 1)[0]} was not searched: {line.split(': ', 1)[-1]}"
            for line in unread
        ]
    return None


def _args_with(**extra) -> dict:
    args = {k: request.args.getlist(k) for k in request.args if not k.startswith("_")}
    args.update(extra)
    return args


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
    if f.session and not g.get("store_pin"):
        # A search within one session: in the store that holds it (live first).
        holder = find_session(live_logbook(), f.session)
        if holder is not None and holder.name != LIVE:
            return redirect(url_for("search.search", **_args_with(store=holder.name)))
    stores = _across(lb) if not f.session else None
    sort = _sort()
    heavy = is_heavy(request.path, request.query_string.decode("latin-1"), search_facts(lb))
    if stores:
        with search_slot(heavy=heavy):
            result, searched, p = search_stores(
                query,
                f,
                page,
                _searched(stores[0]),
                list(stores[1]),
                Budget(short_of_time, OUT_OF_TIME),
                home=lb.search,
            )
        complete_snippets(result.rows)
    elif g.get("all_profiles"):
        books = merged_logbooks(current_app)
        with search_slot(heavy=heavy):
            result, searched, p = search_profiles(
                query, f, page, [(name, book.search) for name, book in books], sort
            )
        complete_snippets(result.rows)
    else:
        # The store plans and answers; a substring search's first page often lies among the
        # newest messages and is answered from them without a slot (webui.db.search.store).
        result, searched, p = lb.search.search(
            query,
            f,
            page,
            sort,
            slot=lambda plan: search_slot(heavy=heavy or plan.route == "like"),
        )
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
