"""A search over every store as one: one count, one order, one page, one notice each.

Each store is searched by the rules of the Hermes that wrote it (its own plan, its own
sanitizer), hits in sessions that an earlier store also holds are left out in its own SQL
(so counts are of what can be paged), and the hits are put in one order:

* **ranked** (every store answers from an FTS5 index of the same kind, and the stores hold at
  most RANK_CAP hits between them): by bm25 worked out again with the statistics of all the
  stores taken as one file (webui.db.search.bm25), so a hit ranks where it would in one file holding
  the whole history. Each store gives its best hits by its own ranking; a store's unseen hits
  can only be better by a bounded ratio (the phrases' IDF ratios, the average lengths'), and
  a store whose bound reaches into the page is asked for more before the page is made;
* otherwise **newest first**, every store's hits by time (each store's own order, its times
  made non-increasing along it, so that paging takes every hit exactly once), and the one
  notice says why.

The caller names the stores (``Searched``: each one's SearchStore, whether it is the live file,
its sessions an earlier store holds too, and where its answers are kept) and how to tell the
request is short of time (``Budget``); nothing here knows Flask or the store set. Separate
histories (profiles) are not one order: ``search_profiles`` sets their pages side by side."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from webui.db.deadline import OUT_OF_TIME
from webui.db.errors import LogbookDBError
from webui.db.search import bm25 as bm
from webui.db.search.limits import MAX_RESULTS, PAGE_SIZE, RANK_CAP, SearchFilters, SearchResult
from webui.db.search.store import SearchStore, Way, resolve
from webui.hermes.search import Plan, plan

ROUNDS = 3  # times a store may be asked for more of its best hits


def _computed(key: tuple, compute: Callable[[], Any]) -> Any:
    return compute()


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Searched:
    """One store as a search across stores asks it."""

    name: str
    search: SearchStore
    # The live file is asked however short of time the request is; the others are skipped.
    live: bool = True
    # Its sessions that an earlier store also holds: their hits are shown once, from there.
    copies: tuple[str, ...] = ()
    # ask(key, compute): its answer kept until its file changes (webui.db.stores.history's
    # store_answer; for the live file, until the next commit to it).
    ask: Callable[[tuple, Callable[[], Any]], Any] = _computed


@dataclass(frozen=True)
class Budget:
    """The request's time, as the caller tells it: ``short()`` when too little is left to ask
    one more store, and what a store not asked then is said to be."""

    short: Callable[[], bool] = _never
    out_of_time: str = OUT_OF_TIME


@dataclass
class Part:
    store: Searched
    plan: Plan
    way: Way
    f: SearchFilters
    n: int = 0
    folded: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    depth: int = 0
    notices: list[str] = field(default_factory=list)

    @property
    def search(self) -> SearchStore:
        return self.store.search


def facts(search: SearchStore) -> dict:
    """What a plan across stores depends on: the file's indexes and its Hermes's dialect
    (not its index markers, nor the rules of 0.20+ beyond the dialect)."""
    known = search.facts(index=False)
    return {k: known[k] for k in ("has_fts", "has_trigram", "dialect")}


def _ask(part_or_store: Part | Searched, key: tuple, compute: Callable[[], Any]) -> Any:
    """A store's answer, kept until its file changes (for the live file: until the next
    commit to it, SQLite's data_version; beside a writing gateway, read afresh)."""
    store = part_or_store.store if isinstance(part_or_store, Part) else part_or_store
    return store.ask(key, compute)


