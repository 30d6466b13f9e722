"""The command line: `hermes-logbook` and `python -m webui` (options in the contract)."""

from __future__ import annotations

import argparse
import atexit
import ipaddress
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn

from webui import __version__
from webui.db import OpenedDatabase, StartupError, check_database, default_candidates
from webui.db.stores.profiles import discover
from webui.present.filters import nbytes

DEMO_SESSIONS = 300
DEMO_LONG_SESSION = 2000
DEMO_FILE = "demo-22.db"


MIN_TOKEN_CHARS = 16


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hermes-logbook",
        description="Browse Hermes Agent's session history (state.db) in a web browser.",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--db",
        metavar="PATH",
        help="the state.db to open (default: $HERMES_HOME/state.db, else ~/.hermes/state.db)",
    )
    src.add_argument(
        "--demo",
        action="store_true",
        help="serve a demo database kept in the instance folder (created on first use)",
    )
    p.add_argument(
        "--profile",
        metavar="NAME",
        help="open this Hermes profile (<root>/profiles/NAME); every profile found "
        "is still reachable from the switcher",
    )
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9130, help="port (default 9130)")
    p.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host: remote mode, viewable from other machines",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="remote mode: also answer to this Host name (repeatable); IP addresses and this "
        "machine's own names are always accepted",
    )
    p.add_argument(
        "--token-file",
        metavar="PATH",
        help="read the admin token from this file (keeps it out of the process list)",
    )
    p.add_argument(
        "--token", help="admin token (also $HERMES_LOGBOOK_TOKEN or the instance config)"
    )
    p.add_argument(
        "--private",
        action="store_true",
        help="remote mode: the token is needed to view, not only to change",
    )
    p.add_argument(
        "--read-only",
        action="store_true",
        help="no changes at all: action controls hidden, action routes answer 403",
    )
    p.add_argument(
        "--archives",
        action="append",
        default=[],
        metavar="DIR",
        help="read every Hermes state.db file in DIR as a read-only archive store (repeatable); "
        "cold storage moves sessions into the first one",
    )
    p.add_argument(
        "--replica",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="follow another machine's Litestream replica at URL (file://, s3://, sftp://) as "
        "the read-only store NAME (repeatable; needs the replicas extra)",
    )
    p.add_argument(
        "--trusted-proxy",
        metavar="ADDR",
        help="remote mode behind a reverse proxy at this address: the client is the address "
        "it appends to X-Forwarded-For (the login throttle, export slots and request turns "
        "count clients, not the proxy); the header is ignored from anyone else",
    )
    p.add_argument("--threads", type=int, default=8, help="waitress worker threads (default 8)")
    p.add_argument(
        "--instance",
        metavar="DIR",
        help="instance folder (config.py, demo database); default: Flask's",
    )
    p.add_argument("--version", action="version", version=f"hermes-logbook {__version__}")
    return p


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def instance_folder(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit).expanduser().resolve()
    from flask import Flask

    return Path(Flask("webui", instance_relative_config=True).instance_path)


def ensure_demo(instance: Path, out=sys.stderr) -> Path:
    """The demo database, built once (deterministic) and kept in the instance folder: in
    Hermes 0.19's schema (22), with where each conversation came from. (An older instance
    keeps its schema-11 demo.db; this one has its own name.)"""
    path = instance / DEMO_FILE
    if path.exists():
        return path
    from webui.demo import generate

    instance.mkdir(parents=True, exist_ok=True)
    print(f"Building the demo database in {path} (once)…", file=out, flush=True)
    # Anchor the synthetic year at the start of today, so "last 7 days" has data.
    today = time.time() // 86400 * 86400
    generate(
        path,
        sessions=DEMO_SESSIONS,
        now=today,
        long_session_messages=DEMO_LONG_SESSION,
        schema=22,
    )
    return path


def hermes_root() -> Path:
    home = os.environ.get("HERMES_HOME")
    return Path(home).expanduser() if home else Path("~/.hermes").expanduser()


def open_database(
    args: argparse.Namespace, instance: Path
) -> tuple[OpenedDatabase, Path | None, str | None]:
    """The primary database, the Hermes root to discover profiles in (None when --db or
    --demo pins one database), and the primary's profile name."""
    if args.demo:
        return check_database(ensure_demo(instance)), None, None
    if args.db:
        return check_database(args.db), None, None
    root = hermes_root()
    found = dict(discover(root))
    if args.profile:
        if args.profile not in found:
            names = ", ".join(found) or "none"
            raise StartupError(
                f"no Hermes profile named {args.profile} in {root} (found: "
                f"{names}). Use --db PATH to open a database directly."
            )
        return check_database(found[args.profile]), root, args.profile
    candidates = default_candidates()
    if not candidates[0].exists():
        # No default database, but named profiles may have theirs.
        for name, path in found.items():
            if path.exists():
                return check_database(path), root, name
    return check_database(candidates[0], tried=[str(c) for c in candidates]), root, "default"


