"""Profiles in the web layer: ?profile= chooses the database for the whole request, every
link Logbook builds keeps it, and the header shows a switcher. ``profile=all`` merges the
list, search and stats across every readable profile."""

from __future__ import annotations

from pathlib import Path

from flask import Flask, abort, g, request

from webui.db import Logbook
from webui.db.stores.profiles import Profiles

ALL = "all"
MERGED_ENDPOINTS = {
    "sessions.list_sessions",
    "search.search",
    "stats.stats",
    "storage.storage",
    "files.files",
    "static",
    "ui.set_theme",
    "ui.changes",
    "access.login",
    "access.logout",
    "sessions.index",
}


def init_app(app: Flask, primary: Logbook) -> None:
    root = app.config.get("LOGBOOK_HERMES_ROOT")
    if not root:
        return
    name = app.config.get("LOGBOOK_PROFILE_NAME") or "default"
    profiles = Profiles(app, Path(root), primary, name)
    app.extensions["profiles"] = profiles

    @app.before_request
    def choose_profile():
        chosen = request.args.get("profile") or None
        g.profile_param = chosen
        if chosen == ALL:
            if request.endpoint not in MERGED_ENDPOINTS:
                abort(
                    400,
                    description="“All profiles” covers the list, search and stats; "
                    "choose one profile for this page.",
                )
            g.profile = None
            g.all_profiles = True
            return None
        g.all_profiles = False
        if chosen and chosen != profiles.primary_name:
            profiles.get(chosen)  # 404 for an unknown name, before any work
            g.profile = chosen
        else:
            g.profile = None
        return None

    @app.url_defaults
    def keep_profile(endpoint, values):
        chosen = g.get("profile_param")
        if (
            chosen
            and endpoint != "static"
            and not values.get("profile")
            and (chosen != ALL or endpoint in MERGED_ENDPOINTS)
        ):
            values["profile"] = chosen

    @app.context_processor
    def profile_facts():
        from webui.web.access import can_view

        return {
            # --private before login: not even the profiles' names
            "profiles": profiles.all() if can_view() else [],
            "current_profile": g.get("profile_param") or profiles.primary_name,
            "all_profiles": g.get("all_profiles", False),
        }


def merged_logbooks(app: Flask) -> list[tuple[str, Logbook]]:
    profiles: Profiles = app.extensions["profiles"]
    return [(p.name, p.logbook) for p in profiles.ready()]
