"""Changes: rename, delete (one or a selection), prune. Every one of them is a POST with a
CSRF token, refused when changes are off (read-only, remote without admin, newer schema)."""

from __future__ import annotations

from pathlib import Path

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    flash,
    g,
    jsonify,
    redirect,
    render_template,
    url_for,
)
from htmx_flask import make_response, request
from markupsafe import escape

from webui.db.changes.actions import NotFound, TitleInUse
from webui.db.changes.backup import BackupFailed, ChangedSinceBackup
from webui.db.changes.guards import ActiveSession
from webui.db.errors import LogbookDBError
from webui.db.stores.store_set import LIVE
from webui.hermes.changes import HELD_STORE_OVERRIDE
from webui.hermes.selection import (
    Selection,
    as_args,
)
from webui.hermes.titles import TitleError
from webui.present.rows import session_label
from webui.web.access import change_required, removal_refusal, removal_required, safe_next
from webui.web.logbooks import get_logbook, live_logbook
from webui.web.selection_args import chosen as _chosen
from webui.web.selection_args import cutoff as _cutoff
from webui.web.selection_args import selection as _selection
from webui.web.selection_args import spared_json as _spared_json
from webui.web.stores import find_session
from webui.web.views import no_session, render_page, wants_json
from webui.web.views.storage import freed

bp = Blueprint("actions", __name__)


def backup_root() -> Path:
    """Verified backups land in the instance folder, beside Logbook's own state."""
    return Path(current_app.instance_path) / "session-exports"


# Above this many sessions the prune button needs a ticked "yes, delete these" box as well.
PRUNE_CONFIRM_ABOVE = 10


def _session_or_404(session_id: str) -> dict:
    """The session, by its id or, as `hermes sessions delete/rename` accept, a prefix that
    names exactly one session."""
    lb = get_logbook()
    row = lb.sessions.brief(session_id)
    if row is None:
        matches = lb.sessions.resolve_prefix(session_id, limit=1)
        if len(matches) == 1:
            row = lb.sessions.brief(matches[0]["id"])
        elif len(matches) > 1:
            abort(
                404,
                description=f"“{session_id}” is the start of several session ids; give more of it.",
            )
    if row is None:
        elsewhere = find_session(live_logbook(), session_id)
        if elsewhere is not None and elsewhere.name != LIVE:
            abort(
                403,
                description=f"This session is kept in “{elsewhere.name}”, which Logbook only "
                "reads: nothing was changed. Changes apply to the live database (move it back "
                "from cold storage first).",
            )
        no_session(session_id)
    return row


def _where() -> str:
    return "list" if request.values.get("where") == "list" else "viewer"


def _label(s: dict) -> str:
    preview = None
    if not s.get("title"):
        preview = get_logbook().sessions.first_user_text(s["id"])
    return session_label({"title": s.get("title"), "preview": preview}) or s["id"]


def _display(s: dict, where: str) -> str:
    return render_template("title_fragment.html", mode="show", s=s, where=where, label=_label(s))


def _edit(
    s: dict, where: str, value: str | None, error: str | None = None, other: str | None = None
) -> str:
    return render_template(
        "title_fragment.html", mode="edit", s=s, where=where, value=value, error=error, other=other
    )


def _browser_form() -> bool:
    """A plain HTML form without JavaScript (token in the form, no htmx): it wants a redirect.
    htmx and scripts (token in the X-CSRFToken header) get the fragment itself."""
    return not request.htmx and "csrf_token" in request.form


def _toast(
    body: str, message: str, status: int = 200, link: tuple[str, str] | None = None
) -> Response:
    """The fragment with a toast (HX-Trigger). The toast names the profile when there are
    several: an action touches one database. ``link``: (path, words) to the result."""
    if "profiles" in current_app.extensions:
        name = g.get("profile") or current_app.extensions["profiles"].primary_name
        message = f"{message} (profile “{name}”)"
    toast: str | dict = (
        message if link is None else {"text": message, "href": link[0], "link": link[1]}
    )
    return make_response(body, status, trigger={"toast": toast})


