"""Stores: every place a user's history lives, read side by side.

* ``live``: the Hermes database of the profile being looked at (the only one Logbook changes);
* archives: every Hermes ``state.db`` of a schema Logbook knows in the folders given with
  ``--archives`` (and Logbook's own cold-storage folder), opened read-only, never migrated or
  written except by a move to or from cold storage (webui.db.coldstore);
* replicas: other machines' databases, kept current by Litestream (webui.db.replicas).

Folders are looked at again every RESCAN_S seconds, so an archive file that appears (a move
to cold storage, a copy) is read without a restart; a file that is missing, locked, corrupt
or not a Hermes database is listed as such and never breaks the others.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine

from webui import keep
from webui.db.errors import BadRequest, LogbookDBError, StartupError
from webui.db.reader import engine_options
from webui.db.schema import SQLITE_MAGIC, check_database

if TYPE_CHECKING:
    from flask import Flask

    from webui.db import Logbook

LIVE = "live"
KINDS = ("live", "archive", "replica")
RESCAN_S = 5.0
ARCHIVE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
# The files Logbook's cold storage writes: one a month (webui.db.coldstore).
MONTHLY = re.compile(r"^hermes-archive-(\d{4}-\d{2})$")


class ReadOnlyStore(LogbookDBError):
    status = 403


@dataclass
class Store:
    name: str
    kind: str  # live / archive / replica
    path: Path | None
    url: str | None = None
    status: str = "ok"  # ok / missing / error / stale
    message: str = ""
    logbook: Logbook | None = field(default=None, repr=False)
    follower: Any = field(default=None, repr=False)

    @property
    def writable(self) -> bool:
        return self.kind == "live"

    @property
    def readable(self) -> bool:
        return self.logbook is not None

    def as_of(self) -> float | None:
        """For a replica: when its copy was last known current (None: never)."""
        return self.follower.as_of() if self.follower is not None else None

    def facts(self) -> dict[str, Any]:
        """What /stores shows of it (counts read from the file, cheaply)."""
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "status": self.status,
            "message": self.message or None,
            "writable": self.writable,
            "schema": None,
            "sessions": None,
            "messages": None,
        }
        if self.url:
            out["url"] = self.url
        if self.path is not None:
            out["path"] = str(self.path)
        if self.kind == "replica":
            out["as_of"] = self.as_of()
        lb = self.logbook
        if lb is not None:
            out["schema"] = lb.schema.version
            try:
                out["sessions"] = lb.stats.counts()["sessions"]
                out["messages"] = lb.stats.counts()["messages"]
                out["size_bytes"] = lb.size_bytes()
            except LogbookDBError as exc:
                out["status"], out["message"] = "error", exc.message
        return out


def archive_name(path: Path) -> str:
    """How an archive file is named on the pages: "archive 2026-03" for cold storage's
    monthly files, else "archive <file name>"."""
    m = MONTHLY.match(path.stem)
    return f"archive {m.group(1)}" if m else f"archive {path.stem}"


def looks_like_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


class StoreSet:
    """The archives and replicas beside the live database (which each request brings)."""

    def __init__(
        self,
        app: Flask,
        archive_dirs: list[Path],
        replicas: list[Any] | None = None,
        live_path: Path | None = None,
    ):
        self.app = app
        self.archive_dirs = archive_dirs
        self.replicas = list(replicas or [])
        self.live_path = live_path
        self._lock = threading.Lock()
        self._archives: dict[Path, Store] = {}
        self._scan = keep.Every(RESCAN_S)

    # -- what there is ---------------------------------------------------------------------

    def others(self) -> list[Store]:
        """Archives (by name) then replicas, as they are now."""
        with self._lock:
            if self._scan.due():
                self._rescan()
            archives = sorted(self._archives.values(), key=lambda s: s.name)
        return [*archives, *(r.store() for r in self.replicas)]

    def forget(self, path: Path) -> None:
        """A file changed under us (a move to cold storage created or grew it): read again."""
        with self._lock:
            _retire(self._archives.pop(path.resolve(), None))
            self._scan.now()

    def rescan_now(self) -> None:
        with self._lock:
            self._scan.now()

    def _rescan(self) -> None:
        live = _identity(self.live_path) if self.live_path else None
        found: dict[Path, Path] = {}
        for folder in self.archive_dirs:
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            for p in entries:
                if p.suffix.lower() not in ARCHIVE_SUFFIXES or not p.is_file():
                    continue
                if live is not None and _identity(p) == live:
                    continue  # the live file itself, seen through an archive folder
                if looks_like_sqlite(p):
                    found[p.resolve()] = p
        for key in list(self._archives):
            if key not in found:
                _retire(self._archives.pop(key))
        names = {s.name for s in self._archives.values()}
        for key, p in found.items():
            if key in self._archives and self._archives[key].status == "ok":
                continue
            _retire(self._archives.get(key))
            store = self._open(p)
            if store.name in names and key not in self._archives:
                store.name = f"{store.name} ({p.parent.name})"
            names.add(store.name)
            self._archives[key] = store

    def _open(self, path: Path) -> Store:
        name = archive_name(path)
        try:
            opened = check_database(path)
        except StartupError as exc:
            return Store(
                name, "archive", path, status="error", message=str(exc).split(" (tried:")[0]
            )
        from webui.db import build_logbook

        engine = create_engine("sqlite://", **engine_options(opened, pool_size=2))
        lb = build_logbook(self.app, opened, engine=lambda: engine)
        return Store(name, "archive", path, logbook=lb)

    # -- a request's stores -------------------------------------------------------------------

    def for_request(self, live: Logbook) -> list[Store]:
        return [Store(LIVE, "live", live.opened.path, logbook=live), *self.others()]

    def named(self, live: Logbook, name: str) -> Store:
        (store,) = self.chosen(live, [name])
        return store

    def chosen(self, live: Logbook, names: list[str]) -> list[Store]:
        """The stores a request names with ``store=`` (all of them when none), in their
        order: live first. An unknown name is refused, naming the ones there are."""
        every = self.for_request(live)
        if not names:
            return every
        by_name = {s.name: s for s in every}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            known = ", ".join(f"“{s.name}”" for s in every)
            raise BadRequest(f"There is no store named “{unknown[0]}”. Stores: {known}.")
        wanted = set(names)
        return [s for s in every if s.name in wanted]


def _identity(path: Path | None) -> tuple[int, int] | None:
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if st else None


def _retire(store: Store | None) -> None:
    """A store that went away (or is opened afresh) takes its kept values with it."""
    if store is not None and store.logbook is not None:
        store.logbook.sessions.keeper.forget()
