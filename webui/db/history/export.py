"""What an export reads, store by store, and how a stream ends when a store fails under it.

Every selection reads every store (``store=`` narrows): the list's filters and Hermes's
``selection=export`` each store's matching sessions, less the copies of sessions an earlier
store holds; ``session=`` and ``lineage=`` the store (or stores) that hold them, whichever
they are. A store that cannot be read, or fails or stalls while the export is written (each
of its reads has a short limit: webui.db.stores.store_set.STORE_EXPORT_LIMIT_S), ends its own part;
the stream goes on with the others and ends with a note saying what is missing, in a form the
format's readers tolerate (the notes: webui.web.views.export_stores):

* JSONL: a last line ``{"logbook_export_incomplete": {"missing": [...], "message": ...}}``
  (an object with no ``id``: a reader of session records can tell it apart);
* CSV: a last row whose first cell starts ``# incomplete:`` (the other cells empty);
* Markdown/QMD zip: a last member ``INCOMPLETE.txt`` (not in the manifest);
* HTML: an HTML comment and a paragraph after the page;
* a Markdown transcript: a last paragraph, quoted.

A client that goes away stops the export before its next batch of sessions (its slot is
given back): the web layer says how to tell (webui.web.views.export_stores.client_gone), and
writes the notes."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from webui.db import LogbookDBError
from webui.db.stores.history import Copies, copies_among
from webui.db.stores.store_set import Store


@dataclass
class Part:
    """One store's share of an export: its sessions' ids, in the export's order."""

    store: Store
    ids: Iterable[str]

    @property
    def book(self):
        return self.store.logbook


@dataclass
class Missing:
    """What an export could not read: the stores and why."""

    lines: list[str] = field(default_factory=list)

    def add(self, store: str, exc: Any) -> None:
        message = exc.message if isinstance(exc, LogbookDBError) else str(exc)
        line = f"{store}: {message}"
        if line not in self.lines:
            self.lines.append(line)

    def message(self) -> str:
        return (
            "This export is incomplete: "
            + "; ".join(self.lines)
            + ". The sessions of the stores that answered are all here."
        )


def without_copies(part_ids: Iterable[str], store: str, copies: Copies) -> Iterator[str]:
    for sid in part_ids:
        if not copies.is_copy(store, str(sid)):
            yield sid


def readable(stores: list[Store], missing: Missing) -> list[Store]:
    """The stores that can be read now; the others named in ``missing``."""
    for s in stores:
        if s.logbook is None:
            missing.add(s.name, s.message or s.status)
    return [s for s in stores if s.logbook is not None]


def each_store(
    stores: list[Store], ids_of: Callable[[Store], Iterable[str]], missing: Missing
) -> list[Part]:
    """Every readable store's ids (its copies of earlier stores' sessions left out)."""
    found = readable(stores, missing)
    copies = copies_among(found)
    return [
        Part(s, without_copies(_guarded_ids(s, ids_of, missing), s.name, copies)) for s in found
    ]


def summaries(stores: list[Store], q: Any, missing: Missing) -> list[tuple[Store, dict]]:
    """Each readable store's share of the list's selection ``q`` (sessions, messages, bytes:
    what it will write, its copies of an earlier store's sessions left out); a store that
    fails is named in ``missing``."""
    found = readable(stores, missing)
    copies = copies_among(found)
    shares: list[tuple[Store, dict]] = []
    for s in found:
        try:
            shares.append((s, s.book.exporter.summary(q, exclude=copies.of(s.name))))
        except (LogbookDBError, sqlite3.Error) as exc:
            missing.add(s.name, exc)
    return shares


def _guarded_ids(store: Store, ids_of, missing: Missing) -> Iterator[str]:
    try:
        yield from ids_of(store)
    except (LogbookDBError, sqlite3.Error) as exc:
        missing.add(store.name, exc)


def runs(holders: list[tuple[str, Store]]) -> list[Part]:
    """Ids with the store holding each, as runs of consecutive ids of one store."""
    out: list[tuple[Store, list[str]]] = []
    for sid, store in holders:
        if out and out[-1][0] is store:
            out[-1][1].append(sid)
        else:
            out.append((store, [sid]))
    return [Part(store, ids) for store, ids in out]


def first_id(parts: list[Part]) -> bool:
    """Does any part hold a session? (Reads each part's ids only up to its first.)"""
    for p in parts:
        it = iter(p.ids)
        first = next(it, None)
        if first is not None:
            p.ids = _chain(first, it)
            return True
        p.ids = []
    return False


def _chain(first, rest) -> Iterator[str]:
    yield first
    yield from rest


class ClientGone(Exception):
    """The client of a streamed export closed its connection."""


def watched(ids: Iterable[str], gone: Callable[[], bool]) -> Iterator[str]:
    """The ids, checking before each session that the client is still there."""
    for sid in ids:
        if gone():
            raise ClientGone
        yield sid


def streamed(
    parts: list[Part],
    produce: Callable[[Part], Iterable[Any]],
    missing: Missing,
    note: Callable[[Missing], Any] | None,
    gone: Callable[[], bool],
) -> Iterator[Any]:
    """``produce(part)`` for each part in turn; a part that fails ends there (named), and the
    stream ends with ``note(missing)`` when anything is missing. ``gone``: has the reader
    left? (checked before each session and after each chunk: then the stream just stops)."""
    for p in parts:
        try:
            for chunk in produce(Part(p.store, watched(p.ids, gone))):
                yield chunk
                if gone():
                    return
        except ClientGone:
            return  # nobody reads it any more: the export stops, its slot comes back
        except (LogbookDBError, sqlite3.Error) as exc:
            missing.add(p.store.name, exc)
    if missing.lines and note is not None:
        yield note(missing)


def records(
    parts: list[Part],
    read: Callable[[Part], Iterable[dict]],
    missing: Missing,
    gone: Callable[[], bool],
) -> Iterator[dict]:
    """Export records of every part; a part that fails ends there (named in ``missing``)."""
    yield from streamed(parts, read, missing, None, gone)
