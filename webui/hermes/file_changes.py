"""Every file a tool call wrote or changed, from its name and arguments alone.

The shapes are Hermes's own (its tool schemas, 0.19.0 to 0.22.2):

* ``write_file`` ``{path, content}``: the file written whole — its content is in the call;
* ``patch`` ``{mode: "replace", path, old_string, new_string, replace_all}``: one edit in
  place (kept as a diff of the two strings);
* ``patch`` ``{mode: "patch", patch}``: a V4A patch (``*** Begin Patch`` … ``*** End
  Patch``) naming files with ``*** Update File: p`` (changed: the hunk kept), ``*** Add File:
  p`` (created: its content is the hunk's ``+`` lines joined by newlines, as Hermes writes it),
  ``*** Delete File: p`` and ``*** Move File: a -> b``;
* ``terminal`` ``{command, workdir}``: the shell forms of :mod:`webui.hermes.shell_edits`,
  relative paths read against ``workdir``, else the session's folder.

A relative path is resolved against the folder the call ran in when the database says it
(the terminal's ``workdir``, the session's ``cwd``); otherwise it stays as written. Nothing is
read from or written to any disk: the content shown for a version is the call's own text.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from webui.hermes.paths import resolve
from webui.hermes.shell_edits import shell_edits

FILE_TOOLS = ("write_file", "patch", "terminal")
# What each action means, in words (the page's legend).
ACTIONS = {
    "write": "written whole",
    "append": "appended to",
    "edit": "changed in place",
    "delete": "removed",
    "move_in": "moved here",
    "move_out": "moved away",
    "copy_in": "copied here",
}
# Actions after which the call holds the file's whole content (a version one can recover).
FULL = {"write"}

_V4A_OP = re.compile(r"\*\*\*\s*(Update|Add|Delete)\s+File:\s*(.+)")
_V4A_MOVE = re.compile(r"\*\*\*\s*Move\s+File:\s*(.+?)\s*->\s*(.+)")


@dataclass(frozen=True)
class FileChange:
    path: str  # resolved against the call's folder when known, else as written
    action: str  # a key of ACTIONS
    via: str  # the tool, or the shell form ("write_file", "patch", "V4A patch", "sed -i", ">"…)
    content: str | None = None  # the whole new content (a full write), when the call has it
    patch: str | None = None  # what was applied: a diff, the V4A hunk, a sed script, appended text
    other: str | None = None  # moves and copies: the path at the other end

    @property
    def full(self) -> bool:
        return self.action in FULL and self.content is not None


def arguments(raw: Any) -> dict | None:
    """A call's arguments as Hermes receives them: a JSON object, or the JSON text of one."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _replace_diff(old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), "before", "after", n=2
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def v4a_changes(patch: str, cwd: str | None) -> list[FileChange]:
    """The files a V4A patch names, in order (Hermes's reading of the format: markers
    anywhere on a line, ``*** Begin/End Patch`` bounding it when present)."""
    lines = patch.split("\n")
    start = next(
        (i for i, ln in enumerate(lines) if "*** Begin Patch" in ln or "***Begin Patch" in ln), -1
    )
    end = next(
        (
            i
            for i, ln in enumerate(lines)
            if i > start and ("*** End Patch" in ln or "***End Patch" in ln)
        ),
        len(lines),
    )
    out: list[FileChange] = []
    current: dict | None = None

    def flush() -> None:
        if current is None:
            return
        path = resolve(cwd, current["path"])
        if path is None:
            return
        body = current["lines"]
        if current["op"] == "Add":
            added = [ln[1:] for ln in body if ln.startswith("+")]
            out.append(FileChange(path, "write", "V4A patch", content="\n".join(added)))
        else:
            out.append(FileChange(path, "edit", "V4A patch", patch="\n".join(body) + "\n"))

    for line in lines[start + 1 : end]:
        op, move = _V4A_OP.match(line), _V4A_MOVE.match(line)
        if move:
            flush()
            current = None
            src, dst = resolve(cwd, move.group(1).strip()), resolve(cwd, move.group(2).strip())
            if dst is not None:
                out.append(FileChange(dst, "move_in", "V4A patch", other=src))
            if src is not None:
                out.append(FileChange(src, "move_out", "V4A patch", other=dst))
        elif op:
            flush()
            kind, path = op.group(1), op.group(2).strip()
            if kind == "Delete":
                current = None
                resolved = resolve(cwd, path)
                if resolved is not None:
                    out.append(FileChange(resolved, "delete", "V4A patch"))
            else:
                current = {"op": kind, "path": path, "lines": []}
        elif current is not None and line:
            current["lines"].append(line)
    flush()
    return out


def changes(tool: str | None, raw_args: Any, cwd: str | None = None) -> list[FileChange]:
    """The files one tool call wrote or changed, in order. ``cwd``: the session's folder."""
    if tool not in FILE_TOOLS:
        return []
    args = arguments(raw_args)
    if args is None:
        return []
    if tool == "write_file":
        path = resolve(cwd, args.get("path")) if isinstance(args.get("path"), str) else None
        if path is None:
            return []
        content = args.get("content")
        return [
            FileChange(
                path, "write", "write_file", content=content if isinstance(content, str) else None
            )
        ]
    if tool == "patch":
        mode = args.get("mode") or "replace"
        if mode == "patch":
            text = args.get("patch")
            return v4a_changes(text, cwd) if isinstance(text, str) and text else []
        path = resolve(cwd, args.get("path")) if isinstance(args.get("path"), str) else None
        if path is None:
            return []
        old, new = args.get("old_string"), args.get("new_string")
        diff = _replace_diff(old, new) if isinstance(old, str) and isinstance(new, str) else None
        if diff is not None and args.get("replace_all") is True:
            diff = "(every occurrence)\n" + diff
        return [FileChange(path, "edit", "patch", patch=diff)]
    workdir = args.get("workdir")
    folder = resolve(cwd, workdir) if isinstance(workdir, str) and workdir else cwd
    out = []
    for e in shell_edits(args.get("command"), folder):
        patch = e.detail if e.action == "edit" else (e.content if e.action == "append" else None)
        content = e.content if e.action == "write" else None
        out.append(
            FileChange(e.path, e.action, e.form, content=content, patch=patch, other=e.other)
        )
    return out


def unified_diff(a: str, b: str, a_name: str, b_name: str, max_lines: int = 20_000) -> str:
    """The difference between two full versions (difflib), at most ``max_lines`` lines."""
    lines = []
    for i, line in enumerate(
        difflib.unified_diff(
            a.splitlines(keepends=True), b.splitlines(keepends=True), a_name, b_name
        )
    ):
        if i >= max_lines:
            lines.append(f"… (the difference goes on past {max_lines:,} lines)\n")
            break
        lines.append(line if line.endswith("\n") else line + "\n")
    return "".join(lines)
