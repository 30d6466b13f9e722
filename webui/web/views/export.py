"""Streamed downloads: JSONL (Hermes's export records), Hermes's Markdown, QMD, HTML and
user-prompts formats, CSV of metadata, and Logbook's readable Markdown transcript.

Every format takes the same selection (one or more ``session``, a ``lineage`` tree, the list's
filters, or a prune preview), ``redact=1`` (Hermes's ``--redact``) and ``rewound=1`` (messages
undone by /rewind, left out by Hermes 0.19 unless asked for)."""

from __future__ import annotations

import hashlib
import itertools
import math
import time
from datetime import datetime

from flask import (
    Blueprint,
    Response,
    abort,
    g,
    jsonify,
    make_response,
    render_template,
    request,
    stream_with_context,
)
from jinja2_fragments.flask import render_block
from werkzeug.datastructures import MultiDict

from webui.db import BadRequest, SessionQuery, get_logbook, live_logbook
from webui.db.sessions import LIST_PARAMS
from webui.db.sql import is_cursor
from webui.db.stores import LIVE
from webui.hermes import export_markdown, export_prompts, exports
from webui.hermes.exports import ExportFormatError
from webui.hermes.redaction import redact_record
from webui.hermes.selection import SelectionError, selection_from_args
from webui.present import export_html
from webui.present.zipstream import zip_stream
from webui.web.stores import readable, request_stores
from webui.web.streams import guarded
from webui.web.views import refuse_unknown, wants_json

bp = Blueprint("export", __name__)


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


def _ids():
    """(ids iterator, name, whole) for the request's selection; a selection that matches
    nothing is answered with a message, never with an empty file. ``whole``: the export of
    everything (Hermes's export_all records, which carry last_active)."""
    refuse_unknown(EXPORT_PARAMS)
    ids, name = _selection()
    first = next(ids, None)
    if first is None:
        if _browser_form():
            # The form comes back as it was filled, saying so: nothing to download.
            abort(make_response(_form_page(nothing=True), 404))
        abort(
            404,
            description="No session matches this selection, so there is nothing to "
            "export. Widen the filters and try again.",
        )
    return itertools.chain([first], ids), name


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


def _whole() -> bool:
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


def _selection():
    lb = get_logbook()
    prune_cutoff = request.args.get("prune_cutoff")
    command = request.args.get("selection")
    if prune_cutoff or command in ("prune", "export"):
        # selection=prune: "export these first" from the prune preview, exactly the sessions
        # it listed. selection=export: `hermes sessions export <filters>`'s own selection
        # (ended sessions matching every filter, archived ones included), oldest first.
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
                inactivity=lb.actions.rules.age_is_inactivity,
            )
        except (SelectionError, OverflowError, OSError, ValueError) as exc:
            abort(400, description=str(exc))
        if command == "export" and not sel.any_filter:
            # `hermes sessions export FILE` without a filter exports every session (its
            # export_all): the whole export, in its order.
            return lb.exporter.session_ids(_everything()), "sessions"
        return iter(lb.actions.prune_ids(sel)), f"{command or 'prune'}-selection"
    sessions = [s for s in request.args.getlist("session") if s]
    lineage = request.args.get("lineage") or None
    if lineage:
        if lb.sessions.brief(lineage) is None:
            abort(404, description=f"No session has the id “{lineage}”.")
        root = lb.lineage.tree(lineage).root
        return lb.exporter.session_ids(lineage_root=root), f"lineage-{root}"
    if sessions:
        missing = [s for s in sessions if lb.sessions.brief(s) is None]
        if missing:
            abort(404, description=f"No session has the id “{missing[0]}”.")
        name = sessions[0] if len(sessions) == 1 else f"{len(sessions)}-sessions"
        return lb.exporter.session_ids(ids=sessions), name
    return lb.exporter.session_ids(_everything(request.args)), "sessions"


def _everything(given=None) -> SessionQuery:
    """The list's query of an export: "everything" means everything, as `hermes sessions
    export`: every session row (subagent runs and continuations too) and archived sessions,
    unless the list's own archived filter comes along."""
    args = _without_cursor(given) if given is not None else MultiDict()
    args.setdefault("archived", "include")
    args["rows"] = "all"
    return SessionQuery.from_args(args)


def _without_cursor(args):
    """The list's query without its page cursor: an export from page 3 of the list exports
    the whole list. An ``after`` that is a time (Hermes's --after) stays a filter."""
    args = args.copy()
    if is_cursor(args.get("after") or ""):
        args.pop("after")
    return args


