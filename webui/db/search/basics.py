"""What every search route of one file shares, its basics: the file's reader, schema and search
rules, the SQL of the user's filters, the messages no search shows (rewound by /rewind, or
hidden from the person by Hermes 0.22) and their ids, hits counted on the FTS index, the words
a prefix stands for, FTS5's verdict on an expression, and the finish every page gets (its
notices and each hit's context). Each route (webui.db.search.fts, .substring, .cjk, .scope,
.across) is given one; SearchStore (webui.db.search.store) makes it and composes the routes."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from webui.db import sql
from webui.db.errors import LogbookDBError
from webui.db.reader import Reader
from webui.db.search.limits import (
    HIDDEN,
    HIDDEN_MAX,
    PREFIX_TOKEN,
    PREFIX_WORDS_MAX,
    RANK_CAP,
    SearchFilters,
    SearchResult,
    hidden_json,
)
from webui.db.search.reading import HitReading
from webui.db.sessions.store import date_range
from webui.hermes.rules import rules_for

# Hermes 0.22 leaves these rows out of every search (webui.hermes.rules).
HIDDEN_ROW_TEST = "COALESCE(m.display_kind, '') <> 'hidden'"


class SearchBasics:
    """One file's shared pieces of search, read with ``reader``. ``shared``:
    SessionStore.shared, one computation for a crowd, refreshed behind the requests."""

    def __init__(self, reader: Reader, shared: Callable[..., Any] | None = None):
        self.r = reader
        self.schema = reader.schema
        # Whose search rules apply (webui.hermes.rules): they follow the file's schema.
        self.rules = rules_for(self.schema.version)
        self._shared = shared or (lambda name, compute, rule: compute())
        # (newest id read, ids of display_kind='hidden' rows up to it): Hermes 0.22's hidden rows
        self._display_hidden: tuple[int, frozenset[int]] = (0, frozenset())
        # The reads of a page of hits: snippets, rows and their context.
        self.reading = HitReading(reader)

    # -- the messages a search shows ---------------------------------------------------------

    def active_clause(self) -> str:
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

    def hidden_ids(self) -> frozenset[int]:
        """Ids of the messages the active clause leaves out (rewound, not compacted): few, so
        an unfiltered search is counted on the FTS index without a join per hit. Finding them
        reads the whole (session_id, active, timestamp) index (~0.2 s on a million messages),
        so they are shared: computed once for a crowd, refreshed in the background after
        HIDDEN.ttl while the previous set is served, recomputed after Logbook's own changes.
        Only counts use it; the rows shown are always filtered in SQL."""
        if not self.active_clause():
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

    def filters(self, f: SearchFilters, *, include_inactive: bool = False) -> tuple[str, list[Any]]:
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
        if not include_inactive and self.active_clause():
            clauses.append(self.active_clause())
        return "".join(f" AND {c}" for c in clauses), params

    # -- counts on the index, words of a prefix, FTS5's verdict -------------------------

    def index_hits(self, table: str, expression: str, most: int) -> int:
        """The expression's hits on the FTS index alone (no row read), up to ``most``."""
        return self.r.scalar(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
            [expression, most],
        )

    def count(
        self, table: str, expression: str, where: str, params: list[Any], fts_first: bool = False
    ) -> int:
        """Matches, up to RANK_CAP + 1. ``where``: the user's filters, without the active
        clause. Without them the FTS index answers alone: every hit's rowid, less the hidden
        (rewound) ones; with them, a join per hit."""
        if not where:
            hidden = self.hidden_ids()
            if not hidden:
                return self.index_hits(table, expression, RANK_CAP + 1)
            if len(hidden) <= HIDDEN_MAX:
                # The hidden ids go in as one JSON array: SQLite makes a transient index of
                # them once for the NOT IN.
                return self.r.scalar(
                    f"SELECT MIN(COUNT(*), {RANK_CAP + 1}) FROM (SELECT rowid AS id FROM {table} "
                    f"WHERE {table} MATCH ? LIMIT ?) WHERE id NOT IN (SELECT value FROM "
                    "json_each(?))",
                    [expression, RANK_CAP + 1 + len(hidden), hidden_json(hidden)],
                )
        active = self.active_clause()
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

    # -- the page -----------------------------------------------------------------------

    def finish(self, result: SearchResult, notices: list[str]) -> SearchResult:
        """A page as every route ends it: its notices (the plan's first, none empty), and its
        rows finished (finish_rows)."""
        result.notices = [n for n in notices + result.notices if n]
        self.finish_rows(result.rows)
        return result

    def finish_rows(self, rows: list[dict[str, Any]]) -> None:
        """Each hit's context, and its own text kept only where presentation reads it: a hit
        with a snippet keeps it only for a tool's row (bounded), to name the field of a JSON
        tool result it is in; a hit without one (the substring routes) keeps it whole for the
        snippet presentation cuts from it (webui.present.rows.complete_snippets)."""
        self.reading.contexts(rows)
        for row in rows:
            if row.get("snippet") is None:
                continue
            if row.get("role") == "tool" or row.get("tool_calls"):
                row["_text"] = (row.get("_text") or "")[:200_000]
            else:
                row.pop("_text", None)
