"""Hermes 0.22's CJK bigram index, read without its tokenizer.

Hermes 0.22 keeps a third FTS5 index, ``messages_fts_cjk``, when its loadable ``cjk_unicode61``
tokenizer is present (docs/hermes-generations.md §1): unicode61 splits the text into words,
and every maximal run of CJK characters inside a word becomes overlapping two-character
tokens (a run of one character stays one token); everything else passes through as unicode61
gave it. A query's quoted words are phrases of those tokens, so ``"数据库"`` finds the bigrams
数据 and 据库 side by side: exact substrings down to two characters, ranked by bm25.

Logbook cannot load that tokenizer (it is a C extension most Pythons may not load), and SQLite
refuses to read a table whose tokenizer it does not know. But the index's answer depends only
on the documents it holds (the rows of its source view), the query, and its statistics, which
its shadow tables keep in plain rows: the number of documents and their token totals (the
"averages" record) and each document's size (``_docsize``). So this module tokenizes as the
index does, matches a query's phrases as FTS5 does (NOT binds tighter than AND, AND tighter
than OR), and scores with FTS5's bm25 (k1 = 1.2, b = 0.75, every column weighted 1): the same
hits in the same order. The SQL that reads the documents is webui.db.search.cjk.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from webui.hermes.search import is_cjk

K1 = 1.2
B = 0.75


# -- the tokenizer ---------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _fold(ch: str) -> str | None:
    """The character as unicode61 keeps it in a token (lower case, a Latin letter's single
    diacritic removed), or None when unicode61 separates words at it (anything but letters,
    numbers and private-use characters)."""
    category = unicodedata.category(ch)
    if category[0] not in "LN" and category != "Co":
        return None
    low = ch.lower()
    if len(low) != 1:
        low = ch
    if ord(low) > 0x7F:
        parts = unicodedata.normalize("NFD", low)
        if len(parts) == 2 and parts[0].isascii() and unicodedata.category(parts[1]) == "Mn":
            low = parts[0]
    return low


def words(text: str) -> list[str]:
    """unicode61's words of ``text``, folded."""
    out: list[str] = []
    word: list[str] = []
    for ch in text:
        kept = _fold(ch)
        if kept is None:
            if word:
                out.append("".join(word))
                word = []
        else:
            word.append(kept)
    if word:
        out.append("".join(word))
    return out


def _split(word: str) -> list[str]:
    """One unicode61 word as the bigram tokenizer emits it."""
    if not any(is_cjk(ch) for ch in word):
        return [word]
    out: list[str] = []
    i = 0
    while i < len(word):
        j = i
        cjk = is_cjk(word[i])
        while j < len(word) and is_cjk(word[j]) == cjk:
            j += 1
        run = word[i:j]
        if not cjk or len(run) == 1:
            out.append(run)
        else:
            out.extend(run[k : k + 2] for k in range(len(run) - 1))
        i = j
    return out


def tokens(text: str | None) -> list[str]:
    """The tokens ``cjk_unicode61`` makes of ``text``, in order."""
    if not text:
        return []
    return [t for w in words(text) for t in _split(w)]


# -- the query -------------------------------------------------------------------------------


