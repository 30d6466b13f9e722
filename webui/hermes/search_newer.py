"""Hermes 0.20 and 0.22's search routes (schemas 23–31): which index answers a query, what it
is retried on when it finds nothing, and which rows a route leaves out.

The facts (docs/hermes-generations.md §4), as rules:

* The query is sanitized as ``webui.hermes.search.sanitize_fts5_query(dialect="v26")`` does.
* Every route leaves rewound rows out (``active = 0`` and not compacted); 0.22 also never
  finds a ``display_kind = 'hidden'`` row (SearchStore applies both, from the rules).
* A file whose base indexes Hermes detached after damage (``state_meta.fts_stale``), and in
  0.22 every ``role=tool`` search, are answered from the stored rows: the boolean query
  compiled into substring tests (groups split at OR, a hit holds every term of one group,
  NOT excludes the term after it), newest first (oldest first with ``sort=oldest``).
* A query holding CJK: the CJK bigram index when it is ready, unless a CJK run is a single
  character or the search asks for rows that index does not hold (tool rows; in 0.22 cron and
  delegate-run sources); else the trigram index when every CJK word has three CJK characters
  or more (same exclusions); else substrings, a hit holding ANY word, newest first.
* Any other query: ``messages_fts`` ranked by bm25 (or newest / oldest first). While a rebuild
  of the index is pending, the ids it has not reached are scanned for every word and their
  hits follow. Nothing found (and not a ``role=tool`` search): the same words quoted, on the
  CJK bigram index, then on the trigram index when every word has three characters or more;
  then, in 0.22, the words OR-ed on ``messages_fts`` (two or more words, no OR/NOT typed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from webui.hermes.fts_query import (
    OPERATORS,
    IndexState,
    Plan,
    _hermes_name,
    _shown,
    contains_cjk,
    count_cjk,
    is_cjk,
    literal_match_expression,
    words_for_like,
)

# One unit of a query: a quoted phrase or a run of non-space characters.
_UNIT = re.compile(r'"[^"]+"|\S+')


def quote_tokens(text: str) -> str:
    """Every whitespace-separated token quoted as an FTS5 phrase, AND/OR/NOT kept."""
    return " ".join(
        t if t.upper() in OPERATORS else '"' + t.replace('"', '""') + '"' for t in text.split()
    )


def non_operators(text: str) -> list[str]:
    return [t for t in text.split() if t.upper() not in OPERATORS]


def has_lone_cjk_run(text: str) -> bool:
    """Does any maximal run of CJK characters hold one character only? (The bigram index has
    no token for a character inside a longer run.)"""
    run = 0
    for ch in text + " ":
        if is_cjk(ch):
            run += 1
            continue
        if run == 1:
            return True
        run = 0
    return False


def strip_cjk_wildcards(text: str) -> str:
    """0.22: a trailing ``*`` on a token means nothing to the CJK routes and is dropped (a
    token of stars alone is kept)."""
    if "*" not in text:
        return text
    kept = [t if t.upper() in OPERATORS else (t.rstrip("*") or t) for t in text.split()]
    return " ".join(kept) or text


def trigram_eligible(text: str) -> bool:
    """Every word at least three characters long (a shorter one has no trigram, and with the
    implicit AND it would empty the whole match)."""
    tokens = non_operators(text.strip('"').strip())
    return bool(tokens) and all(len(t) >= 3 for t in tokens)


def or_relaxed(text: str) -> str | None:
    """0.22's relaxed retry: the query's units OR-ed (quoted phrases stay whole, AND dropped),
    or None for fewer than two units or a query that says OR or NOT itself."""
    units = []
    for unit in _UNIT.findall(text):
        if unit.upper() in ("OR", "NOT"):
            return None
        if unit.upper() != "AND":
            units.append(unit)
    return " OR ".join(units) if len(units) >= 2 else None


def boolean_groups(text: str) -> list[list[tuple[str, bool]]]:
    """The query as substring groups (the stored-rows route): split at OR; in a group every
    term must be present, a term after NOT must be absent; quotes and stars are not part of a
    term, AND and NEAR mean nothing more. A group with no term that must be present is
    dropped (it would match everything)."""
    groups: list[list[tuple[str, bool]]] = [[]]
    negate = False
    for unit in _UNIT.findall(text):
        word = unit.upper()
        if word == "OR":
            if groups[-1]:
                groups.append([])
            negate = False
        elif word == "NOT":
            negate = True
        elif word not in ("AND", "NEAR"):
            term = unit.strip('"').strip("*").strip()
            if term:
                groups[-1].append((term, negate))
                negate = False
    return [g for g in groups if any(not excluded for _, excluded in g)]


def gap_terms(text: str) -> list[str]:
    """The words a pending rebuild's unindexed ids are scanned for (each must be present)."""
    terms = (u.strip('"').strip("*").strip() for u in _UNIT.findall(text))
    return [t for t in terms if t and t.upper() not in ("AND", "OR", "NOT", "NEAR")]


