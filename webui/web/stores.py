"""Stores in the web layer: ``store=`` (repeatable) narrows a list, search, stats, chats,
people, workspaces or export to some of them; one ``store=`` that is not the live one pins
the whole request to that store (a conversation in an archive, its lineage, its exports),
and Logbook's links on that page keep it. Rows carry the store they come from."""

from __future__ import annotations

from pathlib import Path

from flask import Flask, current_app, g, request

from webui.db import Logbook, SessionQuery
from webui.db.stores import LIVE, Store, StoreSet

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
    from webui.db.replicas import replicas_from_config

    stores = StoreSet(
        app,
        archive_dirs(app),
        replicas_from_config(app),
        live_path=primary.opened.path,
    )
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


def request_stores(live: Logbook) -> list[Store]:
    """The stores this request spans (``store=`` narrows), live first."""
    stores = store_set()
    if stores is None:
        return [Store(LIVE, "live", live.opened.path, logbook=live)]
    return stores.chosen(live, g.get("store_names") or [])


def readable(stores: list[Store]) -> list[Store]:
    return [s for s in stores if s.logbook is not None]


def spans_several(live: Logbook) -> bool:
    """More than one readable store in this request (then pages merge them)."""
    return len(readable(request_stores(live))) > 1


def pinned(live: Logbook) -> Store | None:
    """The one store this request is pinned to (``store=<name>``, not live), or None."""
    name = g.get("store_pin")
    stores = store_set()
    if not name or stores is None:
        return None
    return stores.named(live, name)


def find_session(live: Logbook, session_id: str) -> Store | None:
    """The first store (live first) holding this session, or None."""
    for store in readable(request_stores(live)):
        if store.logbook.sessions.get(session_id) is not None:
            return store
    return None


def kept_answer(book: Logbook, key: tuple, compute):
    """``compute()`` for a read-only store's ``book`` (an archive, a replica), kept under
    ``key`` until its file changes (SQLite's data_version, or for a followed replica its
    files' sizes and times; an archive changes only when cold storage writes to it): its part
    of a merged page is read once, not on every request (five archives made each merged list
    4x the live file's alone). Callers copy what they change in it."""
    version = book.reader.data_version()
    answers = book.sessions.keeper.shelf(512, name="answers")
    return answers.get_or(key, version, compute, keep=not version.startswith("unknown"))


def copies_in_earlier(books: list[tuple[str, Logbook]], q: SessionQuery) -> int:
    """How many of the rows ``q`` lists in the later stores an earlier store also holds:
    what merged pages fold (each store's matching ids are shared like its count; the probes
    run against the earlier stores' primary keys). Kept by the first store while no store
    changes or goes: with five archives of 20,000 sessions the probes are fifteen pairs."""
    mark = tuple((name, book.reader.data_version()) for name, book in books)
    copies = books[0][1].sessions.keeper.shelf(64, name="copies")
    return copies.get_or(repr(q), mark, lambda: _count_copies(books, q))


def _count_copies(books: list[tuple[str, Logbook]], q: SessionQuery) -> int:
    total = 0
    for i, (_name, book) in enumerate(books[1:], start=1):
        ids = book.sessions.matching_ids(q)
        seen: set[str] = set()
        for _before, earlier in books[:i]:
            for chunk in range(0, len(ids), 5000):
                seen |= earlier.sessions.existing(ids[chunk : chunk + 5000])
        total += len(seen)
    return total


def elsewhere(live: Logbook, here: str) -> list[Store]:
    """Every readable store but ``here`` (the one a page reads), live first, whatever
    ``store=`` narrows: a conversation split across stores is followed into all of them."""
    stores = store_set()
    every = stores.for_request(live) if stores is not None else []
    return [s for s in readable(every) if s.name != here]


def relatives_elsewhere(live: Logbook, here: str, parent_id: str | None, session_id: str):
    """A session's parent and children kept in other stores (an older segment in an archive,
    the newest in the live file): ({id, label, store, end_reason} or None, [children])."""
    parent, children = None, []
    for store in elsewhere(live, here):
        book = store.logbook
        if parent_id and parent is None:
            found = book.sessions.brief(parent_id)
            if found is not None:
                parent = {**found, "store": store.name, "label": found.get("title") or found["id"]}
        for c in book.sessions.children(session_id):
            children.append({**c, "store": store.name, "label": c.get("title") or c["id"]})
    return parent, children
