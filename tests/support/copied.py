"""Runs of source text the project shares with Hermes's installed code.

Code here is written here (the brief): facts about Hermes carry over, its source text does not.
This finds where a project file and a Hermes file share more than ``MAX_SHARED`` meaningful
lines in a row, whatever the kinds of the two files: Hermes's HTML export page lives inside a
Python string, and a copy of it was an HTML template here.

How a line is read: leading and trailing whitespace gone, inner runs of whitespace as one
space, and ``{{``/``}}`` as ``{``/``}`` (a template copied out of a Python format string, or
into one, reads the same). A line is *meaningful* when it says something of its own: not blank,
not punctuation alone (``)``, ``});``, ``</div>``), not a bare keyword (``else:``, ``try:``,
``{% endif %}``), not an import (every module of both sides starts with the same few), and not
a line of the schema text a real Hermes database holds (``format_facts``: the statements
SQLite keeps in ``sqlite_master`` of the project's own fixtures, which the demo must write
identically for its files to be Hermes's files: a fact of the file format, not source).

How it stays fast: every window of ``MAX_SHARED + 1`` consecutive meaningful lines of every
Hermes file is hashed once into one table (a few hundred thousand entries); each project
file's windows are looked up in it, and consecutive hits are joined into runs. No pairwise
comparison of files."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# More than six lines. Measured on this tree against Hermes 0.19, 0.20 and 0.22 once the
# borrowed export template and a nine-line port in the search rules were rewritten: the longest
# run two pieces written apart share is five lines, and both such runs are facts (the
# messages table's last column names in schema order; an allow-list of HTML tags); runs of
# four: five in all; of three: 48. A copy is longer: the template shared 233, 134 and 48
# lines in a row, the port 9. Seven lines in a row is past any coincidence seen, with room.
MAX_SHARED = 6
KINDS = (".py", ".html", ".htm", ".css", ".js", ".jinja", ".jinja2", ".j2", ".sql", ".toml")
LEFT_OUT = ("static/vendor/", "tests/vendor/", "tests/data/")

_SPACE = re.compile(r"\s+")
_IMPORT = re.compile(r"^(import \S|from \S+ import )")
_BARE_TAG = re.compile(r"^(</?[A-Za-z][\w:-]*\s*/?>\s*)+$")
_BARE_BLOCK = re.compile(r"^(\{%-?\s*(end\w+|else)\s*-?%\}\s*)+$")
_KEYWORDS = {
    "else:",
    "try:",
    "finally:",
    "except:",
    "pass",
    "return",
    "continue",
    "break",
    "raise",
    "yield",
    "}",
    "else {",
    "} else {",
    "return;",
    "break;",
    "continue;",
}


def normal(line: str) -> str:
    return _SPACE.sub(" ", line.strip()).replace("{{", "{").replace("}}", "}")


def meaningful(line: str) -> bool:
    if not any(c.isalnum() for c in line) or line in _KEYWORDS:
        return False
    return not (_IMPORT.match(line) or _BARE_TAG.match(line) or _BARE_BLOCK.match(line))


def format_facts(databases: Iterable[Path]) -> frozenset[str]:
    """Every line of the schema text (``sqlite_master.sql``) of these Hermes databases."""
    facts: set[str] = set()
    for db in databases:
        # immutable: nothing written beside the file (no -wal, no -shm in the project's data)
        conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
        try:
            rows = conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        finally:
            conn.close()
        facts.update(normal(line) for (sql,) in rows for line in sql.splitlines())
    return frozenset(facts)


def lines_of(path: Path, facts: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """(line number, normal text) of each meaningful line; [] for a file that is not text."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    kept = ((n, normal(raw)) for n, raw in enumerate(text.splitlines(), start=1))
    return [(n, line) for n, line in kept if meaningful(line) and line not in facts]


def _windows(lines: list[tuple[int, str]], size: int) -> Iterator[tuple[int, bytes]]:
    digests = [hashlib.blake2b(line.encode(), digest_size=8).digest() for _n, line in lines]
    for start in range(len(lines) - size + 1):
        yield start, hashlib.blake2b(b"".join(digests[start : start + size])).digest()


@dataclass(frozen=True)
class Run:
    ours: str  # path:first-last (line numbers in the file)
    theirs: str
    lines: int  # meaningful lines shared in a row

    def __str__(self) -> str:
        return f"{self.ours} ~ {self.theirs} ({self.lines} meaningful lines)"


class Index:
    """Every window of ``size`` meaningful lines of a set of files, by hash."""

    def __init__(
        self,
        files: Iterable[tuple[str, Path]],
        size: int = MAX_SHARED + 1,
        facts: frozenset[str] = frozenset(),
    ):
        self.size, self.facts = size, facts
        self.files = 0
        self.where: dict[bytes, tuple[str, int, int]] = {}  # hash -> (name, first, last line)
        for name, path in files:
            lines = lines_of(path, facts)
            self.files += 1
            for start, key in _windows(lines, size):
                self.where.setdefault(key, (name, lines[start][0], lines[start + size - 1][0]))

    def shared(self, name: str, path: Path) -> list[Run]:
        """The runs of more than ``size - 1`` meaningful lines ``path`` shares with the index."""
        lines = lines_of(path, self.facts)
        hits = [
            (start, self.where[key])
            for start, key in _windows(lines, self.size)
            if key in self.where
        ]
        runs: list[Run] = []
        i = 0
        while i < len(hits):
            j = i
            while j + 1 < len(hits) and hits[j + 1][0] == hits[j][0] + 1:
                j += 1
            first, last = hits[i][0], hits[j][0] + self.size - 1
            # Each window names where it first stands in Hermes; a run's windows may stand in
            # several places, so the run is named by where its first window stands.
            theirs_name, theirs_first, _ = hits[i][1]
            runs.append(
                Run(
                    f"{name}:{lines[first][0]}-{lines[last][0]}",
                    f"{theirs_name}:{theirs_first}",
                    last - first + 1,
                )
            )
            i = j + 1
        return runs


def project_files(root: Path) -> list[tuple[str, Path]]:
    """The project's tracked files of the kinds read (git's list: what a clone holds)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.decode()
    names = [n for n in listed.split("\0") if n.endswith(KINDS) and not n.startswith(LEFT_OUT)]
    return [(n, root / n) for n in sorted(names) if (root / n).is_file()]


def installed_files(venv: Path, distribution: str) -> list[tuple[str, Path]]:
    """The files of the kinds read that ``distribution`` (a dist-info name's start, such as
    ``hermes_agent-``) installed into ``venv``, from its RECORD."""
    found = []
    for site in sorted(venv.glob("lib/python3*/site-packages")):
        for info in sorted(site.glob(f"{distribution}*.dist-info")):
            for row in (info / "RECORD").read_text(encoding="utf-8").splitlines():
                name = row.split(",")[0]
                path = (site / name).resolve()
                if name.endswith(KINDS) and path.is_file():
                    found.append((f"{info.name.split('.dist-info')[0]}/{name}", path))
    return found
