"""The terms Hermes's search plans are made of, shared by every dialect (``webui.hermes.search``
for 0.19 and older, ``webui.hermes.search_newer`` for 0.20/0.22): what counts as CJK, the
FTS5 operators, a query's substring words, the plan itself and what a file says about its
indexes. Pure: no SQL, no Flask."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from webui.hermes.rules import Rules

_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x3000, 0x303F),
    (0x3040, 0x309F),
    (0x30A0, 0x30FF),
    (0xAC00, 0xD7AF),
)
OPERATORS = {"AND", "OR", "NOT"}


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def contains_cjk(text: str) -> bool:
    return any(is_cjk(ch) for ch in text)


def count_cjk(text: str) -> int:
    return sum(1 for ch in text if is_cjk(ch))


def literal_match_expression(text: str) -> str:
    """Every whitespace-separated word of the user's text as an FTS5 phrase: punctuation is
    then only a token boundary, never syntax (``it's`` → ``"it's"``, finds "it's")."""
    phrases = []
    for word in text.split():
        if any(ch.isalnum() for ch in word):
            phrases.append('"' + word.replace('"', '""') + '"')
    return " ".join(phrases)


def words_for_like(text: str) -> list[str]:
    """Substring terms: quoted phrases whole, other words one by one, operators dropped."""
    terms = [m.group(1) for m in re.finditer(r'"([^"]+)"', text)]
    rest = re.sub(r'"[^"]*"', " ", text)
    terms += [w for w in rest.split() if w.upper() not in OPERATORS]
    return [t.strip() for t in terms if t.strip()]


@dataclass
class Plan:
    route: str  # "none", "fts", "trigram", "like"
    searched: str  # what is searched, as shown to the user
    match: str = ""  # FTS5 MATCH expression (fts / trigram)
    terms: list[str] = field(default_factory=list)  # substring terms (like) / highlight terms
    notices: list[str] = field(default_factory=list)
    fallback: str = ""  # literal FTS expression to try if `match` is invalid
    # The fallback's words as typed: a hit must contain each (FTS5 phrases drop punctuation,
    # so "100%" alone would also find "100").
    literal_terms: list[str] = field(default_factory=list)
    # Said when the sanitized query is searched as is; replaced by the fallback's own notice.
    sanitize_note: str = ""
    like_any: bool = False  # substring route: a hit needs ANY term (Hermes 0.19), else ALL
    like_inactive: bool = False  # substring route keeps rewound messages (Hermes 0.19)
    # Hermes 0.19: a trigram query SQLite cannot read is answered by the substring route.
    trigram_error_terms: list[str] = field(default_factory=list)
    dialect: str = "v11"
    typed: str = ""  # the user's own text, for notices that echo it
    # -- Hermes 0.20/0.22 (dialect v26; webui.hermes.search_newer) --
    # Tried in order while nothing is found (the zero-hit retries); each says why it answered.
    retries: list[Plan] = field(default_factory=list)
    answered: str = ""  # the notice given when this plan (a retry) is the one that answered
    # "like_bool" route: groups of (term, excluded) — a hit holds every term of one group.
    groups: list[list[tuple[str, bool]]] = field(default_factory=list)
    sort: str | None = None  # None (relevance), "newest" or "oldest"
    # While Hermes's FTS rebuild is pending, the unindexed ids are scanned for these terms
    # (every one) and their hits follow the index's.
    gap_terms: list[str] = field(default_factory=list)
    # The route that answers when this one cannot be asked (a CJK index Logbook cannot read).
    instead: Plan | None = None
    hermes: str = ""  # whose search this is, for notices ("Hermes 0.22.2")

    @property
    def notice(self) -> str | None:
        return " ".join(n for n in self.notices if n) or None


def _hermes_name(rules: Rules | None) -> str:
    """ "Hermes 0.22.2" from the rules' "Hermes Agent 0.22.2"."""
    name = rules.hermes if rules is not None else "Hermes"
    return name.replace("Hermes Agent", "Hermes")


@dataclass(frozen=True)
class IndexState:
    """What Hermes left in the file about its FTS indexes (``state_meta``): ``cjk`` is the CJK
    bigram index's state ("absent", "ready", "stale": marked stale by a process without its
    tokenizer, "pending": its backfill not done); ``fts_stale``: the base indexes were
    detached after damage (Hermes searches the stored rows then); ``rebuild``: (indexed,
    total) of a pending rebuild of the base indexes, else None."""

    cjk: str = "absent"
    fts_stale: bool = False
    rebuild: tuple[int, int] | None = None


def _normal(text: str) -> str:
    return " ".join(text.split())


def _shown(searched: str) -> str:
    """What was searched, as a reader wrote it: without the quotes the search adds."""
    return _normal(searched.replace('"', " ")) or "nothing"
