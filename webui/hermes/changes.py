"""What the Hermes that wrote a file says and decides about a change, as pure functions: when a
turn lease or compression lock still protects a session, which conversation a lease is kept
under, the words of its refusals and warnings, who holds a file open, and the one line that says
which changes a file allows and why. Facts from Hermes 0.22.2 (``hermes_state_messages``,
``hermes_state_pidns``, ``hermes_state_holders``, ``hermes_cli/sessions_cmd.py``), written
here in our words; the SQL that reads the rows is in ``webui.db.changes``."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The desktop's bot conversation: its title is its identity (0.22 never renames it while it
# is hidden, and pinning it leaves it hidden).
CANONICAL_BOT_CHAT_TITLE = "Bot Chat"

# -- guards: a live turn lease or compression lock ----------------------------------------

_PID = re.compile(r"(?:^|:)pid=(\d+)(?::|$)")
_PIDNS = re.compile(r"(?:^|:)pidns=(\d+)(?::|$)")


def own_pid_namespace() -> str | None:
    """This process's PID namespace (the inode in ``/proc/self/ns/pid``), None when unknown."""
    try:
        link = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    found = re.search(r"\[(\d+)\]", link)
    return found.group(1) if found else None


def pid_alive(pid: int) -> bool:
    """Is there a process with this id (a permission error means there is)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True
    return True


def guard_is_stale(
    holder: str | None,
    expires_at: Any,
    now: float,
    *,
    own_pid: int,
    own_namespace: str | None,
    alive: Callable[[int], bool] = pid_alive,
) -> bool:
    """A lease or lock row its holder no longer holds: expired, or its holder names a process
    of this PID namespace (``pid=N:pidns=M``, M ours) that is provably gone. A holder stamped
    with another namespace, or not stamped, waits for its expiry (Hermes's strict rule for
    rows with a time to live: a false reclaim would end a live turn)."""
    try:
        if float(expires_at) <= now:
            return True
    except (TypeError, ValueError):
        return True  # no usable expiry: nothing protects by it
    text = holder or ""
    pid = _PID.search(text)
    if pid is None or int(pid.group(1)) <= 0 or int(pid.group(1)) == own_pid:
        return False
    stamp = _PIDNS.search(text)
    if stamp is None or own_namespace is None or stamp.group(1) != own_namespace:
        return False
    return not alive(int(pid.group(1)))


def _config(raw: Any) -> dict:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def is_fork_child(row: Mapping[str, Any]) -> bool:
    """A branch, delegate run, reset child or ``tool`` session of its parent: its own
    conversation, never a compression continuation (a marker counts when it names the parent;
    a continuation inherits its parent's model_config, markers included)."""
    if row.get("source") == "tool":
        return True
    raw = row.get("model_config")
    cfg = _config(raw)
    if not cfg and isinstance(raw, str) and raw.strip():
        return False  # unreadable JSON: no marker
    markers = (cfg.get("_branched_from"), cfg.get("_delegate_from"), cfg.get("_reset_from"))
    parent = row.get("parent_session_id")
    return parent in markers if parent else any(m is not None for m in markers)


def lease_key(session_id: str, row_of: Callable[[str], Mapping[str, Any] | None]) -> str:
    """The conversation a turn lease is kept under: up the compression parents (a parent that
    ended 'compression', from a child that is not a fork) to the first segment."""
    current = row_of(session_id)
    seen = {session_id}
    while current:
        parent_id = current.get("parent_session_id")
        if not parent_id or parent_id in seen or is_fork_child(current):
            break
        parent = row_of(parent_id)
        if not parent or parent.get("end_reason") != "compression":
            break
        seen.add(parent_id)
        current = parent
    return str(current.get("id") or session_id) if current else session_id


def active_refusal(session_id: str) -> str:
    """0.22's `hermes sessions delete` on a session a live turn or compression protects."""
    return (
        f"Cannot delete active session: session '{session_id}' (or a delegate child) has an "
        "active turn lease or compression lock"
    )


def pinned_warning(session_id: str) -> str:
    return f"Warning: deleting a pinned session '{session_id}'."


def bot_chat_refusal() -> str:
    return (
        "This is the bot's canonical Bot Chat — its name is its identity, and renaming it "
        "would orphan the conversation. To start fresh, create a new bot instead."
    )


# -- who holds the file ---------------------------------------------------------------------


@dataclass
class Holder:
    """Another process with the file open: its id, its command line (None when it cannot be
    read) and which of the file's names it holds; ``unknown`` when the scan could not look."""

    pid: int
    argv: list[str] | None = None
    files: set[str] = field(default_factory=set)
    unknown: str = ""


_HERMES_PROGRAMS = frozenset({"hermes", "hermes-agent", "hermes-acp"})
_HERMES_MODULES = frozenset({"acp_adapter", "hermes_cli.main"})
_HERMES_SCRIPTS = ("hermes_cli/main.py", "run_agent.py")


def looks_like_hermes(argv: list[str] | None) -> bool:
    """A command line that runs Hermes (its programs, ``python -m hermes_cli.main``, its
    scripts): a process of it that cannot be inspected counts as a holder."""
    if not argv:
        return False
    program = os.path.basename(argv[0]).lower().removesuffix(".exe")
    if program in _HERMES_PROGRAMS:
        return True
    if not re.fullmatch(r"(python|pypy)[\d.]*", program):
        return False
    rest = iter(argv[1:])
    for arg in rest:
        if arg == "-m":
            return next(rest, "") in _HERMES_MODULES
        if arg.startswith("-m") and len(arg) > 2:
            return arg[2:] in _HERMES_MODULES
        if arg == "-c":
            return False
        if arg.startswith("-"):
            continue
        path = arg.replace("\\", "/").lower()
        return any(path == s or path.endswith("/" + s) for s in _HERMES_SCRIPTS)
    return False


def describe_holder(pid: int, argv: list[str] | None) -> str:
    """``PID 123 (hermes gateway run)``: the program's name, its arguments, 80 characters."""
    if not argv:
        return f"PID {pid} (command line unavailable)"
    who = " ".join(" ".join([os.path.basename(argv[0]), *argv[1:]]).split())[:80]
    return f"PID {pid} ({who})"


HELD_STORE_OVERRIDE = (
    "Run even while another process (the gateway, the Desktop app, the dashboard, cron) holds "
    "the database — rewriting the store under a live writer can leave every agent refusing "
    "turns until all writers are stopped"
)


def held_store_refusal(path: Path, holders: Iterable[Holder], action: str) -> str | None:
    """The refusal of a bulk removal (``action``: "prune", "move to cold storage") while other
    processes hold the file, worded as 0.22's `hermes sessions prune` words its own; None when
    none does."""
    holders = list(holders)
    if not holders:
        return None
    known = sorted((h for h in holders if not h.unknown), key=lambda h: h.pid)
    unknown = [h.unknown for h in holders if h.unknown]
    lines = [f"Refusing to {action}: another process is using {path}."]
    lines += [f"  {describe_holder(h.pid, h.argv)}: {', '.join(sorted(h.files))}" for h in known]
    if unknown:
        lines.append(
            f"  cannot prove the database is quiet (holder scan incomplete: {unknown[0][:120]})"
        )
    lines += [
        "Rewriting the database under a live writer is how every agent ends up refusing turns "
        "with the retired state.db-wal error. Nothing is lost.",
        "Stop them first (`hermes gateway stop`, quit the Desktop app, pause cron), then "
        "run it again.",
        "Override with “run even while another process holds it” (force=1) if you accept the risk.",
    ]
    return "\n".join(lines)


# -- what a file allows -----------------------------------------------------------------------


def changes_line(
    *,
    hermes: str,
    refusal: str | None,
    removal_refusal: str | None,
    read_only: bool = False,
) -> str:
    """One line: which changes this file takes and why (the start-up line, the navigation and
    every page's foot say it)."""
    if read_only:
        return "read-only (--read-only): nothing can be changed"
    if refusal:
        return f"changes: off — {refusal}"
    whose = (
        f"Hermes {hermes.removeprefix('Hermes Agent ')} rules"
        if hermes.startswith("Hermes Agent ")
        else hermes
    )
    if removal_refusal:
        return (
            f"changes: renames, pins and archiving only ({whose}) — delete, prune and cold "
            f"storage are off: {removal_refusal}"
        )
    return f"changes: allowed ({whose})"
