"""SQL for full-text search over messages.

Routes follow Hermes's own ``search_messages`` (reference §3): FTS5 ``messages_fts`` ranked
by bm25, the trigram table for CJK, substrings (LIKE) where no index can answer. Two things
differ on purpose:

* Big match sets. Ranking every match of a very common word means scoring hundreds of
  thousands of rows. Logbook first counts matches (up to RANK_CAP); above it, results come
  newest first (FTS5 walks its doclists in rowid order and stops after a page) and a notice
  says so. Below it they are ranked by bm25 exactly as Hermes ranks them.
* Two phases. Page ids are chosen first (no snippets); ``snippet()`` then runs for the 50 rows
  on the page only, instead of for every row the sorter sees, in an in-memory mirror of those
  rows (webui.db.snippets) so that a prefix is not expanded over the whole index again.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from webui.db import sql
from webui.db.errors import BadRequest, LogbookDBError
from webui.db.reader import Reader
from webui.db.sessions import date_range, like_escape
from webui.db.snippets import mirror_declaration
from webui.db.snippets import snippets as mirror_snippets
from webui.db.source_map import SourceMap
from webui.hermes.content import plain_text
from webui.hermes.origin import ORIGIN_COLUMNS
from webui.hermes.search import Plan, explain_fts_problem

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
# The ids of hidden (rewound) messages, shared this long between searches; more of them than
# HIDDEN_MAX and counts join per hit instead.
HIDDEN_TTL_S = 10.0
HIDDEN_MAX = 50_000


# A search that is one prefix of letters and digits (``deploy*``: one token for FTS5's
# unicode61 tokenizer, lower-cased by it) is counted and paged newest first through the OR of
# the words the index holds with that prefix: FTS5 merges the words' doclists as it reads
# them, where a prefix query first gathers every match of every word (10 ms for deploy* on
# ten million messages, in each statement: 0.2 ms as an OR). Same matches; the bm25 ranking
# (of up to RANK_CAP matches) keeps the prefix, which FTS5 scores as one phrase.
PREFIX_TOKEN = re.compile(r"^([A-Za-z0-9]+)\*$")
PREFIX_WORDS_MAX = 64


@functools.lru_cache(maxsize=4)
def _hidden_json(ids: frozenset[int]) -> str:
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


@dataclass
class SearchResult:
    rows: list[dict[str, Any]]
    total: int
    capped: bool
    ranked: bool
    has_more: bool
    notices: list[str]


class SearchStore:
    def __init__(
        self,
        reader: Reader,
        shared: Callable[..., Any] | None = None,
        sources: SourceMap | None = None,
    ):
        self.r = reader
        self.schema = reader.schema
        # Each message's source, for searches filtered by source (_by_source).
        self.sources = sources
        # SessionStore.shared: one computation for a crowd, refreshed behind the requests.
        self._shared = shared or (lambda name, compute, ttl: compute())
        # floor id -> the newest timestamp of the messages up to it. Messages are appended
        # with growing ids and never re-dated, so a value stays an upper bound (deleting
        # rows can only lower the truth): kept for the process.
        self._older_newest: dict[int, Any] = {}

    # -- filters -------------------------------------------------------------------------

    def _active_clause(self) -> str:
        """Messages undone by /rewind are not part of the conversation any more; Hermes 0.19
        keeps compacted ones searchable (active = 1 OR compacted = 1)."""
        if not self.schema.has("messages", "active"):
            return ""
        keep = "COALESCE(m.active, 1) != 0"
        if self.schema.has("messages", "compacted"):
            keep = f"({keep} OR m.compacted = 1)"
        return keep

    def _hidden_ids(self) -> frozenset[int]:
        """Ids of the messages the active clause leaves out (rewound, not compacted): few, so
        an unfiltered search is counted on the FTS index without a join per hit. Finding them
        reads the whole (session_id, active, timestamp) index (~0.2 s on a million messages),
        so they are shared: computed once for a crowd, refreshed in the background after
        HIDDEN_TTL_S while the previous set is served, recomputed after Logbook's own changes.
        Only counts use it; the rows shown are always filtered in SQL."""
        if not self._active_clause():
            return frozenset()
        return self._shared("hidden-ids", self._read_hidden_ids, HIDDEN_TTL_S)

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
        return frozenset(
            r["id"]
            for r in self.r.rows(
                f"SELECT id, {compacted} AS kept FROM messages{indexed} WHERE active = 0"
            )
            if not r["kept"]
        )

    def _filters(
        self, f: SearchFilters, *, include_inactive: bool = False
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if f.sources:
            clauses.append(f"s.source IN ({','.join('?' * len(f.sources))})")
            params += f.sources
        if f.exclude_sources:
            clauses.append(f"s.source NOT IN ({','.join('?' * len(f.exclude_sources))})")
            params += f.exclude_sources
        if f.roles:
            clauses.append(f"m.role IN ({','.join('?' * len(f.roles))})")
            params += f.roles
        if f.session:
            clauses.append("m.session_id = ?")
            params.append(f.session)
        if f.session_key:
            # A chat's sessions, found on Hermes's (session_key, started_at) index.
            column = "session_key" if self.schema.has("sessions", "session_key") else "NULL"
            clauses.append(f"m.session_id IN (SELECT id FROM sessions WHERE {column} = ?)")
            params.append(f.session_key)
        dc, dp = date_range("m.timestamp", f.since, f.until)
        clauses += dc
        params += dp
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
        kept = self._passing(candidates, where, params)
        survivors = [i for i in candidates if i in kept]
        if len(survivors) < needed and beyond:
            return None  # the page may hold hits past the candidates: the full query decides
        return survivors[offset:needed]

    def _by_source(
        self,
        table: str,
        expression: str,
        f: SearchFilters,
        where: str,
        params: list[Any],
        offset: int,
        wide: str | None = None,
    ) -> tuple[int, list[int]] | None:
        """(matches, the page's ids and one more) for a search filtered by source alone,
        with every hit's source read from the in-memory map (webui.db.source_map) inside
        the FTS statement: the hits that pass are counted and only they are ranked, instead
        of joining every hit to its message and session row to count it and then ranking
        every hit of the index. Same order as the full query: (rank, id), or newest first
        past RANK_CAP. None when this route cannot answer (other filters, no map yet, too
        many hidden messages, or a page the map got wrong): the full query does."""
        if self.sources is None or not (f.sources or f.exclude_sources):
            return None
        if f.roles or f.session or f.session_key or f.since or f.until:
            return None
        hidden = self._hidden_ids()
        if len(hidden) > HIDDEN_MAX or not self.sources.current():
            return None
        keep = self.sources.keep(f.sources, f.exclude_sources)
        cap = RANK_CAP + 1 + len(hidden)

        def matches(
            raw: sqlite3.Connection, statement: str, *args: Any, ranking: bool = False
        ) -> list[tuple]:
            # Ranked by the expression itself; counted and paged by its words (``wide``).
            raw.create_function("logbook_keep", 1, keep.test)
            match = expression if ranking or not wide else wide
            return raw.execute(statement, [match, *args]).fetchall()

        passing = f"FROM {table} WHERE {table} MATCH ? AND logbook_keep(rowid)"
        # Ranked in one pass when the hits that pass should be well under the cap: the
        # index's hits are counted (on the index alone) up to the number at which, by the
        # share of messages that pass, they would reach half of it. Otherwise they are
        # counted first, and ranked only if they are under the cap.
        expect_under = min(OVERFETCH_HITS, int(RANK_CAP / 2 / max(keep.share, 1e-9)))
        every = self._index_hits(table, wide or expression, max(expect_under, RANK_CAP) + 1)
        if every <= max(expect_under, RANK_CAP):
            ranked = self.r.run(
                lambda raw: matches(raw, f"SELECT rank, rowid {passing} LIMIT ?", cap, ranking=True)
            )
            hits = [i for _, i in ranked]
            if len(hits) >= cap:  # more than expected: counted below, newest first
                ranked = None
        else:
            ranked = None
            hits = [
                r[0]
                for r in self.r.run(
                    lambda raw: matches(raw, f"SELECT rowid {passing} LIMIT ?", cap)
                )
            ]
        # Hits newer than the map (written since it caught up) are checked in SQL.
        unknown = [i for i in hits if i > keep.top]
        wrong = set(unknown) - self._passing(unknown, where, params) if unknown else set()
        left_out = hidden | wrong
        n = sum(1 for i in hits if i not in left_out)
        if n <= RANK_CAP:
            if ranked is None:
                ranked = self.r.run(
                    lambda raw: matches(raw, f"SELECT rank, rowid {passing}", ranking=True)
                )
            ranked.sort()
            ordered = [i for _, i in ranked if i not in left_out]
        else:  # newest first, as the full query orders a match set this large
            newest = self.r.run(
                lambda raw: matches(
                    raw,
                    f"SELECT rowid {passing} ORDER BY rowid DESC LIMIT ?",
                    offset + PAGE_SIZE + 1 + len(left_out),
                )
            )
            ordered = [r[0] for r in newest if r[0] not in left_out]
        page = ordered[offset : offset + PAGE_SIZE + 1]
        # The rows shown are checked against every filter in SQL (the hidden ids are shared
        # for a few seconds; a message rewound since then must not be shown).
        if page and len(self._passing(page, where, params)) != len(page):
            return None
        return n, page

    def _in_scope(
        self,
        table: str,
        expression: str,
        bounds: tuple[int, int],
        f: SearchFilters,
        where: str,
        params: list[Any],
        offset: int,
    ) -> tuple[int, list[int]]:
        """(matches, the page's ids and one more) for a search scoped to one session or
        chat, with the index read once: every hit between the scope's first and last message
        id with its rank, kept when the message is the scope's own (and shown), checked
        against any other filter in SQL. Same order as the full query: (rank, id), or newest
        first past RANK_CAP. A prefix that expands to half the vocabulary is expanded once,
        as in the same search over everything, not once to count and once to rank."""
        column = "session_key" if self.schema.has("sessions", "session_key") else "NULL"
        scope, scope_params = (
            ("session_id = ?", [f.session])
            if f.session
            else (f"session_id IN (SELECT id FROM sessions WHERE {column} = ?)", [f.session_key])
        )
        active = self._active_clause().replace("m.", "")
        own = {
            r["id"]
            for r in self.r.rows(
                f"SELECT id FROM messages WHERE {scope}{f' AND {active}' if active else ''}",
                scope_params,
            )
        }
        hits = [
            (rank, rowid)
            for rank, rowid in self.r.run(
                lambda raw: raw.execute(
                    f"SELECT rank, rowid FROM {table} WHERE {table} MATCH ? "
                    "AND rowid BETWEEN ? AND ?",
                    [expression, *bounds],
                ).fetchall()
            )
            if rowid in own
        ]
        others = f.roles or f.since or f.until or f.sources or f.exclude_sources
        if others and hits:
            kept = self._passing([i for _, i in hits], where, params)
            hits = [h for h in hits if h[1] in kept]
        n = len(hits)
        ordered = (
            [i for _, i in sorted(hits)]
            if n <= RANK_CAP
            else sorted((i for _, i in hits), reverse=True)
        )
        return n, ordered[offset : offset + PAGE_SIZE + 1]

    def _passing(self, ids: list[int], where: str, params: list[Any]) -> set[int]:
        """Those of ``ids`` whose message and session pass ``where`` (the filters in SQL)."""
        return {
            r["id"]
            for r in self.r.rows(
                # CROSS JOIN keeps this order: from the ids to their rows, never from a
                # filtered source's sessions to all their messages.
                "SELECT m.id AS id FROM json_each(?) c CROSS JOIN messages m ON m.id = c.value "
                f"CROSS JOIN sessions s ON s.id = m.session_id WHERE 1{where}",
                [json.dumps(ids), *params],
            )
        }

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
    ) -> SearchResult:
        user_where, params = self._filters(f, include_inactive=True)
        if literal_terms:
            # The literal fallback: every word as typed must be in the message (an FTS5
            # phrase ignores punctuation, so "100%" would also match a bare "100").
            like_sql, like_params = self._like_clauses(literal_terms, any_term=False)
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
        if not literal_terms:
            if bounds is not None:
                one_pass = self._in_scope(
                    table, expression, bounds, f, row_where, row_params, offset
                )
            else:
                one_pass = self._by_source(table, expression, f, where, params, offset, wide)
        if one_pass is not None:
            n, ids = one_pass
        else:
            n = self._count(
                table, wide or expression, user_where, params, fts_first=bounds is not None
            )
            ids = (
                self._ranked_on_index(table, expression, where, params, offset, n, bool(user_where))
                if n <= RANK_CAP and table not in where
                else None
            )
        ranked = n <= RANK_CAP
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
        snippets = self._snippets(table, expression, ids) if ids else {}
        rows = self._hydrate(ids)
        for row in rows:
            row["snippet"] = snippets.get(row["message_id"], "")
        notices = (
            []
            if ranked
            else [
                f"More than {RANK_CAP:,} messages match, so they are shown newest first instead of "
                "ranked by relevance. Add words or filters to rank them."
            ]
        )
        return SearchResult(rows, min(n, RANK_CAP), n > RANK_CAP, ranked, has_more, notices)

    # -- substring route -----------------------------------------------------------------

    def _like_clauses(self, terms: list[str], *, any_term: bool) -> tuple[str, list[Any]]:
        """Each term as a substring of the content, tool name or tool calls; ALL terms or ANY."""
        columns = ["m.content"] if self.schema.has("messages", "content") else []
        if self.schema.has("messages", "tool_name"):
            columns.append("m.tool_name")
        if self.schema.has("messages", "tool_calls"):
            columns.append("m.tool_calls")
        if not columns:
            return "0", []
        clauses: list[str] = []
        like_params: list[Any] = []
        for term in terms:
            pattern = f"%{like_escape(term)}%"
            clauses.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in columns) + ")")
            like_params += [pattern] * len(columns)
        return "(" + (" OR " if any_term else " AND ").join(clauses) + ")", like_params

    def like(
        self,
        terms: list[str],
        f: SearchFilters,
        page: int,
        *,
        any_term: bool = False,
        include_inactive: bool = False,
        id_floor: int | None = None,
    ) -> SearchResult:
        if not terms:
            return SearchResult([], 0, False, False, False, [])
        where, params = self._filters(f, include_inactive=include_inactive)
        if id_floor is not None:
            where += " AND m.id > ?"
            params.append(id_floor)
        like_sql, like_params = self._like_clauses(terms, any_term=any_term)
        base = f"FROM messages m JOIN sessions s ON s.id = m.session_id WHERE {like_sql}{where}"
        offset = (page - 1) * PAGE_SIZE
        # Newest first. By id, the scan walks the table backwards and stops after one page;
        # Hermes 0.19 orders by timestamp (clocks can jump back), which needs the whole scan.
        order = "m.timestamp DESC, m.id DESC" if any_term else "m.id DESC"
        ids = [
            r["id"]
            for r in self.r.rows(
                f"SELECT m.id AS id {base} ORDER BY {order} LIMIT ? OFFSET ?",
                [*like_params, *params, PAGE_SIZE + 1, offset],
            )
        ]
        has_more = len(ids) > PAGE_SIZE and offset + PAGE_SIZE < MAX_RESULTS
        ids = ids[:PAGE_SIZE]
        rows = self._hydrate(ids)
        for row in rows:
            # No snippet() on this route: presentation cuts one around the terms.
            row["snippet"] = None
            row["match_terms"] = terms
        total = offset + len(rows) + (1 if has_more else 0)
        return SearchResult(rows, total, has_more, False, has_more, [])

    def _recent_floor(self) -> int | None:
        top = self.r.scalar("SELECT MAX(id) FROM messages") or 0
        floor = (top - RECENT_WINDOW) // RECENT_STEP * RECENT_STEP
        return floor if floor > 0 else None

    def learn_recent_bound(self) -> None:
        """Read the newest timestamp of the messages below the current floor, once (a scan
        of them: run it where a substring search already holds a search slot)."""
        floor = self._recent_floor()
        if floor is not None and floor not in self._older_newest:
            try:
                newest = self.r.scalar("SELECT MAX(timestamp) FROM messages WHERE id <= ?", [floor])
            except LogbookDBError:
                return  # out of this request's time: a later search learns it
            if len(self._older_newest) > 64:
                self._older_newest.clear()
            self._older_newest[floor] = newest

    def like_recent(
        self, terms: list[str], f: SearchFilters, *, any_term: bool, include_inactive: bool
    ) -> SearchResult | None:
        """The first page of a substring search from the newest messages alone, or None when
        they cannot prove it is the whole answer's first page (then search everything)."""
        floor = self._recent_floor()
        if floor is None:
            return None
        bound = self._older_newest.get(floor) if any_term else None
        if any_term and not isinstance(bound, (int, float)):
            return None  # not learnt yet, or text timestamps: SQLite orders text above numbers
        result = self.like(
            terms, f, 1, any_term=any_term, include_inactive=include_inactive, id_floor=floor
        )
        if not result.has_more:
            return None  # fewer than a page up there: the rest may be anywhere below
        if any_term:
            last = result.rows[-1].get("timestamp") if result.rows else None
            # Timestamp order: every older message must sort after the page's last hit.
            if not isinstance(last, (int, float)) or bound > last:
                return None
        return result

    # -- shared --------------------------------------------------------------------------

    @property
    def _content(self) -> str:
        return "m.content" if self.schema.has("messages", "content") else "NULL"

    def _snippets(self, table: str, expression: str, ids: list[int]) -> dict[int, str]:
        """rowid -> snippet for a page's hits: from a mirror of the page's rows
        (webui.db.snippets) when the table's declaration can be copied, else from the table."""
        declaration = mirror_declaration(
            self.r.scalar("SELECT sql FROM sqlite_master WHERE name = ?", [table]) or ""
        )
        if declaration is not None:
            docs = self.r.rows(
                f"SELECT rowid AS id, * FROM {table} WHERE rowid IN ({sql.in_list(len(ids))})",
                ids,
            )
            try:
                return mirror_snippets(
                    declaration, docs, expression, (MARK_START, MARK_END), SNIPPET_TOKENS
                )
            except sqlite3.Error:
                pass  # the table itself answers (and a passed deadline is reported there)
        select = (
            f"SELECT rowid AS id, snippet({table}, 0, ?, ?, '...', {SNIPPET_TOKENS}) "
            f"AS snippet FROM {table} WHERE {table} MATCH ? AND "
        )
        # snippet() for "rowid IN (…)" evaluates the query once per id, which for a prefix
        # (deploy*) means expanding it each time. When the page's ids lie in a range holding
        # few other matches (newest-first pages are consecutive matches, less the
        # filtered-out ones), one scan of that range does it in a single pass.
        in_range = self.r.scalar(
            f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH ? AND rowid BETWEEN ? AND ?",
            [expression, min(ids), max(ids)],
        )
        if in_range > max(4 * len(ids), RANGE_SNIPPETS if "*" in expression else 0):
            rows = self.r.rows(
                select + f"rowid IN ({','.join('?' * len(ids))})",
                [MARK_START, MARK_END, expression, *ids],
            )
        else:
            wanted = set(ids)
            rows = [
                r
                for r in self.r.rows(
                    select + "rowid BETWEEN ? AND ?",
                    [MARK_START, MARK_END, expression, min(ids), max(ids)],
                )
                if r["id"] in wanted
            ]
        return {r["id"]: r["snippet"] for r in rows}

    def _hydrate(self, ids: list[int]) -> list[dict[str, Any]]:
        if not ids:
            return []
        content = self._content
        title = "s.title" if self.schema.has("sessions", "title") else "NULL"
        model = "s.model" if self.schema.has("sessions", "model") else "NULL"
        tool_calls = "m.tool_calls" if self.schema.has("messages", "tool_calls") else "NULL"
        tool_name = "m.tool_name" if self.schema.has("messages", "tool_name") else "NULL"
        rows = self.r.rows(
            f"SELECT m.id AS message_id, m.session_id AS session_id, m.role AS role, "
            f"m.timestamp AS timestamp, {tool_name} AS tool_name, {tool_calls} AS tool_calls, "
            f"{content} AS _text, s.source AS source, {model} AS model, {title} AS session_title, "
            # An untitled session is named by its first user message, as in the list.
            f"CASE WHEN {title} IS NULL THEN (SELECT substr({content.replace('m.', 'p.')}, 1, 300) FROM messages p "
            f"WHERE p.session_id = s.id AND p.role = 'user' ORDER BY p.timestamp, p.id LIMIT 1) "
            f"END AS session_preview, "
            f"s.started_at AS session_started, {self._origin_columns()} FROM messages m "
            "JOIN sessions s ON "
            f"s.id = m.session_id WHERE m.id IN ({','.join('?' * len(ids))})",
            ids,
        )
        by_id = {r["message_id"]: r for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def _origin_columns(self) -> str:
        """Where each hit's conversation came from (schema 22; NULL before)."""
        return ", ".join(f"{sql.col(self.schema, c, 's')} AS {c}" for c in ORIGIN_COLUMNS)

    def contexts(self, rows: list[dict[str, Any]]) -> None:
        """Set each hit's ``context``: the message before it, itself and the one after, in its
        session, as Hermes returns them. One statement for the whole page of hits."""
        if not rows:
            return
        content = self._content
        values = ", ".join("(?, ?, ?)" for _ in rows)
        params = [x for r in rows for x in (r["message_id"], r["session_id"], r["timestamp"])]
        neighbours = self.r.rows(
            f"WITH hits(hid, sid, ts) AS (VALUES {values}), "
            "near AS (SELECT hid, "
            " (SELECT m.id FROM messages m WHERE m.session_id = h.sid AND (m.timestamp, m.id) < "
            "  (h.ts, h.hid) ORDER BY m.timestamp DESC, m.id DESC LIMIT 1) AS before_id, "
            " (SELECT m.id FROM messages m WHERE m.session_id = h.sid AND (m.timestamp, m.id) > "
            "  (h.ts, h.hid) ORDER BY m.timestamp, m.id LIMIT 1) AS after_id FROM hits h) "
            f"SELECT n.hid AS hid, n.side AS side, m.role AS role, {content} AS content FROM ("
            " SELECT hid, 0 AS side, before_id AS mid FROM near UNION ALL "
            " SELECT hid, 1 AS side, after_id AS mid FROM near) n "
            "JOIN messages m ON m.id = n.mid",
            params,
        )
        by_hit: dict[Any, dict[int, dict[str, str]]] = {}
        for n in neighbours:
            by_hit.setdefault(n["hid"], {})[n["side"]] = {
                "role": n["role"],
                "content": plain_text(n["content"], 200) if n["content"] else "",
            }
        for row in rows:
            near = by_hit.get(row["message_id"], {})
            current = {"role": row["role"], "content": plain_text(row.get("_text") or "", 200)}
            row["context"] = (
                ([near[0]] if 0 in near else []) + [current] + ([near[1]] if 1 in near else [])
            )


def run(store: SearchStore, plan: Plan, f: SearchFilters, page: int) -> tuple[SearchResult, str]:
    """Answer a plan; returns the result and what was really searched."""
    if page < 1 or (page - 1) * PAGE_SIZE >= MAX_RESULTS:
        raise BadRequest(f"page must be between 1 and {MAX_RESULTS // PAGE_SIZE}.")
    notices = list(plan.notices)
    searched = plan.searched
    if plan.route == "none":
        return SearchResult([], 0, False, False, False, notices), searched
    if plan.route in ("fts", "trigram"):
        table = "messages_fts" if plan.route == "fts" else "messages_fts_trigram"
        expression = plan.match
        problem = store.valid_match(table, expression)
        literal: list[str] | None = None
        if problem and plan.route == "trigram" and plan.trigram_error_terms:
            notices.append(
                f"“{plan.typed or plan.searched}” cannot be read as a search "
                f"({explain_fts_problem(problem)}), so, as Hermes 0.19 does, the messages "
                "holding any of its words are listed, newest first."
            )
            result = store.like(
                plan.trigram_error_terms, f, page, any_term=True, include_inactive=True
            )
            result.notices = [n for n in notices + result.notices if n]
            store.contexts(result.rows)
            return result, searched
        if problem:
            why = explain_fts_problem(problem)
            typed = plan.typed or plan.searched
            if not plan.fallback:
                notices.append(f"“{typed}” cannot be read as a search: {why}.")
                return SearchResult([], 0, False, False, False, notices), searched
            hermes = "Hermes 0.19" if plan.dialect == "v22" else "Hermes"
            words = plan.literal_terms or typed.split()
            notices.append(
                f"{hermes} finds nothing for “{typed}” ({why}), so Logbook looked for "
                f"messages holding each word as you typed it: {', '.join(f'“{w}”' for w in words)}."
            )
            expression = searched = plan.fallback
            literal = plan.literal_terms
        elif plan.sanitize_note:
            notices.append(plan.sanitize_note)
        result = store.fts(table, expression, f, page, literal_terms=literal)
    else:
        if plan.sanitize_note:
            notices.append(plan.sanitize_note)
        result = store.like(
            plan.terms, f, page, any_term=plan.like_any, include_inactive=plan.like_inactive
        )
        if plan.like_any and page == 1:
            store.learn_recent_bound()  # for the next search of this kind (like_recent)
    return _finish(store, result, notices), searched


def run_recent(
    store: SearchStore, plan: Plan, f: SearchFilters, page: int
) -> tuple[SearchResult, str] | None:
    """A substring search's first page from the newest messages alone, when they prove it
    (see SearchStore.like_recent); None otherwise. Cheap: needs no search slot."""
    if plan.route != "like" or page != 1 or len(plan.terms) > RECENT_TERMS:
        return None
    result = store.like_recent(
        plan.terms, f, any_term=plan.like_any, include_inactive=plan.like_inactive
    )
    if result is None:
        return None
    notices = list(plan.notices) + ([plan.sanitize_note] if plan.sanitize_note else [])
    return _finish(store, result, notices), plan.searched


def _finish(store: SearchStore, result: SearchResult, notices: list[str]) -> SearchResult:
    result.notices = [n for n in notices + result.notices if n]
    store.contexts(result.rows)
    for row in result.rows:
        if row.get("snippet") is None:
            continue
        if row.get("role") == "tool" or row.get("tool_calls"):
            # kept (bounded) so that a hit in a JSON tool result can name its field
            row["_text"] = (row.get("_text") or "")[:200_000]
        else:
            row.pop("_text", None)
    return result
