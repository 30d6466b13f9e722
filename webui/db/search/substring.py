"""The substring route: searches the index cannot answer (short CJK words, invalid FTS5 read
literally, databases without an FTS table) as LIKE scans, bounded, and answered from the
newest messages first when they prove the page. SearchStore holds one (``search.substring``)."""

from __future__ import annotations

from typing import Any

from webui import keep
from webui.db.errors import LogbookDBError
from webui.db.search.basics import SearchBasics
from webui.db.search.limits import (
    MAX_RESULTS,
    PAGE_SIZE,
    RECENT_STEP,
    RECENT_WINDOW,
    SearchFilters,
    SearchResult,
)
from webui.db.sessions.store import like_escape


class SubstringRoute:
    """LIKE searches."""

    def __init__(self, basics: SearchBasics):
        # The file's reader, filters and reads of hits (webui.db.search.basics).
        self.basics = basics
        self.r = basics.r
        self.schema = basics.schema
        # floor id -> the newest timestamp of the messages up to it. Messages are appended
        # with growing ids and never re-dated, so a value stays an upper bound (deleting
        # rows can only lower the truth): kept for the process, whatever changes.
        self._older_newest = keep.VersionedCache(64)

    # -- substring route -----------------------------------------------------------------

    def like_clauses(self, terms: list[str], *, any_term: bool) -> tuple[str, list[Any]]:
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
        ties: str = "DESC",
    ) -> SearchResult:
        """A page of the messages holding ALL ``terms`` (or ANY: newest first by time, then
        id in ``ties`` order: Hermes 0.20+ scans in id order and sorts by time alone, so its
        equal times come oldest id first)."""
        if not terms:
            return SearchResult([], 0, False, False, False, [])
        where, params = self.basics.filters(f, include_inactive=include_inactive)
        if id_floor is not None:
            where += " AND m.id > ?"
            params.append(id_floor)
        like_sql, like_params = self.like_clauses(terms, any_term=any_term)
        base = f"FROM messages m JOIN sessions s ON s.id = m.session_id WHERE {like_sql}{where}"
        offset = (page - 1) * PAGE_SIZE
        # Newest first. By id, the scan walks the table backwards and stops after one page;
        # Hermes 0.19 orders by timestamp (clocks can jump back), which needs the whole scan.
        order = f"m.timestamp DESC, m.id {ties}" if any_term else "m.id DESC"
        ids = [
            r["id"]
            for r in self.r.rows(
                f"SELECT m.id AS id {base} ORDER BY {order} LIMIT ? OFFSET ?",
                [*like_params, *params, PAGE_SIZE + 1, offset],
            )
        ]
        has_more = len(ids) > PAGE_SIZE and offset + PAGE_SIZE < MAX_RESULTS
        ids = ids[:PAGE_SIZE]
        rows = self.basics.reading.hydrate(ids, around=terms[0] if terms else None)
        for row in rows:
            # No snippet() on this route: presentation cuts one around the terms.
            row["snippet"] = None
            row["match_terms"] = terms
        total = offset + len(rows) + (1 if has_more else 0)
        return SearchResult(rows, total, has_more, False, has_more, [])

    def _group_clauses(self, groups: list[list[tuple[str, bool]]]) -> tuple[str, list[Any]]:
        """Hermes 0.20+'s boolean query over the stored rows: a hit satisfies one group, whose
        terms are each in its content, tool name or tool calls (or, excluded, in none)."""
        columns = [
            f"COALESCE(m.{c}, '')"
            for c in ("content", "tool_name", "tool_calls")
            if self.schema.has("messages", c)
        ]
        if not columns or not groups:
            return "0", []
        params: list[Any] = []
        ored = []
        for group in groups:
            anded = []
            for term, excluded in group:
                pattern = f"%{like_escape(term)}%"
                test = "(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in columns) + ")"
                anded.append(f"NOT {test}" if excluded else test)
                params += [pattern] * len(columns)
            ored.append("(" + " AND ".join(anded) + ")")
        return "(" + " OR ".join(ored) + ")", params

    def like_groups(
        self,
        groups: list[list[tuple[str, bool]]],
        f: SearchFilters,
        page: int,
        sort: str | None = None,
    ) -> SearchResult:
        """The stored-rows route (Hermes 0.22's tool searches, a file whose index Hermes marked
        stale): newest first (oldest with ``sort="oldest"``) by time, then id."""
        where, params = self.basics.filters(f)
        test, test_params = self._group_clauses(groups)
        way = "ASC" if sort == "oldest" else "DESC"
        offset = (page - 1) * PAGE_SIZE
        ids = [
            r["id"]
            for r in self.r.rows(
                f"SELECT m.id AS id FROM messages m JOIN sessions s ON s.id = m.session_id "
                f"WHERE {test}{where} ORDER BY m.timestamp {way}, m.id {way} LIMIT ? OFFSET ?",
                [*test_params, *params, PAGE_SIZE + 1, offset],
            )
        ]
        return self.substring_page(ids, offset, [t for g in groups for t, x in g if not x])

    def unindexed_hits(
        self, terms: list[str], f: SearchFilters, span: tuple[int, int], skip: int, take: int
    ) -> tuple[int, list[int]]:
        """While Hermes's FTS rebuild is pending: (how many, the ids from ``skip``, at most
        ``take``) of the messages in ``span`` = (indexed up to, high water], which the index
        does not hold yet, holding every term, newest first by time (Hermes's top-up)."""
        where, params = self.basics.filters(f)
        like_sql, like_params = self.like_clauses(terms, any_term=False)
        base = (
            "FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.id > ? AND m.id <= ? "
            f"AND {like_sql}{where}"
        )
        args = [*span, *like_params, *params]
        n = self.r.scalar(f"SELECT COUNT(*) FROM (SELECT 1 {base} LIMIT {MAX_RESULTS})", args)
        ids = [
            r["id"]
            for r in self.r.rows(
                f"SELECT m.id AS id {base} ORDER BY m.timestamp DESC, m.id LIMIT ? OFFSET ?",
                [*args, take, skip],
            )
        ]
        return n, ids

    def substring_page(self, ids: list[int], offset: int, terms: list[str]) -> SearchResult:
        has_more = len(ids) > PAGE_SIZE and offset + PAGE_SIZE < MAX_RESULTS
        ids = ids[:PAGE_SIZE]
        rows = self.basics.reading.hydrate(ids, around=terms[0] if terms else None)
        for row in rows:
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
        if floor is not None and self._older_newest.peek(floor) is None:
            try:
                newest = self.r.scalar("SELECT MAX(timestamp) FROM messages WHERE id <= ?", [floor])
            except LogbookDBError:
                return  # out of this request's time: a later search learns it
            self._older_newest.set(floor, newest)

    def like_recent(
        self,
        terms: list[str],
        f: SearchFilters,
        *,
        any_term: bool,
        include_inactive: bool,
        ties: str = "DESC",
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
            terms,
            f,
            1,
            any_term=any_term,
            include_inactive=include_inactive,
            id_floor=floor,
            ties=ties,
        )
        if not result.has_more:
            return None  # fewer than a page up there: the rest may be anywhere below
        if any_term:
            last = result.rows[-1].get("timestamp") if result.rows else None
            # Timestamp order: every older message must sort after the page's last hit.
            # (With oldest-id-first ties an older message at the very same time sorts before.)
            if (
                not isinstance(last, (int, float))
                or not isinstance(bound, (int, float))  # learnt above; said again for mypy
                or bound > last
                or (ties == "ASC" and bound == last)
            ):
                return None
        return result