def search_stores(
    query: str,
    f: SearchFilters,
    page: int,
    stores: list[Searched],
    missing: list[str],
    budget: Budget | None = None,
    home: SearchStore | None = None,
) -> tuple[SearchResult, str, Plan | None]:
    """One page of ``query``'s hits in every one of ``stores`` (live first) as one history:
    (result, what was searched, the first store's plan, or ``home``'s when no store
    planned). A store that fails or is not asked for want of time is named in ``missing``
    (given the stores that cannot be read now) and the page is made of the others; the
    page's notices end with ``missing``. Rows come without the substring routes' snippets,
    which presentation cuts (webui.present.rows.complete_snippets)."""
    budget = budget or Budget()
    short_of_time = budget.short
    depth = page * PAGE_SIZE + 1
    parts: list[Part] = []
    first_plan: Plan | None = None
    plans: dict[tuple, Plan] = {}  # one plan per kind of store (its indexes, its dialect)
    for s in stores:
        if not s.live and short_of_time():
            _missing(missing, s, budget.out_of_time)
            continue
        try:
            parts.append(_part(s, query, f, list(s.copies), plans))
        except (LogbookDBError, sqlite3.Error) as exc:
            _missing(missing, s, exc)
        else:
            first_plan = first_plan or parts[-1].plan
    total = sum(p.n for p in parts)
    tables = {p.way.table for p in parts if p.n}
    unranked = [p.store.name for p in parts if p.n and p.way.route != "fts"]
    ranked = total <= RANK_CAP and not unranked and len(tables) <= 1
    for p in list(parts):
        if not p.n:
            continue
        if not p.store.live and short_of_time():
            _missing(missing, p.store, budget.out_of_time)
            parts.remove(p)
            continue
        try:
            _fetch(p, depth, ranked)
        except (LogbookDBError, sqlite3.Error) as exc:
            _missing(missing, p.store, exc)
            parts.remove(p)
    merged = _ranked(parts, depth, short_of_time) if ranked else _newest(parts)
    total = sum(p.n for p in parts)
    more_unread = any(p.way.route == "like" and len(p.rows) >= p.depth for p in parts if p.n)
    offset = (page - 1) * PAGE_SIZE
    chosen = merged[offset : offset + PAGE_SIZE]
    has_more = len(merged) > offset + PAGE_SIZE and offset + PAGE_SIZE < MAX_RESULTS
    rows = _rows(parts, chosen, missing)
    notices = _notices(parts, ranked, total, unranked, tables, missing)
    capped = total > MAX_RESULTS or more_unread
    result = SearchResult(rows, min(total, MAX_RESULTS), capped, ranked, has_more, notices)
    searched = next((p.way.searched for p in parts if p.way.searched), "") or (
        first_plan.searched if first_plan else query
    )
    if first_plan is None and home is not None:
        first_plan = home.plan(query)
    return result, searched, first_plan


def _missing(missing: list[str], store: Searched, exc: Any) -> None:
    message = exc.message if isinstance(exc, LogbookDBError) else str(exc)
    line = f"{store.name} was not searched: {message}"
    if line not in missing:
        missing.append(line)


def _part(
    s: Searched, query: str, f: SearchFilters, copies: list[str], plans: dict[tuple, Plan]
) -> Part:
    search = s.search
    known = facts(search)
    mark = tuple(sorted(known.items()))
    p = plans.get(mark)
    if p is None:
        p = plans[mark] = plan(query, **known)
    notices = list(p.notices)
    fs = replace(f, exclude_sessions=tuple(copies))
    if p.route == "none":
        return Part(s, p, Way("none"), fs, notices=notices)
    if p.route in ("fts", "trigram"):
        table = "messages_fts" if p.route == "fts" else "messages_fts_trigram"
        try:
            # Counted at once: a valid expression (nearly every one) needs no other query.
            n = _ask(
                s,
                ("search-n", table, p.match, repr(fs)),
                lambda: search.across.hit_count(table, p.match, fs),
            )
            way = Way("fts", table, p.match)
            notices += [p.sanitize_note] if p.sanitize_note else []
        except sqlite3.OperationalError:
            n = None  # FTS5 refused it: the plan's fallback, said as a search of it says it
        except LogbookDBError as exc:
            if exc.status == 503:
                raise
            n = None
        if n is None:
            way, said = _ask(s, ("search-way", query), lambda: _resolved(search, p))
            notices += said
    else:
        if p.sanitize_note:
            notices.append(p.sanitize_note)
        way = Way("like", terms=list(p.terms))
    part = Part(s, p, way, fs, notices=notices)
    if way.route == "fts":
        part.n = (
            n
            if n is not None
            else _ask(
                s,
                ("search-n", way.table, way.expression, repr(fs)),
                lambda: search.across.hit_count(way.table, way.expression, fs, way.literal),
            )
        )
        if copies:
            every = _ask(
                s,
                ("search-n", way.table, way.expression, repr(f)),
                lambda: search.across.hit_count(way.table, way.expression, f, way.literal),
            )
            part.folded = max(0, every - part.n)
    elif way.route == "like":
        part.n = 1  # counted as they are read (no index counts substrings)
    return part


def _resolved(search: SearchStore, p: Plan) -> tuple[Way, list[str]]:
    said: list[str] = []
    way = resolve(search, p, said)
    if way.route == "like" and not way.terms:
        way = Way("none")
    return way, said


