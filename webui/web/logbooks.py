"""Which database a request reads, chosen by the web layer from what the request says
(``?profile=``, ``store=``: webui.web.profiles and webui.web.stores set them on ``g``). The
database layer knows nothing of requests: it is handed the Logbook these return."""

from __future__ import annotations

from flask import current_app, g

from webui.db import DatabaseUnavailable, Logbook


def live_logbook() -> Logbook:
    """The live database of the profile this request is about (?profile=), else the
    primary's."""
    name = g.get("profile")
    if name and "profiles" in current_app.extensions:
        return current_app.extensions["profiles"].logbook(name)
    return current_app.extensions["logbook"]


def get_logbook() -> Logbook:
    """The database this request reads: the live one, or the one store it is pinned to
    (``store=<archive or replica>``, webui.web.stores)."""
    live = live_logbook()
    pin = g.get("store_pin")
    if pin and "stores" in current_app.extensions:
        store = current_app.extensions["stores"].named(live, pin)
        if store.logbook is None:
            raise DatabaseUnavailable(f"The store “{store.name}” cannot be read: {store.message}")
        return store.logbook
    return live
