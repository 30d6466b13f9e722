"""File paths as a tool call names them: resolved against the folder the call ran in when it
is known, shown relative to their workspace. Pure string work (posix paths, as Hermes's
machines use): nothing here looks at a disk."""

from __future__ import annotations

import posixpath

# Paths that are not files anyone edits: writing to them changes nothing worth a history.
NOT_FILES = ("/dev/", "/proc/", "/sys/")


def resolve(cwd: str | None, path: str | None) -> str | None:
    """``path`` made absolute against ``cwd`` (when it is relative and ``cwd`` is known),
    normalised (``a/./b/../c`` → ``a/c``). ``~`` stays as written: whose home it is, the
    database does not say. None for nothing, or for a device or /proc path."""
    if not path or "\x00" in path:
        return None
    if not (path.startswith("/") or path == "~" or path.startswith("~/")) and cwd:
        path = posixpath.join(cwd, path)
    out = posixpath.normpath(path)
    if out.startswith("//"):
        out = "/" + out.lstrip("/")
    if out in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty") or out.startswith(NOT_FILES):
        return None
    return out


def is_absolute(path: str) -> bool:
    return path.startswith("/") or path == "~" or path.startswith("~/")


def relative(path: str, workspace: str | None) -> str:
    """``path`` relative to ``workspace`` when it lies inside it, else as it is."""
    if not workspace or not is_absolute(path):
        return path
    ws = posixpath.normpath(workspace)
    if path == ws:
        return "."
    prefix = ws if ws.endswith("/") else ws + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def inside(path: str, workspace: str | None) -> bool:
    """Does ``path`` lie in ``workspace`` (or is it the folder itself)?"""
    if not workspace:
        return False
    return path == posixpath.normpath(workspace) or relative(path, workspace) != path
