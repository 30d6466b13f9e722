"""Search's limits and shapes, shared by the routes: page size, ranking and paging caps,
snippet sizes, the substring route's windows, the marks put around matches, and the filters
and result of one search."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from webui import keep

PAGE_SIZE = 50
# Deepest result reachable by paging: every hit up to the ranking cap (Hermes pages without
# limit; past this, narrow the search).
MAX_RESULTS = 20_000
RANK_CAP = 20_000  # above this many matches, newest first instead of bm25
# Ranked pages up to this deep are ranked on the FTS index first (see _ranked_on_index).
OVERFETCH_MAX = 1_000
OVERFETCH_HITS = 1_000_000  # the index's hits counted to size the candidates, at most
OVERFETCH_CANDIDATES = 5_000  # candidates checked against the filters, at most
# Private-use characters mark matches inside snippets; literal ">>>"/"<<<" in messages (Python
# prompts, heredocs) are then never mistaken for markers.
MARK_START, MARK_END = "\ue000", "\ue001"
SNIPPET_TOKENS = 40
# Snippets of a prefix query come from one range scan when the range holds at most this many
# matches (about 9 µs each on a million messages, against ~2.4 ms per id for "rowid IN").
RANGE_SNIPPETS = 2_000
# A substring search (no index can answer it) first looks at the newest messages only: from a
# floor at a multiple of RECENT_STEP at least RECENT_WINDOW below the newest id. When they hold
# a whole first page, and (for Hermes 0.19's timestamp order) no older message is newer than
# that page's last hit, that page is the answer: ~30 ms instead of a scan of every message
# (~0.7 s on a million). The older messages' newest timestamp is read once per floor.
RECENT_WINDOW = 20_000
RECENT_STEP = 20_000
# Only for a word or two: each term is a LIKE per row, and these run beside the pages without
# a search slot, so their cost must stay that of a page (a many-word bomb takes a slot).
RECENT_TERMS = 2
# The ids of hidden (rewound) messages, shared between searches: a message rewound by others
# shows in counts within 10 s (the hits are filtered in SQL); more of them than HIDDEN_MAX and
# counts join per hit instead.
HIDDEN = keep.HIDDEN_IDS
HIDDEN_MAX = 50_000


# A search that is one prefix of letters and digits (``deploy*``: one token for FTS5's
# unicode61 tokenizer, lower-cased by it) is counted and paged newest first through the OR of
# the words the index holds with that prefix: FTS5 merges the words' doclists as it reads
# them, where a prefix query first gathers every match of every word (10 ms for deploy* on
# ten million messages, in each statement: 0.2 ms as an OR). Same matches; the bm25 ranking
# (of up to RANK_CAP matches) keeps the prefix, which FTS5 scores as one phrase.
PREFIX_TOKEN = re.compile(r"^([A-Za-z0-9]+)\*$")
PREFIX_WORDS_MAX = 64


@keep.memoize(4)
def hidden_json(ids: frozenset[int]) -> str:
    """The hidden ids as one JSON array (for ``NOT IN json_each(?)``), made once per set."""
    return json.dumps(sorted(ids))


@dataclass
class SearchFilters:
    sources: list[str] = field(default_factory=list)
    exclude_sources: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    session: str | None = None
    session_key: str | None = None  # one chat across its resets (schema 22)
    since: str | None = None
    until: str | None = None
    # Sessions left out: across stores, those an earlier store holds too (their hits are
    # shown once, from there).
    exclude_sessions: tuple[str, ...] = ()


@dataclass
class SearchResult:
    rows: list[dict[str, Any]]
    total: int
    capped: bool
    ranked: bool
    has_more: bool
    notices: list[str]
