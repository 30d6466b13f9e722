"""A session's place in the whole history: which store holds it, and its parent and children
kept in other stores (an older segment in an archive, the newest in the live file). The
stores are given (the web layer says which a request spans); an archive answers from its
summary where it can, with no query."""

from __future__ import annotations

import sqlite3

from webui.db import LogbookDBError
from webui.db.stores.store_set import Store


def holds(store: Store, session_id: str) -> bool:
    """Does this store hold the session? An archive answers from its summary (no query)."""
    if store.summary is not None:
        return session_id in store.summary.id_set()
    try:
        return store.logbook is not None and store.logbook.sessions.brief(session_id) is not None
    except (LogbookDBError, sqlite3.Error):
        return False


def first_holder(stores: list[Store], session_id: str) -> Store | None:
    """The first of ``stores`` (readable ones, live first) holding this session, or None."""
    for store in stores:
        if holds(store, session_id):
            return store
    return None


def relatives_in(
    stores: list[Store], parent_id: str | None, session_id: str
) -> tuple[dict | None, list[dict]]:
    """A session's parent and children kept in ``stores`` (the others than the one its page
    reads): ({id, label, store, end_reason} or None, [children])."""
    parent: dict | None = None
    children: list[dict] = []
    for store in stores:
        try:
            book = store.book
            if parent_id and parent is None and holds(store, parent_id):
                found = book.sessions.brief(parent_id)
                if found is not None:
                    parent = {
                        **found,
                        "store": store.name,
                        "label": found.get("title") or found["id"],
                    }
            if store.summary is not None and not any(
                d[1] == session_id for d in store.summary.dangling
            ):
                continue  # its summary says no session of it has this parent
            for c in book.sessions.children(session_id):
                children.append({**c, "store": store.name, "label": c.get("title") or c["id"]})
        except (LogbookDBError, sqlite3.Error):
            continue  # that store is named as missing elsewhere; the page still comes
    return parent, children