@bp.get("/sessions/<session_id>/title")
def show_title(session_id: str):
    return _display(_session_or_404(session_id), _where())


@bp.get("/sessions/<session_id>/title/edit")
@change_required
def edit_title(session_id: str):
    s = _session_or_404(session_id)
    session_id = s["id"]  # a unique prefix names its session, as in Hermes's commands
    if not request.htmx:
        return render_template("rename.html", s=s, where=_where())
    return _edit(s, _where(), s.get("title"))


@bp.post("/sessions/<session_id>/title")
@change_required
def set_title(session_id: str):
    lb = get_logbook()
    s = _session_or_404(session_id)
    session_id = s["id"]  # a unique prefix names its session, as in Hermes's commands
    raw = request.form.get("title", "")
    where = _where()
    edit = _edit
    try:
        title = lb.actions.rename(session_id, raw)
    except TitleInUse as exc:
        if _browser_form():
            return render_template(
                "rename.html",
                s=s,
                where=where,
                value=raw,
                error=f"“{exc.title}” is already in use by",
                other=exc.other_id,
            ), 409
        return edit(s, where, raw, f"“{exc.title}” is already in use by", exc.other_id), 409
    except TitleError as exc:
        if _browser_form():
            return render_template("rename.html", s=s, where=where, value=raw, error=str(exc)), 422
        return edit(s, where, raw, str(exc)), 422
    s = {**s, "title": title}
    message = f"Renamed to “{title}”" if title else "Title cleared"
    if _browser_form():
        flash(message)
        return redirect(url_for("sessions.view_session", session_id=session_id))
    return _toast(_display(s, where), message)


@bp.get("/sessions/<session_id>/delete")
@removal_required
def confirm_delete(session_id: str):
    lb = get_logbook()
    s = _session_or_404(session_id)
    session_id = s["id"]  # a unique prefix names its session, as in Hermes's commands
    counts = lb.messages.counts(session_id)
    cascade = lb.actions.rules.delete_cascades
    subagents = lb.actions.delegate_children([session_id]) if cascade else []
    children = [c for c in lb.sessions.children(session_id) if c["id"] not in set(subagents)]
    files = (
        [p.name for sid in [session_id, *subagents] for p in lb.actions.transcript_files(sid)]
        if cascade
        else []
    )
    flags = lb.actions.session_flags(session_id)
    return render_template(
        "delete.html",
        s=s,
        label=_label(s),
        counts=counts,
        children=children,
        subagents=[lb.sessions.brief(i) or {"id": i} for i in subagents],
        files=files,
        pinned=bool(flags.get("pinned")) and lb.actions.rules.warns_deleting_pinned,
        hermes=lb.actions.rules.hermes,
    )


def _refused(exc: LogbookDBError):
    """A change refused with its reason (409): htmx keeps the page as it is and shows the
    reason as a toast; a form or a script gets the error page or its JSON."""
    if request.htmx and not wants_json():
        return make_response(
            f'<p class="notice" role="alert">{escape(exc.message)}</p>',
            exc.status,
            trigger={"toast": exc.message},
            reswap="none",
        )
    abort(exc.status, description=exc.message)


@bp.post("/sessions/<session_id>/delete")
@removal_required
def delete(session_id: str):
    lb = get_logbook()
    s = _session_or_404(session_id)
    session_id = s["id"]  # a unique prefix names its session, as in Hermes's commands
    label = _label(s)
    backed_up = ""
    if request.form.get("backup") in ("1", "verified", "on", "yes"):
        # Hermes's --delete-after-verified: export, read back and check, then delete what the
        # backup holds (webui.db.changes.backup).
        try:
            deleted, done = lb.actions.delete_backed_up(session_id, lb.exporter, backup_root())
        except (BackupFailed, ChangedSinceBackup) as exc:
            abort(409, description=str(exc))
        except ActiveSession as exc:
            return _refused(exc)
        backed_up = (
            f" after backing up {done.messages:,} message{'s' if done.messages != 1 else ''} "
            f"to {done.folder} (verified)"
        )
    else:
        try:
            deleted = lb.actions.delete(session_id)
        except ActiveSession as exc:
            return _refused(exc)
    if not deleted:
        no_session(session_id)
    message = f"Deleted “{label}”" + _extras(deleted) + backed_up
    if deleted.warning:
        message += f". {deleted.warning}"
    if not _browser_form():
        # From the list: the row goes away (empty swap) and a toast says so.
        return _toast("", message)
    flash(message)
    return redirect(url_for("sessions.list_sessions"))


