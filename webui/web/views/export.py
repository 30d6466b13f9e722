"""Streamed downloads: JSONL (Hermes's export records), Hermes's Markdown, QMD, HTML and
user-prompts formats, CSV of metadata, and Logbook's readable Markdown transcript.

Every format takes the same selection (one or more ``session``, a ``lineage`` tree, the list's
filters, or a prune preview), ``redact=1`` (Hermes's ``--redact``) and ``rewound=1`` (messages
undone by /rewind, left out by Hermes 0.19 unless asked for)."""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
import time

from flask import (
    Blueprint,
    Response,
    abort,
    jsonify,
    make_response,
    render_template,
    request,
    stream_with_context,
)
from jinja2_fragments.flask import render_block

from webui.db import BadRequest, LogbookDBError
from webui.db.history.export import Missing, Part, first_id
from webui.hermes import export_markdown, export_prompts, exports
from webui.hermes.exports import ExportFormatError
from webui.hermes.redaction import redact_record
from webui.present import export_html
from webui.present.zipstream import zip_stream
from webui.version import __version__
from webui.web.logbooks import get_logbook
from webui.web.streams import guarded
from webui.web.views import refuse_unknown, wants_json
from webui.web.views.export_selection import EXPORT_PARAMS, selection, summary_numbers
from webui.web.views.export_selection import whole as everything_asked
from webui.web.views.export_stores import (
    csv_note,
    html_note,
    jsonl_note,
    markdown_note,
    records,
    streamed,
    zip_note,
)

bp = Blueprint("export", __name__)


def _ids():
    """(parts, name, missing) for the request's selection: each store's share of it (see
    webui.db.history.export); a selection that matches nothing is answered with a
    message, never with an empty file."""
    refuse_unknown(EXPORT_PARAMS)
    parts, name, missing = selection()
    if not first_id(parts):
        if _browser_form():
            # The form comes back as it was filled, saying so: nothing to download.
            abort(make_response(_form_page(nothing=True), 404))
        abort(
            404,
            description="No session matches this selection, so there is nothing to "
            "export. Widen the filters and try again.",
        )
    return parts, name, missing


def _browser_form() -> bool:
    """A download asked for by the export form in a browser (not a script, not JSON)."""
    return (
        not wants_json()
        and "text/html" in (request.headers.get("Accept") or "")
        and request.args.get("from") == "form"
    )


def _flag(name: str) -> bool:
    return request.args.get(name, "").lower() in ("1", "true", "on", "yes")


def _only() -> str | None:
    try:
        return exports.only_value(request.args.get("only"))
    except ExportFormatError as exc:
        raise BadRequest(str(exc)) from None


def _refuse(*options: str, why: str) -> None:
    """An option this route does not read is refused, naming it, never dropped: a user who
    asked for it must not get a download that silently ignores it."""
    for name in options:
        if request.args.get(name) not in (None, ""):
            problem = f"“{name}={request.args.get(name)}” {why}"
            if _browser_form():
                # The form comes back as it was filled, saying which box to clear.
                abort(make_response(_form_page(problem=problem), 400))
            raise BadRequest(problem)


ONLY_WHERE = "applies to the JSONL and Markdown exports (Hermes's --only user-prompts supports --format jsonl or md)."
LINEAGE_WHERE = "applies to the Markdown and QMD exports (Hermes's --lineage logical)."


