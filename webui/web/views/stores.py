"""/stores: every place the history lives, with its figures and state."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify

from webui.db.stores.history import store_answer
from webui.web.logbooks import live_logbook
from webui.web.stores import archive_dirs, request_stores
from webui.web.views import refuse_unknown, render_page, wants_json

bp = Blueprint("stores", __name__)


@bp.get("/stores")
def index():
    refuse_unknown({"store"})
    # An archive's figures are read once while its file stands still (webui.web.stores).
    stores = [
        dict(store_answer(s, ("facts",), s.facts))
        if s.kind == "archive" and s.logbook is not None
        else s.facts()
        for s in request_stores(live_logbook())
    ]
    if wants_json():
        return jsonify({"stores": stores})
    return render_page("stores.html", {}, stores=stores, cold_folder=archive_dirs(current_app)[0])
