"""The sessions list and the conversation viewer."""

from __future__ import annotations

import threading
from typing import Any

from flask import Blueprint, current_app, g, jsonify, redirect, render_template, url_for
from htmx_flask import request

from webui import threads
from webui.db import BadRequest, SessionQuery
from webui.db import deadline as request_deadline
from webui.db.errors import DatabaseBusy
from webui.db.history import list_page, profiles_page
from webui.db.schema import KNOWN_SESSION_COLUMNS
from webui.db.sessions.lineage import tree_across
from webui.db.sessions.messages import END_CURSOR
from webui.db.sessions.prompts import session_with_prompts
from webui.db.sessions.store import LIST_PARAMS
from webui.db.stores.store_set import LIVE
from webui.hermes.imports import imported_from
from webui.hermes.records import tool_list
from webui.present.relatives import chain_summary, child_groups, crumbs
from webui.present.rows import session_json, session_label, with_origin
from webui.web.logbooks import get_logbook, live_logbook
from webui.web.profiles import merged_logbooks
from webui.web.stores import (
    elsewhere,
    readable,
    relatives_elsewhere,
    request_stores,
    short_of_time,
    unreadable,
)
from webui.web.views import (
    elsewhere_or_404,
    query_args,
    refuse_unknown,
    render_page,
    wants_json,
)
from webui.web.views.conversation import (
    first_user_text,
    jump,
    last_cursor,
    left_out,
    message_records,
    prepare_messages,
)

bp = Blueprint("sessions", __name__)


@bp.get("/")
def index():
    return redirect(url_for("sessions.list_sessions", **query_args()))


# "Active now": what the live view shows unless told otherwise (as `moltbot sessions
# --active <minutes>`): conversations with a message in the last hour, most recent first.
LIVE_MINUTES = 60


@bp.get("/live")
def live():
    args = query_args()
    args.setdefault("active", LIVE_MINUTES)
    args.setdefault("sort", "-last_active")
    return redirect(url_for("sessions.list_sessions", **args))


@bp.get("/sessions")
def list_sessions():
    lb = get_logbook()
    refuse_unknown(LIST_PARAMS)
    q = SessionQuery.from_args(request.args)
    every = request_stores(live_logbook()) if not g.get("store_pin") else []
    stores, unread = readable(every), unreadable(every)
    if len(stores) <= 1 and not unread and not g.get("all_profiles"):
        _flags_exist(lb, q)
    folded = copies = 0
    missing: list[str] = []
    store_facet: dict[str, int] = {}
    whole = 0
    if g.get("all_profiles"):
        merged_page = profiles_page.session_page(q, merged_logbooks(current_app))
        rows, cursor, facets = merged_page.rows, merged_page.cursor, merged_page.facets
    elif len(stores) > 1 or unread:
        # Every store as one history (webui.db.history.list_page).
        missing = list(unread)
        merged_page = list_page.store_page(q, stores, missing, short_of_time)
        rows, cursor, facets = merged_page.rows, merged_page.cursor, merged_page.facets
        folded, missing = merged_page.folded, merged_page.missing
        store_facet, copies, whole = merged_page.counts, merged_page.copies, merged_page.total
    else:
        # The menus' counts scan every session row when they are not shared (the first visit,
        # after a change): beside the page's own queries, not after them (2.3 s -> 1.4 s for
        # the first list of a 200,000-session file).
        by_source = threads.Beside(lambda: lb.sessions.source_facets(q))
        by_origin = threads.Beside(lambda: _origin_facets(lb))
        rows, cursor = lb.sessions.page(q)
        for r in rows:
            r["store"] = g.get("store_pin") or LIVE
        facets, origin_facets = by_source.result(), by_origin.result()
    if g.get("all_profiles") or len(stores) > 1 or unread:
        origin_facets = _origin_facets(lb)
    for r in rows:
        with_origin(r)
    next_url = url_for("sessions.list_sessions", **q.url_args(after=cursor)) if cursor else None
    if wants_json():
        json_next = (
            url_for("sessions.list_sessions", **q.url_args(after=cursor, format="json"))
            if cursor
            else None
        )
        return jsonify(
            {
                "sessions": [session_json(r) for r in rows],
                "facets": {
                    "source": facets,
                    **{k: {v["value"]: v["n"] for v in vs} for k, vs in origin_facets.items()},
                    **({"store": store_facet} if store_facet else {}),
                },
                "folded": folded,
                **({"missing_stores": missing} if missing else {}),
                "next": json_next,
            }
        )
    if g.get("all_profiles"):
        total, capped = profiles_page.count(q, merged_logbooks(current_app))
        hidden = None
    elif len(stores) > 1 or unread:
        # Sessions kept in two stores are listed once (from the first store holding them).
        total, capped = whole, False
        hidden = None
    else:
        total, capped = lb.sessions.count(q)
        hidden = lb.sessions.hidden_count(q, total)
    for r in rows:
        r["label"] = session_label(r)
    quiet_since = lb.sessions.last_activity() if q.active_minutes and not total else None
    return render_page(
        "sessions.html",
        {"results": "results", "more-row": "rows_page"},
        q=q,
        rows=rows,
        facets=facets,
        models=lb.sessions.models(),
        origin_facets=origin_facets,
        total=total,
        capped=capped,
        hidden=hidden,
        next_url=next_url,
        has_archived=lb.schema.has("sessions", "archived"),
        has_pins=lb.schema.has("sessions", "pinned"),
        has_hidden=lb.schema.has("sessions", "hidden"),
        sort_options=SORT_LABELS,
        first_page_url=url_for("sessions.list_sessions", **q.url_args()),
        quiet_since=quiet_since,
        store_facet=store_facet,
        folded=folded,
        copies=copies,
        missing_stores=missing,
    )