def _download(
    chunks,
    name: str,
    ext: str,
    mimetype: str,
    filename: str | None = None,
    missing: Missing | None = None,
) -> Response:
    """A streamed attachment. ``filename``: the name Hermes gives the file (made ASCII).
    ``missing``: the stores known to be missing before the first byte are named in a header
    too (those that fail later, in the stream's last note)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "-_" else "_" for ch in name)[:80]
    if filename:
        stem = "".join(
            ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "_" for ch in filename
        )
        disposition = f'attachment; filename="{stem[:160]}"'
    else:
        disposition = f'attachment; filename="hermes-{safe}-{stamp}.{ext}"'
    # guarded: a slot of the few exports that run at once, given back however the body ends,
    # and a watchdog that drops a client who stops reading (webui/web/streams.py).
    return Response(
        guarded(stream_with_context(chunks)),
        mimetype=mimetype,
        headers={
            "Content-Disposition": disposition,
            "X-Content-Type-Options": "nosniff",
            **(
                {"X-Logbook-Missing-Stores": _header_safe("; ".join(missing.lines))}
                if missing is not None and missing.lines
                else {}
            ),
        },
    )


def _header_safe(text: str) -> str:
    return "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)[:1000]


@bp.get("/export")
def form():
    return _form_page()


def _form_page(nothing: bool = False, problem: str | None = None) -> str:
    lb = get_logbook()
    return render_template(
        "export.html",
        sources=lb.sessions.all_sources(),
        models=lb.sessions.models(),
        args=request.args,
        has_archived=lb.schema.has("sessions", "archived"),
        nothing=nothing,
        problem=problem,
        summary=None if nothing else _summary_or_none(),
    )


def _summary_or_none():
    try:
        return summary_numbers()
    except BadRequest:
        return None  # the form shows the filters; the download says what is wrong


@bp.get("/export/summary")
def summary():
    refuse_unknown(EXPORT_PARAMS | {"from"})
    numbers = summary_numbers()
    if wants_json():
        return jsonify(numbers)
    return render_block("export.html", "summary", summary=numbers, args=request.args)


@bp.get("/export.jsonl")
def jsonl():
    only = _only()
    whole = everything_asked()
    parts, name, missing = _ids()
    # Hermes 0.19 exports the conversation as it stands: messages undone by /rewind only when
    # asked for (rewound=1).
    rewound, redact = _flag("rewound"), _flag("redact")
    if only == "user-prompts":

        def prompts(p: Part):
            for rec in p.book.exporter.records(p.ids, include_rewound=rewound, transcript=True):
                for line in export_prompts.jsonl_lines(redact_record(rec) if redact else rec):
                    yield line.encode()

        chunks = streamed(parts, prompts, missing, jsonl_note)
        return _download(chunks, f"{name}-user-prompts", "jsonl", "application/x-ndjson")
    chunks = streamed(
        parts,
        lambda p: p.book.exporter.jsonl(
            p.ids, include_rewound=rewound, last_active=whole, redact=redact
        ),
        missing,
        jsonl_note,
    )
    return _download(chunks, name, "jsonl", "application/x-ndjson", missing=missing)


def _hermes_records(parts, rewound: bool, redact: bool, logical: bool, missing: Missing):
    """Export records as `hermes sessions export` builds them for md/qmd/html: one per
    session, or (``lineage_mode=logical``) its whole compression chain as one; store by
    store, a store that fails ending its part."""
    done: set[str] = set()

    def read(p: Part):
        ex = p.book.exporter
        if not logical:
            yield from ex.records(p.ids, include_rewound=rewound, transcript=True)
            return
        for sid in p.ids:
            rec = ex.lineage_record(sid, include_rewound=rewound)
            if rec is None or rec["id"] in done:
                continue  # two segments of one chain export it once
            done.add(rec["id"])
            yield rec

    for rec in records(parts, read, missing):
        yield redact_record(rec) if redact else rec


def _hermes_document(fmt: str):
    """/export.md and /export.qmd: Hermes's files. One session gives its file; several give a
    zip of their files and Hermes's manifest.jsonl, streamed member by member."""
    only = _only()
    try:
        logical = exports.lineage_mode(request.args.get("lineage_mode")) == "logical"
    except ExportFormatError as exc:
        raise BadRequest(str(exc)) from None
    rewound, redact = _flag("rewound"), _flag("redact")
    if only is None and everything_asked():
        # As Hermes: md/qmd write a file per session, never for the whole database unasked.
        raise BadRequest(
            "Markdown and QMD exports are per session: choose a session, a lineage or at least "
            "one filter (e.g. older_than=90, source=telegram). JSONL exports everything."
        )
    if only == "user-prompts" and fmt != "md":
        raise BadRequest("Hermes writes user prompts as JSONL or Markdown (md), not QMD.")
    parts, name, missing = _ids()
    if only == "user-prompts":
        recs = _hermes_records(parts, rewound, redact, False, missing)
        chunks = _then_note(export_prompts.markdown_chunks(recs), missing, markdown_note)
        return _download(chunks, f"{name}-user-prompts", "md", "text/markdown", missing=missing)
    recs = _hermes_records(parts, rewound, redact, logical, missing)
    first = next(recs, None)
    if first is None:
        abort(
            404,
            description="The sessions of this selection could not be read: "
            + ("; ".join(missing.lines) or "they are gone."),
        )
    second = next(recs, None)
    if second is None:
        return _download(
            _then_note(
                export_markdown.document_chunks(first, fmt, time.time()), missing, markdown_note
            ),
            name,
            fmt,
            "text/markdown",
            filename=export_markdown.file_name(first, fmt),
            missing=missing,
        )
    members = _markdown_members(itertools.chain([first, second], recs), fmt)
    return _download(
        zip_stream(_then_note(members, missing, zip_note)),
        f"{name}-{fmt}",
        "zip",
        "application/zip",
        missing=missing,
    )


