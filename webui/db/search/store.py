"""SQL for full-text search over messages. Routes follow Hermes's own ``search_messages`` (reference §3): FTS5 ``messages_fts`` ranked
by bm25, the trigram table for CJK, substrings (LIKE) where no index can answer. Two things
differ on purpose:

* Big match sets. Ranking every match of a very common word means scoring hundreds of
  thousands of rows. Logbook first counts matches (up to RANK_CAP); above it, results come
  newest first (FTS5 walks its doclists in rowid order and stops after a page) and a notice
  says so. Below it they are ranked by bm25 exactly as Hermes ranks them.
* Two phases. Page ids are chosen first (no snippets); ``snippet()`` then runs for the 50 rows
  on the page only, instead of for every row the sorter sees, in an in-memory mirror of those
  rows (webui.db.search.snippets) so that a prefix is not expanded over the whole index again.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from webui import keep
from webui.db import sql
from webui.db.errors import BadRequest, LogbookDBError
from webui.db.reader import Reader
from webui.db.search import plan as search_plan
from webui.db.search.across import Across
from webui.db.search.cjk import CjkRoute
from webui.db.search.limits import (  # noqa: F401 - named from here by the pages
    HIDDEN,
    HIDDEN_MAX,
    MARK_END,
    MARK_START,
    MAX_RESULTS,
    OVERFETCH_CANDIDATES,
    OVERFETCH_HITS,
    OVERFETCH_MAX,
    PAGE_SIZE,
    PREFIX_TOKEN,
    PREFIX_WORDS_MAX,
    RANGE_SNIPPETS,
    RANK_CAP,
    RECENT_STEP,
    RECENT_TERMS,
    RECENT_WINDOW,
    SNIPPET_TOKENS,
    SearchFilters,
    SearchResult,
    _hidden_json,
)
from webui.db.search.reading import HitReading
from webui.db.search.scope import Scoping
from webui.db.search.source_map import SourceMap
from webui.db.search.substring import SubstringRoute
from webui.db.sessions.store import date_range
from webui.hermes.rules import rules_for
from webui.hermes.search import Plan, explain_fts_problem

# Hermes 0.22 leaves these rows out of every search (webui.hermes.rules).
HIDDEN_ROW_TEST = "COALESCE(m.display_kind, '') <> 'hidden'"


class SearchStore:
    """Search of one file: its filters and FTS routes here; the reads of hits (``reading``),
    the CJK index (``cjk_route``), the substring route (``substring``), hits narrowed by
    scope (``scope``) and one store's part of a search across stores (``across``)."""

    def __init__(
        self,
        reader: Reader,
        shared: Callable[..., Any] | None = None,
        sources: SourceMap | None = None,
    ):
        self.r = reader
        self.schema = reader.schema
        # Whose search rules apply (webui.hermes.rules): they follow the file's schema.
        self.rules = rules_for(self.schema.version)
        # Each message's source, for searches filtered by source (_by_source).
        self.sources = sources
        # SessionStore.shared: one computation for a crowd, refreshed behind the requests.
        self._shared = shared or (lambda name, compute, rule: compute())
        # floor id -> the newest timestamp of the messages up to it. Messages are appended
        # with growing ids and never re-dated, so a value stays an upper bound (deleting
        # rows can only lower the truth): kept for the process, whatever changes.
        self._older_newest = keep.VersionedCache(64)
        # (newest id read, ids of display_kind='hidden' rows up to it): Hermes 0.22's hidden rows
        self._display_hidden: tuple[int, frozenset[int]] = (0, frozenset())
        self.reading = HitReading(reader)
        self.cjk_route = CjkRoute(self)
        self.substring = SubstringRoute(self)
        self.scope = Scoping(self)
        self.across = Across(self)

    def plan(self, query: str, f: SearchFilters | None = None, sort: str | None = None) -> Plan:
        return search_plan.plan_for(self, query, f, sort)

    def search(
        self,
        query: str,
        f: SearchFilters,
        page: int,
        sort: str | None = None,
        slot: Callable[[Plan], AbstractContextManager[Any]] | None = None,
    ) -> tuple[SearchResult, str, Plan]:
        """Planned here: (result, searched, plan). ``slot(plan)``: what a search waits for (the
        web layer's few search slots) unless the newest messages answer it (run_recent)."""
        p = self.plan(query, f, sort)
        if (quick := run_recent(self, p, f, page)) is not None:
            return (*quick, p)
        with slot(p) if slot is not None else nullcontext():
            result, searched = run(self, p, f, page)
        return result, searched, p

    # -- filters -------------------------------------------------------------------------

    def _active_clause(self) -> str:
        """Messages undone by /rewind are not part of the conversation any more; Hermes 0.19
        keeps compacted ones searchable (active = 1 OR compacted = 1). Hermes 0.22 never finds
        a row the person never saw (``display_kind = 'hidden'``)."""
        keep = ""
        if self.schema.has("messages", "active"):
            keep = "COALESCE(m.active, 1) != 0"
            if self.schema.has("messages", "compacted"):
                keep = f"({keep} OR m.compacted = 1)"
        if self._skips_hidden_rows():
            keep = f"{keep + ' AND ' if keep else ''}{HIDDEN_ROW_TEST}"
        return keep

    def _skips_hidden_rows(self) -> bool:
        return self.rules.search_skips_hidden_rows and self.schema.has("messages", "display_kind")

    def _hidden_ids(self) -> frozenset[int]:
        """Ids of the messages the active clause leaves out (rewound, not compacted): few, so
        an unfiltered search is counted on the FTS index without a join per hit. Finding them
        reads the whole (session_id, active, timestamp) index (~0.2 s on a million messages),
        so they are shared: computed once for a crowd, refreshed in the background after
        HIDDEN.ttl while the previous set is served, recomputed after Logbook's own changes.
        Only counts use it; the rows shown are always filtered in SQL."""
        if not self._active_clause():
            return frozenset()
        return self._shared("hidden-ids", self._read_hidden_ids, HIDDEN)

    def _read_hidden_ids(self) -> frozenset[int]:
        indexed = (
            " INDEXED BY idx_messages_session_active"
            if self.r.scalar(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = "
                "'idx_messages_session_active'"
            )
            else ""
        )
        compacted = (
            "COALESCE(compacted, 0) = 1" if self.schema.has("messages", "compacted") else "0"
        )
        rewound = (
            frozenset(
                r["id"]
                for r in self.r.rows(
                    f"SELECT id, {compacted} AS kept FROM messages{indexed} WHERE active = 0"
                )
                if not r["kept"]
            )
            if self.schema.has("messages", "active")
            else frozenset()
        )
        if not self._skips_hidden_rows():
            return rewound
        return rewound | self._display_hidden_ids()

    def _display_hidden_ids(self) -> frozenset[int]:
        """Ids of the rows Hermes 0.22 never finds (``display_kind = 'hidden'``). No index
        holds display_kind, so the table is read once, then only the rows written since (a
        row's display kind is set when it is written); a file whose newest id went down (a
        file replaced) is read afresh."""
        upto, known = self._display_hidden
        top = self.r.scalar("SELECT MAX(id) FROM messages") or 0
        if top < upto:
            upto, known = 0, frozenset()
        if top > upto:
            found = self.r.column(
                "SELECT id FROM messages WHERE id > ? AND id <= ? AND display_kind = 'hidden'",
                [upto, top],
            )
            known = known | frozenset(found)
            self._display_hidden = (top, known)
        return known

    def _filters(
        self, f: SearchFilters, *, include_inactive: bool = False
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if f.sources:
            clauses.append(f"s.source IN ({sql.in_list(len(f.sources))})")
            params += f.sources
        if f.exclude_sources:
            clauses.append(f"s.source NOT IN ({sql.in_list(len(f.exclude_sources))})")
            params += f.exclude_sources
        if f.roles:
            clauses.append(f"m.role IN ({sql.in_list(len(f.roles))})")
            params += f.roles
        if f.session:
            clauses.append("m.session_id = ?")
            params.append(f.session)
        if f.session_key:
            # A chat's sessions, found on Hermes's (session_key, started_at) index.
            column = sql.col(self.schema, "session_key")
            clauses.append(f"m.session_id IN (SELECT id FROM sessions WHERE {column} = ?)")
            params.append(f.session_key)
        dc, dp = date_range("m.timestamp", f.since, f.until)
        clauses += dc
        params += dp
        if f.exclude_sessions:
            clauses.append("m.session_id NOT IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(f.exclude_sessions)))
        if not include_inactive and self._active_clause():
            clauses.append(self._active_clause())
        return "".join(f" AND {c}" for c in clauses), params

    def _scope_bounds(self, f: SearchFilters) -> tuple[int, int] | None:
        """The first and last message id of the session or chat a search is scoped to, read
        on Hermes's (session_id, timestamp) index; (1, 0) when it has none."""
        if f.session:
            row = self.r.one(
                "SELECT MIN(id) AS lo, MAX(id) AS hi FROM messages WHERE session_id = ?",
                [f.session],
            )
        elif f.session_key and self.schema.has("sessions", "session_key"):
            row = self.r.one(
                "SELECT MIN(m.id) AS lo, MAX(m.id) AS hi FROM messages m WHERE m.session_id IN "
                "(SELECT id FROM sessions WHERE session_key = ?)",
                [f.session_key],
            )
        else:
            return None
        if not row or row["lo"] is None:
            return (1, 0)
        return int(row["lo"]), int(row["hi"])

    def _index_hits(self, table: str, expression: str, most: int) -> int:
        """The expression's hits on the FTS index alone (no row read), up to ``most``."""
        return self.r.scalar(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
            [expression, most],
        )

    def _count(
        self, table: str, expression: str, where: str, params: list[Any], fts_first: bool = False
    ) -> int:
        """Matches, up to RANK_CAP + 1. ``where``: the user's filters, without the active
        clause. Without them the FTS index answers alone: every hit's rowid, less the hidden
        (rewound) ones; with them, a join per hit."""
        if not where:
            hidden = self._hidden_ids()
            if not hidden:
                return self._index_hits(table, expression, RANK_CAP + 1)
            if len(hidden) <= HIDDEN_MAX:
                # The hidden ids go in as one JSON array: SQLite makes a transient index of
                # them once for the NOT IN.
                return self.r.scalar(
                    f"SELECT MIN(COUNT(*), {RANK_CAP + 1}) FROM (SELECT rowid AS id FROM {table} "
                    f"WHERE {table} MATCH ? LIMIT ?) WHERE id NOT IN (SELECT value FROM "
                    "json_each(?))",
                    [expression, RANK_CAP + 1 + len(hidden), _hidden_json(hidden)],
                )
        active = self._active_clause()
        where_all = where + (f" AND {active}" if active else "")
        join = "CROSS JOIN" if fts_first else "JOIN"
        sessions = f" {join} sessions s ON s.id = m.session_id" if "s.source" in where else ""
        counted = (
            f"FROM {table} {join} messages m ON m.id = {table}.rowid{sessions} WHERE {table} "
            f"MATCH ?{where_all}"
        )
        return self.r.scalar(
            f"SELECT COUNT(*) FROM (SELECT 1 {counted} LIMIT {RANK_CAP + 1})", [expression, *params]
        )

    def _ranked_on_index(
        self,
        table: str,
        expression: str,
        where: str,
        params: list[Any],
        offset: int,
        n: int,
        filtered: bool,
    ) -> list[int] | None:
        """A ranked page's ids (PAGE_SIZE + 1 from ``offset``), ranked on the FTS index alone
        and then filtered: joining every hit to its message and session row before ranking
        costs twice the ranking itself (76 ms against 23 for a word with 13,700 hits on a
        million messages). The best hits by (rank, rowid) are read from the index, as many
        as should hold the page once filtered (``n`` of the index's hits pass the filters:
        1.5 times the share that implies, plus 50; without user filters, ``n`` is about all
        of them), and only those are checked against the filters (rewound, the session's
        row, the user's); in that order, the survivors' first ones are the full query's.
        None when too few survive and more hits lie beyond (then the full query answers)."""
        needed = offset + PAGE_SIZE + 1
        if needed > OVERFETCH_MAX:
            return None
        hits = self._index_hits(table, expression, OVERFETCH_HITS) if filtered else n
        wanted = int(needed * max(hits, 1) / max(n, 1) * 1.5) + 50
        if wanted > OVERFETCH_CANDIDATES:
            return None  # filters so narrow that checking candidates would not pay
        candidates = [
            r["id"]
            for r in self.r.rows(
                f"SELECT rowid AS id FROM {table} WHERE {table} MATCH ? "
                "ORDER BY rank, rowid LIMIT ?",
                [expression, wanted + 1],
            )
        ]
        beyond = len(candidates) > wanted  # hits past the candidates exist
        candidates = candidates[:wanted]
        if not candidates:
            return []
        kept = self.scope.passing(candidates, where, params)
        survivors = [i for i in candidates if i in kept]
        if len(survivors) < needed and beyond:
            return None  # the page may hold hits past the candidates: the full query decides
        return survivors[offset:needed]

    # -- FTS routes ------------------------------------------------------------------------

    def prefix_words(self, table: str, expression: str) -> str | None:
        """For a search that is one prefix (PREFIX_TOKEN) on the word index: the OR of the
        words the index holds with that prefix, as an FTS5 expression (None: not such a
        search, no word, or too many words). Read from an fts5vocab table over the index,
        made in this connection's temp schema (never in the file, which is read-only)."""
        m = PREFIX_TOKEN.match(expression)
        if table != "messages_fts" or m is None:
            return None
        prefix = m.group(1).lower()

        def read(raw: sqlite3.Connection) -> list[str]:
            if (
                raw.execute(
                    "SELECT 1 FROM temp.sqlite_master WHERE name = 'logbook_vocab'"
                ).fetchone()
                is None
            ):
                # query_only also guards the temp schema; the file stays read-only (mode=ro).
                raw.execute("PRAGMA query_only = 0")
                try:
                    raw.execute(
                        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.logbook_vocab "
                        "USING fts5vocab(main, 'messages_fts', 'row')"
                    )
                finally:
                    raw.execute("PRAGMA query_only = 1")
            return [
                r[0]
                for r in raw.execute(
                    "SELECT term FROM temp.logbook_vocab WHERE term >= ? AND term < ? LIMIT ?",
                    [prefix, prefix + "\U0010ffff", PREFIX_WORDS_MAX + 1],
                )
            ]

        try:
            words = self.r.run(read)
        except LogbookDBError as exc:
            if exc.status == 503:
                raise
            return None
        if not words or len(words) > PREFIX_WORDS_MAX:
            return None
        return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)

    def valid_match(self, table: str, expression: str) -> str | None:
        """None when FTS5 accepts the expression, else SQLite's reason."""
        if PREFIX_TOKEN.match(expression):
            return None  # one prefix of letters and digits: always a valid expression
        try:
            self.r.rows(f"SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT 1", [expression])
            return None
        except LogbookDBError as exc:
            if exc.status == 503:  # took too long: that is no verdict on the syntax
                raise
            return exc.message
        except sqlite3.Error as exc:
            return str(exc)

    def fts(
        self,
        table: str,
        expression: str,
        f: SearchFilters,
        page: int,
        literal_terms: list[str] | None = None,
        sort: str | None = None,
    ) -> SearchResult:
        """A page of the expression's hits: ranked by bm25 (rank, then id), or with ``sort``
        ("newest" / "oldest", Hermes 0.20+) by time, then rank."""
        user_where, params = self._filters(f, include_inactive=True)
        if literal_terms:
            # The literal fallback: every word as typed must be in the message (an FTS5
            # phrase ignores punctuation, so "100%" would also match a bare "100").
            like_sql, like_params = self.substring.like_clauses(literal_terms, any_term=False)
            user_where += f" AND {like_sql}"
            params = [*params, *like_params]
        active = self._active_clause()
        # The user's filters in SQL that any message row can be checked against.
        row_where = user_where + (f" AND {active}" if active else "")
        row_params = list(params)
        bounds = self._scope_bounds(f)
        if bounds is not None:
            # A search within one session (or chat) reads only the index's entries between
            # its first and last message id: FTS5 seeks to them, so a prefix that expands to
            # half the vocabulary costs what the session holds, not what the file holds.
            # (Naming the FTS table here also keeps the ranked-on-index route, which reads
            # the whole index, out of it.)
            user_where += f" AND {table}.rowid BETWEEN ? AND ?"
            params = [*params, *bounds]
        active = self._active_clause()
        where = user_where + (f" AND {active}" if active else "")
        # Scoped to a session, the index is read first within the session's ids: SQLite
        # would otherwise start from the session's messages and run the whole MATCH again
        # for each of them (3.3 s against 40 ms for the* in a 5,000-message session).
        join = "CROSS JOIN" if bounds is not None else "JOIN"
        base = (
            f"FROM {table} {join} messages m ON m.id = {table}.rowid "
            f"{join} sessions s ON s.id = m.session_id WHERE {table} MATCH ?{where}"
        )
        offset = (page - 1) * PAGE_SIZE
        # One prefix: counted (and paged newest first) as the OR of its words.
        wide = (
            self.prefix_words(table, expression) if not literal_terms and bounds is None else None
        )
        one_pass = None
        ids: list[int] | None
        if not literal_terms and not sort:
            if bounds is not None:
                one_pass = self.scope.in_scope(
                    table, expression, bounds, f, row_where, row_params, offset
                )
            else:
                one_pass = self.scope.by_source(table, expression, f, where, params, offset, wide)
        if one_pass is not None:
            n, ids = one_pass
        else:
            n = self._count(
                table, wide or expression, user_where, params, fts_first=bounds is not None
            )
            ids = (
                self._ranked_on_index(table, expression, where, params, offset, n, bool(user_where))
                if n <= RANK_CAP and table not in where and not sort
                else None
            )
        ranked = n <= RANK_CAP
        if sort:
            way = "ASC" if sort == "oldest" else "DESC"
            # Past RANK_CAP, by id (the order messages were written in) rather than sorting
            # every match by its time.
            order = f"m.timestamp {way}, {table}.rank, m.id" if ranked else f"{table}.rowid {way}"
        else:
            order = f"{table}.rank, m.id" if ranked else f"{table}.rowid DESC"
        if ids is None:
            ids = [
                r["id"]
                for r in self.r.rows(
                    f"SELECT m.id AS id {base} ORDER BY {order} LIMIT ? OFFSET ?",
                    [expression if ranked or not wide else wide, *params, PAGE_SIZE + 1, offset],
                )
            ]
        has_more = len(ids) > PAGE_SIZE and offset + PAGE_SIZE < MAX_RESULTS
        ids = ids[:PAGE_SIZE]
        snippets = self.reading.snippets(table, expression, ids) if ids else {}
        rows = self.reading.hydrate(ids)
        for row in rows:
            row["snippet"] = snippets.get(row["message_id"], "")
        if ranked:
            notices = []
        elif sort:
            notices = [
                f"More than {RANK_CAP:,} messages match, so they are listed in the order they "
                f"were written ({sort} first) rather than sorted by their times."
            ]
        else:
            notices = [
                f"More than {RANK_CAP:,} messages match, so they are shown newest first instead of "
                "ranked by relevance. Add words or filters to rank them."
            ]
        return SearchResult(
            rows, min(n, RANK_CAP), n > RANK_CAP, ranked and not sort, has_more, notices
        )


def run(store: SearchStore, plan: Plan, f: SearchFilters, page: int) -> tuple[SearchResult, str]:
    """Answer a plan; returns the result and what was really searched."""
    if page < 1 or (page - 1) * PAGE_SIZE >= MAX_RESULTS:
        raise BadRequest(f"page must be between 1 and {MAX_RESULTS // PAGE_SIZE}.")
    if plan.dialect == "v26":  # Hermes 0.20 / 0.22
        from webui.db.search.newer import run_newer

        return run_newer(store, plan, f, page)
    notices = list(plan.notices)
    searched = plan.searched
    if plan.route == "none":
        return SearchResult([], 0, False, False, False, notices), searched
    if plan.route in ("fts", "trigram"):
        way = resolve(store, plan, notices)
        if way.route == "like":
            result = store.substring.like(way.terms, f, page, any_term=True, include_inactive=True)
            result.notices = [n for n in notices + result.notices if n]
            store.reading.contexts(result.rows)
            return result, searched
        if way.route == "none":
            return SearchResult([], 0, False, False, False, notices), searched
        table, expression, literal = way.table, way.expression, way.literal
        searched = way.searched or searched
        result = store.fts(table, expression, f, page, literal_terms=literal)
    else:
        if plan.sanitize_note:
            notices.append(plan.sanitize_note)
        result = store.substring.like(
            plan.terms, f, page, any_term=plan.like_any, include_inactive=plan.like_inactive
        )
        if plan.like_any and page == 1:
            store.substring.learn_recent_bound()  # for the next search of this kind (like_recent)
    return _finish(store, result, notices), searched


@dataclass
class Way:
    """How one store answers a plan: its FTS table and expression (``literal``: the words
    that must also be in the message, for the literal fallback), or the substring route."""

    route: str  # "fts", "like" or "none"
    table: str = ""
    expression: str = ""
    literal: list[str] | None = None
    terms: list[str] = field(default_factory=list)
    searched: str = ""


def resolve(store: SearchStore, plan: Plan, notices: list[str]) -> Way:
    """For an FTS plan: the expression this store runs (the plan's, or its literal fallback
    when FTS5 refuses it), adding to ``notices`` what was changed and why."""
    table = "messages_fts" if plan.route == "fts" else "messages_fts_trigram"
    expression = plan.match
    problem = store.valid_match(table, expression)
    if problem and plan.route == "trigram" and plan.trigram_error_terms:
        notices.append(
            f"“{plan.typed or plan.searched}” cannot be read as a search "
            f"({explain_fts_problem(problem)}), so, as Hermes 0.19 does, the messages "
            "holding any of its words are listed, newest first."
        )
        return Way("like", terms=list(plan.trigram_error_terms))
    if problem:
        why = explain_fts_problem(problem)
        typed = plan.typed or plan.searched
        if not plan.fallback:
            notices.append(f"“{typed}” cannot be read as a search: {why}.")
            return Way("none")
        hermes = "Hermes 0.19" if plan.dialect == "v22" else "Hermes"
        words = plan.literal_terms or typed.split()
        notices.append(
            f"{hermes} finds nothing for “{typed}” ({why}), so Logbook looked for "
            f"messages holding each word as you typed it: {', '.join(f'“{w}”' for w in words)}."
        )
        return Way("fts", table, plan.fallback, plan.literal_terms, searched=plan.fallback)
    if plan.sanitize_note:
        notices.append(plan.sanitize_note)
    return Way("fts", table, expression)


def run_recent(
    store: SearchStore, plan: Plan, f: SearchFilters, page: int
) -> tuple[SearchResult, str] | None:
    """A substring search's first page from the newest messages alone, when they prove it
    (see SearchStore.like_recent); None otherwise. Cheap: needs no search slot."""
    if plan.route != "like" or page != 1 or len(plan.terms) > RECENT_TERMS:
        return None
    result = store.substring.like_recent(
        plan.terms,
        f,
        any_term=plan.like_any,
        include_inactive=plan.like_inactive,
        ties="ASC" if plan.dialect == "v26" else "DESC",
    )
    if result is None:
        return None
    notices = list(plan.notices) + ([plan.sanitize_note] if plan.sanitize_note else [])
    return _finish(store, result, notices), plan.searched


def _finish(store: SearchStore, result: SearchResult, notices: list[str]) -> SearchResult:
    result.notices = [n for n in notices + result.notices if n]
    store.reading.contexts(result.rows)
    for row in result.rows:
        if row.get("snippet") is None:
            continue
        if row.get("role") == "tool" or row.get("tool_calls"):
            # kept (bounded) so that a hit in a JSON tool result can name its field
            row["_text"] = (row.get("_text") or "")[:200_000]
        else:
            row.pop("_text", None)
    return result
