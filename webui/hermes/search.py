"""Hermes's search syntax, reproduced exactly, and Logbook's plan for answering a query.

``sanitize_fts5_query`` is a faithful port of ``SessionDB._sanitize_fts5_query`` in three
dialects, chosen by the database's schema (``webui.hermes.rules``):

* ``v26`` — Hermes 0.20.1 and 0.22.2 (schemas 23–31): as v22, but the wider set of characters
  FTS5 rejects outside a phrase is blanked (``' @ / # & | ~ [ ] < > , ; ! ? $ =`` and the backslash) and ``%``
  unless the query holds CJK; the routes and zero-hit retries are in ``webui.hermes.search_newer``;
* ``v22`` — Hermes 0.19.0: input cut at 2,048 characters, quotes paired in one pass, ``:``
  stripped too; CJK words under three CJK characters go to substring matching where ANY word
  may match, and rewound messages are not filtered there (as ``search_messages`` does);
* ``v11`` — the reference documents: all words must match, quotes kept whole;
* ``v8`` — as v11, but underscored terms are not quoted.

``plan`` then decides the route (FTS5, trigram, substring) and — where Hermes silently returns
nothing — a literal fallback, with a notice that says what was changed and why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from webui.hermes.rules import Rules

from webui.hermes import search_newer
from webui.hermes.fts_query import (  # noqa: F401 - named from here by the pages
    OPERATORS,
    IndexState,
    Plan,
    _hermes_name,
    _normal,
    _shown,
    contains_cjk,
    count_cjk,
    is_cjk,
    literal_match_expression,
    words_for_like,
)

HERMES_0_19_MAX_QUERY_CHARS = 2048  # MAX_FTS5_QUERY_CHARS in Hermes 0.19's hermes_state.py
# Hermes 0.20 and 0.22 blank every character FTS5's query grammar refuses outside a quoted
# phrase (the quote, parentheses, braces, the column colon, punctuation and symbols), the same
# 2,048-character cut.
_WIDE_SPECIALS = re.compile("[" + re.escape("\"\\'!#$&(),+:;<=>?@[]^{|}~/") + "]")


def _pair_quotes(query: str, quoted: list[str]) -> str:
    """Hermes 0.19's single pass: each quote pairs with the next; an unpaired one is a space.
    Split at the quotes, the odd pieces lie between a pair: each becomes a placeholder."""
    pieces = query.split('"')
    out = [pieces[0]]
    for k in range(1, len(pieces) - 1, 2):
        quoted.append(f'"{pieces[k]}"')
        out += [f"\x00Q{len(quoted) - 1}\x00", pieces[k + 1]]
    if len(pieces) % 2 == 0:  # an odd number of quotes: the last one pairs with nothing
        out.append(" " + pieces[-1])
    return "".join(out)


def sanitize_fts5_query(query: str, *, quote_underscores: bool = True, dialect: str = "v11") -> str:
    """Hermes's sanitizer, step by step (reference §2; Hermes 0.19 for ``dialect="v22"``)."""
    quoted: list[str] = []

    def keep(m: re.Match) -> str:
        quoted.append(m.group(0))
        return f"\x00Q{len(quoted) - 1}\x00"

    if dialect in ("v22", "v26"):
        s = _pair_quotes(query[:HERMES_0_19_MAX_QUERY_CHARS], quoted)  # 0-1. cap, pair
        if dialect == "v26":
            s = _WIDE_SPECIALS.sub(" ", s)  # 2. every character FTS5 rejects outside a phrase
            if not contains_cjk(s):
                s = s.replace("%", " ")  # kept for the CJK substring route only
        else:
            s = re.sub(r'[+{}():"^]', " ", s)  # 2. drop FTS5 specials, the column colon too
    else:
        s = re.sub(r'"[^"]*"', keep, query)  # 1. protect balanced phrases
        s = re.sub(r'[+{}()"^]', " ", s)  # 2. drop FTS5 specials
    s = re.sub(r"\*+", "*", s)  # 3. collapse *, no leading *
    s = re.sub(r"(^|\s)\*", r"\1", s)
    s = re.sub(r"(?i)^(AND|OR|NOT)\b\s*", "", s.strip())  # 4. dangling operators
    s = re.sub(r"(?i)\s+(AND|OR|NOT)\s*$", "", s.strip())
    joiners = "[._-]" if quote_underscores and dialect != "v8" else "[.-]"  # 5. → phrase
    s = re.sub(rf"\b(\w+(?:{joiners}\w+)+)\b", r'"\1"', s)
    for i, part in enumerate(quoted):  # 6. restore phrases
        s = s.replace(f"\x00Q{i}\x00", part)
    return s.strip()


