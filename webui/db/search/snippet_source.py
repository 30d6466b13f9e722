"""What text a search snippet is cut from, so that making it has a bounded cost.

FTS5's ``snippet()`` scores each fragment of its row against every match the row holds, and
does it inside one SQLite step: no progress handler is called and no interrupt is seen until
it returns. Its time grows with the square of the row's matches: a 1 MB tool result holding the
searched word 100,000 times took 43 s, a 10 MB one more than five minutes, outside every
deadline (issue 49, N-8). Large tool outputs (logs, JSON dumps, fetched pages) look like that.

So a row is given to ``snippet()`` whole only when its matches are few and it is not large
(then its snippet is exactly FTS5's on the real table); any other row is cut into short
pieces first (``pieces``), and the snippet is made from the first piece that matches the
query (webui.db.search.snippets). Whether a row's matches may be many is told from the query's words
counted in the row's text, folded as FTS5's default tokenizer folds (case, diacritics): the
count errs upwards (a word inside a longer one counts), so a row is cut whenever it might be
costly. The pure text work lives here; the SQLite work in webui.db.search.snippets.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

# A row is snippeted whole up to this size and this many (estimated) matches: measured, a
# 1 MB row with 1,000 matches takes 16 ms, 256 KB with 500 about 4 ms; 20,000 matches 2 s.
WHOLE_CHARS = 256 * 1024
WHOLE_MATCHES = 500
# The pieces a larger row is cut into: short enough that one packed with matches (500 words
# of one letter) costs a few milliseconds, long enough for a snippet's 40 tokens around a
# phrase. Pieces overlap, so a phrase or a NEAR group across a boundary is still found.
PIECE_CHARS = 1_000
PIECE_OVERLAP = 200
# A boundary is moved back to a space or punctuation within this many characters, so that a
# word is never cut in two (a piece starting "fish" would match a search for fish inside
# "zebrafish").
BOUNDARY_SLACK = 100
# How much of a row is cut into pieces and searched, at most (the rest is not looked at).
SCAN_CHARS = 16 * 1024 * 1024
WORDS_MAX = 16

_OPERATORS = {"AND", "OR", "NOT", "NEAR"}
# FTS5 query syntax: a "string" (with "" inside), or a bareword (anything else but spaces and
# the syntax characters).
_TOKEN = re.compile(r'"((?:[^"]|"")*)"|([^\s"(){}:,^+*]+)(\s*:)?')
_WORD = re.compile(r"\w+")
_COMBINING = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_BREAK = re.compile(r"[\W]")


def query_words(expression: str) -> list[str]:
    """The words of an FTS5 query, folded: barewords and the words of its strings, without
    its operators, column names and NEAR distances. What a row's matches are counted by."""
    words: list[str] = []
    for m in _TOKEN.finditer(expression or ""):
        quoted, bare, colon = m.groups()
        if colon or bare in _OPERATORS:
            continue  # a column filter ("content:"), or an operator
        text = quoted.replace('""', '"') if quoted is not None else bare
        for w in _WORD.findall(fold(text)):
            if w not in words:
                words.append(w)
    return words[:WORDS_MAX]


def fold(text: str) -> str:
    """Text as the default tokenizer compares it, or merged further (never less): lower
    case, compatibility forms, and no diacritics."""
    text = text.casefold()
    if text.isascii():
        return text
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text))


def estimated_matches(text: str, words: list[str], enough: int = WHOLE_MATCHES + 1) -> int:
    """How many times the words appear in the text, counted generously (``enough`` ends the
    count early). With no words to count by, as many as ``enough``."""
    if not words:
        return enough
    folded = fold(text)
    total = 0
    for w in words:
        total += folded.count(w)
        if total >= enough:
            return total
    return total


def whole(text: str, words: list[str]) -> bool:
    """Is this row cheap enough for snippet() as it is?"""
    return len(text) <= WHOLE_CHARS and estimated_matches(text, words) <= WHOLE_MATCHES


def pieces(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(offset, piece) of the text from ``start``: PIECE_CHARS long, overlapping by
    PIECE_OVERLAP, each boundary moved back to a break between words where one is near. Up
    to SCAN_CHARS of the text."""
    end_of_scan = min(len(text), start + SCAN_CHARS)
    at = start
    while at < end_of_scan:
        end = min(len(text), at + PIECE_CHARS)
        if end < len(text):
            end = _break_before(text, end, at + PIECE_OVERLAP + 1)
        yield at, text[at:end]
        if end >= len(text):
            return
        at = _break_before(text, end - PIECE_OVERLAP, at + 1)


def _break_before(text: str, at: int, floor: int) -> int:
    """The position of a break between words at or shortly before ``at`` (not below
    ``floor``), else ``at`` itself."""
    low = max(floor, at - BOUNDARY_SLACK)
    for i in range(at, low - 1, -1):
        if _BREAK.match(text, i):
            return i
    return at


def literal_snippet(text: str, words: list[str], marks: tuple[str, str], tokens: int) -> str:
    """A snippet made without FTS5, for a row no piece of which matched (or when no mirror can
    be made): about ``tokens`` words around the first place one of the query's words appears,
    each appearance marked. Bounded: only a window of the text is looked at."""
    window = tokens * 12
    low = text[:SCAN_CHARS].casefold() if not text.isascii() else text[:SCAN_CHARS].lower()
    if len(low) != len(text[:SCAN_CHARS]):  # folding changed lengths: positions unusable
        low = text[:SCAN_CHARS]
    found = [i for i in (low.find(w) for w in words) if i >= 0]
    first = min(found, default=0)
    start = max(0, first - window // 3)
    start = _break_before(text, start, max(0, start - BOUNDARY_SLACK)) if start else 0
    piece = text[start : start + window]
    piece_low = low[start : start + window]
    out: list[str] = []
    i = 0
    pattern = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True) if w)
    if pattern:
        for m in re.finditer(pattern, piece_low):
            out.append(piece[i : m.start()] + marks[0] + piece[m.start() : m.end()] + marks[1])
            i = m.end()
    out.append(piece[i:])
    body = " ".join("".join(out).split())
    return ("..." if start else "") + body + ("..." if start + window < len(text) else "")