def _extras(deleted) -> str:
    """What else a delete removed, in words (Hermes 0.19's cascade)."""
    parts = []
    if deleted.subagents:
        parts.append(f"{deleted.subagents} subagent run{'s' if deleted.subagents != 1 else ''}")
    if deleted.files:
        parts.append(f"{deleted.files} transcript file{'s' if deleted.files != 1 else ''}")
    if deleted.prompts:
        parts.append(
            f"{deleted.prompts} system prompt{'s' if deleted.prompts != 1 else ''} no other "
            "session used"
        )
    return (" with " + " and ".join(parts)) if parts else ""


@bp.post("/sessions/bulk")
@change_required
def bulk():
    lb = get_logbook()
    ids = list(dict.fromkeys(i for i in request.form.getlist("session") if i))
    action = request.form.get("action", "preview")
    if not ids:
        abort(400, description="Select at least one session first.")
    if action == "export":
        return redirect(url_for("export.jsonl", session=ids))
    rows = [r for r in (lb.sessions.brief(i) for i in ids) if r]
    if len(rows) < len(ids):
        # A session kept in an archive or a replica: Logbook only reads it. Refused, naming
        # where it is, before anything changes (never "Deleted 0").
        here = {r["id"] for r in rows}
        for sid in ids:
            if sid in here:
                continue
            elsewhere = find_session(live_logbook(), sid)
            if elsewhere is not None and elsewhere.name != LIVE:
                abort(
                    403,
                    description=f"The session “{sid}” is kept in “{elsewhere.name}”, which "
                    "Logbook only reads: nothing was changed. Changes apply to the live "
                    "database (move it back from cold storage first).",
                )
    if action in ("archive", "unarchive"):
        # Not destructive (undone by its reverse): done at once, the result said in words.
        if not lb.schema.has("sessions", "archived"):
            abort(404, description="This database has no archive (a later Hermes schema has).")
        matched, changed = lb.actions.set_archived(ids, action == "archive")
        message = archive_words(matched, changed, action == "unarchive")
        if request.htmx:
            return _toast(f'<p class="notice" role="status">{escape(message)}</p>', message)
        flash(message)
        return redirect(safe_next(request.form.get("next"), url_for("sessions.list_sessions")))
    if action == "delete" and request.form.get("confirm") == "yes":
        reason = removal_refusal()
        if reason:
            abort(409, description=reason)
        deleted, active = [], []
        for r in rows:
            try:
                if lb.actions.delete(r["id"]):
                    deleted.append(r)
            except ActiveSession:
                active.append(r["id"])
        message = f"Deleted {len(deleted)} session{'s' if len(deleted) != 1 else ''}"
        if active:
            message += (
                f"; kept {len(active)} Hermes is working on (an active turn or compression): "
                + ", ".join(active[:10])
            )
        if request.htmx:
            return _toast(render_template("bulk_done.html", deleted=deleted), message)
        flash(message)
        return redirect(url_for("sessions.list_sessions"))
    for r in rows:
        r["label"] = _label(r)
        r["counts"] = lb.messages.counts(r["id"])
    return render_template("bulk_preview.html", rows=rows)