# A token file holds one token and a newline; anything much larger is not one.
MAX_TOKEN_FILE_BYTES = 4096


def read_token_file(name: str) -> tuple[str, int]:
    """The token in a token file, stripped, and the file's mode. Only a regular file of at
    most MAX_TOKEN_FILE_BYTES is read: a FIFO would hang the start until someone writes to
    it, and a device or a huge file (a link to /dev/zero) would be read without end. It is
    opened without waiting (O_NONBLOCK) and checked on the descriptor itself, so a file
    swapped after a check is never read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        raise StartupError(f"cannot read --token-file {name}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _file_kind(st.st_mode)
            raise StartupError(
                f"--token-file {name} is {kind}, not a regular file: put the token in a "
                "file of its own (chmod 600)."
            )
        if st.st_size > MAX_TOKEN_FILE_BYTES:
            raise StartupError(
                f"--token-file {name} holds {st.st_size:,} bytes; a token file holds one token "
                f"(at most {MAX_TOKEN_FILE_BYTES:,} bytes). Is it the right file?"
            )
        data = os.read(fd, MAX_TOKEN_FILE_BYTES + 1)
    except OSError as exc:
        raise StartupError(f"cannot read --token-file {name}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_TOKEN_FILE_BYTES:  # grew after the check
        raise StartupError(
            f"--token-file {name} holds more than {MAX_TOKEN_FILE_BYTES:,} bytes; a token "
            "file holds one token. Is it the right file?"
        )
    try:
        return data.decode("utf-8").strip(), st.st_mode
    except UnicodeDecodeError as exc:
        raise StartupError(f"cannot read --token-file {name}: {exc}") from None


def _file_kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO (a named pipe)"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def resolve_token(args: argparse.Namespace, instance: Path, err) -> tuple[str | None, str]:
    """The admin token and where it came from: --token-file, else --token, else
    $HERMES_LOGBOOK_TOKEN, else LOGBOOK_TOKEN in the instance's config.py. Surrounding
    whitespace is not part of a token; a source that was given but holds nothing (an empty
    file, a token of spaces) is an error, never a silent "no token" that overrides another;
    a short token is refused; a token file other users can read is warned about (as ssh
    warns about a private key)."""
    token, source = None, "none"
    if args.token_file:
        token, mode = read_token_file(args.token_file)
        source = f"--token-file {args.token_file}"
        if mode & 0o077:
            print(
                f"hermes-logbook: warning: --token-file {args.token_file} can be read by other "
                f"users (mode {mode & 0o777:o}); make it private: chmod 600 {args.token_file}",
                file=err,
            )
    elif args.token is not None:
        token, source = args.token.strip(), "--token"
    elif os.environ.get("HERMES_LOGBOOK_TOKEN") is not None:
        token = os.environ["HERMES_LOGBOOK_TOKEN"].strip()
        source = "$HERMES_LOGBOOK_TOKEN"
    else:
        from flask import Config

        config = Config(str(instance))
        config.from_pyfile("config.py", silent=True)
        if config.get("LOGBOOK_TOKEN") is not None:
            token = str(config["LOGBOOK_TOKEN"]).strip()
            source = f"LOGBOOK_TOKEN in {instance / 'config.py'}"
    if source != "none" and not token:
        raise StartupError(
            f"{source} holds no token (it is empty or only whitespace). Put the token in it, "
            "or leave it out to run without one."
        )
    if token and len(token) < MIN_TOKEN_CHARS:
        raise StartupError(
            f"the admin token from {source} is {len(token)} characters long; use at least "
            f"{MIN_TOKEN_CHARS} (a short token can be guessed). For example: "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"
        )
    return token, source


def access_lines(
    args: argparse.Namespace,
    token: str | None,
    token_source: str = "none",
    file_line: str | None = None,
) -> list[str]:
    """Exactly what is exposed, and to whom. ``file_line``: which changes the file takes
    (webui.hermes.changes.changes_line: its Hermes's rules, or why they are off)."""
    if args.read_only:
        changes = "off: read-only (--read-only)"
    elif file_line and not file_line.startswith("changes: allowed"):
        changes = file_line.removeprefix("changes: ")
    elif not args.insecure:
        changes = "allowed from this machine's browsers (CSRF-protected, no login)"
    elif token:
        changes = f"only after logging in at /login with the admin token (from {token_source})"
    else:
        changes = (
            "off: remote mode and no admin token was given (--token, --token-file, "
            "$HERMES_LOGBOOK_TOKEN or LOGBOOK_TOKEN in the instance's config.py)"
        )
    if file_line and file_line.startswith("changes: allowed") and not changes.startswith("off"):
        # whose rules: "allowed (Hermes 0.22.2 rules) from this machine's browsers …"
        whose = file_line.removeprefix("changes: allowed").strip()
        if changes.startswith("allowed"):
            changes = f"allowed {whose}{changes.removeprefix('allowed')}"
        else:
            changes = f"{changes} {whose}"
    if not args.insecure:
        view = "this machine only (loopback bind; other Host names are refused)"
    elif args.private:
        view = (
            f"REMOTE: anyone who can reach port {args.port} on {args.host}, but only after "
            "logging in with the admin token"
        )
    else:
        view = (
            f"REMOTE: anyone who can reach port {args.port} on {args.host} may read every "
            "session, search and export, without a login"
        )
    lines = [f"view:    {view}", f"changes: {changes}"]
    if getattr(args, "trusted_proxy", None):
        lines.append(
            f"proxy:   clients are the addresses {args.trusted_proxy} names in X-Forwarded-For "
            "(login throttle, export slots, turns)"
        )
    return lines


def trusted_proxy(value: str | None) -> str | None:
    """--trusted-proxy as the address waitress compares the peer with (one IP address)."""
    if value is None:
        return None
    try:
        return str(ipaddress.ip_address(value.strip().strip("[]")))
    except ValueError:
        raise StartupError(
            f"--trusted-proxy {value} is not an IP address: give the address your reverse "
            "proxy connects to Logbook from (often 127.0.0.1)."
        ) from None


def stores_config(args: argparse.Namespace) -> dict:
    """--archives and --replica as config (only those given: the instance's config.py may
    name others). A folder that is not one, a replica that cannot be parsed, or replicas
    without Litestream installed end the program with the reason."""
    from webui.db.stores.replicas import MISSING, litestream_binary, parse_replica

    out: dict = {}
    if args.archives:
        folders = [Path(d).expanduser().resolve() for d in args.archives]
        for f in folders:
            if f.exists() and not f.is_dir():
                raise StartupError(f"--archives {f} is not a folder")
        out["LOGBOOK_ARCHIVES"] = [str(f) for f in folders]
    if args.replica:
        try:
            out["LOGBOOK_REPLICAS"] = [f"{n}={u}" for n, u in map(parse_replica, args.replica)]
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        if litestream_binary() is None:
            raise StartupError(MISSING)
    return out


def main(argv: list[str] | None = None) -> int:
    """The program. Ctrl+C stops it at any moment (starting, printing the banner, serving)
    with one line and exit status 0: never a traceback, never a hang."""
    served = [False]
    previous = signal.signal(signal.SIGINT, _on_interrupt)
    try:
        code = _main(argv, served)
    except KeyboardInterrupt:
        _say_stopped()
        _leave(0)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if served[0]:
        _say_stopped()  # waitress ended its loop on Ctrl+C
        _leave(code)
    return code


# A Ctrl+C is a KeyboardInterrupt as usual, raised where the main thread stands. Python drops
# one raised inside a finalizer (it prints "Exception ignored" and goes on): the fast tier saw
# the server go on serving after a Ctrl+C on a busy machine. So each Ctrl+C also arms a
# deadline: should the process still be here STOP_GRACE_S later, it ends from another thread.
STOP_GRACE_S = 6.0
_stopping = threading.Lock()  # held by whoever said "stopped": the line is said once


def _on_interrupt(signum: int, frame: object) -> None:
    deadline = threading.Timer(STOP_GRACE_S, _stop_now)
    deadline.daemon = True
    deadline.start()
    raise KeyboardInterrupt


def _stop_now() -> None:
    _say_stopped()
    _leave(0)


def _say_stopped() -> None:
    if _stopping.acquire(blocking=False):
        try:
            print("hermes-logbook: stopped.", file=sys.stderr, flush=True)
        except (KeyboardInterrupt, OSError):
            pass


def _leave(code: int) -> NoReturn:
    """End the process once the app has started, without the interpreter's finalization.

    Background passes (the rollup's, the digest's, a request cut short) may be inside SQLite
    with the progress handler of their time limit running Python; finalization then closes
    their connections while they hold them, and waits for ever (a Ctrl+C was seen to hang for
    minutes on a busy machine, at start-up and while serving). The exit handlers still run
    (replicas' followers are stopped, logs flushed); every change to a file is journaled to
    survive a kill at any step and the passes' files are caches, so nothing is lost."""
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - leaving whatever happens
        pass
    os._exit(code)


def _main(argv: list[str] | None, served: list[bool]) -> int:
    args = build_parser().parse_args(argv)
    err = sys.stderr
    if not is_loopback(args.host) and not args.insecure:
        print(
            f"hermes-logbook: refusing to listen on {args.host} without --insecure: everyone "
            f"who can reach port {args.port} there could read every conversation in your "
            "Hermes history. Add --insecure for remote viewing, or keep the default "
            "--host 127.0.0.1.",
            file=err,
        )
        return 2
    try:
        proxy = trusted_proxy(args.trusted_proxy)
    except StartupError as exc:
        print(f"hermes-logbook: {exc}", file=err)
        return 2
    instance = instance_folder(args.instance)
    try:
        token, token_source = resolve_token(args, instance, err)
    except StartupError as exc:
        print(f"hermes-logbook: {exc}", file=err)
        return 2
    if args.private and not token:
        print(
            "hermes-logbook: --private needs an admin token (--token or HERMES_LOGBOOK_TOKEN), "
            "or nobody could view anything.",
            file=err,
        )
        return 2
    try:
        opened, root, profile = open_database(args, instance)
        stores = stores_config(args)
    except StartupError as exc:
        print(f"hermes-logbook: {exc}", file=err)
        return 2

    from webui import create_app
    from webui.door.serve import make_server
    from webui.hermes.changes import changes_line
    from webui.web.views.search import app_search_facts

    # Ctrl+C reaches the main thread, whatever it waits for: the threads started from here on
    # (background passes, waitress's workers) inherit a mask that blocks SIGINT, so the kernel
    # delivers it to the main thread alone, where a wait on a lock is interrupted (a signal
    # taken by another thread only sets a flag the main thread reads when it runs again).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        app = create_app(
            {
                "LOGBOOK_DB": str(opened.path),
                "LOGBOOK_HOST": args.host,
                "LOGBOOK_PORT": args.port,
                "LOGBOOK_REMOTE": bool(args.insecure),
                "LOGBOOK_READ_ONLY": bool(args.read_only),
                "LOGBOOK_PRIVATE": bool(args.private),
                "LOGBOOK_THREADS": args.threads,
                "LOGBOOK_HERMES_ROOT": str(root) if root else None,
                "LOGBOOK_PROFILE_NAME": profile,
                "LOGBOOK_ALLOWED_HOSTS": [h.strip().lower() for h in args.allow_host if h.strip()],
                "LOGBOOK_TRUSTED_PROXY": proxy,
            }
            | stores
            | ({"LOGBOOK_TOKEN": token} if token else {}),
            opened=opened,
            instance_path=str(instance),
        )
        try:
            # ident="" sends no Server header (no version disclosure).
            server = make_server(
                app, args.host, args.port, args.threads, facts=app_search_facts(app)
            )
        except OSError as exc:
            print(
                f"hermes-logbook: cannot listen on {args.host}:{args.port}: "
                f"{exc.strerror or exc}. Choose another --port.",
                file=err,
            )
            return 2
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    shown_host = f"[{args.host}]" if ":" in args.host else args.host
    version = opened.schema.version if opened.schema.version is not None else "unknown"
    print(f"Hermes Logbook {__version__}", flush=True)
    print(f"  URL:      http://{shown_host}:{args.port}/")
    print(
        f"  Database: {opened.path} (schema v{version}, {nbytes(opened.size_bytes)})"
        + (" [immutable snapshot: the folder is not writable]" if opened.immutable else "")
    )
    if root:
        names = [n for n, _ in discover(root)]
        print(f"  Profiles: {', '.join(names) or 'none'} (in {root}; switch with ?profile=)")
    for note in app.extensions["logbook"].actions.recovered:
        print(f"  Finished: {note}")
    actions = app.extensions["logbook"].actions
    file_line = changes_line(
        hermes=actions.rules.hermes,
        refusal=actions.w.refusal,
        removal_refusal=actions.w.removal_reason,
        read_only=bool(args.read_only),
    )
    for line in access_lines(args, token, token_source, file_line):
        print(f"  Access:   {line}")
    print("  Stop with Ctrl+C.", flush=True)
    served[0] = True  # from here on, main() ends the process itself (_leave)
    try:
        server.run()  # waitress ends its loop on Ctrl+C and closes its sockets
    except KeyboardInterrupt:
        pass
    return 0
