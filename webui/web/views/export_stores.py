"""What an export reads, store by store, and how a stream ends when a store fails under it.

Every selection reads every store (``store=`` narrows): the list's filters and Hermes's
``selection=export`` each store's matching sessions, less the copies of sessions an earlier
store holds; ``session=`` and ``lineage=`` the store (or stores) that hold them, whichever
they are. A store that cannot be read, or fails or stalls while the export is written (each
of its reads has a short limit: webui.db.stores.store_set.STORE_EXPORT_LIMIT_S), ends its own part;
the stream goes on with the others and ends with a note saying what is missing, in a form the
format's readers tolerate:

* JSONL: a last line ``{"logbook_export_incomplete": {"missing": [...], "message": ...}}``
  (an object with no ``id``: a reader of session records can tell it apart);
* CSV: a last row whose first cell starts ``# incomplete:`` (the other cells empty);
* Markdown/QMD zip: a last member ``INCOMPLETE.txt`` (not in the manifest);
* HTML: an HTML comment and a paragraph after the page;
* a Markdown transcript: a last paragraph, quoted.

A client that goes away stops the export before its next batch of sessions (its slot is
given back)."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from flask import request

from webui.db import LogbookDBError
from webui.db.stores.history import history_of
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


def without_copies(
    part_ids: Iterable[str], store: str, answered: list[str], history
) -> Iterator[str]:
    for sid in part_ids:
        if not history.is_copy(store, str(sid), answered):
            yield sid


def each_store(
    stores: list[Store], ids_of: Callable[[Store], Iterable[str]], missing: Missing
) -> list[Part]:
    """Every readable store's ids (its copies of earlier stores' sessions left out)."""
    readable = [s for s in stores if s.logbook is not None]
    for s in stores:
        if s.logbook is None:
            missing.add(s.name, s.message or s.status)
    history = history_of(readable)
    names = [s.name for s in readable]
    return [
        Part(s, without_copies(_guarded_ids(s, ids_of, missing), s.name, names, history))
        for s in readable
    ]


def _guarded_ids(store: Store, ids_of, missing: Missing) -> Iterator[str]:
    try:
        yield from ids_of(store)
    except (LogbookDBError, sqlite3.Error) as exc:
        missing.add(store.name, exc)


def runs(holders: list[tuple[str, Store]]) -> list[Part]:
    """Ids with the store holding each, as runs of consecutive ids of one store."""
    out: list[Part] = []
    for sid, store in holders:
        if out and out[-1].store is store:
            out[-1].ids.append(sid)  # type: ignore[union-attr]
        else:
            out.append(Part(store, [sid]))
    return out


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


def client_gone() -> Callable[[], bool]:
    """Has this request's client gone? Waitress notices a closed connection only when it
    reads from it or writes to it, which it does not while a worker produces a body; a peek
    at the socket tells at once (an orderly close reads as end of file, a reset as an error)
    and takes nothing the connection would read next."""
    check = request.environ.get("waitress.client_disconnected")
    channel = getattr(check, "__self__", None)
    if channel is None:
        return lambda: False

    def gone() -> bool:
        if not channel.connected:
            return True
        sock = channel.socket
        if sock is None:
            return True
        try:
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True

    return gone


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
) -> Iterator[Any]:
    """``produce(part)`` for each part in turn; a part that fails ends there (named), and the
    stream ends with ``note(missing)`` when anything is missing."""
    gone = client_gone()
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
    parts: list[Part], read: Callable[[Part], Iterable[dict]], missing: Missing
) -> Iterator[dict]:
    """Export records of every part; a part that fails ends there (named in ``missing``)."""
    yield from streamed(parts, read, missing, None)


# -- the notes ------------------------------------------------------------------------------


def jsonl_note(missing: Missing) -> bytes:
    body = {"logbook_export_incomplete": {"missing": missing.lines, "message": missing.message()}}
    return (json.dumps(body, ensure_ascii=False) + "\n").encode()


def csv_note(columns: int) -> Callable[[Missing], str]:
    def note(missing: Missing) -> str:
        text = "# incomplete: " + missing.message()
        cell = '"' + text.replace('"', '""') + '"'
        return cell + "," * max(0, columns - 1) + "\r\n"

    return note


def html_note(missing: Missing) -> str:
    from markupsafe import escape

    text = escape(missing.message())
    comment = missing.message().replace("--", "- -")
    return (
        f"\n<!-- logbook-export-incomplete: {escape(comment)} -->\n"
        f'<p role="alert" class="logbook-export-incomplete"><strong>{text}</strong></p>\n'
    )


def markdown_note(missing: Missing) -> str:
    return "\n\n> **Logbook:** " + missing.message().replace("\n", " ") + "\n"


def zip_note(missing: Missing) -> tuple[str, bytes]:
    return "INCOMPLETE.txt", (missing.message() + "\n").encode()