def _download(chunks, name: str, ext: str, mimetype: str, filename: str | None = None) -> Response:
    """A streamed attachment. ``filename``: the name Hermes gives the file (made ASCII)."""
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
        },
    )


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
        return _summary()
    except BadRequest:
        return None  # the form shows the filters; the download says what is wrong


def _summary() -> dict:
    """How many sessions and messages the form's selection holds, and about how big its JSONL
    is: shown as the filters change, before anything is downloaded."""
    lb = get_logbook()
    args = _without_cursor(request.args)
    for key in ("format", "only", "redact", "rewound", "lineage_mode", "style", "from"):
        args.pop(key, None)
    sessions = [s for s in args.getlist("session") if s]
    lineage = args.get("lineage")
    if lineage:
        if lb.sessions.brief(lineage) is None:
            return {"sessions": 0, "messages": 0, "bytes": 0}
        root = lb.lineage.tree(lineage).root
        return lb.exporter.summary(ids=list(lb.exporter.session_ids(lineage_root=root)))
    if sessions:
        return lb.exporter.summary(ids=sessions)
    args.setdefault("archived", "include")
    args["rows"] = "all"
    return lb.exporter.summary(SessionQuery.from_args(args))


@bp.get("/export/summary")
def summary():
    refuse_unknown(EXPORT_PARAMS | {"from"})
    numbers = _summary()
    if wants_json():
        return jsonify(numbers)
    return render_block("export.html", "summary", summary=numbers, args=request.args)


@bp.get("/export.jsonl")
def jsonl():
    only = _only()
    whole = _whole()
    ids, name = _ids()
    # Hermes 0.19 exports the conversation as it stands: messages undone by /rewind only when
    # asked for (rewound=1).
    rewound, redact = _flag("rewound"), _flag("redact")
    ex = get_logbook().exporter
    across = _other_stores(only)
    if across:
        # The list's filters over every store: each store's sessions after the live file's,
        # a session kept in an earlier store (a copy) once.
        return _download(
            _jsonl_across(ids, across, rewound, whole, redact),
            name,
            "jsonl",
            "application/x-ndjson",
        )
    if only == "user-prompts":
        chunks = (
            line.encode()
            for rec in ex.records(ids, include_rewound=rewound, transcript=True)
            for line in export_prompts.jsonl_lines(redact_record(rec) if redact else rec)
        )
        return _download(chunks, f"{name}-user-prompts", "jsonl", "application/x-ndjson")
    return _download(
        ex.jsonl(ids, include_rewound=rewound, last_active=whole, redact=redact),
        name,
        "jsonl",
        "application/x-ndjson",
    )


def _other_stores(only: str | None) -> list:
    """The stores besides the live one a filtered JSONL export also reads (none when the
    request names sessions, a lineage, a prune/export selection or one store)."""
    a = request.args
    if only or g.get("store_pin") or g.get("all_profiles"):
        return []
    if a.getlist("session") or a.get("lineage") or a.get("selection") or a.get("prune_cutoff"):
        return []
    stores = readable(request_stores(live_logbook()))
    if not stores or stores[0].name != LIVE:
        return []
    return [(s.name, s.logbook) for s in stores[1:]]


def _jsonl_across(live_ids, others, rewound: bool, whole: bool, redact: bool):
    books = [get_logbook(), *(b for _n, b in others)]
    for i, book in enumerate(books):
        ids = live_ids if not i else _store_ids(book, books[:i])
        yield from book.exporter.jsonl(
            ids, include_rewound=rewound, last_active=whole, redact=redact
        )


def _store_ids(book, earlier):
    """A later store's ids for the request's filters, less those an earlier store holds."""
    args = _without_cursor(request.args)
    args.setdefault("archived", "include")
    args["rows"] = "all"
    q = SessionQuery.from_args(args)
    batch: list[str] = []
    for sid in book.exporter.session_ids(q):
        batch.append(sid)
        if len(batch) == 500:
            yield from _not_in(batch, earlier)
            batch = []
    yield from _not_in(batch, earlier)


def _records_across(live_ids, others, rewound: bool, redact: bool):
    """Hermes's export records over every store: the live file's, then each store's sessions
    that no earlier store holds (for the Markdown and QMD files of a filtered export)."""
    books = [get_logbook(), *(b for _n, b in others)]
    for i, book in enumerate(books):
        ids = live_ids if not i else _store_ids(book, books[:i])
        for rec in book.exporter.records(ids, include_rewound=rewound, transcript=True):
            yield redact_record(rec) if redact else rec


def _not_in(ids: list[str], books) -> list[str]:
    seen: set[str] = set()
    for b in books:
        seen |= b.sessions.existing(ids)
    return [i for i in ids if i not in seen]


