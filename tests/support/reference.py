"""Tables from tests/data/reference/hermes-state-behaviour.md (a copy of the Hermes reference), read as test data so the tests
check every case the reference lists (and notice if it grows)."""

from __future__ import annotations

import ast
import re

from support import REFERENCE

DOC = REFERENCE / "hermes-state-behaviour.md"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _literal(cell: str):
    cell = cell.strip()
    if cell.startswith("`") and cell.endswith("`"):
        cell = cell[1:-1]
    return ast.literal_eval(cell)


def _section(title_prefix: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(title_prefix)
    nxt = text.find("\n## ", start + 1)
    return text[start : nxt if nxt > 0 else None].splitlines()


def sanitizer_cases() -> list[tuple[int, str, str, str]]:
    """(row, input, v11 output, v8 output)."""
    cases = []
    for line in _section("## 2."):
        cells = _cells(line)
        if len(cells) >= 7 and cells[0].isdigit():
            inp, v11 = _literal(cells[1]), _literal(cells[2])
            v8 = v11 if cells[3] == "=" else _literal(cells[3])
            cases.append((int(cells[0]), inp, v11, v8))
    return cases


def title_cases() -> list[tuple[int, str | None, object]]:
    """(row, input, result or ValueError message)."""
    cases = []
    for line in _section("## 4."):
        cells = _cells(line)
        if len(cells) == 3 and cells[0].isdigit():
            out = cells[2]
            inp = _expand(cells[1], output=False)
            if out.startswith("raises"):
                expected: object = ValueError(re.sub(r"^raises `ValueError: (.*)`$", r"\1", out))
            else:
                expected = _expand(out, output=True)
            cases.append((int(cells[0]), inp, expected))
    return cases


# The doc elides long strings as `'AAAA…'…(len N)`. Rebuilt here with the stated lengths: a
# head of spaces means padding on both sides; where the cleaned output is shorter than the
# input's letters allow, the difference is invisible characters that the cleaning removes.
_INVISIBLE_PAD = "\u200b\u200d\ufeff"


def _expand(cell: str, *, output: bool):
    m = re.fullmatch(r"`(.+?)…\(len (\d+)\)`", cell)
    if not m:
        return _literal(cell)
    head, length = (
        _literal(m.group(1)[:-1] if m.group(1).endswith("…") else m.group(1)),
        int(m.group(2)),
    )
    letter = head.strip()[0]
    if output:
        return letter * length
    if head.startswith(" "):
        pad = len(head) - len(head.lstrip())
        return " " * pad + letter * (length - 2 * pad) + " " * pad
    return letter * length


def rebuild_long_title_inputs(cases):
    """Rows whose output says fewer letters survive than the input holds: replace trailing
    letters of the input by invisible characters, keeping its stated length."""
    rebuilt = []
    for row, inp, expected in cases:
        if isinstance(inp, str) and len(inp) > 60 and not inp.startswith(" "):
            letter = inp[0]
            if isinstance(expected, str):
                invisible = len(inp) - len(expected)
            else:  # ValueError("Title too long (N chars, …)")
                invisible = len(inp) - int(re.search(r"\((\d+) chars", str(expected)).group(1))
            if invisible > 0:
                inp = letter * (len(inp) - invisible) + (_INVISIBLE_PAD * 10)[:invisible]
        rebuilt.append((row, inp, expected))
    return rebuilt


def resolve_title_cases() -> tuple[list[tuple[str, str]], list[tuple[str, str | None]]]:
    """The probe sessions (id, title) in started_at order, and resolve_session_by_title's
    results (title → session id or None), from §4."""
    lines = _section("## 4.")
    probe, results = [], []
    mode = None
    for line in lines:
        if line.startswith("| session id"):
            mode = "probe"
            continue
        if line.startswith("| `resolve_session_by_title"):
            mode = "resolve"
            continue
        if line.startswith("| `get_next_title"):
            mode = None
            continue
        cells = _cells(line)
        if mode and len(cells) == 2 and cells[0].startswith("`"):
            a, b = _literal(cells[0]), _literal(cells[1])
            (probe if mode == "probe" else results).append((a, b))
    return probe, results
