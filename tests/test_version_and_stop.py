"""One version from one place, and a Ctrl+C that never shows a traceback (issue 47, point 8).

The version is written once (``webui.__version__``); the package's metadata reads it
(pyproject's ``[tool.hatch.version]``), the banner, ``--version`` and every page's footer say
it, and the README's changelog names it first. The program is started for real and
interrupted with SIGINT at moments spread over its start (the banner, the lines after it, the
server starting): each time it stops with one line and status 0."""

from __future__ import annotations

import importlib.metadata
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import webui
from support import ROOT, WAIT_BOUND_S, copy_fixture, make_app

README = ROOT / "README.md"


def changelog_versions() -> list[str]:
    text = README.read_text(encoding="utf-8").split("\n## Changelog\n", 1)[1]
    return re.findall(r"^\* (\d+\.\d+\.\d+)\b", text, flags=re.M)


def test_one_version_in_one_place():
    version = webui.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    # The README's changelog describes this version first.
    assert changelog_versions()[0] == version
    # pyproject writes no version of its own: it reads webui/version.py.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "webui/version.py"
    # The installed package says the same (reinstall after changing the version).
    assert importlib.metadata.version("hermes-logbook") == version


def test_the_footer_and_the_command_line_say_the_version(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path)
    page = make_app(db, tmp_path / "inst").test_client().get("/sessions")
    assert f"Logbook {webui.__version__}" in page.get_data(as_text=True)
    out = subprocess.run(
        [sys.executable, "-m", "webui", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"hermes-logbook {webui.__version__}"


def start(db: Path, instance: Path) -> subprocess.Popen:
    # PYTHONFAULTHANDLER: a process that hangs is asked for every thread's stack (SIGABRT)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "webui",
            "--db",
            str(db),
            "--port",
            "0",
            "--instance",
            str(instance),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


# After the banner's first line: at once (four times: the banner is printed within a
# millisecond, and the signal lands inside it on most tries), while the rest prints, and as
# the server starts.
DELAYS = (0.0, 0.0, 0.0, 0.0, 0.0005, 0.002, 0.005, 0.02, 0.08, 0.3)


@pytest.mark.parametrize(
    "delay",
    # One moment in the fast tier; every moment in the full run (each starts a server).
    [pytest.param(d, marks=[] if i == 0 else [pytest.mark.slow]) for i, d in enumerate(DELAYS)],
    ids=[f"{i}-{d}s" for i, d in enumerate(DELAYS)],
)
def test_ctrl_c_as_the_banner_prints_stops_without_a_traceback(tmp_path, delay):
    db = copy_fixture("hermes-v22.db", tmp_path)
    proc = start(db, tmp_path / "inst")
    try:
        first = proc.stdout.readline()
        if delay:
            time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=WAIT_BOUND_S)  # a bound for a hang
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            _, err = proc.communicate(timeout=30)
            pytest.fail(f"no end {WAIT_BOUND_S} s after Ctrl+C; its threads then:\n{err[-8000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert first.strip() == f"Hermes Logbook {webui.__version__}", first
    assert "Traceback" not in err, err
    assert "KeyboardInterrupt" not in err, err
    assert proc.returncode == 0, (proc.returncode, err)
