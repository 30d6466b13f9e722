"""Streamed downloads: JSONL (Hermes's export records), CSV of metadata, Markdown transcripts."""

from __future__ import annotations

import itertools
import math
import time
from datetime import datetime

from flask import Blueprint, Response, abort, render_template, request, stream_with_context

from webui.db import BadRequest, SessionQuery, get_logbook
from webui.hermes.selection import SelectionError, selection_from_args

bp = Blueprint("export", __name__)


def _ids():
    """(ids iterator, name) for the request's selection; a selection that matches nothing is
    answered with a message, never with an empty file."""
    ids, name = _selection()
    first = next(ids, None)
    if first is None:
        abort(
            404,
            description="No session matches this selection, so there is nothing to "
            "export. Widen the filters and try again.",
        )
    return itertools.chain([first], ids), name


def _selection():
    lb = get_logbook()
    prune_cutoff = request.args.get("prune_cutoff")
    if prune_cutoff or request.args.get("selection") == "prune":
        # "Export these first" from the prune preview: exactly the sessions it listed.
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
            sel = selection_from_args(args, command="prune")
        except (SelectionError, OverflowError, OSError, ValueError) as exc:
            abort(400, description=str(exc))
        return iter(lb.actions.prune_ids(sel)), "prune-preview"
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
    args = request.args.copy()
    args.pop("after", None)
    # "Everything" means everything, as `hermes sessions export`: every session row (subagent
    # runs and continuations too) and archived sessions, unless the list's own archived
    # filter comes along.
    args.setdefault("archived", "include")
    args["rows"] = "all"
    return lb.exporter.session_ids(SessionQuery.from_args(args)), "sessions"


def _download(chunks, name: str, ext: str, mimetype: str) -> Response:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "-_" else "_" for ch in name)[:80]
    return Response(
        stream_with_context(chunks),
        mimetype=mimetype,
        headers={
            "Content-Disposition": f'attachment; filename="hermes-{safe}-{stamp}.{ext}"',
            "X-Content-Type-Options": "nosniff",
        },
    )


@bp.get("/export")
def form():
    return render_template("export.html", sources=get_logbook().sessions.all_sources())


@bp.get("/export.jsonl")
def jsonl():
    ids, name = _ids()
    # Hermes 0.19 exports the conversation as it stands: messages undone by /rewind only when
    # asked for (rewound=1).
    rewound = request.args.get("rewound") in ("1", "true", "on", "yes")
    return _download(
        get_logbook().exporter.jsonl(ids, include_rewound=rewound),
        name,
        "jsonl",
        "application/x-ndjson",
    )


@bp.get("/export.csv")
def csv():
    ids, name = _ids()
    return _download(get_logbook().exporter.csv(ids), name, "csv", "text/csv")


@bp.get("/export.md")
def markdown():
    if not (request.args.get("session") or request.args.get("lineage")):
        raise BadRequest(
            "A Markdown transcript is for one session (session=) or one lineage (lineage=)."
        )
    ids, name = _ids()
    return _download(get_logbook().exporter.markdown(ids), name, "md", "text/markdown")