# What makes an FTS expression dear: a prefix this short expands to a large part of the
# vocabulary (on a million messages "the*" costs 80 ms and "t*" 550, where "deploy*" costs
# 17); alternatives and proximity make FTS5 merge several large doclists.
SHORT_PREFIX = 5
MANY_WORDS = 4


def is_costly(p: Plan, *, scoped: bool = False) -> bool:
    """May answering this plan read much of the whole index (a heavy request)? A substring
    scan of every message; an FTS expression with a prefix shorter than SHORT_PREFIX, OR or
    NEAR, or more than MANY_WORDS words. Scoped to one session, a substring scan reads only
    that session's messages; but a prefix is expanded over the whole vocabulary wherever the
    hits are looked for, so the FTS rules hold there too."""
    if p.route == "none":
        return False
    if p.route in ("like", "like_bool", "cjk"):
        # (the CJK bigram index is read from its documents: a scan; see search_cjk)
        return not scoped
    words = [w for w in re.split(r'[\s()]+', p.match) if w]
    if any(w.upper() in ("OR", "NEAR") or w.upper().startswith("NEAR(") for w in words):
        return True
    terms = [w for w in words if w.upper() not in OPERATORS]
    if len(terms) > MANY_WORDS:
        return True
    return any(t.endswith("*") and len(t.strip('"*')) < SHORT_PREFIX for t in terms)


# Bounds on what one search may ask: a 200 KB query or 2,000 words makes SQLite's LIKE and FTS5
# expression builders fail ("pattern too complex", "expression tree too large").
MAX_QUERY_CHARS = 2_000
MAX_QUERY_WORDS = 64


def query_problem(query: str, dialect: str = "v11") -> str | None:
    """Why a query is too big to search, in words, or None. (Hermes 0.19 cuts a long query at
    2,048 characters itself; ``plan`` does the same and says so.)"""
    if dialect in ("v22", "v26"):
        query = query[:HERMES_0_19_MAX_QUERY_CHARS]
    elif len(query) > MAX_QUERY_CHARS:
        return (
            f"The query is {len(query):,} characters long; search takes at most "
            f"{MAX_QUERY_CHARS:,}."
        )
    words = len(query.split())
    if words > MAX_QUERY_WORDS:
        return f"The query has {words:,} words; search takes at most {MAX_QUERY_WORDS}."
    return None


