"""Hermes profiles: every agent on the machine, each with its own state.db.

The default profile lives in the Hermes root (~/.hermes or $HERMES_HOME); each named one in
<root>/profiles/<name>/, under the names Hermes accepts (webui.hermes.listing). Profiles are discovered again on request (at most every few seconds), so a new one
appears without a restart. Each database is opened read-only on its own; a missing, locked,
corrupt or foreign one is shown as such and never breaks the others.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import create_engine

from webui import keep
from webui.db.errors import LogbookDBError, StartupError
from webui.db.reader import engine_options
from webui.db.schema import check_database
from webui.hermes.listing import is_profile_name

if TYPE_CHECKING:
    from flask import Flask

    from webui.db import Logbook

MARKERS = ("config.yaml", ".env", "SOUL.md", "profile.yaml", "auth.json", "state.db")
DEFAULT = "default"
RESCAN_S = 3.0


class ProfileUnavailable(LogbookDBError):
    status = 503


class UnknownProfile(LogbookDBError):
    status = 404


@dataclass
class Profile:
    name: str
    path: Path
    status: str = "ok"  # ok / missing / error
    message: str = ""
    version: int | None = None
    logbook: Logbook | None = field(default=None, repr=False)


def discover(root: Path) -> list[tuple[str, Path]]:
    """Profiles as Hermes 0.19's list_profiles finds them: the root as ``default`` (when it
    holds any Hermes file: a bare folder is not a Hermes home), then every folder under
    ``profiles/`` whose name Hermes accepts, marker files or not; ``profiles/default`` never
    (the root is the default)."""
    found: list[tuple[str, Path]] = []
    if any((root / m).exists() for m in MARKERS):
        found.append((DEFAULT, root / "state.db"))
    pdir = root / "profiles"
    if pdir.is_dir():
        for d in sorted(pdir.iterdir()):
            if d.is_dir() and is_profile_name(d.name):
                found.append((d.name, d / "state.db"))
    return found


class Profiles:
    def __init__(self, app: Flask, root: Path, primary: Logbook, primary_name: str):
        self.app = app
        self.root = root
        self.primary_name = primary_name
        self._lock = threading.Lock()
        self._profiles: dict[str, Profile] = {
            primary_name: Profile(
                primary_name, primary.opened.path, version=primary.schema.version, logbook=primary
            )
        }
        self._scan = keep.Throttle(RESCAN_S)

    def all(self) -> list[Profile]:
        with self._lock:
            if self._scan.due():
                self._rescan()
            return sorted(
                self._profiles.values(), key=lambda p: (p.name != self.primary_name, p.name)
            )

    def _rescan(self) -> None:
        seen = set()
        for name, path in discover(self.root):
            seen.add(name)
            current = self._profiles.get(name)
            if current and current.status == "ok":
                continue
            _retire(current)
            self._profiles[name] = self._open(name, path)
        for name in list(self._profiles):
            if name not in seen and name != self.primary_name:
                _retire(self._profiles.pop(name))

    def _open(self, name: str, path: Path) -> Profile:
        if not path.exists():
            return Profile(name, path, "missing", "this profile has no state.db yet")
        try:
            opened = check_database(path)
        except StartupError as exc:
            return Profile(name, path, "error", str(exc).split(" (tried:")[0])
        from webui.db import build_logbook

        engine = create_engine("sqlite://", **engine_options(opened, pool_size=4))
        lb = build_logbook(self.app, opened, engine=lambda: engine)
        return Profile(name, path, "ok", version=opened.schema.version, logbook=lb)

    def replace_primary(self, logbook: Logbook) -> None:
        """The primary's file was replaced: its fresh stores."""
        with self._lock:
            old = self._profiles[self.primary_name]
            _retire(old)
            self._profiles[self.primary_name] = Profile(
                old.name, old.path, version=logbook.schema.version, logbook=logbook
            )

    def forget(self, path) -> None:
        """A profile's file was replaced: it is opened afresh at the next look."""
        with self._lock:
            for name, p in list(self._profiles.items()):
                if name != self.primary_name and p.path == path:
                    _retire(self._profiles.pop(name))
            self._scan.reset()

    def get(self, name: str) -> Profile:
        for p in self.all():
            if p.name == name:
                return p
        raise UnknownProfile(f"There is no Hermes profile named “{name}”.")

    def logbook(self, name: str) -> Logbook:
        p = self.get(name)
        if p.logbook is None:
            raise ProfileUnavailable(f"Profile “{name}” cannot be read: {p.message}.")
        return p.logbook

    def loaded(self) -> list[Logbook]:
        """The stores of every profile opened so far (no rescan: nothing new is opened)."""
        with self._lock:
            return [p.logbook for p in self._profiles.values() if p.logbook is not None]

    def ready(self) -> list[Profile]:
        return [p for p in self.all() if p.logbook is not None]


def _retire(profile: Profile | None) -> None:
    """A profile whose file went away (or is opened afresh) takes its kept values with it."""
    if profile is not None and profile.logbook is not None:
        profile.logbook.sessions.cache.close()
