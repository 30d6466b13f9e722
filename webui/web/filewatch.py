"""The database file under a running Logbook: every request first checks that the file it reads
is still the one being served (a stat). Deleted or moved: one clear "Database file missing"
page everywhere, kept figures included, never answers from a file that is gone. Replaced (a
restore from a backup): everything kept about the old file is dropped and the new one is read,
so no page describes a file that is no longer there."""

from __future__ import annotations

from flask import Flask, current_app, request

from webui.db import build_logbook, check_database
from webui.web.logbooks import get_logbook


def init_app(app: Flask) -> None:
    @app.before_request
    def same_file():
        if request.endpoint in (None, "static"):
            return None
        book = get_logbook()
        if book.reader.check_file() == "replaced":
            _reopen(book)
        return None


def _reopen(book) -> None:
    """A replaced file gets a fresh set of stores (and with them fresh kept values)."""
    app = current_app._get_current_object()
    if app.extensions.get("logbook") is book:
        fresh = build_logbook(app, check_database(str(book.opened.path)))
        fresh.reader._identity = book.reader._identity
        app.extensions["logbook"] = fresh
        profiles = app.extensions.get("profiles")
        if profiles is not None:
            profiles.replace_primary(fresh)
    else:
        profiles = app.extensions.get("profiles")
        if profiles is not None:
            profiles.forget(book.opened.path)
