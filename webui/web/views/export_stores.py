"""The HTTP side of an export across stores (what each store gives and how a stream goes on
when one fails: webui.db.history.export): how to tell that the client has gone, and the note
that ends an incomplete export, in a form each format's readers tolerate:

* JSONL: a last line ``{"logbook_export_incomplete": {"missing": [...], "message": ...}}``
  (an object with no ``id``: a reader of session records can tell it apart);
* CSV: a last row whose first cell starts ``# incomplete:`` (the other cells empty);
* Markdown/QMD zip: a last member ``INCOMPLETE.txt`` (not in the manifest);
* HTML: an HTML comment and a paragraph after the page;
* a Markdown transcript: a last paragraph, quoted."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from flask import request

from webui.db.history import export as across_stores
from webui.db.history.export import Missing, Part


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


def streamed(
    parts: list[Part],
    produce: Callable[[Part], Iterable[Any]],
    missing: Missing,
    note: Callable[[Missing], Any] | None,
) -> Iterator[Any]:
    """webui.db.history.export.streamed, stopping when this request's client goes."""
    yield from across_stores.streamed(parts, produce, missing, note, client_gone())


def records(
    parts: list[Part], read: Callable[[Part], Iterable[dict]], missing: Missing
) -> Iterator[dict]:
    """Export records of every part; a part that fails ends there (named in ``missing``)."""
    yield from across_stores.records(parts, read, missing, client_gone())


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
