"""Streamed downloads: JSONL (Hermes's export records), Hermes's Markdown, QMD, HTML and
user-prompts formats, CSV of metadata, and Logbook's readable Markdown transcript.

Every format takes the same selection (one or more ``session``, a ``lineage`` tree, the list's
filters, or a prune preview), ``redact=1`` (Hermes's ``--redact``) and ``rewound=1`` (messages
undone by /rewind, left out by Hermes 0.19 unless asked for)."""

from __future__ import annotations

import hashlib
import itertools
import math
import sqlite3
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

from webui.db import BadRequest, LogbookDBError, SessionQuery, get_logbook, live_logbook
from webui.db.history import history_of
from webui.db.lineage import tree_across
from webui.db.sessions import LIST_PARAMS
from webui.db.sql import is_cursor
from webui.db.stores import Store
from webui.hermes import export_markdown, export_prompts, exports
from webui.hermes.exports import ExportFormatError
from webui.hermes.redaction import redact_record
from webui.hermes.selection import SelectionError, selection_from_args
from webui.present import export_html
from webui.present.zipstream import zip_stream
from webui.web.stores import elsewhere, find_session, pinned, request_stores
from webui.web.streams import guarded
from webui.web.views import refuse_unknown, wants_json
from webui.web.views.export_stores import (
    Missing,
    Part,
    csv_note,
    each_store,
    first_id,
    html_note,
    jsonl_note,
    markdown_note,
    records,
    runs,
    streamed,
    zip_note,
)

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
    """(parts, name, missing) for the request's selection: each store's share of it (see
    webui.web.views.export_stores); a selection that matches nothing is answered with a
    message, never with an empty file."""
    refuse_unknown(EXPORT_PARAMS)
    parts, name, missing = _selection()
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


def _selection():
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
            abort(404, description=f"No session has the id “{lineage}”.")
        return _lineage_parts(holder, lineage), f"lineage-{lineage}", missing
    if sessions:
        held = []
        for sid in sessions:
            holder = _holder(sid)
            if holder is None:
                abort(404, description=f"No session has the id “{sid}”.")
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
        return _summary()
    except BadRequest:
        return None  # the form shows the filters; the download says what is wrong


def _summary() -> dict:
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
        q = _everything_query()
        stores = _stores()
        readable = [s for s in stores if s.logbook is not None]
        for s in stores:
            if s.logbook is None:
                missing.add(s.name, s.message or s.status)
        history = history_of(readable)
        names = [s.name for s in readable]
        for s in readable:
            try:
                shares.append(
                    (s, s.logbook.exporter.summary(q, exclude=history.copies_in(s.name, names)))
                )
            except (LogbookDBError, sqlite3.Error) as exc:
                missing.add(s.name, exc)
    out = {k: sum(share[k] for _s, share in shares) for k in ("sessions", "messages", "bytes")}
    if len(shares) > 1 or missing.lines:
        out["stores"] = [{"store": s.name, **share} for s, share in shares if share["sessions"]]
        out["missing_stores"] = missing.lines
    return out


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
    if only is None and _whole():
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
        page = export_html.page_chunks([first], None)
    else:
        rows = records(chosen, lambda p: p.book.exporter.sidebar_rows(list(p.ids)), Missing())
        page = export_html.page_chunks(recs, (redact_record(r) if redact else r for r in rows))
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