def plan(
    query: str,
    *,
    has_fts: bool,
    has_trigram: bool,
    quote_underscores: bool = True,
    dialect: str = "v11",
    rules: Rules | None = None,
    index: IndexState | None = None,
    roles: Sequence[str] = (),
    sources: Sequence[str] = (),
    sort: str | None = None,
) -> Plan:
    """The route for ``query`` on a database with these indexes and this dialect. Hermes
    0.20/0.22 (``v26``) also read ``rules`` (what differs between them), ``index`` (the FTS
    markers Hermes left in the file), the search's ``roles`` and ``sources`` (some routes
    leave rows out) and ``sort``."""
    notices: list[str] = []
    cut = dialect in ("v22", "v26")
    hermes = _hermes_name(rules) if dialect == "v26" else "Hermes 0.19"
    if cut and len(query or "") > HERMES_0_19_MAX_QUERY_CHARS:
        notices.append(
            f"Only the first {HERMES_0_19_MAX_QUERY_CHARS:,} characters were searched, "
            f"as {hermes} does."
        )
        query = query[:HERMES_0_19_MAX_QUERY_CHARS]
    # A NUL cannot be typed and ends strings inside SQLite's FTS5 parser: drop it.
    raw = (query or "").replace("\x00", "").strip()
    if not raw:
        return Plan("none", "", notices=notices, dialect=dialect)
    sanitized = sanitize_fts5_query(raw, quote_underscores=quote_underscores, dialect=dialect)
    note = ""
    if re.match(r"(?i)^NOT\b", raw) and not re.match(r"(?i)^NOT\b", sanitized):
        notices.append(
            "A query cannot start with NOT (there is nothing to exclude from), so "
            "the leading NOT was dropped, as Hermes does: this searched for messages "
            "that DO contain the rest. To exclude a word, put it after another: "
            "“deploy NOT docker”."
        )
    elif _normal(sanitized) != _normal(raw) and _normal(sanitized.replace('"', "")) != _normal(
        raw.replace('"', "")
    ):
        note = (
            f"You typed “{raw}”; like {hermes if dialect == 'v26' else 'Hermes'}, Logbook "
            f"leaves out characters such as {_LEFT_OUT.get(dialect, '( ) { } + ^')} and an "
            f"AND, OR or NOT at either end, so it searched for “{_shown(sanitized)}”."
        )
    elif raw.count('"') % 2 and sanitized.count('"') < raw.count('"'):
        # A quote without its partner: Hermes drops it and searches the words themselves.
        note = (
            f"You typed “{raw}”; the quotation mark without a partner was left out, as "
            f"Hermes does, so it searched for “{_shown(sanitized)}” (to find an exact phrase, "
            "close the quotes)."
        )
    if not sanitized:
        notices.append(
            f"“{raw}” leaves nothing to search for: like Hermes, Logbook leaves out an AND, "
            f"OR or NOT at either end and characters such as {_LEFT_OUT.get(dialect, '( ) { } + ^')}."
        )
        return Plan("none", "", notices=notices, typed=raw)
    if dialect == "v26":
        return search_newer.plan(
            sanitized,
            raw,
            notices,
            note,
            has_fts=has_fts,
            has_trigram=has_trigram,
            rules=rules,
            index=index or IndexState(),
            roles=roles,
            sources=sources,
            sort=sort,
        )

    if contains_cjk(sanitized) and dialect == "v22":
        found = _plan_cjk_v22(sanitized, has_trigram, notices, note)
        found.typed = raw
        return found
    if contains_cjk(sanitized):
        terms = words_for_like(sanitized)
        long_enough = all(len(t) >= 3 for t in terms)
        if has_trigram and count_cjk(sanitized) >= 3 and long_enough:
            tokens = [
                t if t.upper() in OPERATORS else '"' + t.replace('"', '""') + '"'
                for t in sanitized.replace('"', " ").split()
            ]
            return Plan(
                "trigram",
                sanitized,
                match=" ".join(tokens),
                terms=terms,
                notices=notices,
                sanitize_note=note,
            )
        if has_trigram and count_cjk(sanitized) >= 3:
            notices.append(
                "Hermes finds nothing when words under three characters stand beside "
                "Chinese, Japanese or Korean text; Logbook listed the messages holding every "
                "word, newest first."
            )
        elif has_trigram:
            notices.append(
                f"{_shown(sanitized)} is shorter than three Chinese, Japanese or Korean "
                "characters, so the messages holding it are listed newest first, not by "
                "relevance, and counted page by page (“51+” means more follow)."
            )
        elif not has_trigram:
            notices.append(NO_CJK_INDEX)
        return Plan("like", sanitized, terms=terms, notices=notices, sanitize_note=note, typed=raw)

    if not has_fts:
        notices.append(
            "This database has no search index, so words were matched as plain text, "
            "newest first (slower, not ranked)."
        )
        return Plan(
            "like",
            sanitized,
            terms=words_for_like(sanitized),
            notices=notices,
            sanitize_note=note,
            typed=raw,
        )
    return Plan(
        "fts",
        sanitized,
        match=sanitized,
        terms=words_for_like(sanitized),
        notices=notices,
        fallback=literal_match_expression(raw),
        literal_terms=[w for w in raw.split() if any(ch.isalnum() for ch in w)],
        sanitize_note=note,
        dialect=dialect,
        typed=raw,
    )