def plan(
    sanitized: str,
    raw: str,
    notices: list[str],
    note: str,
    *,
    has_fts: bool,
    has_trigram: bool,
    rules,
    index: IndexState,
    roles: Sequence[str] = (),
    sources: Sequence[str] = (),
    sort: str | None = None,
) -> Plan:
    hermes = _hermes_name(rules)
    tool_rows = "tool" in roles
    sort = sort if sort in ("newest", "oldest") else None

    def made(route: str, **kw) -> Plan:
        kw.setdefault("notices", [])
        return Plan(
            route, kw.pop("searched", sanitized), dialect="v26", hermes=hermes, typed=raw, **kw
        )

    if (tool_rows and rules.search_tool_role_by_like) or index.fts_stale:
        why = (
            f"{hermes} reads a tool search from the stored messages (whole tool results, "
            "not the index's first 8,192 characters)"
            if not index.fts_stale
            else f"{hermes} marked this file's search index as damaged (it is rebuilt on its "
            "next start), so, as it does, the stored messages were read"
        )
        groups = boolean_groups(sanitized)
        notices.append(
            f"{why}: the messages holding the words are listed "
            f"{'oldest' if sort == 'oldest' else 'newest'} first, not ranked."
        )
        return made(
            "like_bool" if groups else "none",
            groups=groups,
            terms=[t for g in groups for t, excluded in g if not excluded],
            notices=notices,
            sanitize_note=note,
            sort=sort,
        )
    cjk_ready = index.cjk == "ready"
    cjk_note = _cjk_state_note(index.cjk, hermes)
    gap = gap_terms(sanitized) if index.rebuild else []
    if contains_cjk(sanitized):
        text = strip_cjk_wildcards(sanitized) if rules.search_strips_cjk_wildcards else sanitized
        text = text.strip('"').strip()
        match = quote_tokens(text)
        unindexed = tool_rows or any(s in rules.search_unindexed_sources for s in sources)
        like_terms = non_operators(text) or [text]
        like = made(
            "like",
            terms=like_terms,
            like_any=True,
            notices=[],
            gap_terms=gap,
        )
        short = [t for t in non_operators(text) if contains_cjk(t) and count_cjk(t) < 3]
        trigram_ok = has_trigram and count_cjk(text) >= 3 and not short and not unindexed
        if trigram_ok:
            trigram = made("trigram", match=match, terms=like_terms, sort=sort, gap_terms=gap)
        else:
            trigram = None
        if cjk_ready and not unindexed and not has_lone_cjk_run(text):
            chosen = made(
                "cjk",
                match=match,
                terms=like_terms,
                sort=sort,
                gap_terms=gap,
                instead=trigram or like,
            )
        else:
            chosen = trigram or like
            if chosen is like:
                notices.append(_like_reason(text, short, unindexed, has_trigram, hermes, sources))
            if cjk_note and not unindexed:
                notices.append(cjk_note)
        chosen.notices = notices
        chosen.sanitize_note = note
        return chosen
    if not has_fts:
        notices.append(
            f"This database has no search index (without it {hermes} finds nothing), so "
            "Logbook matched the words as plain text, newest first (slower, not ranked)."
        )
        return made("like", terms=words_for_like(sanitized), notices=notices, sanitize_note=note)
    first = made(
        "fts",
        match=sanitized,
        terms=words_for_like(sanitized),
        notices=notices,
        fallback=_literal(raw),
        literal_terms=[w for w in raw.split() if any(ch.isalnum() for ch in w)],
        sanitize_note=note,
        sort=sort,
        gap_terms=gap,
    )
    if not tool_rows:
        quoted = quote_tokens(sanitized.strip('"').strip())
        inside = (
            f"No message holds “{_shown(sanitized)}” as a word of its own, so, as {hermes} "
            "does, it was looked for inside words"
        )
        if cjk_ready:
            first.retries.append(
                made(
                    "cjk",
                    match=quoted,
                    terms=words_for_like(sanitized),
                    sort=sort,
                    answered=f"{inside} (its Chinese, Japanese and Korean index splits text "
                    "glued to those characters).",
                )
            )
        if has_trigram and trigram_eligible(sanitized):
            first.retries.append(
                made(
                    "trigram",
                    match=quoted,
                    terms=words_for_like(sanitized),
                    sort=sort,
                    answered=f"{inside} (its trigram index: any part of a word).",
                )
            )
    relaxed = or_relaxed(sanitized) if rules.search_or_relaxed else None
    if relaxed:
        first.retries.append(
            made(
                "fts",
                match=relaxed,
                searched=relaxed,
                terms=words_for_like(sanitized),
                sort=sort,
                answered=f"No message holds all of “{_shown(sanitized)}”, so, as "
                f"{hermes} does, the messages holding any of them are listed"
                + (", those holding more of them first." if sort is None else "."),
            )
        )
    return first


def _literal(raw: str) -> str:
    return literal_match_expression(raw)


def _like_reason(
    text: str,
    short: list[str],
    unindexed: bool,
    has_trigram: bool,
    hermes: str,
    sources: Sequence[str],
) -> str:
    if unindexed:
        what = "tool results" if not sources else f"{', '.join(sources)} sessions"
        why = f"its word indexes for Chinese, Japanese and Korean hold no {what}"
    elif short:
        one = len(short) == 1
        why = (
            f"{', '.join(short)} {'is' if one else 'are'} shorter than three Chinese, Japanese "
            "or Korean characters"
        )
    elif not has_trigram:
        why = "this file has no trigram index"
    else:
        why = "a Chinese, Japanese or Korean run of one character has no token of its own"
    many = len(non_operators(text)) > 1
    return (
        f"As {hermes} does ({why}), the messages holding "
        + ("any of the words" if many else "it")
        + " as plain text are listed, newest first, not by relevance."
    )


def _cjk_state_note(state: str, hermes: str) -> str:
    if state == "stale":
        return (
            "This file's Chinese, Japanese and Korean index is out of date (a Hermes without "
            f"its tokenizer marked it stale), so {hermes} does not use it until "
            "`hermes sessions optimize-storage` rebuilds it; neither does Logbook."
        )
    if state == "pending":
        return (
            "This file's Chinese, Japanese and Korean index is still being filled, so "
            f"{hermes} does not use it yet; neither does Logbook."
        )
    return ""