def _fetch(p: Part, depth: int, ranked: bool) -> None:
    p.depth = depth
    search, way, fs = p.search, p.way, p.f
    if way.route == "like":
        any_term = p.plan.like_any if p.plan.route == "like" else True
        inactive = p.plan.like_inactive if p.plan.route == "like" else True
        p.rows = _ask(
            p,
            ("search-like", tuple(way.terms), repr(fs), depth, any_term, inactive),
            lambda: search.across.newest_like(way.terms, fs, depth, any_term, inactive),
        )
        p.n = len(p.rows) + (1 if len(p.rows) >= depth else 0)
        return
    p.rows = _ask(
        p,
        ("search-best", way.table, way.expression, repr(fs), depth, ranked),
        lambda: search.across.best_hits(way.table, way.expression, fs, depth, ranked, way.literal),
    )


# -- one relevance order ----------------------------------------------------------------------


def _ranked(
    parts: list[Part], depth: int, short_of_time: Callable[[], bool]
) -> list[tuple[Part, dict[str, Any]]]:
    """Every store's best hits, scored with the whole history's statistics."""
    live = [p for p in parts if p.n and p.rows]
    if not live:
        return []
    table = live[0].way.table
    # Every store searched from an index of this kind counts in the statistics, hits or
    # not: the one file they make holds its rows too.
    indexed = [p for p in parts if p.way.route == "fts" and p.way.table == table]
    found = bm.phrases(live[0].way.expression)
    same = found is not None and all(
        bm.phrases(p.way.expression) == found and not p.way.literal for p in indexed
    )
    phrase_list = found or []  # read only when ``same``
    for _round in range(ROUNDS):
        try:
            stats = _statistics(indexed, phrase_list) if same and not short_of_time() else None
        except (LogbookDBError, sqlite3.Error):
            stats = None  # each store's own scores, then
        scored: list[tuple[float, tuple, int, Part, dict]] = []
        for i, p in enumerate(live):
            for r in p.rows:
                score = r["score"] if stats is None else _global(p, r, stats, phrase_list)
                scored.append((score, _id_key(r["id"]), i, p, r))
        # As one file orders them: by score, then by message id (a store's rank breaks a tie
        # only between two stores' equal ids).
        scored.sort(key=lambda x: (x[0], x[1], x[2]))
        if stats is None or len(scored) < depth:
            cut = None
        else:
            cut = scored[depth - 1][0]
        again = [p for p in live if cut is not None and _may_reach(p, stats, phrase_list, cut)]
        if not again:
            return [(p, r) for _s, _i, _k, p, r in scored]
        if short_of_time():
            break
        try:
            for p in again:
                _fetch(p, min(RANK_CAP + 1, p.depth * 4), True)
        except (LogbookDBError, sqlite3.Error):
            break
    return [(p, r) for _s, _i, _k, p, r in scored]


def _statistics(parts: list[Part], phrase_list: list[str]):
    """Each store's statistics and its hits' per-phrase scores and lengths, and their sum."""
    out = {}
    for p in parts:
        mine = _part_statistics(p, phrase_list)
        if mine is None:
            return None
        out[p.store.name] = mine
    every = bm.combined(v[0] for v in out.values())
    return out, every


def _part_statistics(p: Part, phrase_list: list[str]):
    table, expression, search = p.way.table, p.way.expression, p.search
    ids = [r["id"] for r in p.rows]  # none for a store without hits: its figures only
    mark = (len(ids), hash(tuple(ids)))
    figures = _ask(p, ("bm25-index", table), lambda: search.across.index_figures(table))
    if figures is None:
        return None
    hits: dict[str, int] = {}
    scores: dict[str, dict[int, float]] = {}
    for phrase in dict.fromkeys(phrase_list):
        # A query of one phrase: its hits' scores are the phrase's own already.
        alone = (
            {r["id"]: r["score"] for r in p.rows}
            if len(phrase_list) == 1 and phrase == expression
            else None
        )
        hits[phrase], scores[phrase] = _ask(
            p,
            ("bm25-phrase", table, phrase, *mark),
            partial(search.across.phrase_figures, table, phrase, ids, alone),
        )
    lengths = _ask(p, ("bm25-lengths", table, *mark), lambda: search.across.doc_lengths(table, ids))
    return bm.FileStats(figures[0], figures[1], hits), scores, lengths


def _global(p: Part, r: dict, stats, phrase_list: list[str]) -> float:
    per_store, every = stats
    mine, scores, lengths = per_store[p.store.name]
    length = lengths.get(r["id"])
    if length is None:
        return r["score"]
    per_phrase = [(ph, scores[ph].get(r["id"], 0.0)) for ph in phrase_list]
    return bm.rescore(per_phrase, length, mine, every)