@bp.route("/prune", methods=["GET"])
def prune_form():
    lb = get_logbook()
    sel = _selection(request.args, "prune")
    if wants_json():
        preview = lb.actions.prune_preview(sel)
        ids = lb.actions.prune_ids(sel)
        return jsonify(
            {
                "count": preview["count"],
                "sessions": ids,
                "freed": freed(lb, ids),
                "totals": preview["totals"],
                "tokens": preview["tokens"],
                "cost": preview["cost"],
                "messages": preview["messages"],
                "oldest": preview["oldest"],
                "newest": preview["newest"],
                **{k: preview[k] for k in ("oldest_active", "newest_active") if k in preview},
                "cutoff": _cutoff(sel),
                "filters": preview["described"],
                "selection": as_args(sel),
                "orphaned_children": [c["id"] for c in preview["orphaned_children"]],
                "spared": _spared_json(preview),
            }
        )
    chosen = _chosen(request.args)
    preview = _preview(sel) if chosen else None
    return _selection_page(
        "prune.html",
        "prune-preview",
        sel,
        preview,
        size=lb.size_bytes(),
        maintenance=lb.maintenance.state(),
        confirm_above=PRUNE_CONFIRM_ABOVE,
        has_archived=lb.schema.has("sessions", "archived"),
        spares_pins=lb.actions.rules.selection_spares_pins and lb.schema.has("sessions", "pinned"),
        freed=freed(lb, lb.actions.prune_ids(sel)) if preview and preview.get("count") else None,
        held_check=lb.actions.rules.bulk_refuses_held_store,
    )


def held_store(lb, action: str, verb: str, target: str):
    """0.22 files: a bulk removal is refused while another process holds the file (its own
    `hermes sessions prune` refuses so), unless the form says force=1. The answer (409) names
    the holders and offers the same override; None when it may go ahead."""
    if request.form.get("force") in ("1", "on", "yes", "true"):
        return None
    refusal = lb.actions.held_store(action)
    if refusal is None:
        return None
    if wants_json() or not (request.htmx or _browser_form()):
        return jsonify(
            {"error": "Held", "message": refusal, "status": 409, "override": "force=1"}
        ), 409
    fields = [
        (k, request.form.getlist(k)) for k in request.form if k not in ("csrf_token", "force")
    ]
    page = "held_store.html" if request.htmx else "held_store_page.html"
    return render_template(
        page,
        refusal=refusal,
        action=request.path,
        target=target if request.htmx else "#held-store",
        fields=fields,
        override=HELD_STORE_OVERRIDE,
        verb=verb,
    ), 409


@bp.post("/prune")
@removal_required
def prune_run():
    lb = get_logbook()
    if request.form.get("confirm") != "yes":
        abort(400, description="Confirm the prune (confirm=yes) after checking the preview.")
    held = held_store(lb, "prune", "Delete", "#prune-preview")
    if held is not None:
        return held
    sel = _selection(request.form, "prune")
    # backup=verified: export, then delete what was verifiably exported (webui.db.changes.backup).
    backup_to = (
        (lb.exporter, backup_root())
        if request.form.get("backup") in ("1", "verified", "on", "yes")
        else None
    )
    if request.htmx:
        # In the browser: run in the background, the page polls its progress.
        job = lb.actions.start_prune(sel, backup_to)
        # The address becomes the job's: a reload (or a bookmark) shows its progress, then
        # its report, for as long as this server runs.
        return make_response(
            render_template("prune_job.html", job=job, size=lb.size_bytes()),
            push_url=url_for("actions.prune_job", job_id=job.id),
        )
    # A plain form or a script: the response comes when the prune is done.
    job = lb.actions.run_prune(sel, backup_to)
    if wants_json() or not _browser_form():
        return jsonify(
            {
                "deleted": job.deleted,
                "messages_deleted": job.messages_deleted,
                "error": job.error,
                "longest_transaction_s": job.longest_txn_s,
                "size_bytes": lb.size_bytes(),
                "job": job.id,
                "backup_folder": str(job.backup_folder) if job.backup_folder else None,
                "kept": job.kept,
                "partial": job.partial,
                "transcript_files_removed": job.files_removed,
                "system_prompts_removed": job.prompts_removed,
                "busy": job.busy,
            }
        ), 200 if not job.error else 503
    return redirect(url_for("actions.prune_job", job_id=job.id))