@dataclass
class Query:
    """A parsed FTS5 expression over the bigram index: its phrases (as token lists) and the
    tree that combines them (``("p", i)``, ``("and"|"or"|"not", left, right)``; None: an
    expression that matches nothing)."""

    phrases: list[list[str]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # each phrase as written
    tree: tuple | None = None


_ITEM = re.compile(r'"((?:[^"]|"")*)"|(\S+)')
_OPERATORS = ("AND", "OR", "NOT")


class QueryError(ValueError):
    """An expression this reading cannot parse (FTS5 would refuse it too)."""


def parse(expression: str) -> Query:
    """Parse the expressions Hermes builds for this index: quoted words and the operators
    AND, OR and NOT between them (a bare word is a phrase too). Precedence as FTS5's grammar:
    a run of phrases side by side binds tightest, then NOT, then AND, then OR. A phrase with
    no token (only punctuation) drops out, as in FTS5."""
    q = Query()
    items: list[object] = []
    for m in _ITEM.finditer(expression):
        if m.group(2) is not None and m.group(2) in _OPERATORS:
            items.append(m.group(2))
            continue
        text = m.group(1).replace('""', '"') if m.group(1) is not None else m.group(2)
        toks = tokens(text)
        if toks:
            q.phrases.append(toks)
            q.texts.append(text)
            items.append(("p", len(q.phrases) - 1))
        else:
            items.append(None)  # an empty phrase: no node
    pos = 0

    def peek() -> object:
        return items[pos] if pos < len(items) else "END"

    def take() -> object:
        nonlocal pos
        pos += 1
        return items[pos - 1]

    def is_operand(item: object) -> bool:
        return item is None or isinstance(item, tuple)

    def run() -> tuple | None:
        if not is_operand(peek()):
            raise QueryError(f"expected a word, found {peek()!r}")
        node = take()
        while is_operand(peek()):
            node = _join("and", node, take())
        return node  # type: ignore[return-value]

    def level(op: str, below) -> tuple | None:
        node = below()
        while peek() == op.upper():
            take()
            node = _join(op, node, below())
        return node

    def nots() -> tuple | None:
        return level("not", run)

    def ands() -> tuple | None:
        return level("and", nots)

    q.tree = level("or", ands)
    if pos != len(items):
        raise QueryError(f"unexpected {peek()!r}")
    return q


def _join(op: str, left: tuple | None, right: tuple | None) -> tuple | None:
    if left is None:
        return None if op == "not" else right
    if right is None:
        return left
    return (op, left, right)


# -- one document ----------------------------------------------------------------------------


def instances(phrase: list[str], columns: list[list[str]]) -> int:
    """How many times the phrase's tokens stand side by side in the document's columns."""
    n = len(phrase)
    return sum(
        1
        for toks in columns
        for i in range(len(toks) - n + 1)
        if toks[i] == phrase[0] and toks[i : i + n] == phrase
    )


def matches(tree: tuple | None, present: list[bool]) -> bool:
    """Whether a document with these phrases present satisfies the expression."""
    if tree is None:
        return False
    op = tree[0]
    if op == "p":
        return present[tree[1]]
    left, right = matches(tree[1], present), matches(tree[2], present)
    if op == "and":
        return left and right
    if op == "or":
        return left or right
    return left and not right


# -- bm25 ------------------------------------------------------------------------------------


def idf(rows: int, hits: int) -> float:
    """FTS5's inverse document frequency of a phrase found in ``hits`` of ``rows`` rows."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def bm25(freqs: list[int], idfs: list[float], size: int, average: float) -> float:
    """FTS5's ``bm25()`` of one row (negative: smaller is better), every column weighted 1:
    ``freqs`` each phrase's instances in the row, ``size`` the row's tokens in all columns,
    ``average`` the index's tokens per row."""
    score = 0.0
    for f, w in zip(freqs, idfs, strict=True):
        score += w * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * size / average)))
    return -1.0 * score


# -- the shadow tables' records --------------------------------------------------------------


def varints(blob: bytes) -> list[int]:
    """SQLite's variable-length integers, one after another (FTS5 writes its records so)."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        value = 0
        for k in range(9):
            if i >= len(blob):  # a record cut short: the whole values before it
                return out
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def averages(blob: bytes | None) -> tuple[int, int]:
    """(rows, tokens in every column) from the index's averages record (``_data`` id 1)."""
    values = varints(blob or b"")
    if not values:
        return 0, 0
    return values[0], sum(values[1:])


def pieces(text: str) -> list[str]:
    """Substrings every document holding this phrase holds, for a cheap prefilter: its CJK
    runs of two characters or more and its plain ASCII letters and digits (a phrase folded from
    other letters is not prefiltered: LIKE folds ASCII only)."""
    out: list[str] = []
    for word in re.split(r"\s+", text):
        i = 0
        while i < len(word):
            j = i
            kind = _kind(word[i])
            while j < len(word) and _kind(word[j]) == kind:
                j += 1
            if kind == "cjk" or kind == "ascii":
                out.append(word[i:j])
            i = j
    return [p for p in out if p]


def _kind(ch: str) -> str:
    if is_cjk(ch):
        return "cjk" if _fold(ch) is not None else "sep"
    if ch.isascii() and ch.isalnum():
        return "ascii"
    return "other"
