"""Archive and unarchive (`hermes sessions archive <filters>`): the same selection and preview
as prune, on the actions blueprint (its addresses and endpoint names are the actions')."""

from __future__ import annotations

from dataclasses import replace

from flask import abort, flash, jsonify, redirect, url_for
from htmx_flask import request
from markupsafe import escape

from webui.db import BadRequest
from webui.hermes.selection import Selection, archive_problem, as_args
from webui.web.access import change_required, safe_next
from webui.web.logbooks import get_logbook
from webui.web.selection_args import chosen as _chosen
from webui.web.selection_args import selection as _selection
from webui.web.selection_args import spared_json as _spared_json
from webui.web.views import wants_json
from webui.web.views.actions import (
    _browser_form,
    _preview,
    _selection_page,
    _toast,
    archive_words,
    bp,
)


@bp.route("/archive", methods=["GET"])
def archive_form():
    """Preview of `hermes sessions archive <filters>` (or the reverse with unarchive=1)."""
    lb = get_logbook()
    if not lb.schema.has("sessions", "archived"):
        abort(404, description="This database has no archive (Hermes added it in a later schema).")
    unarchive = request.args.get("unarchive") in ("1", "true", "yes", "on")
    sel = _archive_selection(request.args, unarchive)
    chosen = _chosen(request.args)
    problem = archive_problem(sel) if chosen or wants_json() else None
    preview = None if problem or not chosen else _preview(sel)
    if wants_json():
        if problem:
            raise BadRequest(problem)
        return jsonify(
            {
                "count": preview["count"],
                "sessions": lb.actions.prune_ids(sel),
                "filters": preview["described"],
                "totals": preview["totals"],
                "unarchive": unarchive,
                "selection": as_args(sel),
                "spared": _spared_json(preview),
            }
        )
    return _selection_page(
        "archive.html",
        "archive-preview",
        sel,
        preview,
        problem=problem,
        unarchive=unarchive,
    )


def _archive_selection(args, unarchive: bool) -> Selection:
    sel = _selection(args, "archive")
    if sel.include_pinned:
        raise BadRequest(
            "Archive always spares pinned sessions (Hermes's archive has no --include-pinned): "
            "unpin them first."
        )
    # Unarchiving picks among archived sessions; archiving among the others (Hermes).
    return replace(sel, archived=unarchive)


@bp.post("/archive")
@change_required
def archive_run():
    lb = get_logbook()
    if not lb.schema.has("sessions", "archived"):
        abort(404, description="This database has no archive (Hermes added it in a later schema).")
    if request.form.get("confirm") != "yes":
        abort(400, description="Confirm (confirm=yes) after checking the preview.")
    unarchive = request.form.get("unarchive") in ("1", "true", "yes", "on")
    sel = _archive_selection(request.form, unarchive)
    problem = archive_problem(sel)
    if problem:
        raise BadRequest(problem)
    # Sessions named by id are taken as they are, archived or not: archiving one twice says
    # "nothing changed" rather than "nothing matches".
    chosen = replace(sel, archived=None) if sel.sessions else sel
    matched, changed = lb.actions.set_archived(lb.actions.prune_ids(chosen), not unarchive)
    message = archive_words(matched, changed, unarchive)
    if request.htmx:
        return _toast(f'<p class="notice" role="status">{escape(message)}</p>', message)
    if wants_json() or not _browser_form():
        return jsonify(
            {
                "matched": matched,
                "rows_changed": changed,
                "unarchive": unarchive,
                "message": message,
            }
        )
    flash(message)
    back = safe_next(request.form.get("next"), url_for("actions.archive_form"))
    return redirect(back)
