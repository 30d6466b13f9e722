"""Stores: every place a user's history lives, read side by side.

* ``live``: the Hermes database of the profile being looked at (the only one Logbook changes);
* archives: every file named ``*.db``, ``*.sqlite`` or ``*.sqlite3`` in the folders given with
  ``--archives`` (and Logbook's own cold-storage folder), opened read-only, never migrated or
  written except by a move to or from cold storage (webui.db.stores.coldstore);
* replicas: other machines' databases, kept current by Litestream (webui.db.stores.replicas).

Folders are looked at again every RESCAN_S seconds (a ``stat`` of each file: nothing is
opened), so a file that appears, goes or changes is seen without a restart. A file is read
(webui.db.stores.files) once per change, by one inspector thread, outside the store set's lock
and under a time limit: no file, however hostile, holds the pages of the others. A request
waits for the files being read only as long as its own deadline allows; a file not read yet,
broken (empty, not SQLite, corrupt, not Hermes's) or stalled is listed with the reason and
never breaks the others. Connections to the stores come from one small pool
(webui.db.stores.pool), whatever their number.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webui import keep, threads
from webui.db import deadline as request_deadline
from webui.db.errors import BadRequest, LogbookDBError, StartupError
from webui.db.schema import check_database, connect_readonly
from webui.db.stores.files import (
    INSPECT_S,
    Summary,
    first_problem,
    read_or_load,
    signature,
    startup_words,
)
from webui.db.stores.pool import StorePool

if TYPE_CHECKING:
    from flask import Flask

    from webui.db import Logbook

LIVE = "live"
KINDS = ("live", "archive", "replica")
RESCAN_S = 5.0
# A file already read is checked for a change (a stat) at most this often.
CHECK_S = 1.0
# A request waits at most this long (and never past its deadline) for new files to be read.
WAIT_S = 3.0
ARCHIVE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
# The files Logbook's cold storage writes: one a month (webui.db.stores.coldstore).
MONTHLY = re.compile(r"^hermes-archive-(\d{4}-\d{2})$")
# Each read of a store by an export may take this long: one that stalls ends its part.
STORE_EXPORT_LIMIT_S = 15.0


class ReadOnlyStore(LogbookDBError):
    status = 403


@dataclass(eq=False)  # one store is itself: compared by identity (pages test membership a lot)
class Store:
    name: str
    kind: str  # live / archive / replica
    path: Path | None
    url: str | None = None
    status: str = "ok"  # ok / missing / error / stalled / pending / stale
    message: str = ""
    logbook: Logbook | None = field(default=None, repr=False)
    follower: Any = field(default=None, repr=False)
    summary: Summary | None = field(default=None, repr=False)
    signature: tuple | None = field(default=None, repr=False)

    @property
    def writable(self) -> bool:
        return self.kind == "live"

    @property
    def readable(self) -> bool:
        return self.logbook is not None

    @property
    def book(self) -> Logbook:
        """Its Logbook, for a store that can be read (a page asks only those); one that cannot
        answers as a store that fails, with what it says about itself."""
        if self.logbook is None:
            raise LogbookDBError(self.message or self.status)
        return self.logbook

    def as_of(self) -> float | None:
        """For a replica: the moment of the last change Litestream applied (None: never)."""
        return self.follower.as_of() if self.follower is not None else None

    def facts(self) -> dict[str, Any]:
        """What /stores shows of it (from its summary, or counted from the file, cheaply)."""
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
        if self.kind == "replica" and self.follower is not None:
            out.update(self.follower.freshness())
        lb = self.logbook
        if lb is not None:
            out["schema"] = lb.schema.version
            if lb.schema.unusable:
                out["search_note"] = search_note(lb)
            if self.summary is not None:
                out["sessions"], out["messages"] = self.summary.sessions, self.summary.messages
                out["size_bytes"] = lb.size_bytes()
                return out
            try:
                counts = lb.stats.counts()
                out["sessions"], out["messages"] = counts["sessions"], counts["messages"]
                out["size_bytes"] = lb.size_bytes()
            except LogbookDBError as exc:
                out["status"], out["message"] = "error", exc.message
        return out


def search_note(lb: Logbook) -> str:
    """Why a store is searched by substring: its index cannot be read by this SQLite."""
    why = "; ".join(f"{t}: {w}" for t, w in sorted(lb.schema.unusable.items()))
    return f"its search index cannot be read here ({why}), so it is searched by substring"


def archive_name(path: Path) -> str:
    """How an archive file is named on the pages: "archive 2026-03" for cold storage's
    monthly files, else "archive <file name>"."""
    m = MONTHLY.match(path.stem)
    return f"archive {m.group(1)}" if m else f"archive {path.stem}"


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
        self.pool = StorePool()
        self.home = Path(app.instance_path) / "stores"
        self._lock = threading.Lock()
        self._read = threading.Condition(self._lock)
        self._archives: dict[Path, Store] = {}  # by resolved path
        self._todo: dict[Path, tuple[Path, tuple]] = {}  # files to read: (path, signature)
        self._reading = False
        self._scan = keep.Throttle(RESCAN_S)
        self._check = keep.Throttle(CHECK_S)
        self.live_schema: int | None = None
        self.inspections = 0  # files read so far (tests: a file standing still is read once)
        self._to_warm: list[Store] = []
        self._warming = False

    # -- what there is ---------------------------------------------------------------------

    def others(self, wait_s: float | None = None) -> list[Store]:
        """Archives (by name) then replicas, as they are now. New or changed files are read
        by the inspector; this waits for them as long as ``wait_s`` (by default WAIT_S, cut to
        the request's deadline) and names the rest "not read yet"."""
        with self._lock:
            if self._scan.due():
                self._rescan()
            elif self._check.due():
                self._recheck()
            if self._todo:
                self._start_reading()
                if wait_s is None:
                    left = request_deadline.remaining()
                    wait_s = WAIT_S if left is None else min(WAIT_S, max(0.0, left - 1.0))
                end = time.monotonic() + wait_s
                while self._todo and (left := end - time.monotonic()) > 0:
                    self._read.wait(left)
            archives = sorted(self._archives.values(), key=lambda s: s.name)
        return [*archives, *(r.store() for r in self.replicas)]

    def settle(self, timeout_s: float = 60.0) -> None:
        """Wait until every file found has been read (tests, benchmarks, the CLI's start)."""
        self.others(wait_s=timeout_s)

    def forget(self, path: Path) -> None:
        """A file changed under us (a move to cold storage created or grew it): read again."""
        with self._lock:
            key = path.resolve()
            _retire(self._archives.pop(key, None))
            self._todo.pop(key, None)
            self._scan.reset()

    def rescan_now(self) -> None:
        with self._lock:
            self._scan.reset()
            self._check.reset()

    def _recheck(self) -> None:
        """Under the lock, between rescans: has a file read already changed (a copy over it,
        a write)? Then it is read again before anything more is read from it (an archive is
        read as a snapshot: a change under it must not be read through the old one)."""
        for key, store in list(self._archives.items()):
            if store.path is None or key in self._todo:
                continue
            sig = signature(store.path)
            if sig != store.signature:
                _retire(store)
                if sig is None:  # named as gone until the next rescan drops it
                    store = Store(
                        store.name,
                        "archive",
                        store.path,
                        status="missing",
                        message="the file is gone",
                    )
                    self._archives[key] = store
                    continue
                self._archives[key] = Store(
                    store.name,
                    "archive",
                    store.path,
                    status="pending",
                    message="changed: being read again",
                )
                self._todo[key] = (store.path, sig)

    def _rescan(self) -> None:
        """Under the lock: a stat of every candidate file; nothing is opened here."""
        live = _identity(self.live_path) if self.live_path else None
        found: dict[Path, tuple[Path, tuple]] = {}
        for folder in self.archive_dirs:
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            for p in entries:
                if p.suffix.lower() not in ARCHIVE_SUFFIXES:
                    continue
                sig = signature(p)
                if sig is None or not p.is_file():
                    continue
                if live is not None and tuple(sig[:2]) == live:
                    continue  # the live file itself, seen through an archive folder
                found.setdefault(p.resolve(), (p, sig))
        for key in list(self._archives):
            if key not in found:
                _retire(self._archives.pop(key))
                self._todo.pop(key, None)
        names = {s.name for k, s in self._archives.items() if k in found}
        for key, (p, sig) in found.items():
            known = self._archives.get(key)
            if known is not None and known.signature == sig:
                continue
            if key in self._todo and self._todo[key][1] == sig:
                continue
            _retire(known)
            name = known.name if known is not None else self._unique(archive_name(p), p, names)
            names.add(name)
            why = "being read" if known is None else "changed: being read again"
            self._archives[key] = Store(name, "archive", p, status="pending", message=why)
            self._todo[key] = (p, sig)

    @staticmethod
    def _unique(name: str, path: Path, names: set[str]) -> str:
        if name not in names:
            return name
        name = f"{name} ({path.parent.name})"
        n = 2
        while name in names:
            name, n = f"{name.rsplit(' #', 1)[0]} #{n}", n + 1
        return name

    # -- reading files, one at a time, outside the lock ----------------------------------------

    def _start_reading(self) -> None:
        if not self._reading:
            self._reading = True
            threads.start_in_app(self._read_all, "logbook-store-inspector")

    def _read_all(self) -> None:
        while True:
            with self._lock:
                if not self._todo:
                    self._reading = False
                    self._read.notify_all()
                    return
                key, (path, sig) = next(iter(self._todo.items()))
            try:
                store = self.inspect(path, sig)
            except Exception as exc:  # noqa: BLE001 - one file never stops the others' reading
                store = Store("", "archive", path, status="error", message=f"unreadable: {exc}")
            with self._lock:
                self.inspections += 1
                if self._todo.get(key, (None, None))[1] != sig:
                    _retire(store)
                    continue  # changed or gone meanwhile: read again (or not at all)
                del self._todo[key]
                placeholder = self._archives.get(key)
                store.name = placeholder.name if placeholder else archive_name(path)
                self._archives[key] = store
                self._read.notify_all()
            if store.logbook is not None:
                self._warm_later(store)

    # -- statistics read ahead ------------------------------------------------------------------

    def _warm_later(self, store: Store) -> None:
        """An archive's rollup (its tool usage and heatmap for the statistics) read in the
        background, one archive at a time, as the live file's is from start-up; kept in the
        instance folder, so a restart finds it done."""
        if not self.app.config.get("LOGBOOK_ROLLUP_WARM") or self.app.testing:
            return
        with self._lock:
            self._to_warm.append(store)
            start, self._warming = not self._warming, True
        if start:
            threads.start(self._warm_all, "logbook-store-rollups")

    def _warm_all(self) -> None:
        while True:
            with self._lock:
                if not self._to_warm:
                    self._warming = False
                    return
                store = self._to_warm.pop(0)
            lb = store.logbook
            if lb is None or lb.sessions.cache.closed:
                continue  # gone or read again since
            try:
                with self.app.app_context():
                    lb.rollup.warm()
            except Exception:  # noqa: BLE001 - a stats request reads it in steps instead
                self.app.logger.warning("the rollup of %s could not be read ahead", store.name)

    def inspect(self, path: Path, sig: tuple) -> Store:
        """One file, read under time limits: a store, or a named reason why it is not one."""
        name = archive_name(path)
        problem = first_problem(path)
        if problem:
            return Store(name, "archive", path, status="error", message=problem, signature=sig)
        try:
            opened = check_database(path, time_limit_s=INSPECT_S, read_only_file=True)
            lb = self._logbook(opened)
            summary = read_or_load(lb, self.home / "summaries", path, sig)
        except StartupError as exc:
            status = "stalled" if "skipped until" in startup_words(exc) else "error"
            return Store(
                name, "archive", path, status=status, message=startup_words(exc), signature=sig
            )
        message = search_note(lb) if lb.schema.unusable else ""
        return Store(
            name, "archive", path, logbook=lb, summary=summary, signature=sig, message=message
        )

    def _logbook(self, opened) -> Logbook:
        from webui.db import build_logbook

        engine = self.pool.engine(
            opened.path, lambda: connect_readonly(opened.path, immutable=opened.immutable)
        )
        lb = build_logbook(self.app, opened, engine=lambda: engine, home=self.home)
        prepare_store_logbook(lb, self.live_schema)
        return lb

    # -- a request's stores -------------------------------------------------------------------

    def for_request(self, live: Logbook) -> list[Store]:
        self.live_schema = live.schema.version
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
            known = ", ".join(f"“{s.name}”" for s in every[:20])
            more = f" and {len(every) - 20} more (see /stores)" if len(every) > 20 else ""
            raise BadRequest(f"There is no store named “{unknown[0]}”. Stores: {known}{more}.")
        wanted = set(names)
        return [s for s in every if s.name in wanted]


def prepare_store_logbook(lb: Logbook, live_schema: int | None) -> None:
    """What a store read beside the live file needs of its Logbook: its changes watched by
    its files' sizes and times (no connection held open to watch them), short reads under an
    export, and Hermes 0.19's listing of an older file (its schema-16 migration's rule)."""
    lb.reader.watch_files = True
    lb.exporter.time_limit_s = STORE_EXPORT_LIMIT_S
    older = lb.schema.version is not None and lb.schema.version < 16
    lb.sessions.list_rules.hide_probable_subagents = older and (live_schema or 0) >= 22


def _identity(path: Path | None) -> tuple[int, int] | None:
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if st else None


def _retire(store: Store | None) -> None:
    """A store that went away (or is opened afresh) takes its kept values and its pooled
    connections with it."""
    if store is not None and store.logbook is not None:
        store.logbook.sessions.cache.close()
        try:
            store.logbook.reader.let_go()
        except Exception:  # noqa: BLE001 - closing what is already gone
            pass