def _flags_exist(lb, q) -> None:
    """``pinned=`` and ``hidden=`` are taken on files whose sessions table has the columns
    (Hermes 0.20 added them); asked of an older file alone, the answer says so. (Across
    several stores, one without them simply has no pinned or hidden session.)"""
    for name, value in (("pinned", q.pinned), ("hidden", q.hidden)):
        if value is not None and not lb.schema.has("sessions", name):
            raise BadRequest(
                f"This database has no {name} sessions: its Hermes ({lb.rules.hermes}) does "
                f"not record them (Hermes 0.20 added sessions.{name}). Leave out “{name}=”."
            )


def _origin_facets(lb) -> dict:
    """Whole-database counts (as the model menu's), shared while no session appears or goes."""
    return lb.sessions.shared("origin-facets", lb.origins.facets)


SORT_LABELS = {
    "-started": "Newest first",
    "started": "Oldest first",
    "-last_active": "Recently active",
    "last_active": "Least recently active",
    "-messages": "Most messages",
    "messages": "Fewest messages",
    "-tokens": "Most tokens",
    "tokens": "Fewest tokens",
    "-cost": "Most expensive",
    "cost": "Cheapest",
}


def _int_arg(name: str) -> int | None:
    value = request.args.get(name)
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or abs(number) >= 2**63:
        raise BadRequest(f"'{name}' must be a message id (a number).")
    return number


# A conversation asked for with a message rendered on request ("render it anyway": a page that
# carries megabytes of HTML) is built one at a time: clients looping on the link take one
# heavy worker's share of the interpreter, not all of them, and the pages keep theirs.
_ONE_RENDER = threading.BoundedSemaphore(1)


@bp.get("/sessions/<session_id>")
def view_session(session_id: str):
    if not request.args.get("render"):
        return _view_session(session_id)
    left = request_deadline.remaining()
    if not _ONE_RENDER.acquire(timeout=max(0.0, (left if left is not None else 5.0) - 0.5)):
        raise DatabaseBusy(
            "Another message is being shown rendered on request; try again in a moment."
        )
    try:
        return _view_session(session_id)
    finally:
        _ONE_RENDER.release()


