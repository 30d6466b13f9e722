"""Stores in the web layer: ``store=`` (repeatable) narrows a list, search, stats, chats,
people, workspaces or export to some of them; one ``store=`` that is not the live one pins
the whole request to that store (a conversation in an archive, its lineage, its exports),
and Logbook's links on that page keep it. Rows carry the store they come from. A session id
kept in any one store opens from any page without ``store=`` (found by its id)."""

from __future__ import annotations

from pathlib import Path

from flask import Flask, current_app, g, has_request_context, request

from webui.db import Logbook
from webui.db.deadline import OUT_OF_TIME, short_of_time  # noqa: F401 - the views' names
from webui.db.history.relatives import first_holder, relatives_in
from webui.db.stores.store_set import LIVE, Store, StoreSet

# Links that stay within a pinned store: a session's own pages.
PINNED_ENDPOINTS = {
    "sessions.view_session",
    "sessions.tail",
    "lineage.lineage",
    "export.jsonl",
    "export.markdown",
    "export.qmd",
    "export.html",
    "export.csv",
    "origins.chat",
}


def archive_dirs(app: Flask) -> list[Path]:
    """The folders read as archives: those given (``--archives``), then cold storage's own
    folder when none is given (the instance's ``archives/``)."""
    given = [Path(d).expanduser() for d in app.config.get("LOGBOOK_ARCHIVES") or []]
    return given or [Path(app.instance_path) / "archives"]


def init_app(app: Flask, primary: Logbook) -> None:
    from webui.db.stores.replicas import replicas_from_config

    stores = StoreSet(
        app,
        archive_dirs(app),
        replicas_from_config(app),
        live_path=primary.opened.path,
    )
    stores.live_schema = primary.schema.version
    app.extensions["stores"] = stores

    @app.before_request
    def choose_store():
        names = [n for n in request.args.getlist("store") if n]
        g.store_names = names
        g.store_pin = names[0] if len(names) == 1 and names[0] != LIVE else None

    @app.url_defaults
    def keep_store(endpoint, values):
        pin = g.get("store_pin")
        if pin and "store" not in values and endpoint in PINNED_ENDPOINTS:
            values["store"] = pin


def store_set() -> StoreSet | None:
    return current_app.extensions.get("stores")


def every_store(live: Logbook) -> list[Store]:
    """Every store (whatever ``store=`` says), live first; read once per request."""
    stores = store_set()
    if stores is None:
        return [Store(LIVE, "live", live.opened.path, logbook=live)]
    # Per request (g may outlive one: a streamed response keeps its context).
    key = f"_every_store_{id(live)}"
    found = g.get(key)
    here = request._get_current_object() if has_request_context() else None
    if found is None or found[0] is not here:
        found = (here, stores.for_request(live))
        setattr(g, key, found)
    return found[1]


def request_stores(live: Logbook) -> list[Store]:
    """The stores this request spans (``store=`` narrows), live first."""
    every = every_store(live)
    names = g.get("store_names") or []
    stores = store_set()
    if not names or stores is None:
        return every
    return stores.chosen(live, names)


def readable(stores: list[Store]) -> list[Store]:
    return [s for s in stores if s.logbook is not None]


def unreadable(stores: list[Store]) -> list[str]:
    """The stores of this request that cannot be read now, each with the reason (a file not
    read yet, broken, stalled, a replica not restored yet): named on every merged page."""
    return [f"{s.name}: {s.message or s.status}" for s in stores if s.logbook is None]


def pinned(live: Logbook) -> Store | None:
    """The one store this request is pinned to (``store=<name>``, not live), or None."""
    name = g.get("store_pin")
    stores = store_set()
    if not name or stores is None:
        return None
    return stores.named(live, name)


def find_session(live: Logbook, session_id: str) -> Store | None:
    """The first store (live first) holding this session, or None: every store, whatever
    ``store=`` says (a session id opens from any page)."""
    return first_holder(readable(every_store(live)), session_id)


def elsewhere(live: Logbook, here: str) -> list[Store]:
    """Every readable store but ``here`` (the one a page reads), live first, whatever
    ``store=`` narrows: a conversation split across stores is followed into all of them."""
    return [s for s in readable(every_store(live)) if s.name != here]


def relatives_elsewhere(live: Logbook, here: str, parent_id: str | None, session_id: str):
    """A session's parent and children kept in other stores (an older segment in an archive,
    the newest in the live file): ({id, label, store, end_reason} or None, [children])."""
    return relatives_in(elsewhere(live, here), parent_id, session_id)