def _then_note(chunks, missing: Missing, note):
    """The chunks, then the note of what is missing, if anything is once they are done."""
    yield from chunks
    if missing.lines:
        yield note(missing)


def _markdown_members(records, fmt: str):
    """A file per session, streamed, then Hermes's manifest.jsonl (each line carries the
    SHA-256 of the file as written)."""
    manifest = []
    for rec in records:
        filename = export_markdown.file_name(rec, fmt)
        digest = hashlib.sha256()

        def chunks(rec=rec, digest=digest):
            for text in export_markdown.document_chunks(rec, fmt, time.time()):
                data = text.encode("utf-8")
                digest.update(data)
                yield data

        yield filename, chunks()
        manifest.append(
            export_markdown.manifest_line(rec, filename, fmt, digest.hexdigest(), time.time())
        )
    yield "manifest.jsonl", "".join(manifest).encode("utf-8")


@bp.get("/export.qmd")
def qmd():
    return _hermes_document("qmd")


@bp.get("/export.html")
def html():
    """Logbook's standalone page (what Hermes's page holds, in its order): one session, or
    any number after a list of contents. The contents need the sessions' short rows before
    their messages, so the ids are read first (a few bytes a session) and the conversations
    then stream one at a time."""
    _refuse("only", why=ONLY_WHERE)
    _refuse("lineage_mode", why=LINEAGE_WHERE)
    parts, name, missing = _ids()
    rewound, redact = _flag("rewound"), _flag("redact")
    chosen: list[Part] = []
    for p in parts:
        try:
            ids = list(p.ids)
        except (LogbookDBError, sqlite3.Error) as exc:
            missing.add(p.store.name, exc)
            continue
        if ids:
            chosen.append(Part(p.store, ids))
    count = sum(len(p.ids) for p in chosen)
    recs = _hermes_records(chosen, rewound, redact, False, missing)
    if count == 1:
        first = next(recs, None)
        if first is None:
            abort(404, description="That session is gone.")
        page = export_html.page_chunks([first], None, version=__version__)
    else:
        rows = records(chosen, lambda p: p.book.exporter.sidebar_rows(list(p.ids)), Missing())
        page = export_html.page_chunks(
            recs, (redact_record(r) if redact else r for r in rows), version=__version__
        )
    return _download(
        _then_note(page, missing, html_note), name, "html", "text/html", missing=missing
    )


@bp.get("/export.csv")
def csv():
    _refuse("only", why=ONLY_WHERE)
    _refuse("lineage_mode", why=LINEAGE_WHERE)
    _refuse("rewound", why="applies to exports of messages; the CSV holds one row per session.")
    redact = _flag("redact")  # titles can hold a secret too
    parts, name, missing = _ids()
    # Every store's rows under the first store's header (a column an older file lacks is
    # empty).
    cols = parts[0].book.exporter.csv_columns() if len(parts) > 1 else None
    first = [True]

    def rows(p: Part):
        header, first[0] = first[0], False
        yield from p.book.exporter.csv(p.ids, columns=cols, header=header, redact=redact)

    chunks = streamed(
        parts, rows, missing, csv_note(len(cols or parts[0].book.exporter.csv_columns()))
    )
    return _download(chunks, name, "csv", "text/csv", missing=missing)


@bp.get("/export.md")
def markdown():
    if request.args.get("style") != "transcript":
        return _hermes_document("md")
    # Logbook's own transcript: easy to read, every message fenced so none can pass for a
    # heading or carry HTML into a Markdown viewer.
    if not any(request.args.get(k) for k in ("session", "lineage", "session_key")):
        raise BadRequest(
            "A Markdown transcript is for one session (session=), one lineage (lineage=) or "
            "one chat (session_key=)."
        )
    _refuse(
        "only", why="applies to Hermes's Markdown export, not the transcript (style=transcript)."
    )
    _refuse("lineage_mode", why=LINEAGE_WHERE.replace("exports", "exports, not the transcript,"))
    parts, name, missing = _ids()
    redact, every = _flag("redact"), _flag("rewound")
    chunks = streamed(
        parts,
        lambda p: p.book.exporter.markdown(
            iter(p.ids), redact=redact, pages=p.book.messages.page, every=every
        ),
        missing,
        markdown_note,
    )
    return _download(chunks, name, "md", "text/markdown", missing=missing)
