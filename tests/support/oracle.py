"""Hermes itself as the oracle: hermes-agent 0.19.0 installed into a virtual environment of
its own (never among Logbook's dependencies), run on copies of the fixtures.

The venv is built once per machine under ``~/.cache/hermes-logbook/`` (or
``$LOGBOOK_ORACLE_VENV``); building it needs the package registry. Without it the oracle tests
skip on a developer's machine and fail under CI, where they must run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERMES_VERSION = "0.19.0"
DRIVER = Path(__file__).resolve().parents[1] / "oracle" / "hermes_driver.py"


def venv_path() -> Path:
    configured = os.environ.get("LOGBOOK_ORACLE_VENV")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "hermes-logbook" / f"hermes-agent-{HERMES_VERSION}"


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"the Hermes oracle is needed in CI: {reason}")
    pytest.skip(f"Hermes {HERMES_VERSION} oracle unavailable: {reason}")


def ensure_venv() -> Path:
    """The oracle venv's directory, built on first use."""
    venv = venv_path()
    ready = venv / ".ready"
    if ready.exists() and (venv / "bin" / "hermes").exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", f"hermes-agent=={HERMES_VERSION}"],
            check=True,
            timeout=900,
            capture_output=True,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        _unavailable(f"installing hermes-agent=={HERMES_VERSION} failed: {exc} {detail[-500:]!r}")
    ready.write_text(HERMES_VERSION)
    return venv


class Hermes:
    """One Hermes home holding a copy of a fixture as its state.db."""

    def __init__(self, venv: Path, home: Path):
        self.venv = venv
        self.home = home
        self.db = home / "state.db"

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(self.home),
            "HERMES_HOME": str(self.home),
            "TZ": "UTC",
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
        }

    def _run(self, argv: list[str], what: str) -> str:
        done = subprocess.run(
            argv, env=self.env(), capture_output=True, text=True, timeout=300, cwd=self.home
        )
        if done.returncode != 0:
            raise AssertionError(f"{what} failed: {done.stderr[-2000:]}")
        return done.stdout

    def cli(self, *args: str) -> str:
        """``hermes <args>`` as a user types it; its standard output."""
        return self._run([str(self.venv / "bin" / "hermes"), *args], f"hermes {' '.join(args)}")

    def call(self, op: str, **request) -> object:
        """Hermes's SessionDB method behind ``op`` (tests/oracle/hermes_driver.py)."""
        payload = json.dumps({"db": str(self.db), "op": op, **request})
        argv = [str(self.venv / "bin" / "python"), str(DRIVER), payload]
        return json.loads(self._run(argv, f"Hermes driver {op}"))


_ROW_ID = re.compile(r"(\S+)\s*$")


def listed_ids(cli_output: str) -> list[str]:
    """The ids of `hermes sessions list`: the last column of each row under the ─── rule."""
    lines = cli_output.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("─")) + 1
    except StopIteration:
        return []
    return [m.group(1) for line in lines[start:] if (m := _ROW_ID.search(line))]


_DRY_RUN_ROW = re.compile(r"^  (\S+)  (?:\d{4}-\d\d-\d\d \d\d:\d\d|-)")


def dry_run_ids(cli_output: str) -> list[str]:
    """The ids `hermes sessions prune|archive --dry-run` lists, in its order."""
    return [m.group(1) for line in cli_output.splitlines() if (m := _DRY_RUN_ROW.match(line))]


def start_hermes_writer(venv: Path, db: Path, seconds: int, rate: int) -> subprocess.Popen:
    """Hermes 0.19's own ``SessionDB`` appending ``rate`` messages a second to ``db`` for up to
    ``seconds`` (benchmarks/hermes_writer.py), returned once it says it is ready. Stop it with
    SIGTERM; its last line of output is its JSON report (written, failures, waits)."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "hermes_writer.py"
    writer = subprocess.Popen(
        [str(venv / "bin" / "python"), str(script), str(db), str(seconds), str(rate)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout.readline().strip() == "ready"
    return writer
