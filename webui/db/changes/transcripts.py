"""A session's transcript files, named exactly as Hermes names them: ``<id>.json``,
``<id>.jsonl`` and ``request_dump_<id>_*.json`` in a ``sessions/`` folder (0.22: the legacy
snapshot ``session_<id>.json`` too). Removed with a
session (as Hermes 0.19's delete and prune do), carried beside the archive file by a move to
cold storage and back by a move back.

Names are matched, never globbed, and only for ids that are plain file names (no separator,
no ``..``, no NUL): a session id is text from the database, and a glob or a path built from it
could reach any file on the disk. A folder that is a link is not used; only regular files are
taken (a link found there is removed by a delete, as Hermes removes it, but never carried)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def plain_id(session_id: str) -> bool:
    return bool(session_id) and not (
        "/" in session_id or "\\" in session_id or "\x00" in session_id or session_id in (".", "..")
    )


def is_theirs(name: str, session_id: str, snapshot: bool = False) -> bool:
    """Is ``name`` one of the files Hermes writes for ``session_id``? ``snapshot``: the legacy
    ``session_<id>.json`` counts too (0.22 removes it with the session)."""
    if name in (f"{session_id}.json", f"{session_id}.jsonl"):
        return True
    if snapshot and name == f"session_{session_id}.json":
        return True
    dump = f"request_dump_{session_id}_"
    return name.startswith(dump) and name.endswith(".json") and len(name) >= len(dump) + 5


def files(
    folder: Path, session_id: str, *, links: bool = False, snapshot: bool = False
) -> list[Path]:
    """The session's transcript files in ``folder`` (regular files; links too when
    ``links``). Nothing for an id that is not a plain file name or a folder that is a link."""
    if not plain_id(session_id) or folder.is_symlink() or not folder.is_dir():
        return []
    out = []
    try:
        for entry in os.scandir(folder):
            if not is_theirs(entry.name, session_id, snapshot):
                continue
            if entry.is_file(follow_symlinks=False) or (links and entry.is_symlink()):
                out.append(folder / entry.name)
    except OSError:
        return []
    return sorted(out)


def home_files(live_path: Path, session_id: str, snapshot: bool = False) -> list[Path]:
    """In the Hermes home of ``live_path`` (its ``sessions/`` folder, which must be inside the
    home): what Hermes removes with the session, links included."""
    home = live_path.parent
    folder = home / "sessions"
    try:
        if folder.is_symlink() or folder.resolve().parent != home.resolve():
            return []
    except OSError:
        return []
    return files(folder, session_id, links=True, snapshot=snapshot)


def remove(paths: list[Path]) -> int:
    """A link is removed, never what it points to; errors are skipped, as Hermes skips them."""
    n = 0
    for path in paths:
        try:
            path.unlink()
            n += 1
        except OSError:
            pass
    return n


def copy_into(paths: list[Path], folder: Path) -> int:
    """Copies of ``paths`` in ``folder`` (made if need be), each whole before it has its name."""
    n = 0
    for path in paths:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{path.name}.part"
        shutil.copy2(path, tmp)
        os.replace(tmp, folder / path.name)
        n += 1
    return n


def move_into(paths: list[Path], folder: Path) -> tuple[int, list[str]]:
    """``paths`` moved into ``folder``, never over a file already there (that one is newer:
    Hermes wrote it since; the moved one is left where it was, and named)."""
    moved, left = 0, []
    for path in paths:
        folder.mkdir(parents=True, exist_ok=True)
        dest = folder / path.name
        try:
            os.link(path, dest)  # fails if dest exists: never clobbered
        except FileExistsError:
            left.append(path.name)
            continue
        except OSError:  # another file system: copied under a temporary name, then linked
            tmp = folder / f".{path.name}.part"
            shutil.copy2(path, tmp)
            try:
                os.link(tmp, dest)
            except FileExistsError:
                left.append(path.name)
                continue
            finally:
                tmp.unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        moved += 1
    return moved, left
