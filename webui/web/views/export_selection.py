"""Which sessions an export reads: the request's selection (sessions, a lineage tree, the
list's filters, a prune preview or Hermes's ``selection=export``), split into each store's
share (webui.db.history.export), and the form's summary of it before any download."""

from __future__ import annotations

import math
from datetime import datetime

from flask import abort, g, request
from werkzeug.datastructures import MultiDict

from webui.db import SessionQuery
from webui.db.history.export import Missing, Part, each_store, runs, summaries
from webui.db.sessions.lineage import tree_across
from webui.db.sessions.store import LIST_PARAMS
from webui.db.sql import is_cursor
from webui.db.stores.store_set import Store
from webui.hermes.selection import SelectionError, selection_from_args
from webui.web.logbooks import get_logbook, live_logbook
from webui.web.stores import elsewhere, find_session, pinned, request_stores
from webui.web.views import no_session

# What every export reads: the list's parameters (so an export of a list is that list), the
# sessions or lineage chosen, a prune preview's or Hermes's export selection, and how to write.
EXPORT_PARAMS = (LIST_PARAMS - {"limit"}) | {
    "from",  # "form": asked for by the export form (an empty selection shows the form again)
    "lineage",
    "selection",
    "prune_cutoff",
    "cutoff",
    "only",
    "redact",
    "rewound",
    "lineage_mode",
    "style",
}


def whole() -> bool:
    """No session, lineage, prune preview or filter: everything, as `hermes sessions export`
    without arguments (its export_all)."""
    if request.args.get("session") or request.args.get("lineage"):
        return False
    if request.args.get("selection") == "export" and not request.args.get("prune_cutoff"):
        return not _export_filtered()
    if request.args.get("selection") or request.args.get("prune_cutoff"):
        return False
    args = _without_cursor(request.args)
    for key in ("format", "only", "redact", "rewound", "lineage_mode", "style"):
        args.pop(key, None)
    args.setdefault("archived", "include")
    args["rows"] = "all"
    return get_logbook().sessions.where(SessionQuery.from_args(args))[0] == "1"


def _export_filtered() -> bool:
    """Does ``selection=export`` come with a filter (one given empty counts, as Hermes's
    ``--title ""``)? Without one it is `hermes sessions export FILE`: everything."""
    try:
        return selection_from_args(request.args, command="export").any_filter
    except (SelectionError, OverflowError, OSError, ValueError):
        return True  # the selection itself says what is wrong


def _stores() -> list[Store]:
    """The stores an export reads: the one it is pinned to, else every store (``store=``
    narrows), live first."""
    live = live_logbook()
    return [pinned(live)] if g.get("store_pin") else request_stores(live)


def _holder(session_id: str) -> Store | None:
    """The store holding this session: the pinned one, else the first of every store."""
    if g.get("store_pin"):
        store = pinned(live_logbook())
        if store.logbook is not None and store.logbook.sessions.brief(session_id) is not None:
            return store
        return None
    return find_session(live_logbook(), session_id)


def selection():
    """(parts, name, missing): the request's selection, store by store."""
    missing = Missing()
    stores = _stores()
    prune_cutoff = request.args.get("prune_cutoff")
    command = request.args.get("selection")
    if prune_cutoff or command in ("prune", "export"):
        # selection=prune: "export these first" from the prune preview, exactly the sessions
        # it listed (the live file's). selection=export: `hermes sessions export <filters>`'s
        # own selection (ended sessions matching every filter, archived ones included), oldest
        # first, in every store.
        args = request.args.copy()
        if prune_cutoff:  # Logbook 0.2's link: older than the cutoff, one source
            try:
                cutoff = float(prune_cutoff)
            except ValueError:
                abort(400, description="prune_cutoff must be a timestamp.")
            if not math.isfinite(cutoff):
                abort(400, description="prune_cutoff must be a timestamp.")
            args["before"] = datetime.fromtimestamp(cutoff).astimezone().isoformat()
        try:
            sel = selection_from_args(
                args,
                command="export" if command == "export" else "prune",
                inactivity=get_logbook().actions.rules.age_is_inactivity,
            )
        except (SelectionError, OverflowError, OSError, ValueError) as exc:
            abort(400, description=str(exc))
        if command == "export" and not sel.any_filter:
            # `hermes sessions export FILE` without a filter exports every session (its
            # export_all): the whole export, in its order, from every store.
            q = _everything_query(MultiDict())
            return (
                each_store(stores, lambda s: s.logbook.exporter.session_ids(q), missing),
                "sessions",
                missing,
            )
        name = f"{command or 'prune'}-selection"
        if command != "export":
            return [Part(stores[0], get_logbook().actions.prune_ids(sel))], name, missing
        return (
            each_store(stores, lambda s: s.logbook.actions.prune_ids(sel), missing),
            name,
            missing,
        )
    sessions = [s for s in request.args.getlist("session") if s]
    lineage = request.args.get("lineage") or None
    if lineage:
        holder = _holder(lineage)
        if holder is None:
            no_session(lineage)
        return _lineage_parts(holder, lineage), f"lineage-{lineage}", missing
    if sessions:
        held = []
        for sid in sessions:
            holder = _holder(sid)
            if holder is None:
                no_session(sid)
            held.append((sid, holder))
        name = sessions[0] if len(sessions) == 1 else f"{len(sessions)}-sessions"
        return runs(held), name, missing
    q = _everything_query()
    return (
        each_store(stores, lambda s: s.logbook.exporter.session_ids(q), missing),
        "sessions",
        missing,
    )


