"""FTS5's bm25, worked out again with the statistics of several files taken as one.

SQLite's ``bm25()`` scores a row against the statistics of the one index it reads: the number
of rows ``N``, the average row length ``avgdl`` (tokens) and, for every phrase of the query,
the number of rows holding it ``n``::

    IDF(p)   = ln((N - n + 0.5) / (n + 0.5))          (1e-6 when that is not above 0)
    score(D) = - sum over phrases p of
               IDF(p) * f(p, D) * (k1 + 1) / (f(p, D) + k1 * (1 - b + b * |D| / avgdl))

with k1 = 1.2, b = 0.75, ``f`` the phrase's occurrences in the row and ``|D|`` the row's
length. Two files give two sets of statistics, so their scores do not compare. Logbook asks
each file, for each phrase alone, its ``n`` and each hit's score, and reads the hit's length
and the file's ``N`` and token total from FTS5's own records; from those it recovers ``f``
(an integer: every column weighs 1) and scores every hit again with the sums over all the
files: the score the row would have in one file holding them all.

Only expressions made of phrases (words, quoted phrases, prefixes ``word*``) joined by AND,
OR and parentheses are taken apart; NOT, NEAR, column filters and ``^`` are compared by each
file's own score (``phrases`` returns None)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from webui.hermes.cjk_bigram import varints

K1, B = 1.2, 0.75

_TOKEN = re.compile(r'\s*(?:("(?:[^"]|"")*")|(\()|(\))|([^\s()"]+))')


def phrases(expression: str) -> list[str] | None:
    """The phrases of an FTS5 expression, each as a MATCH expression of its own (None when
    the expression holds something the rescoring does not take apart)."""
    out: list[str] = []
    pos = 0
    text = expression.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            return None
        pos = m.end()
        quoted, _open, _close, word = m.groups()
        if quoted is not None:
            rest = text[pos : pos + 1]
            if rest == "*":  # a quoted prefix phrase
                pos += 1
                quoted += "*"
            out.append(quoted)
        elif word is not None:
            if word in ("AND", "OR"):
                continue
            if word in ("NOT", "NEAR") or word.startswith(("NEAR(", "^", "{")):
                return None
            if any(ch in word for ch in ':+^{}"'):
                return None
            body = word[:-1] if word.endswith("*") else word
            if not body or "*" in body:
                return None
            out.append(word)
    return out or None


def averages(block: bytes | None) -> tuple[int, int] | None:
    """(rows, tokens in every column) from FTS5's averages record: varints, the row count
    then each column's token total."""
    values = _varints(block)
    if not values:
        return None
    return values[0], sum(values[1:])


def doc_length(block: bytes | None) -> int | None:
    """A row's length in tokens from its ``%_docsize`` record (a varint per column)."""
    values = _varints(block)
    return sum(values) if values else None


def _varints(block: bytes | None) -> list[int]:
    if not isinstance(block, (bytes, bytearray)):
        return []
    return varints(bytes(block))


def idf(rows: int, hits: int) -> float:
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def occurrences(score: float, idf_value: float, length: float, avgdl: float) -> float:
    """``f`` from one phrase's score (as a positive number) in its file."""
    k = K1 * (1 - B + B * length / avgdl)
    denominator = idf_value * (K1 + 1.0) - score
    if denominator <= 0:
        return float("inf")
    return score * k / denominator


@dataclass(frozen=True)
class FileStats:
    rows: int
    tokens: int
    hits: dict[str, int]  # phrase -> rows holding it

    @property
    def avgdl(self) -> float:
        return self.tokens / self.rows if self.rows else 1.0


def combined(stats: Iterable[FileStats]) -> FileStats:
    rows = tokens = 0
    hits: dict[str, int] = {}
    for s in stats:
        rows += s.rows
        tokens += s.tokens
        for p, n in s.hits.items():
            hits[p] = hits.get(p, 0) + n
    return FileStats(rows, tokens, hits)


def rescore(
    per_phrase: list[tuple[str, float]], length: int, mine: FileStats, every: FileStats
) -> float:
    """A hit's bm25 (negative: lower ranks first, as SQLite's) with ``every``'s statistics,
    from its per-phrase scores (SQLite's, negative; 0.0 for a phrase not in it) in ``mine``.
    Added up phrase by phrase in the query's order, as FTS5 adds them."""
    total = 0.0
    avgdl = every.avgdl
    for phrase, score in per_phrase:
        own = -score
        if own <= 0.0:
            continue
        f = round(occurrences(own, idf(mine.rows, mine.hits[phrase]), length, mine.avgdl))
        if f <= 0:
            continue
        total += idf(every.rows, every.hits[phrase]) * (
            (f * (K1 + 1.0)) / (f + K1 * (1 - B + B * length / avgdl))
        )
    return -1.0 * total


def bound_ratio(mine: FileStats, every: FileStats, phrase_list: list[str]) -> float:
    """How much larger than its own score a row's score with ``every``'s statistics can be:
    the largest IDF ratio of a phrase, times the ratio of the average lengths (a longer
    average weighs a row's length less)."""
    ratio = max(
        (idf(every.rows, every.hits[p]) / idf(mine.rows, mine.hits[p]) for p in phrase_list),
        default=1.0,
    )
    return ratio * max(1.0, every.avgdl / mine.avgdl if mine.avgdl else 1.0)