def _view_session(session_id: str):
    lb = get_logbook()
    session = session_with_prompts(lb.reader, session_id, lb.rules)
    if session is None:
        return _resolve_prefix(session_id)
    include_rewound = request.args.get("rewound") in ("1", "true", "on")
    # The JSON twin carries every stored row (each saying whether the Hermes that wrote the
    # file shows it, and if not why) unless ?rewound=0 asks for Hermes's rows only.
    if wants_json() and request.args.get("rewound") != "0":
        include_rewound = True
    moved = jump(lb, session_id, include_rewound)
    if moved is not None:
        return moved
    at = _int_arg("at")
    if at is not None and not include_rewound and not lb.messages.painted_in_view(session_id, at):
        # Opened at a row Hermes does not show (a search hit in compacted history, an
        # earlier copy): the view that paints it, labelled.
        return redirect(
            url_for(
                "sessions.view_session",
                session_id=session_id,
                **{**query_args(), "rewound": "1"},
                _anchor=f"m-{at}",
            )
        )
    before = request.args.get("before")
    if request.args.get("end") == "1":  # "jump to the end": the conversation's last page
        before = END_CURSOR
    page = lb.messages.page(
        session_id,
        after=request.args.get("after"),
        before=before,
        at=at,
        include_rewound=include_rewound,
    )
    base_args: dict[str, Any] = {"rewound": "1"} if include_rewound and not wants_json() else {}
    if wants_json():
        if request.args.get("rewound") == "0":
            base_args["rewound"] = "0"
        nxt = (
            url_for(
                "sessions.view_session",
                session_id=session_id,
                after=page.next_cursor,
                format="json",
                **base_args,
            )
            if page.next_cursor
            else None
        )
        return jsonify({"session": session, "messages": message_records(page), "next": nxt})

    # No page before this one: it starts the conversation, numbered without a count.
    painted = [m for m in page.messages if page.marks[m["id"]].painted]
    first_n = 1 + (
        0
        if page.prev_cursor is None
        else lb.messages.position(session_id, painted[0] if painted else None, include_rewound)
    )
    messages = prepare_messages(
        session_id,
        page.messages,
        base_args,
        first_n=first_n,
        day_of=session.get("started_at"),
        marks=page.marks,
    )
    # An htmx fragment extends the page in one direction only; the page it lands in already
    # has the pager for the other direction.
    target = request.htmx.target if request.htmx else None
    # Columns an older schema lacks are shown as absent (—), never as an error.
    shown = {**dict.fromkeys(KNOWN_SESSION_COLUMNS), **session}
    context = {
        "session": shown,
        "label": session.get("title") or first_user_text(page.messages) or session["id"],
        "messages": messages,
        "next_url": url_for(
            "sessions.view_session", session_id=session_id, after=page.next_cursor, **base_args
        )
        if page.next_cursor and target != "earlier-messages"
        else None,
        "prev_url": url_for(
            "sessions.view_session", session_id=session_id, before=page.prev_cursor, **base_args
        )
        if page.prev_cursor and target != "more-messages"
        else None,
        "include_rewound": include_rewound,
        "live_url": url_for(
            "sessions.tail", session_id=session_id, after=last_cursor(page.messages)
        )
        if session.get("ended_at") is None and not page.next_cursor and target != "earlier-messages"
        else None,
    }
    if target is None:
        context.update(_header(lb, session, page, base_args, include_rewound))
    return render_page(
        "session.html",
        {"more-messages": "messages_page", "earlier-messages": "messages_page"},
        **context,
    )


def _header(lb, session: dict, page, base_args: dict, include_rewound: bool) -> dict[str, Any]:
    """The header of a whole conversation page (fragments extend the conversation only)."""
    session_id = session["id"]
    parent = (
        lb.sessions.brief(session["parent_session_id"])
        if session.get("parent_session_id")
        else None
    )
    if parent is not None:
        # An untitled parent is named by its first question, as the breadcrumb names it.
        parent["label"] = parent.get("title") or session_label(
            {"preview": lb.sessions.first_user_text(parent["id"])}
        )
    counts = lb.messages.counts(session_id)
    here = page.messages[0]["id"] if page.messages else None
    # A conversation split across stores: its parent or children in another one.
    parent_away, children_away = relatives_elsewhere(
        live_logbook(),
        g.get("store_pin") or LIVE,
        session.get("parent_session_id") if parent is None else None,
        session_id,
    )

    def turn(direction: str, **start: Any) -> str:
        return url_for(
            "sessions.view_session",
            session_id=session_id,
            question=direction,
            **start,
            **base_args,
        )

    return dict(
        # Next/previous question from the page's first message (the script moves from
        # the message at the top, and from the loaded edge once past it).
        turns={
            "prev": turn("prev", **{"from": here}),
            "next": turn("next", **{"from": here}),
            "prev_from": turn("prev"),
            "next_from": turn("next"),
        }
        if here is not None
        else None,
        counts=counts,
        left_out=left_out(counts),
        base_args=base_args,
        shown_total=counts["shown_all"] if include_rewound else counts["shown"],
        parent=parent,
        parent_missing=bool(session.get("parent_session_id"))
        and parent is None
        and parent_away is None,
        parent_away=parent_away,
        children_away=children_away,
        children=lb.sessions.children(session_id),
        extra_columns=[(c, session.get(c)) for c in lb.schema.extra_session_columns],
        origin=with_origin(dict(session))["origin"],
        imported=imported_from(session),
        tool_list=tool_list(session.get("tool_names")),
        schema=lb.schema,
        hermes=lb.rules.hermes,
        **lineage_context(session),
    )