def _everything_query(given=None) -> SessionQuery:
    """The list's filters as an export reads them (``given``, else the request's): "everything"
    means everything, as `hermes sessions export`: every session row (subagent runs and
    continuations too) and archived sessions, unless the list's own archived filter comes
    along."""
    args = _without_cursor(request.args if given is None else given)
    for key in ("session",):
        if not any(args.getlist(key)):
            args.pop(key, None)  # the form's empty field selects nothing by itself
    args.setdefault("archived", "include")
    args["rows"] = "all"
    return SessionQuery.from_args(args)


def _lineage_parts(holder: Store, session_id: str) -> list[Part]:
    """A lineage's sessions in the order they started, in whichever stores they are kept."""
    lb = holder.logbook
    others = [] if g.get("store_pin") else elsewhere(live_logbook(), holder.name)
    if not others:
        root = lb.lineage.tree(session_id).root
        return [Part(holder, lb.exporter.session_ids(lineage_root=root))]
    tree = tree_across(
        [(holder.name, lb), *((s.name, s.logbook) for s in others)], session_id, holder.name
    )
    by_name = {holder.name: holder, **{s.name: s for s in others}}
    return runs([(n["id"], by_name[n.get("store") or holder.name]) for n in tree.nodes])


def _without_cursor(args):
    """The list's query without its page cursor: an export from page 3 of the list exports
    the whole list. An ``after`` that is a time (Hermes's --after) stays a filter."""
    args = args.copy()
    if is_cursor(args.get("after") or ""):
        args.pop("after")
    return args


def summary_numbers() -> dict:
    """How many sessions and messages the form's selection holds, and about how big its JSONL
    is: shown as the filters change, before anything is downloaded. Over several stores, each
    store's share as well (what it will write: its copies of an earlier store's sessions
    left out), and the stores that cannot be read now."""
    args = _without_cursor(request.args)
    for key in ("format", "only", "redact", "rewound", "lineage_mode", "style", "from"):
        args.pop(key, None)
    sessions = [s for s in args.getlist("session") if s]
    lineage = args.get("lineage")
    shares: list[tuple[Store, dict]] = []
    missing = Missing()
    if lineage or sessions:
        if lineage:
            holder = _holder(lineage)
            parts = _lineage_parts(holder, lineage) if holder is not None else []
        else:
            parts = runs([(sid, h) for sid in sessions if (h := _holder(sid)) is not None])
        ids_by: dict[str, tuple[Store, list[str]]] = {}
        for p in parts:
            ids_by.setdefault(p.store.name, (p.store, []))[1].extend(p.ids)
        for store, ids in ids_by.values():
            shares.append((store, store.logbook.exporter.summary(ids=ids)))
    else:
        shares = summaries(_stores(), _everything_query(), missing)
    out = {k: sum(share[k] for _s, share in shares) for k in ("sessions", "messages", "bytes")}
    if len(shares) > 1 or missing.lines:
        out["stores"] = [{"store": s.name, **share} for s, share in shares if share["sessions"]]
        out["missing_stores"] = missing.lines
    return out