def _plan_cjk_v22(sanitized: str, has_trigram: bool, notices: list[str], note: str) -> Plan:
    """Hermes 0.19's CJK routes (``search_messages``): the trigram index when the query holds
    at least three CJK characters and no CJK word has fewer than three; otherwise substrings,
    one per word, a message matching ANY of them, rewound ones included, newest first."""
    raw_query = sanitized.strip('"').strip()
    words = raw_query.split()
    plain = [w for w in words if w.upper() not in OPERATORS]
    like_terms = plain or [raw_query]
    short_cjk = [w for w in plain if contains_cjk(w) and count_cjk(w) < 3]
    if has_trigram and count_cjk(raw_query) >= 3 and not short_cjk:
        tokens = [w if w.upper() in OPERATORS else '"' + w.replace('"', '""') + '"' for w in words]
        ignored = [w for w in plain if len(w) < 3]
        if ignored:
            notices.append(
                f"Words under three characters ({', '.join(ignored)}) did not narrow this "
                "search, as in Hermes 0.19."
            )
        return Plan(
            "trigram",
            sanitized,
            match=" ".join(tokens),
            terms=[w.strip('"') for w in plain],
            notices=notices,
            sanitize_note=note,
            trigram_error_terms=like_terms,
            dialect="v22",
        )
    if short_cjk and has_trigram:
        one = len(short_cjk) == 1
        notices.append(
            f"{', '.join(short_cjk)} {'is' if one else 'are'} shorter than three Chinese, "
            "Japanese or Korean characters, so, as Hermes 0.19 does, the messages holding "
            + ("any of the words" if len(like_terms) > 1 else ("it" if one else "them"))
            + " are listed newest first, not by relevance."
        )
    elif not has_trigram:
        notices.append(NO_CJK_INDEX)
    else:
        notices.append(
            "Under three Chinese, Japanese or Korean characters, words are matched as plain "
            "text, newest first, as Hermes 0.19 does."
        )
    return Plan(
        "like",
        sanitized,
        terms=like_terms,
        notices=notices,
        sanitize_note=note,
        like_any=True,
        like_inactive=True,
        dialect="v22",
    )


# The characters each dialect's sanitizer leaves out, as the notices name them.
_LEFT_OUT = {"v26": "' @ / # & ( ) { } + ^ , ; ! ? $ = %"}


NO_CJK_INDEX = (
    "This database, from an older Hermes, has no index for Chinese, Japanese or Korean words, "
    "so the messages holding them are listed newest first."
)


def explain_fts_problem(problem: str) -> str:
    """Why SQLite could not read a search (``fts5: syntax error near ""``), in plain words."""
    p = (problem or "").lower()
    if "unterminated string" in p:
        return "a quotation mark is left open"
    if "no such column" in p:
        return "a word with “:” after it, or “-” before it, has a special meaning there"
    if "syntax error near" in p:
        near = problem[p.index("near") + 4 :].strip().strip('"').strip()
        if not near:
            return "it ends with AND, OR, NOT or an open quotation mark"
        return f"“{near}” cannot stand where it is"
    if "unknown special query" in p or "malformed" in p:
        return "it uses a character that has a special meaning in a search"
    return "it is not a search it understands"
