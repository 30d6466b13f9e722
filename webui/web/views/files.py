"""Files: every file path an agent wrote or changed (webui.db.digest.files), by workspace,
newest first, across every store; a path's history across sessions with what each call wrote
or applied, a version's text to recover it, and the difference between two full versions.
Nothing here reads or writes any file but the databases."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, abort, current_app, g, jsonify, url_for
from htmx_flask import request

from webui.db import BadRequest, Logbook, LogbookDBError
from webui.db import digest as dg
from webui.db.digest import files as fq
from webui.db.stores.store_set import LIVE
from webui.hermes import file_changes as fc
from webui.hermes.shell_edits import FORMS
from webui.web import digests
from webui.web.logbooks import get_logbook, live_logbook
from webui.web.profiles import merged_logbooks
from webui.web.stores import readable, request_stores, store_set
from webui.web.views import refuse_unknown, render_page, wants_json

bp = Blueprint("files", __name__)
MAX_DIFF_CHARS = 4_000_000  # each side of a difference, at most
HUGE = 2**62


PROFILE = "profile "  # how a profile's live store is named on a page of every profile


def _books() -> list[tuple[str, Logbook]]:
    """The stores this page spans, live first (a pinned store alone); with ``profile=all``
    every profile's live database ("profile NAME")."""
    if g.get("all_profiles"):
        return [(PROFILE + name, book) for name, book in merged_logbooks(current_app)]
    if g.get("store_pin"):
        return [(g.get("store_pin"), get_logbook())]
    return [(s.name, s.logbook) for s in readable(request_stores(live_logbook()))]


def _book(name: str | None) -> Logbook:
    """One store's book by name (the live one by default)."""
    if not name or name == LIVE:
        return live_logbook()
    stores = store_set()
    found = stores.named(live_logbook(), name) if stores is not None else None
    if found is None or found.logbook is None:
        raise BadRequest(f"There is no readable store named “{name}”.")
    return found.logbook


def _float(name: str) -> float | None:
    raw = request.args.get(name)
    if raw in (None, ""):
        return None
    try:
        return float(raw)
    except ValueError:
        raise BadRequest(f"{name} must be a number (seconds since 1970).") from None


def _query() -> fq.ChangeQuery:
    a = request.args
    ws = a.get("workspace")
    try:
        limit = int(a.get("limit") or fq.PAGE)
    except ValueError:
        raise BadRequest("limit must be a number of changes (1 to 500).") from None
    if not 1 <= limit <= 500:
        raise BadRequest("limit must be a number of changes (1 to 500).")
    return fq.ChangeQuery(
        limit=limit,
        workspace=ws or None,
        session=a.get("session") or None,
        q=(a.get("q") or "").strip() or None,
        via=a.get("via") or None,
        since=_float("since"),
        until=_float("until"),
    )


def _cursor(raw: str | None) -> tuple[float, int, int] | None:
    if not raw:
        return None
    try:
        ts, rank, cid = raw.split("~")
        return float(ts), int(rank), int(cid)
    except ValueError:
        raise BadRequest(
            "The page cursor ('before') is not valid; start from the first page."
        ) from None


def link(row: dict[str, Any]) -> str:
    """The change's message in its conversation (in its store, or its profile)."""
    store = row.get("store") or LIVE
    if store.startswith(PROFILE):
        extra = {"profile": store[len(PROFILE) :]}
    else:
        extra = {"store": store} if store != LIVE else {}
    return url_for(
        "sessions.view_session",
        session_id=row["session_id"],
        at=row["message_id"],
        _anchor=f"m-{row['message_id']}",
        **extra,
    )


def _decorate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for r in rows:
        r["action_words"] = fc.ACTIONS.get(r["action"], r["action"])
        r["message_url"] = link(r)
        store = r.get("store") or LIVE
        if store.startswith(PROFILE):  # its links open in its own profile
            r["profile"] = store[len(PROFILE) :]
        r["ref"] = (
            f"{r['id']}@{store}"
            if store != LIVE and not store.startswith(PROFILE)
            else str(r["id"])
        )
    return rows


