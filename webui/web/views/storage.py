"""/storage: where the live file's bytes go (webui.db.digest.storage), each archive file's
size beside it; and the line the prune and cold-storage previews show ("about 3.1 GB of this
file"). Everything comes from the digest, precomputed in the background."""

from __future__ import annotations

import os
import time
from typing import Any

from flask import Blueprint, current_app, g, jsonify, url_for

from webui.db import Logbook, LogbookDBError
from webui.db import digest as dg
from webui.db.digest import storage as st
from webui.web import digests
from webui.web.logbooks import get_logbook, live_logbook
from webui.web.profiles import merged_logbooks
from webui.web.stores import request_stores
from webui.web.views import refuse_unknown, render_page, wants_json

bp = Blueprint("storage", __name__)
TOP = 50


def report(book: Logbook, top: int = TOP) -> dict[str, Any]:
    """One store's storage report, kept while its digest stands still."""
    cov = digests.current(book)
    d = book.digest
    catalogue, pages = d.objects.catalogue(), d.objects.pages()
    key = ("storage", top, tuple(pages.values()))
    # how far the digest had read when these figures were worked out (a kept answer may be a
    # few seconds older than the digest), and its longest single read of state.db
    seen = {**cov.as_json(), "longest_read_ms": round(d.longest_read_s * 1000, 1)}
    out = dict(
        digests.kept(
            book, key, lambda conn: {**st.report(conn, catalogue, pages, top), "coverage": seen}
        )
    )
    out["dbstat"] = d.objects.has_dbstat()
    out["measuring"] = d.warming
    out["digest_as_of"] = d.refreshed_at
    return out


def _file_bytes(path) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for key, suffix in (("bytes", ""), ("wal_bytes", "-wal")):
        try:
            out[key] = os.stat(f"{path}{suffix}").st_size
        except OSError:
            out[key] = None if key == "bytes" else 0
    return out


def archives(live: Logbook) -> list[dict[str, Any]]:
    """Every other store's file and its size (archives and replicas' local copies)."""
    out = []
    for s in request_stores(live):
        if s.kind == "live" or s.path is None:
            continue
        out.append({"store": s.name, "kind": s.kind, "path": str(s.path), "status": s.status,
                    **_file_bytes(s.path)})  # fmt: skip
    return out


def freed(book: Logbook, ids: list[str]) -> dict[str, Any] | None:
    """What removing these sessions from ``book`` would free, estimated (the prune and
    cold-storage previews): None when the digest cannot say."""
    if not ids:
        return None
    try:
        cov = digests.current(book)
        d = book.digest
        with dg.reading(d) as conn:
            est = st.estimate(conn, d.objects.catalogue(), d.objects.pages(), ids)
    except LogbookDBError:
        return None
    est["complete"] = cov.complete
    est["share_read"] = round(cov.share, 4)
    est["file_bytes"] = book.size_bytes()
    return est


@bp.get("/storage")
def storage():
    refuse_unknown({"store"})
    if g.get("all_profiles"):
        profiles = []
        for name, book in merged_logbooks(current_app):
            try:
                r = report(book, top=5)
                profiles.append({"profile": name, "file": r["file"], "groups": r["groups"][:6],
                                 "messages": r["messages"], "coverage": r["coverage"]})  # fmt: skip
            except LogbookDBError as exc:
                profiles.append({"profile": name, "error": exc.message})
        if wants_json():
            return jsonify({"profiles": profiles})
        return render_page("storage.html", {}, profiles=profiles, r=None)
    book = get_logbook()
    r = report(book)
    r["archives"] = archives(live_logbook()) if not g.get("store_pin") else []
    r["as_of"] = time.time()
    if wants_json():
        return jsonify(r)
    return render_page(
        "storage.html",
        {"storage-body": "body"},
        r=r,
        profiles=None,
        kind_words=st.KIND_WORDS,
        json_url=url_for("storage.storage", format="json"),
    )