def _preview(sel: Selection) -> dict:
    """The whole preview, or for its "show more" row only the next page of sessions."""
    lb = get_logbook()
    if request.htmx and request.htmx.target == "preview-more":
        return lb.actions.selection_page(sel, _cursor())
    return lb.actions.prune_preview(sel, cursor=_cursor())


def _cursor() -> str | None:
    """The preview page's cursor (``after`` is taken: it is Hermes's "started after")."""
    return request.args.get("cursor") or None


def _selection_page(template: str, target: str, sel: Selection, preview, **extra) -> str:
    """The prune or archive page: the filter form as typed, the preview (each session
    labelled, one page at a time, every page reachable) and the selection with absolute
    times for its confirmation. The "show more" row swaps in the next page's rows."""
    for r in (preview or {}).get("sessions", []):
        r["label"] = r.get("title") or r["id"]
    return render_page(
        template,
        {target: "preview", "preview-more": "preview_rows"},
        args=request.args,
        selection=as_args(sel),
        preview=preview,
        sources=get_logbook().sessions.all_sources(),
        **extra,
    )


def archive_words(matched: int, changed: int, unarchive: bool) -> str:
    """What an archive (or unarchive) did, in words: how many sessions, whether their
    conversations came along whole, and nothing when nothing changed."""
    verb, done = ("Unarchived", "unarchived") if unarchive else ("Archived", "archived")
    if not matched:
        return f"Nothing was {done}: no ended session matches."
    if not changed:
        n = f"{matched:,} session{'s' if matched != 1 else ''}"
        return f"Nothing changed: {'the' if matched != 1 else 'that'} {n} {'were' if matched != 1 else 'was'} {done} already."
    sessions = f"{matched:,} session{'s' if matched != 1 else ''}"
    more = changed - matched
    text = f"{verb} {sessions}"
    if more > 0:
        text += (
            f", and {more:,} more session{'s' if more != 1 else ''} of the same "
            "conversations (their compression chains), so each is "
            f"{done} whole"
        )
    if unarchive:
        return text + ": back in the list."
    return text + (
        ". Archived sessions are hidden from the list (show them with “archived: include”) "
        "and stay in the database: unarchive them at any time."
    )


@bp.get("/prune/jobs/<job_id>")
def prune_job(job_id: str):
    lb = get_logbook()
    try:
        job = lb.actions.job(job_id)
    except NotFound as exc:
        abort(404, description=exc.message)
    if wants_json():
        return jsonify(
            {
                "id": job.id,
                "total": job.total,
                "deleted": job.deleted,
                "messages_deleted": job.messages_deleted,
                "done": job.done,
                "error": job.error,
                "longest_transaction_s": job.longest_txn_s,
                "transactions": job.transactions,
                "transactions_over_100ms": sum(1 for t in job.txn_times if t > 0.1),
                "transactions_abandoned": job.abandoned,
                "size_bytes": lb.size_bytes(),
                "kept": job.kept,
                "partial": job.partial,
                "transcript_files_removed": job.files_removed,
                "system_prompts_removed": job.prompts_removed,
                "busy": job.busy,
                "waiting_for_lock": job.waiting_since is not None,
                # what it waits for: the gateway's write lock, or another change's unit
                "waiting_for": job.waiting_for,
                "lock_waited_s": round(job.lock_waited_s, 1),
            }
        )
    if not request.htmx:
        return render_template("prune_job_page.html", job=job, size=lb.size_bytes())
    body = render_template("prune_job.html", job=job, size=lb.size_bytes())
    if not job.done:
        return body
    if job.error:
        return _toast(body, f"The prune stopped after {job.deleted:,} of {job.total:,} sessions")
    return _toast(
        body,
        f"Pruned {job.deleted:,} session{'s' if job.deleted != 1 else ''} "
        f"({job.messages_deleted:,} messages)",
        link=(url_for("sessions.list_sessions"), "See the sessions that are left"),
    )