def page(q: fq.ChangeQuery, before: tuple[float, int, int] | None):
    """A page of changes merged across stores, newest first (ties: the live store first).
    A change an earlier store also holds (a session kept in two files) is shown from the
    earlier one only, on every page: the live-first rule of every merged list."""
    books = _books()
    fetched: list[dict[str, Any]] = []
    coverage = []
    truncated = False  # a store has more rows than it gave
    horizon = None  # the oldest row a truncated store gave: nothing past it is known yet
    for rank, (name, book) in enumerate(books):
        try:
            cov = digests.current(book)
            coverage.append({"store": name, **cov.as_json()})
            bound = None
            if before is not None:
                ts, c_rank, c_id = before
                bound = (ts, HUGE if rank > c_rank else c_id if rank == c_rank else -1)
            sub = fq.ChangeQuery(**{**q.__dict__, "before": bound})
            with dg.reading(book.digest) as conn:
                got = fq.changes(conn, sub)
            if len(got) > q.limit:
                truncated = True
                edge = _order({**got[-1], "rank": rank})
                horizon = edge if horizon is None else min(horizon, edge)
            for r in got:
                r["store"], r["rank"] = name, rank
                fetched.append(r)
        except LogbookDBError as exc:
            coverage.append({"store": name, "error": exc.message})
    fetched.sort(key=_order)
    rows: list[dict[str, Any]] = []
    last = None
    for r in fetched:
        if len(rows) == q.limit or (horizon is not None and _order(r) > horizon):
            break
        last = r
        # (profiles are separate histories: nothing of one is a copy of another's)
        if r["rank"] and not g.get("all_profiles") and _held_earlier(books[: r["rank"]], r):
            continue
        rows.append(r)
    more = last is not None and (last is not fetched[-1] or truncated)
    cursor = f"{last['timestamp']!r}~{last['rank']}~{last['id']}" if more else None
    return _decorate(rows), cursor, coverage


def _order(r: dict[str, Any]) -> tuple:
    """Newest first; at the same moment the earlier store, then the later change."""
    return (-(r["timestamp"] or 0), r["rank"], -r["id"])


def _held_earlier(books: list[tuple[str, Logbook]], r: dict[str, Any]) -> bool:
    key = (r["session_id"], r["message_id"], r["call_index"], r["change_index"])
    for _name, book in books:
        try:
            with dg.reading(book.digest) as conn:
                if fq.held(conn, key):
                    return True
        except LogbookDBError:
            continue
    return False


def workspaces(q: fq.ChangeQuery) -> list[dict[str, Any]]:
    merged: dict[Any, dict[str, Any]] = {}
    for name, book in _books():
        try:
            digests.current(book)
            key = ("workspaces", repr(q))
            rows = digests.kept(book, key, lambda conn: fq.workspaces(conn, q))
        except LogbookDBError:
            continue
        for r in rows:
            m = merged.setdefault(r["workspace"], {**r, "stores": []})
            if m is not r and m["stores"]:
                for k in ("changes", "files", "sessions"):
                    m[k] += r[k]
                m["last"] = max(m["last"] or 0, r["last"] or 0)
            m["stores"].append(name)
    return sorted(merged.values(), key=lambda r: -(r["last"] or 0))


PARAMS = {"workspace", "session", "q", "via", "since", "until", "before", "store", "limit"}


GROUPS, PER_GROUP = 12, 8


@bp.get("/files")
def files():
    refuse_unknown(PARAMS)
    q = _query()
    rows, cursor, coverage = page(q, _cursor(request.args.get("before")))
    args = {k: v for k, v in request.args.items() if k in PARAMS and k != "before"}
    wss = workspaces(
        fq.ChangeQuery(session=q.session, q=q.q, via=q.via, since=q.since, until=q.until)
    )
    # With nothing chosen, the newest changes of each of the most recent workspaces.
    groups = []
    if q.workspace is None and not q.session and not request.args.get("before"):
        for w in wss[:GROUPS]:
            key = fq.NO_WORKSPACE if w["workspace"] is None else w["workspace"]
            sub = fq.ChangeQuery(**{**q.__dict__, "workspace": key, "limit": PER_GROUP})
            changes, more, _ = page(sub, None)
            groups.append({**w, "recent": changes, "more": more is not None})
    if wants_json():
        nxt = url_for("files.files", **args, before=cursor, format="json") if cursor else None
        return jsonify({"workspaces": wss, "groups": groups, "changes": rows, "next": nxt,
                        "coverage": coverage,
                        "forms": [{"form": f, "means": m} for f, m in FORMS]})  # fmt: skip
    return render_page(
        "files.html",
        {"files-results": "results"},
        rows=rows,
        groups=groups,
        q=q,
        args=args,
        workspaces=wss,
        coverage=coverage,
        forms=FORMS,
        actions=fc.ACTIONS,
        next_url=url_for("files.files", **args, before=cursor) if cursor else None,
        json_url=url_for("files.files", **args, format="json"),
    )


