"""Which other processes hold a database open: every process's descriptors read from
``/proc/<pid>/fd`` (Linux), matched to the file, its ``-wal`` and its ``-shm`` by device and
inode (a link to one of them counts: it is the same file), or by name for a deleted one on the
same device. This process is never counted (Logbook's own connections are not "another
process"). A process whose descriptors cannot be read counts when its command line runs
Hermes: nobody can prove it does not hold the file. Hermes 0.22 makes the same scan before
``hermes sessions prune`` (``hermes_state_holders``); Logbook asks it before a prune or a move
to cold storage of a 0.22 file (webui.hermes.rules ``bulk_refuses_held_store``)."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

from webui.hermes.changes import Holder, looks_like_hermes

PROC = Path("/proc")


def _argv(pid: int) -> list[str] | None:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    parts = raw.decode("utf-8", "replace").split("\x00")
    if parts and parts[-1] == "":
        parts.pop()
    return parts or None


def _family(db: Path) -> list[str]:
    base = os.path.realpath(db)
    return [base, base + "-wal", base + "-shm"]


def foreign_holders(db: Path) -> list[Holder]:
    """The other processes holding ``db`` (or its -wal/-shm), each with the names it holds;
    a scan that could not complete is reported as a holder with ``unknown`` set (the file is
    then not proven quiet)."""
    if not sys.platform.startswith("linux") or not PROC.is_dir():
        return [Holder(-1, unknown="no /proc to scan on this system")]
    names = _family(db)
    ids: dict[tuple[int, int], str] = {}
    db_dev = None
    for name in names:
        try:
            st = os.stat(name)
        except OSError:
            continue
        ids[(st.st_dev, st.st_ino)] = os.path.basename(name)
        if name == names[0]:
            db_dev = st.st_dev
    by_name = {os.path.normcase(n): os.path.basename(n) for n in names}
    own = os.getpid()
    found: dict[int, Holder] = {}
    try:
        entries = os.listdir(PROC)
    except OSError as exc:
        return [Holder(-1, unknown=f"open-file scan failed: {exc}")]
    for entry in entries:
        if not entry.isdigit() or int(entry) == own:
            continue
        pid = int(entry)
        fd_dir = PROC / entry / "fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            argv = _argv(pid)
            if looks_like_hermes(argv):
                found[pid] = Holder(pid, argv, unknown=f"uninspectable holder: {' '.join(argv)}")
            continue
        for fd in fds:
            link = fd_dir / fd
            try:
                target = os.readlink(link)
                st = os.stat(link)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ESRCH):
                    continue  # closed, or the process ended, as we looked
                argv = _argv(pid)
                if looks_like_hermes(argv):
                    found[pid] = Holder(pid, argv, unknown=f"uninspectable descriptor: {link}")
                continue
            name = ids.get((st.st_dev, st.st_ino))
            if name is None and target.endswith(" (deleted)") and st.st_dev == db_dev:
                name = by_name.get(os.path.normcase(target.removesuffix(" (deleted)")))
            if name is not None:
                holder = found.setdefault(pid, Holder(pid, _argv(pid)))
                holder.files.add(name)
    return list(found.values())