def _hermes_records(ids, rewound: bool, redact: bool, logical: bool):
    """Export records as `hermes sessions export` builds them for md/qmd/html: one per
    session, or (``lineage_mode=logical``) its whole compression chain as one."""
    ex = get_logbook().exporter
    if logical:
        done: set[str] = set()
        for sid in ids:
            rec = ex.lineage_record(sid, include_rewound=rewound)
            if rec is None or rec["id"] in done:
                continue  # two segments of one chain export it once
            done.add(rec["id"])
            yield redact_record(rec) if redact else rec
        return
    for rec in ex.records(ids, include_rewound=rewound, transcript=True):
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
    if only is None and _whole():
        # As Hermes: md/qmd write a file per session, never for the whole database unasked.
        raise BadRequest(
            "Markdown and QMD exports are per session: choose a session, a lineage or at least "
            "one filter (e.g. older_than=90, source=telegram). JSONL exports everything."
        )
    if only == "user-prompts":
        if fmt != "md":
            raise BadRequest("Hermes writes user prompts as JSONL or Markdown (md), not QMD.")
        ids, name = _ids()
        records = _hermes_records(ids, rewound, redact, logical=False)
        return _download(
            export_prompts.markdown_chunks(records), f"{name}-user-prompts", "md", "text/markdown"
        )
    ids, name = _ids()
    across = [] if logical else _other_stores(only)
    records = (
        _records_across(ids, across, rewound, redact)
        if across
        else _hermes_records(ids, rewound, redact, logical)
    )
    first = next(records)
    second = next(records, None)
    if second is None:
        return _download(
            export_markdown.document_chunks(first, fmt, time.time()),
            name,
            fmt,
            "text/markdown",
            filename=export_markdown.file_name(first, fmt),
        )
    return _download(
        zip_stream(_markdown_members(itertools.chain([first, second], records), fmt)),
        f"{name}-{fmt}",
        "zip",
        "application/zip",
    )


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
    ids, name = _ids()
    rewound, redact = _flag("rewound"), _flag("redact")
    chosen = list(ids)
    across = _other_stores(None)
    if across:
        # Every store's sessions (less the copies an earlier store holds), one contents list.
        books = [get_logbook(), *(b for _n, b in across)]
        parts = [(books[0], chosen)] + [
            (b, list(_store_ids(b, books[:i]))) for i, b in enumerate(books[1:], start=1)
        ]
        parts = [(b, mine) for b, mine in parts if mine]
        if sum(len(mine) for _b, mine in parts) > 1:
            records = (
                redact_record(rec) if redact else rec
                for b, mine in parts
                for rec in b.exporter.records(iter(mine), include_rewound=rewound, transcript=True)
            )
            rows = (r for b, mine in parts for r in b.exporter.sidebar_rows(mine))
            page = export_html.page_chunks(
                records, (redact_record(r) if redact else r for r in rows)
            )
            return _download(page, name, "html", "text/html")
    records = _hermes_records(iter(chosen), rewound, redact, logical=False)
    if len(chosen) == 1:
        first = next(records, None)
        if first is None:
            abort(404, description="That session is gone.")
        page = export_html.page_chunks([first], None)
    else:
        rows = get_logbook().exporter.sidebar_rows(chosen)
        page = export_html.page_chunks(records, (redact_record(r) if redact else r for r in rows))
    return _download(page, name, "html", "text/html")


@bp.get("/export.csv")
def csv():
    _refuse("only", why=ONLY_WHERE)
    _refuse("lineage_mode", why=LINEAGE_WHERE)
    _refuse("rewound", why="applies to exports of messages; the CSV holds one row per session.")
    redact = _flag("redact")  # titles can hold a secret too
    ids, name = _ids()
    across = _other_stores(None)
    if not across:
        return _download(get_logbook().exporter.csv(ids, redact=redact), name, "csv", "text/csv")
    # Every store's rows under the live file's header (a column an older file lacks is empty).
    books = [get_logbook(), *(b for _n, b in across)]
    cols = books[0].exporter.csv_columns()

    def rows():
        for i, book in enumerate(books):
            mine = ids if not i else _store_ids(book, books[:i])
            yield from book.exporter.csv(mine, columns=cols, header=not i, redact=redact)

    return _download(rows(), name, "csv", "text/csv")


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
    ids, name = _ids()
    lb = get_logbook()
    chunks = lb.exporter.markdown(
        ids, redact=_flag("redact"), pages=lb.messages.page, every=_flag("rewound")
    )
    return _download(chunks, name, "md", "text/markdown")