@bp.get("/sessions/<session_id>/tail")
def tail(session_id: str):
    """The live end of an active session: 204 when nothing new (one indexed query), else the
    new messages and a fresh tail that polls from after them."""
    lb = get_logbook()
    session = lb.sessions.brief(session_id)
    if session is None:
        return elsewhere_or_404("sessions.tail", session_id)
    after = request.args.get("after")
    page = lb.messages.tail(session_id, after)
    ended = session.get("ended_at")
    if not page.messages and ended is None:
        return "", 204
    rows = page.messages
    cursor = last_cursor(rows) or after
    live = (
        None if ended is not None else url_for("sessions.tail", session_id=session_id, after=cursor)
    )
    return render_template(
        "tail.html",
        messages=prepare_messages(session_id, rows, {}, marks=page.marks),
        live_url=live,
        end_reason=session.get("end_reason"),
    )


def _resolve_prefix(prefix: str):
    lb = get_logbook()
    matches = lb.sessions.resolve_prefix(prefix)
    if len(matches) == 1:
        args = query_args()
        return redirect(url_for("sessions.view_session", session_id=matches[0]["id"], **args))
    if not matches:
        # Not in this database: in another store (an archive, another machine)?
        return elsewhere_or_404(
            "sessions.view_session", prefix, f"No session has the id or id prefix “{prefix}”."
        )
    if wants_json():
        return jsonify(
            {
                "error": "ambiguous",
                "message": f"“{prefix}” matches several sessions.",
                "candidates": [m["id"] for m in matches],
            }
        ), 300
    for m in matches:
        m["label"] = m.get("title") or m["id"]
    return render_template(
        "ambiguous.html", prefix=prefix, matches=matches[:20], more=len(matches) > 20
    ), 300


def lineage_context(session: dict[str, Any]) -> dict[str, Any]:
    """Breadcrumbs of ancestors, the whole conversation's totals, and the compression
    neighbours ("continued from" / "continued in"), from one lineage query."""
    lb = get_logbook()
    if not lb.lineage.has_family(session):
        return {
            "lineage": None,
            "ancestors": [],
            "continued_in": None,
            "continued_from": None,
            "relatives": [],
            "chain_summary": "",
        }
    here = g.get("store_pin") or LIVE
    others = elsewhere(live_logbook(), here)
    tree = (
        tree_across([(here, lb), *((s.name, s.logbook) for s in others)], session["id"], here)
        if others
        else lb.lineage.tree(session["id"])
    )
    by_id = tree.by_id
    chain, seen = [], {session["id"]}
    cur = by_id.get(session.get("parent_session_id") or "")
    while cur and cur["id"] not in seen:
        chain.append(cur)
        seen.add(cur["id"])
        cur = by_id.get(cur.get("parent_session_id") or "")
    chain.reverse()
    for n in tree.nodes:
        n["label"] = session_label(n)
    me = by_id.get(session["id"], {})
    continued_in = next(
        (
            n
            for n in tree.nodes
            if n.get("parent_session_id") == session["id"] and n.get("edge") == "compression"
        ),
        None,
    )
    continued_from = (
        by_id.get(session.get("parent_session_id") or "")
        if me.get("edge") == "compression"
        else None
    )
    return {
        "lineage": tree,
        "ancestors": crumbs(chain),
        "continued_in": continued_in,
        "continued_from": continued_from,
        "relatives": child_groups(tree.nodes, session["id"]),
        "chain_summary": chain_summary(tree.nodes),
    }
