"""Cold storage (webui.db.stores.coldstore): whole conversations moved from the live file into a
monthly archive file, and back. The same selection and preview as prune; the move runs as a
background job whose page (and JSON twin) says what moved, where, and how much of the live file
is now free pages."""

from __future__ import annotations

from dataclasses import replace

from flask import Blueprint, abort, current_app, jsonify, redirect, render_template, url_for
from htmx_flask import make_response, request

from webui import threads
from webui.db import BadRequest
from webui.db import deadline as request_deadline
from webui.db.stores import coldstore as cold
from webui.db.stores.coldstore import ColdStorage
from webui.hermes.selection import as_args
from webui.web.access import removal_required
from webui.web.logbooks import live_logbook
from webui.web.stores import archive_dirs, store_set
from webui.web.views import render_page, wants_json
from webui.web.views.actions import _browser_form, _chosen, _selection, held_store
from webui.web.views.storage import freed

bp = Blueprint("coldstore", __name__)


def _source():
    """Moving back (``back=1``): the archive store it reads from, named by ``from`` (by
    default this month's cold-storage file); None when moving out."""
    name = request.values.get("from") or ""
    back = request.values.get("back") in ("1", "true", "yes", "on")
    if not name and not back:
        return None
    name = name or cold.archive_file(archive_dirs(current_app)[0]).stem.replace(
        "hermes-archive-", "archive "
    )
    stores = store_set()
    try:
        found = stores.named(live_logbook(), name) if stores is not None else None
    except BadRequest:
        found = None
    if found is None or found.kind != "archive" or found.logbook is None:
        raise BadRequest(f"“{name}” is not an archive file Logbook can read (see /stores).")
    return found


def _sel(args):
    sel = _selection(args, "prune")
    # Hermes's archived sessions are cold storage's first candidates: included unless the
    # form says otherwise.
    return sel if args.get("archived") else replace(sel, archived=None)


def _target():
    return cold.archive_file(archive_dirs(current_app)[0])


def _include_resumable(args) -> bool:
    """The form's "include conversations Hermes could still continue" (off by default)."""
    return args.get("resumable") in ("1", "include", "true", "yes", "on")


def _other_stores(live) -> list:
    """Files Logbook reads as other stores that are not archives (replicas' copies, other
    profiles' live files): cold storage refuses a target that is one of them."""
    paths = [s.path for s in (store_set().others() if store_set() else []) if s.kind != "archive"]
    profiles = current_app.extensions.get("profiles")
    if profiles is not None:
        paths.extend(p.path for p in profiles.all() if p.path != live.opened.path)
    return [p for p in paths if p is not None]


@bp.get("/coldstore")
def form():
    live = live_logbook()
    source = _source()
    book = source.logbook if source else live
    sel = _sel(request.args)
    chosen = _chosen(request.args) or wants_json()
    preview = book.actions.prune_preview(sel) if chosen else None
    groups = []
    if preview is not None and preview["count"]:
        ids = book.actions.prune_ids(sel)
        groups = (
            cold.archive_conversations(source.path, ids)
            if source
            else ColdStorage.of(live).conversations_of(ids)
        )
    members = sum(len(m) for m in groups)
    target = source.path if source else _target()
    include = _include_resumable(request.args)
    stays = ColdStorage.of(live).staying(groups, include) if groups and not source else []
    # What the move would free in the live file (an estimate from the digest).
    freed_estimate = None if source else freed(live, [m for g in groups for m in g])
    if wants_json():
        return jsonify(
            {
                "direction": "back" if source else "out",
                "from": source.name if source else "live",
                "target": str(live.opened.path if source else target),
                "count": preview["count"],
                "conversations": len(groups),
                "sessions_with_conversations": members,
                "sessions": [m for g in groups for m in g],
                "messages": preview["messages"],
                "selection": as_args(sel),
                "include_resumable": include,
                "stays": stays,
                "conversations_to_move": len(groups) - len(stays),
                "freed": freed_estimate,
            }
        )
    for r in (preview or {}).get("sessions", []):
        r["label"] = r.get("title") or r["id"]
    archives = [
        s
        for s in (store_set().others() if store_set() else [])
        if s.kind == "archive" and s.readable
    ]
    return render_page(
        "coldstore.html",
        {"coldstore-preview": "preview"},
        args=request.args,
        selection=as_args(sel),
        preview=preview,
        conversations=len(groups),
        members=members,
        stays=stays,
        include_resumable=include,
        source=source,
        target=target,
        archives=archives,
        sources=book.sessions.all_sources(),
        size=live.size_bytes(),
        maintenance=live.maintenance.state(),
        freed=freed_estimate,
        held_check=live.actions.rules.bulk_refuses_held_store and not source,
    )


@bp.post("/coldstore")
@removal_required
def run():
    live = live_logbook()
    if request.form.get("confirm") != "yes":
        abort(400, description="Confirm the move (confirm=yes) after checking the preview.")
    source = _source()
    if source is None:
        # Out of the live file: a bulk removal, refused on 0.22 files while another process
        # holds it (as `hermes sessions prune`), unless overridden.
        held = held_store(live, "move to cold storage", "Move", "#coldstore-preview")
        if held is not None:
            return held
    sel = _sel(request.form)
    book = source.logbook if source else live
    ids = book.actions.prune_ids(sel)
    if source:
        groups = cold.archive_conversations(source.path, ids)
        roots = [g[0] for g in groups]
        job = cold.new_job(source.path, len(groups), back=True)
        work = lambda: ColdStorage.of(live).move_back(source.path, roots, job)  # noqa: E731
    else:
        groups = ColdStorage.of(live).conversations_of(ids)
        roots = [g[0] for g in groups]
        job = cold.new_job(
            _target(), len(groups), back=False, include_resumable=_include_resumable(request.form)
        )
        others = _other_stores(live)
        work = lambda: ColdStorage.of(live).move_out(roots, job, forbidden=others)  # noqa: E731

    def done_work():
        work()
        stores = store_set()
        if stores is not None:
            stores.forget(job.target)

    if request.htmx:
        threads.start_in_app(done_work, f"coldstore-{job.id}")
        return make_response(
            render_template("coldstore_job.html", job=job),
            push_url=url_for("coldstore.job", job_id=job.id),
        )
    with request_deadline.suspended():  # the move's transactions have budgets of their own
        done_work()
    if wants_json() or not _browser_form():
        return jsonify(job.as_json()), 200 if not job.error else 503
    return redirect(url_for("coldstore.job", job_id=job.id))


@bp.get("/coldstore/jobs/<job_id>")
def job(job_id: str):
    found = cold.job(job_id)
    if found is None:
        abort(404, description="There is no such move (moves are kept while this server runs).")
    if wants_json():
        return jsonify(found.as_json())
    if request.htmx:
        return render_template("coldstore_job.html", job=found)
    return render_template("coldstore_job_page.html", job=found)
