"""Hermes Logbook: a server-rendered dashboard for Hermes Agent's state.db."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from flask import Flask
from flask.json.provider import DefaultJSONProvider
from htmx_flask import Htmx

from webui.db import OpenedDatabase, check_database, init_db
from webui.hermes.activity import session_state
from webui.hermes.content import pretty_json
from webui.hermes.origin import END_REASONS, chat_type_words, end_reason_short, end_reason_words
from webui.paths import STATIC, TEMPLATES
from webui.present import filters, nav
from webui.present.fragments import FragmentCache, hit_key, list_row_key, message_key
from webui.present.markdown import highlight_json
from webui.version import __version__
from webui.web.jinja import LogbookEnvironment
from webui.web.urls import row_url

__all__ = ["__version__", "create_app"]


DEFAULTS: dict[str, Any] = {
    "LOGBOOK_DB": None,  # path of the state.db to serve
    "LOGBOOK_QUERY_TIME_LIMIT": 5.0,
    "LOGBOOK_REQUEST_DEADLINE": None,  # seconds for all of a request's queries (None: the above)  # seconds, for every user-driven query
    "LOGBOOK_THREADS": 8,  # waitress threads = read connections in the pool
    "LOGBOOK_ROLLUP_BUDGET": 0.5,  # seconds a stats request may spend updating the rollup
    # A page waits at most this long for a message rendered on request ("render it anyway",
    # made in a process apart), never into the end of its deadline; None: until it is done
    # (for tests and scripts: what they get must not depend on the machine's speed).
    "LOGBOOK_RENDER_WAIT_S": 4.0,
    # The time limit of each read the rollup makes of state.db (None: the query limit); its
    # batches are sized to a quarter of it.
    "LOGBOOK_ROLLUP_READ_LIMIT": None,
    # Build the rollup in a background thread from start-up (not in TESTING).
    "LOGBOOK_ROLLUP_WARM": True,
    # A stats report is reused this long beside a writer that commits all the time.
    "LOGBOOK_STATS_REUSE_S": 3.0,
    # An older report, up to this age, is served while a background thread computes anew.
    "LOGBOOK_STATS_STALE_S": 60.0,
    "LOGBOOK_HOST": "127.0.0.1",
    "LOGBOOK_PORT": 9130,
    "LOGBOOK_REMOTE": False,  # --insecure: a non-loopback bind
    "LOGBOOK_READ_ONLY": False,
    "LOGBOOK_TOKEN": None,
    "LOGBOOK_PRIVATE": False,
    # Folders of archive files read beside the live database (--archives; the first one is
    # where cold storage writes; none: the instance's archives/ folder).
    "LOGBOOK_ARCHIVES": [],
    # Other machines' Litestream replicas, "NAME=URL" each (--replica).
    "LOGBOOK_REPLICAS": [],
    "LOGBOOK_HERMES_ROOT": None,  # discover profiles here (None: --db pins one database)
    "LOGBOOK_PROFILE_NAME": None,  # the profile the primary database belongs to
    # After this many seconds without a request every connection to the live database is
    # closed, so Hermes 0.22's own maintenance may run (webui/web/idle.py; 0: never;
    # $HERMES_LOGBOOK_IDLE_S wins).
    "LOGBOOK_IDLE_RELEASE_S": 60.0,
    # --trusted-proxy: the reverse proxy whose X-Forwarded-For names the client (webui.door.serve).
    "LOGBOOK_TRUSTED_PROXY": None,
    "SESSION_COOKIE_HTTPONLY": True,
    "SESSION_COOKIE_SAMESITE": "Strict",
    "SESSION_COOKIE_NAME": "logbook_session",
    "PERMANENT_SESSION_LIFETIME": 7 * 86400,
    "WTF_CSRF_TIME_LIMIT": None,  # the token lives as long as the session cookie
    "MAX_CONTENT_LENGTH": 1 * 1024 * 1024,
}


class LogbookJSON(DefaultJSONProvider):
    """JSON twins of rows written by anyone: a BLOB (bytes) is text read as UTF-8, its damage
    marked with U+FFFD, never a 500."""

    @staticmethod
    def default(o: Any) -> Any:
        if isinstance(o, (bytes, bytearray, memoryview)):
            return bytes(o).decode("utf-8", "replace")
        return DefaultJSONProvider.default(o)


def _secret_key(instance: Path) -> str:
    """A per-install key kept in the instance folder, so cookies survive restarts."""
    path = instance / "secret_key"
    try:
        return path.read_text().strip()
    except OSError:
        key = secrets.token_hex(32)
        try:
            instance.mkdir(parents=True, exist_ok=True)
            path.write_text(key)
            path.chmod(0o600)
        except OSError:
            pass  # a read-only instance folder: a per-process key still works
        return key


def create_app(
    config: dict[str, Any] | None = None,
    opened: OpenedDatabase | None = None,
    instance_path: str | None = None,
) -> Flask:
    app = Flask(
        __name__,
        instance_relative_config=True,
        template_folder=str(TEMPLATES),
        static_folder=str(STATIC),
        instance_path=instance_path,
    )
    app.jinja_environment = LogbookEnvironment  # before anything touches app.jinja_env
    app.jinja_options = {**app.jinja_options, "extensions": [FragmentCache]}
    app.config.from_mapping(DEFAULTS)
    app.config.from_pyfile("config.py", silent=True)
    if config:
        app.config.update(config)
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _secret_key(Path(app.instance_path))
    if opened is None:
        if not app.config["LOGBOOK_DB"]:
            raise RuntimeError("create_app needs LOGBOOK_DB (the state.db to serve)")
        opened = check_database(os.fspath(app.config["LOGBOOK_DB"]))

    app.json = LogbookJSON(app)
    app.json.sort_keys = False  # keep the order we chose (facets by count, columns as stored)
    Htmx(app)
    primary = init_db(app, opened)
    app.jinja_env.filters.update(filters.FILTERS)
    app.jinja_env.filters["pretty_json_hl"] = lambda v: highlight_json(pretty_json(v))
    app.jinja_env.globals["app_version"] = __version__
    app.jinja_env.globals["session_state"] = session_state
    app.jinja_env.globals["row_url"] = row_url
    app.jinja_env.globals["list_row_key"] = list_row_key
    app.jinja_env.globals["message_key"] = message_key
    app.jinja_env.globals["hit_key"] = hit_key
    app.jinja_env.filters["end_reason_words"] = end_reason_words
    app.jinja_env.filters["end_reason_short"] = end_reason_short
    app.jinja_env.globals["nav_bar"] = nav.bar
    app.jinja_env.globals["end_reasons"] = END_REASONS
    app.jinja_env.filters["chat_type_words"] = chat_type_words

    @app.context_processor
    def theme():
        from flask import request

        chosen = request.cookies.get("theme")
        return {"theme": chosen if chosen in ("light", "dark") else None}

    @app.context_processor
    def database_facts():
        from webui.web.access import can_view

        if not can_view():  # --private before login: nothing about the database
            return {"db_info": None}
        from webui.db import LogbookDBError
        from webui.web.logbooks import get_logbook

        try:
            lb = get_logbook()
        except LogbookDBError:  # an unreadable profile: the error page still renders
            lb = app.extensions["logbook"]
        return {
            "db_info": {
                "path": str(lb.opened.path),
                "name": lb.opened.path.name,
                "version": lb.schema.version,
                "size": lb.size_bytes(),
                "immutable": lb.opened.immutable,
                "newer": lb.schema.is_newer_than_known,
                "recovered": lb.actions.recovered,
            }
        }

    from webui.web import access, errors, filewatch, idle, limits, security, streams
    from webui.web import profiles as profiles_web
    from webui.web import stores as stores_web
    from webui.web.views import actions as actions_views
    from webui.web.views import archive  # noqa: F401 - adds its routes to actions' blueprint
    from webui.web.views import coldstore as coldstore_views
    from webui.web.views import export as export_views
    from webui.web.views import files as files_views
    from webui.web.views import flags as flags_views
    from webui.web.views import lineage as lineage_views
    from webui.web.views import origins as origins_views
    from webui.web.views import search as search_views
    from webui.web.views import sessions as sessions_views
    from webui.web.views import stats as stats_views
    from webui.web.views import storage as storage_views
    from webui.web.views import stores as stores_views
    from webui.web.views import ui as ui_views

    idle.init_app(app)  # first: its count of requests in progress must see every request
    security.init_app(app)
    limits.init_app(app)
    streams.init_app(app)
    access.init_app(app)
    profiles_web.init_app(app, primary)
    stores_web.init_app(app, primary)
    errors.init_app(app)
    filewatch.init_app(app)
    app.register_blueprint(sessions_views.bp)
    app.register_blueprint(search_views.bp)
    app.register_blueprint(lineage_views.bp)
    app.register_blueprint(stats_views.bp)
    app.register_blueprint(stores_views.bp)
    app.register_blueprint(actions_views.bp)
    app.register_blueprint(coldstore_views.bp)
    app.register_blueprint(export_views.bp)
    app.register_blueprint(flags_views.bp)
    app.register_blueprint(ui_views.bp)
    app.register_blueprint(origins_views.bp)
    app.register_blueprint(files_views.bp)
    app.register_blueprint(storage_views.bp)
    return app