def _may_reach(p: Part, stats, phrase_list: list[str], cut: float) -> bool:
    """Could a hit this store has not given rank above ``cut``?"""
    if len(p.rows) < p.depth or p.depth > RANK_CAP or not p.rows:
        return False  # it gave every hit it has
    per_store, every = stats
    mine = per_store[p.store.name][0]
    last = -(p.rows[-1]["score"] or 0.0)
    return -last * bm.bound_ratio(mine, every, phrase_list) < cut


# -- newest first -------------------------------------------------------------------------------


def _newest(parts: list[Part]) -> list[tuple[Part, dict[str, Any]]]:
    keyed = []
    for i, p in enumerate(parts):
        floor = float("inf")
        for r in p.rows:
            ts = r.get("ts")
            t = float(ts) if isinstance(ts, (int, float)) else float("-inf")
            floor = min(floor, t)  # non-increasing along the store's own order
            keyed.append((-floor, i, -_num(r["id"]), p, r))
    keyed.sort(key=lambda x: (x[0], x[1], x[2]))
    return [(p, r) for *_k, p, r in keyed]


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _id_key(value: Any) -> tuple:
    return (0, value) if isinstance(value, (int, float)) else (1, str(value))


# -- the page ---------------------------------------------------------------------------------


def _rows(parts: list[Part], chosen: list[tuple[Part, dict]], missing: list[str]) -> list[dict]:
    by_part: dict[int, list[int]] = {}
    for p, r in chosen:
        by_part.setdefault(id(p), []).append(r["id"])
    read: dict[tuple[str, Any], dict] = {}
    for p in parts:
        ids = by_part.get(id(p))
        if not ids:
            continue
        try:
            like = p.way.terms if p.way.route == "like" else None
            rows = p.search.across.page_hits(p.way.table, p.way.expression, ids, like)
            p.search.basics.finish_rows(rows)
        except (LogbookDBError, sqlite3.Error) as exc:
            _missing(missing, p.store, exc)
            continue
        for row in rows:
            row["store"] = p.store.name
            read[(p.store.name, row["message_id"])] = row
    return [read[k] for p, r in chosen if (k := (p.store.name, r["id"])) in read]


def _notices(parts, ranked, total, unranked, tables, missing) -> list[str]:
    said: list[str] = []
    for p in parts:
        for n in p.notices:
            if n and n not in said:
                said.append(n)
    if not ranked and total > RANK_CAP:
        said.append(
            f"More than {RANK_CAP:,} messages match across the stores, so they are shown "
            "newest first instead of ranked by relevance. Add words or filters to rank them."
        )
    elif not ranked and unranked:
        said.append(
            f"{', '.join(unranked)} cannot rank its hits (no search index Logbook can read "
            "here), so every store's hits are shown newest first."
        )
    elif not ranked and len(tables) > 1:
        said.append(
            "The stores answer from different kinds of index, so their hits are shown newest first."
        )
    folded = sum(p.folded for p in parts)
    if folded:
        said.append(
            f"{folded} hit{'s' if folded != 1 else ''} in copies of sessions already shown "
            "from another store left out."
        )
    return said + missing


# -- separate histories ---------------------------------------------------------------------


def search_profiles(
    query: str,
    f: SearchFilters,
    page: int,
    searches: list[tuple[str, SearchStore]],
    sort: str | None = None,
    label: str = "profile",
) -> tuple[SearchResult, str, Plan | None]:
    """Each profile's own ranked page, interleaved (rank 1 of each, then rank 2, …): the
    profiles are separate histories, so their ranks are set side by side, not compared (the
    stores of one history rank as one: search_stores). Each row is named by ``label``; a
    profile that fails after the first is named in a notice (the first's failure is the
    page's). Rows come without the substring routes' snippets, as search_stores's."""
    per: list[list[dict]] = []
    total, capped, more, notices, searched, p = 0, False, False, [], query, None
    for i, (name, search) in enumerate(searches):
        try:
            res, searched, p = search.search(query, f, page, sort)
        except LogbookDBError as exc:
            if not i:
                raise
            notices.append(f"{name} was not searched: {exc.message}")
            continue
        rows = res.rows
        for row in rows:
            row[label] = name
        per.append(rows)
        total += res.total
        capped = capped or res.capped
        more = more or res.has_more
        notices += [
            n if n.startswith(name) else f"{name}: {n}" for n in res.notices if n not in notices
        ]
    rows = [r for group in itertools.zip_longest(*per) for r in group if r is not None]
    result = SearchResult(rows, total, capped, False, more, list(dict.fromkeys(notices)))
    return result, searched, p
