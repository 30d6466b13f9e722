"""The database layer: the only code that knows SQL or touches sqlite3.

Views ask the web layer (webui.web.logbooks) for the Logbook a request reads and call its
stores' named queries.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask

from webui.db.changes.actions import Actions
from webui.db.changes.maintenance import Maintenance
from webui.db.changes.writer import Writer
from webui.db.errors import (
    BadRequest,
    DatabaseBusy,
    DatabaseUnavailable,
    LogbookDBError,
    QueryTimeout,
    StartupError,
)
from webui.db.ledger_file import instance_file
from webui.db.reader import Reader, db, engine_options
from webui.db.schema import (
    NEWEST_KNOWN_VERSION,
    OpenedDatabase,
    Schema,
    check_database,
    default_candidates,
    file_size,
)
from webui.db.search.source_map import SourceMap
from webui.db.search.store import SearchFilters, SearchStore
from webui.db.sessions.export import Exporter
from webui.db.sessions.keeping import new_store_cache
from webui.db.sessions.lineage import LineageStore
from webui.db.sessions.messages import MessageStore
from webui.db.sessions.origins import OriginStore
from webui.db.sessions.store import SessionQuery, SessionStore
from webui.db.stats.rollup import Rollup
from webui.db.stats.store import StatsStore
from webui.hermes.rules import Rules, rules_for

__all__ = [
    "BadRequest",
    "DatabaseBusy",
    "DatabaseUnavailable",
    "LogbookDBError",
    "QueryTimeout",
    "StartupError",
    "OpenedDatabase",
    "Schema",
    "SessionQuery",
    "check_database",
    "default_candidates",
    "file_size",
    "init_db",
    "Logbook",
    "SearchFilters",
    "build_logbook",
]


@dataclass
class Logbook:
    opened: OpenedDatabase
    reader: Reader
    sessions: SessionStore
    messages: MessageStore
    search: SearchStore
    lineage: LineageStore
    stats: StatsStore
    rollup: Rollup
    exporter: Exporter
    actions: Actions
    origins: OriginStore
    maintenance: Maintenance
    # What every message holds (bytes, tool calls, files changed): webui.db.digest.
    digest: Any = None

    @property
    def schema(self) -> Schema:
        return self.opened.schema

    @property
    def rules(self) -> Rules:
        """Whose rules apply to this database (webui.hermes.rules): they follow its schema."""
        return rules_for(self.schema.version)

    def size_bytes(self) -> int:
        return file_size(self.opened.path)


def init_db(app: Flask, opened: OpenedDatabase) -> Logbook:
    app.config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{opened.path}"
    app.config["SQLALCHEMY_ENGINE_OPTIONS"] = engine_options(
        opened, pool_size=app.config["LOGBOOK_THREADS"]
    )
    db.init_app(app)
    logbook = build_logbook(app, opened)
    app.extensions["logbook"] = logbook
    answered = app.extensions["first_answer"] = threading.Event()

    @app.after_request
    def _first_answer(response):
        answered.set()  # the rollup's background pass waits for this (start_rollup_warmer)
        return response

    with app.app_context():
        _resume_removals(app, logbook)
    if app.config.get("LOGBOOK_ROLLUP_WARM") and not app.testing:
        start_rollup_warmer(app, logbook)
    return logbook


def _resume_removals(app: Flask, logbook: Logbook) -> None:
    """Finish (or undo) the changes a kill or a crash cut short (webui/db/changes). Start-up
    never ends here: whatever goes wrong is said, and the next change tries again."""
    try:
        for note in logbook.actions.resume_interrupted():
            app.logger.warning("%s", note)
    except LogbookDBError as exc:  # locked right now: the next change finishes it
        app.logger.warning("a change cut short could not be finished yet: %s", exc.message)
    except Exception as exc:  # noqa: BLE001 - an unreadable folder, a file that misbehaves
        app.logger.warning("the change journal could not be replayed yet: %s", exc)
        logbook.actions.recovered.append(
            f"Changes cut short earlier could not be finished at start-up ({exc}); the next "
            "change tries again."
        )


FIRST_PAGE_WAIT_S = 10.0


def start_rollup_warmer(app: Flask, logbook: Logbook) -> threading.Thread:
    """Read the history into the stats rollup from start-up, in the background, so the first
    visit to the stats page finds it complete (or shows its progress and completes on its own)
    instead of building it request by request. Then the search's map of sources (a third of a
    second on a million messages; a search filtered by source before then takes the ordinary
    route)."""

    # The pass starts once the first page has been answered (or after FIRST_PAGE_WAIT_S):
    # on ten million messages its first steps took the cores the first page needed.
    answered = app.extensions.get("first_answer") or threading.Event()

    def work() -> None:
        answered.wait(FIRST_PAGE_WAIT_S)
        with app.app_context():
            try:
                logbook.rollup.warm()
            except Exception:  # noqa: BLE001 - requests refresh the rollup themselves anyway
                app.logger.exception("the stats rollup could not be built in the background")
            try:
                if logbook.search.sources is not None:
                    logbook.search.sources.build()
            except Exception:  # noqa: BLE001 - a filtered search starts another build
                app.logger.exception("the search's map of sources could not be built")
            # storage, files, reliability: after the statistics, not beside them
            logbook.digest.held = False
            logbook.digest.ensure_warming(app)

    logbook.digest.held = True  # pages do not start the digest's pass before this one's turn
    thread = threading.Thread(target=work, daemon=True, name="rollup-warmer")
    thread.start()
    return thread


def build_logbook(
    app: Flask, opened: OpenedDatabase, engine=None, home: Path | None = None
) -> Logbook:
    """Every store over one database. ``engine`` (a callable) for databases other than the
    primary one, which uses Flask-SQLAlchemy's engine; ``home``: the folder of its kept
    values (the instance folder's own by default)."""
    reader = Reader(opened, time_limit_s=app.config["LOGBOOK_QUERY_TIME_LIMIT"], engine=engine)
    digest = hashlib.sha1(str(opened.path).encode()).hexdigest()[:12]
    # The stats rollup of this file, named by its path and inode (webui.db.following).
    rollup_path = instance_file(home or Path(app.instance_path), "rollup", opened.path, digest)
    # One cache per store (webui.keep.StoreCache); a few values kept across restarts too.
    cache = new_store_cache(rollup_path.with_name(rollup_path.stem.replace("rollup-", "kept-")))
    sessions = SessionStore(reader, cache)
    logbook = Logbook(
        opened,
        reader,
        sessions,
        MessageStore(reader, cache),
        SearchStore(reader, shared=sessions.shared, sources=SourceMap(reader)),
        LineageStore(reader),
        StatsStore(reader),
        Rollup(
            reader,
            rollup_path,
            read_limit_s=app.config.get("LOGBOOK_ROLLUP_READ_LIMIT")
            or app.config["LOGBOOK_QUERY_TIME_LIMIT"],
        ),
        Exporter(reader, sessions),
        Actions(
            reader,
            Writer(opened, newest_known_version=NEWEST_KNOWN_VERSION),
            on_change=sessions.invalidate,
            # The lane's journal and lock (webui.db.changes); the removal journal it replaced
            # is still read, so an upgrade finishes what it held.
            journal_folder=Path(app.instance_path) / f"changes-{digest}",
            legacy_journals=(Path(app.instance_path) / f"removals-{digest}",),
            context=app.app_context,
        ),
        OriginStore(reader),
        Maintenance(reader),
    )
    from webui.db.digest import Digest, digest_path

    logbook.digest = Digest(
        reader,
        digest_path(Path(app.instance_path), opened),
        read_limit_s=app.config.get("LOGBOOK_ROLLUP_READ_LIMIT")
        or app.config["LOGBOOK_QUERY_TIME_LIMIT"],
    )
    logbook.digest.objects.read_limit_s = app.config.get("LOGBOOK_STORAGE_READ_LIMIT") or 20.0
    return logbook