HISTORY_PAGE = 100


@bp.get("/files/history")
def history():
    """A path's history across sessions and stores, newest first, a page at a time."""
    refuse_unknown({"path", "store", "before"})
    path = request.args.get("path") or ""
    if not path:
        raise BadRequest("Which file? Give its path (path=…), as the Files page links it.")
    q = fq.ChangeQuery(path=path, limit=HISTORY_PAGE)
    rows, cursor, _coverage = page(q, _cursor(request.args.get("before")))
    if not rows and not request.args.get("before"):
        abort(404, description="No tool call in the history wrote or changed this path.")
    if wants_json():
        nxt = url_for("files.history", path=path, before=cursor, format="json") if cursor else None
        return jsonify({"path": path, "changes": rows, "next": nxt})
    full = [r for r in rows if r["full"] and r["path"] == path and not r["failed"]]
    return render_page(
        "file_history.html",
        {},
        path=path,
        rows=rows,
        full=full,
        next_url=url_for("files.history", path=path, before=cursor) if cursor else None,
    )


def _change(ref: str) -> tuple[dict[str, Any], fc.FileChange | None]:
    """A change by its reference (``id`` or ``id@store``) and what its call says it did."""
    cid, _, store = ref.partition("@")
    try:
        change_id = int(cid)
    except ValueError:
        raise BadRequest(f"“{ref}” is not a change of the Files page.") from None
    book = _book(store or (g.get("store_pin") or None))
    with dg.reading(book.digest) as conn:
        row = fq.change(conn, change_id)
        cwd = fq.session_cwd(conn, row["session_id"]) if row else None
    if row is None:
        abort(404, description="There is no such change (the digest may have been rebuilt).")
    row["store"] = store or g.get("store_pin") or LIVE
    _decorate([row])
    return row, fq.text_of(book.reader, row, cwd)


@bp.get("/files/change/<ref>")
def change(ref: str):
    refuse_unknown({"raw", "store"})
    row, found = _change(ref)
    content = found.content if found else None
    patch = found.patch if found else None
    if request.args.get("raw"):
        if content is None:
            abort(404, description="This change does not hold the file's whole content.")
        name = row["path"].rsplit("/", 1)[-1] or "file"
        return Response(
            content,
            mimetype="text/plain",
            headers={"Content-Disposition": f'attachment; filename="{_safe(name)}"'},
        )
    if wants_json():
        return jsonify({"change": {**row, "content": content, "patch": patch}})
    return render_page("file_change.html", {}, row=row, content=content, patch=patch)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:100] or "file"


@bp.get("/files/diff")
def diff():
    refuse_unknown({"a", "b", "path", "store"})
    a_ref, b_ref = request.args.get("a") or "", request.args.get("b") or ""
    if not a_ref or not b_ref:
        raise BadRequest("Choose two full versions to compare (a=… and b=…).")
    (a, fa), (b, fb) = _change(a_ref), _change(b_ref)
    if not (fa and fa.full and fb and fb.full):
        raise BadRequest("A difference needs two full versions (a write of the whole file).")
    if len(fa.content) > MAX_DIFF_CHARS or len(fb.content) > MAX_DIFF_CHARS:
        raise BadRequest("These versions are too large to compare here; download them instead.")
    text = fc.unified_diff(fa.content, fb.content, f"{a['rel']} ({a_ref})", f"{b['rel']} ({b_ref})")
    if wants_json():
        return jsonify({"a": a, "b": b, "diff": text})
    return render_page(
        "file_diff.html", {}, a=a, b=b, diff=text, path=request.args.get("path") or a["path"]
    )


@bp.get("/sessions/<session_id>/files")
def session_files(session_id: str):
    """The Files panel of a conversation: what its tool calls wrote or changed."""
    refuse_unknown({"store"})
    book = get_logbook()
    digests.current(book)
    with dg.reading(book.digest) as conn:
        rows = fq.changes(conn, fq.ChangeQuery(session=session_id, limit=500))
    for r in rows:
        r["store"] = g.get("store_pin") or LIVE
    rows = _decorate(
        sorted(rows[:500], key=lambda r: (r["message_id"], r["call_index"], r["change_index"]))
    )
    if wants_json():
        return jsonify({"session_id": session_id, "changes": rows})
    return render_page("_files_panel.html", {}, rows=rows, session_id=session_id)
