"""Hermes 0.22's CJK bigram index (``messages_fts_cjk``) answered without its tokenizer, and
the FTS markers Hermes leaves in ``state_meta``. SearchStore holds one (``search.cjk_route``).

SQLite cannot open an FTS5 table whose tokenizer is not loaded ("no such tokenizer:
cjk_unicode61"), and Logbook does not load extensions. The index's answer is read instead
from what it indexed: the rows of its source view (``messages_fts_cjk_src``: every message but
tool results), scanned for the query's CJK runs and ASCII words, tokenized and matched as the
index does (webui.hermes.cjk_bigram), scored by bm25 with the index's own statistics from its
shadow tables (row count and token totals, each row's size). Same hits, same order as
``hermes`` with the tokenizer; a scan of the messages instead of an index lookup, so such a
search is heavy (webui.hermes.search.is_costly).

Hermes serves that index only when it is complete: not while its backfill is pending, not once
a process without the tokenizer marked it stale (``fts_cjk_stale``); ``index_state`` says which.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from webui.db import deadline as request_deadline
from webui.db import sql
from webui.db.errors import QueryTimeout
from webui.db.reader import TOOK_TOO_LONG
from webui.db.search.basics import SearchBasics
from webui.db.search.limits import MAX_RESULTS, PAGE_SIZE, SearchFilters, SearchResult
from webui.db.sessions.store import like_escape
from webui.hermes import cjk_bigram
from webui.hermes.search import IndexState

CJK_TABLE = "messages_fts_cjk"
CJK_SOURCE = "messages_fts_cjk_src"
# Markers Hermes 0.20+ writes in state_meta (hermes_state_common).
MARKERS = (
    "fts_stale",
    "fts_cjk_stale",
    "fts_cjk_rebuild_high_water",
    "fts_rebuild_high_water",
    "fts_rebuild_progress",
)


class CjkRoute:
    """The CJK bigram index's answers and the index markers."""

    def __init__(self, basics: SearchBasics):
        # The file's reader, filters and reads of hits (webui.db.search.basics).
        self.basics = basics
        self.r = basics.r
        self.schema = basics.schema

    def index_state(self) -> IndexState:
        """What Hermes says of its indexes in this file (point reads of state_meta)."""
        if not self.schema.has("state_meta"):
            return IndexState()
        meta = {
            r["key"]: r["value"]
            for r in self.r.rows(
                f"SELECT key, value FROM state_meta WHERE key IN ({sql.in_list(len(MARKERS))})",
                MARKERS,
            )
        }
        if not self.schema.has(CJK_TABLE):
            cjk = "absent"
        elif "fts_cjk_stale" in meta:
            cjk = "stale"
        elif "fts_cjk_rebuild_high_water" in meta:
            cjk = "pending"
        else:
            cjk = "ready"
        rebuild = None
        high = _number(meta.get("fts_rebuild_high_water"))
        if high and high > 0:
            rebuild = (_number(meta.get("fts_rebuild_progress")) or 0, high)
        return IndexState(cjk=cjk, fts_stale="fts_stale" in meta, rebuild=rebuild)

    def cjk(
        self, expression: str, f: SearchFilters, page: int, sort: str | None = None
    ) -> SearchResult:
        """A page of ``expression``'s hits on the CJK bigram index, ranked as FTS5 ranks them
        (bm25, then id), or by time with ``sort``. Raises cjk_bigram.QueryError for an
        expression the index would refuse."""
        query = cjk_bigram.parse(expression)
        offset = (page - 1) * PAGE_SIZE
        if query.tree is None:
            return SearchResult([], 0, False, False, False, [])
        found, hits = self._cjk_scan(query)
        if not found:
            return SearchResult([], 0, False, False, False, [])
        where, params = self.basics.filters(f)
        shown = self._cjk_shown(list(found), where, params)
        rows_total, tokens_total = cjk_bigram.averages(
            _blob(self.r.scalar(f"SELECT hex(block) FROM {CJK_TABLE}_data WHERE id = 1"))
        )
        average = tokens_total / rows_total if rows_total else 1.0
        idfs = [cjk_bigram.idf(rows_total, n) for n in hits]
        sizes = self._cjk_sizes(list(shown))
        ranked = []
        for mid, stamp in shown.items():
            rank = cjk_bigram.bm25(found[mid], idfs, sizes.get(mid, 0), average)
            ranked.append((rank, mid, stamp))
        if sort:
            way = -1 if sort == "newest" else 1
            ranked.sort(key=lambda r: (way * _time(r[2]), r[0], r[1]))
        else:
            ranked.sort(key=lambda r: (r[0], r[1]))
        ids = [mid for _, mid, _ in ranked[offset : offset + PAGE_SIZE + 1]]
        has_more = len(ids) > PAGE_SIZE and offset + PAGE_SIZE < MAX_RESULTS
        rows = self.basics.reading.hydrate(ids[:PAGE_SIZE], around=_first_cjk(query.texts))
        for row in rows:
            # No FTS5 snippet without the tokenizer: presentation cuts one around the words.
            row["snippet"] = None
            row["match_terms"] = query.texts
        return SearchResult(rows, len(ranked), False, not sort, has_more, [])

    def _cjk_scan(self, query: cjk_bigram.Query) -> tuple[dict[int, list[int]], list[int]]:
        """({row id: each phrase's instances} of the rows the expression matches, each
        phrase's count of rows holding it in the whole index) from one pass over the index's
        documents that may hold a phrase."""
        columns = ("content", "tool_name", "tool_calls")
        tests: list[str] = []
        params: list[Any] = []
        for text in query.texts:
            parts = cjk_bigram.pieces(text)
            if not parts:
                tests = []  # a phrase no substring can find: every document is read
                break
            clause = []
            for part in parts:
                pattern = f"%{like_escape(part)}%"
                clause.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in columns) + ")")
                params += [pattern] * len(columns)
            tests.append("(" + " AND ".join(clause) + ")")
        where = f" WHERE {' OR '.join(tests)}" if tests else ""
        if not tests:
            params = []
        source = CJK_SOURCE if self.schema.has(CJK_SOURCE) else "messages"
        if source == "messages":
            where = f"{where} AND role <> 'tool'" if where else " WHERE role <> 'tool'"
        statement = f"SELECT id, {', '.join(columns)} FROM {source}{where}"

        def scan(raw: sqlite3.Connection) -> tuple[dict[int, list[int]], list[int]]:
            found: dict[int, list[int]] = {}
            hits = [0] * len(query.phrases)
            for n, (mid, *texts) in enumerate(raw.execute(statement, params)):
                if n % 512 == 0:
                    left = request_deadline.remaining()
                    if left is not None and left <= 0:
                        raise QueryTimeout(TOOK_TOO_LONG)
                toks = [cjk_bigram.tokens(t if isinstance(t, str) else None) for t in texts]
                freqs = [cjk_bigram.instances(p, toks) for p in query.phrases]
                for i, k in enumerate(freqs):
                    if k:
                        hits[i] += 1
                if cjk_bigram.matches(query.tree, [k > 0 for k in freqs]):
                    found[mid] = freqs
            return found, hits

        return self.r.run(scan)

    def _cjk_shown(self, ids: list[int], where: str, params: list[Any]) -> dict[int, Any]:
        """{id: timestamp} of those of ``ids`` that pass the search's filters (and are shown:
        not rewound, not hidden)."""
        out: dict[int, Any] = {}
        for start in range(0, len(ids), 50_000):
            chunk = ids[start : start + 50_000]
            out.update(
                (r["id"], r["ts"])
                for r in self.r.rows(
                    "SELECT m.id AS id, m.timestamp AS ts FROM json_each(?) c CROSS JOIN "
                    f"messages m ON m.id = c.value CROSS JOIN sessions s ON s.id = m.session_id "
                    f"WHERE 1{where}",
                    [json.dumps(chunk), *params],
                )
            )
        return out

    def _cjk_sizes(self, ids: list[int]) -> dict[int, int]:
        """Each row's tokens in every column, as the index recorded them (``_docsize``)."""
        out: dict[int, int] = {}
        for start in range(0, len(ids), 50_000):
            chunk = ids[start : start + 50_000]
            out.update(
                (r["id"], sum(cjk_bigram.varints(_blob(r["sz"]))))
                for r in self.r.rows(
                    f"SELECT d.id AS id, hex(d.sz) AS sz FROM json_each(?) c CROSS JOIN "
                    f"{CJK_TABLE}_docsize d ON d.id = c.value",
                    [json.dumps(chunk)],
                )
            )
        return out


def _blob(hexed: Any) -> bytes:
    """A BLOB read as hex (the reader gives text back as text)."""
    return bytes.fromhex(hexed) if isinstance(hexed, str) else b""


def _number(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _time(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _first_cjk(texts: list[str]) -> str | None:
    return texts[0] if texts else None
