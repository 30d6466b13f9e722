"""SQL about sessions: the list (filters, facets, keyset pages) and one session's row."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from webui.db import sql
from webui.db.changes import selection as selection_sql
from webui.db.reader import Reader
from webui.db.sessions.keeping import CHAINS, SessionKeeping, new_store_cache
from webui.db.sessions.list_rules import ListRules
from webui.db.sessions.orders import KeptOrders
from webui.db.sessions.query import (  # noqa: F401 - LIST_PARAMS, parse_day: imported from here
    COUNT_CAP,
    KEPT_ORDERS,
    LIST_PARAMS,
    SessionQuery,
    date_range,
    like_escape,
    parse_day,
)
from webui.db.sql import SESSION_FIGURES, decode_cursor, encode_cursor, is_cursor  # noqa: F401 - the list's cursor
from webui.hermes import listing
from webui.hermes.rules import rules_for
from webui.hermes.selection import (
    EVERYTHING,
)
from webui.keep import StoreCache


class SessionStore:
    """Named queries over the sessions table, built from the columns that exist: what it keeps
    (``keeping``), the list's rules as SQL (``list_rules``) and its kept orders (``orders``)."""

    def __init__(self, reader: Reader, cache: StoreCache | None = None):
        self.r = reader
        self.schema = reader.schema
        # Whose list this is (webui.hermes.rules): the Hermes that wrote the file.
        self.rules = rules_for(self.schema.version)
        self.cache = cache or new_store_cache()
        self.keeping = SessionKeeping(reader, self.cache)
        # What the other stores and the pages ask of it by name.
        self.invalidate = self.keeping.invalidate
        self.cached = self.keeping.cached
        self.shared = self.keeping.shared
        self.change_token = self.keeping.change_token
        self.list_rules = ListRules(reader, self.rules, self.shared)
        self.last_active_of = self.list_rules.last_active_of
        self.orders = KeptOrders(reader, self.keeping, self.chains)
        # Every chain's tip as JSON, for the chains walk it was made from (source_sql).
        self._tips_json = self.cache.versioned(1, identity=True)

    def col(self, name: str, alias: str = "s") -> str:
        return sql.col(self.schema, name, alias)

    def num(self, name: str) -> str:
        return f"COALESCE({self.col(name)}, 0)"

    # -- expressions ------------------------------------------------------------------------

    @property
    def last_active_expr(self) -> str:
        return self.last_active_of("s")

    @property
    def tokens_expr(self) -> str:
        return sql.tokens(self.schema, "s")

    @property
    def cost_expr(self) -> str:
        return sql.cost(self.schema, "s")

    def shown(self, name: str, q: SessionQuery) -> str:
        """A column as the list shows it: in Hermes's rows a compression root shows its tip's
        value for the fields the tip lends it (``listing.TIP_FIELDS``), its own otherwise."""
        own = self.col(name)
        if not q.conversations or name not in listing.TIP_FIELDS or own == "NULL":
            return own
        return f"(CASE WHEN t.id IS NULL THEN {own} ELSE {self.col(name, 't')} END)"

    def sort_expr(self, key: str, q: SessionQuery | None = None) -> str:
        if q is not None and q.conversations:
            if key == "messages":
                return f"COALESCE({self.shown('message_count', q)}, 0)"
            if key == "last_active":
                # Hermes (order_by_last_active): a chain's newest activity.
                mine = self.last_active_of("s")
                return f"MAX({mine}, COALESCE({self.last_active_of('t')}, {mine}))"
        return {
            "started": "s.started_at",
            "last_active": self.last_active_expr,
            "messages": self.num("message_count"),
            "tokens": f"({self.tokens_expr})",
            "cost": self.cost_expr,
        }[key]

    # -- which rows: Hermes's or all (the rules: webui.db.sessions.list_rules) --------------------

    def source_sql(
        self, q: SessionQuery, uses: str = "t.", only: Sequence[str] | None = None
    ) -> tuple[str, str, list[Any]]:
        """(WITH prefix, FROM clause, their parameters). Hermes's rows join each listed
        compression root to its tip (``t``); every other row has no ``t``. ``uses`` is the
        SQL that will read from it: without a ``t.`` in it no join is needed (a count or the
        facets with no filter on a tip's values). ``only``: the query reads just these
        sessions, so only their tips are passed (not every chain's, on every request)."""
        if not q.conversations or "t." not in uses:
            return "", "sessions s", []
        chains = self.chains()
        if only is None:
            # Every chain's tip, written out once per walk of the chains (on ten million
            # messages, 24,000 tips: 18 ms a request to rebuild and encode).
            encoded = self._tips_json.get_or_set("tips", chains, lambda: _tips_json(chains))
        else:
            tips = {r: chains[r][-1] for r in only if len(chains.get(r, ())) > 1}
            encoded = json.dumps(tips) if tips else None
        if encoded is None:
            return "", "sessions s LEFT JOIN sessions t ON 0", []
        # MATERIALIZED: an ephemeral table SQLite can index, probed once per listed row.
        return (
            "WITH tm AS MATERIALIZED (SELECT key AS root, value AS tip FROM json_each(?)) ",
            "sessions s LEFT JOIN tm ON tm.root = s.id LEFT JOIN sessions t ON t.id = tm.tip",
            [encoded],
        )

    def chains(self) -> dict[str, list[str]]:
        """Every compression chain, root → [root, …, tip], walked by Hermes's rule. Only
        sessions that ended 'compression' start one; the walk is cached for a few seconds and
        until sessions appear, go or end."""
        if not (
            self.schema.has("sessions", "end_reason")
            and self.schema.has("sessions", "parent_session_id")
        ):
            return {}
        token = self.keeping.sessions_token()
        return self.cached("chains", (token.get("n"), token.get("s")), self._walk_chains, CHAINS)

    def _walk_chains(self) -> dict[str, list[str]]:
        children: dict[str, list[listing.Continuation]] = {}
        for parent, c in self.compression_edges():
            children.setdefault(parent, []).append(c)
        return listing.compression_chains(children)

    def compression_edges(self, time_limit_s: float | None = None) -> list[tuple]:
        """Every (compression-ended parent, candidate continuation) of this file: a child
        that is no branch, no delegate run and no ``tool`` session."""
        if not (
            self.schema.has("sessions", "end_reason")
            and self.schema.has("sessions", "parent_session_id")
        ):
            return []
        edges = self.r.rows(
            f"SELECT parent.id AS parent, child.id AS id, child.end_reason AS end_reason, "
            f"{self.col('ended_at', 'child')} AS ended_at, child.started_at AS started_at, "
            f"{self.last_active_of('child')} AS last_active "
            "FROM sessions parent JOIN sessions child ON child.parent_session_id = parent.id "
            f"WHERE parent.end_reason = 'compression' AND {self.list_rules.continuation_filter('child')}",
            time_limit_s=time_limit_s,
        )
        return [
            (
                e["parent"],
                listing.Continuation(
                    id=e["id"],
                    end_reason=e["end_reason"],
                    ended_at=e["ended_at"],
                    started_at=e["started_at"],
                    last_active=e["last_active"],
                ),
            )
            for e in edges
        ]

    # -- filters ------------------------------------------------------------------------------

    def where(
        self, q: SessionQuery, *, skip_source: bool = False, walk_started: bool = False
    ) -> tuple[str, list[Any]]:
        """``walk_started``: the source test is written so that SQLite cannot use the source
        index (a unary +), and walks the start-time index newest first instead."""
        clauses: list[str] = []
        params: list[Any] = []
        if q.sources and not skip_source:
            plus = "+" if walk_started else ""
            clauses.append(f"{plus}s.source IN ({sql.in_list(len(q.sources))})")
            params += q.sources
        if q.conversations:
            clauses.append(self.list_rules.listable())
            hidden = () if skip_source else listing.hidden_sources(q.sources)
            if hidden:
                clauses.append(f"s.source NOT IN ({sql.in_list(len(hidden))})")
                params += hidden
        if q.models and self.schema.has("sessions", "model"):
            # Hermes's --model: a case-insensitive part of the name (either of several).
            model = f"LOWER(COALESCE({self.shown('model', q)}, ''))"
            clauses.append("(" + " OR ".join(f"{model} LIKE ?" for _ in q.models) + ")")
            params += [f"%{m.lower()}%" for m in q.models]
        ended = self.shown("ended_at", q)
        if q.state == "active":
            clauses.append(f"{ended} IS NULL")
        elif q.state == "ended":
            clauses.append(f"{ended} IS NOT NULL")
        dc, dp = date_range("s.started_at", q.since, q.until)
        clauses += dc
        params += dp
        if q.active_minutes:
            # A conversation's newest activity (its tip's, in Hermes's rows).
            clauses.append(f"{self.sort_expr('last_active', q)} >= ?")
            params.append(time.time() - q.active_minutes * 60)
        if q.q:
            pattern = like_escape(q.q)
            match = f"({self.col('title')} LIKE ? ESCAPE '\\' OR s.id LIKE ? ESCAPE '\\')"
            clauses_params = [f"%{pattern}%", f"{pattern}%"]
            if q.conversations:
                # A conversation is found by its root's or its tip's title or id.
                match = f"({match} OR {match.replace('s.', 't.')})"
                clauses_params *= 2
            clauses.append(match)
            params += clauses_params
        if q.workspace:
            # Hermes's workspace_key: the git repo root, else the cwd; matched as a
            # case-insensitive part of the path (the folder's own name is one).
            key = (
                f"COALESCE(NULLIF(TRIM({self.shown('git_repo_root', q)}), ''), "
                f"NULLIF(TRIM({self.shown('cwd', q)}), ''))"
            )
            clauses.append(f"instr(LOWER({key}), ?) > 0")
            params.append(q.workspace.lower())
        if q.branch:
            clauses.append(f"instr(LOWER(COALESCE({self.shown('git_branch', q)}, '')), ?) > 0")
            params.append(q.branch.lower())
        for name, column in (
            ("user", "user_id"),
            ("chat_id", "chat_id"),
            ("chat_type", "chat_type"),
            ("session_key", "session_key"),
        ):
            if getattr(q, name):
                clauses.append(f"{self.col(column)} = ?")
                params.append(getattr(q, name))
        if self.schema.has("sessions", "archived") and self.list_rules.archived_applies(q):
            if q.archived == "hide":
                clauses.append("COALESCE(s.archived, 0) = 0")
            elif q.archived == "only":
                clauses.append("COALESCE(s.archived, 0) != 0")
        for clause, values in (self.list_rules.hidden_clause(q), self.list_rules.pinned_clause(q)):
            if clause is not None:
                clauses.append(clause)
                params += values
        if q.narrow is not EVERYTHING:
            narrow, narrow_params = selection_sql.where(self.schema, q.narrow, ended_only=False)
            if narrow != "1":
                clauses.append(narrow)
                params += narrow_params
        return (" AND ".join(clauses) or "1"), params

    # -- queries ------------------------------------------------------------------------------

    def list_columns(self) -> str:
        wanted = (
            "id",
            "source",
            "user_id",
            "model",
            "title",
            "started_at",
            "ended_at",
            "end_reason",
            "message_count",
            "tool_call_count",
            *SESSION_FIGURES,
            "cost_status",
            "parent_session_id",
            "archived",
            "auto_archived",
            "pinned",
            "hidden",
            "title_source",
            "created_source",
            "cwd",
            "git_branch",
            "git_repo_root",
            "display_name",
            "chat_type",
            "origin_json",
        )
        cols = [f"{self.col(c)} AS {c}" for c in wanted]
        cols.append(f"{self.last_active_expr} AS last_active")
        cols.append(f"{self.list_rules.preview_expr()} AS preview")
        cols.append(
            "(SELECT COUNT(*) FROM sessions c WHERE c.parent_session_id = s.id) AS child_count"
        )
        return ", ".join(cols)

    def details(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The list's columns for these sessions, the preview as Hermes trims it."""
        if not ids:
            return {}
        out = {}
        for d in self.r.rows(
            f"SELECT {self.list_columns()} FROM sessions s WHERE s.id IN ({sql.in_list(len(ids))})",
            ids,
        ):
            d["preview"] = listing.preview(d["preview"])
            out[d["id"]] = d
        return out

    def page(self, q: SessionQuery) -> tuple[list[dict[str, Any]], str | None]:
        """One keyset page: the rows and the cursor of the next page (or None)."""
        where, params = self.where(q, walk_started=self.orders.walk_started(q))
        key = self.sort_expr(q.sort_key, q)
        with_sql, from_sql, from_params = self.source_sql(q, where + key)
        where_only, where_params = where, list(params)
        direction = "DESC" if q.descending else "ASC"
        op = "<" if q.descending else ">"
        if q.sort_key in KEPT_ORDERS:
            ids = self.orders.page(
                q, (with_sql, from_sql, from_params), where, params, key, direction
            )
        else:
            if q.after:
                after_key, after_id = decode_cursor(q.after)
                if after_key is None:
                    after_key = 0
                # The extra single-column bound lets SQLite range-scan an index on the key.
                where += f" AND {key} {op}= ? AND ({key} {op} ? OR ({key} = ? AND s.id {op} ?))"
                params += [after_key, after_key, after_key, after_id]
            # Step 1 orders bare ids (cheap); step 2 computes display columns for one page.
            ids = self.r.rows(
                f"{with_sql}SELECT s.id AS id, {key} AS k FROM {from_sql} WHERE {where} "
                f"ORDER BY k {direction}, s.id {direction} LIMIT ?",
                [*from_params, *params, q.limit + 1],
            )
        more = len(ids) > q.limit
        ids = ids[: q.limit]
        if not ids:
            return [], None
        wanted = [r["id"] for r in ids]
        if q.sort_key in KEPT_ORDERS:
            # An order kept from an earlier request must not show a session that no longer
            # matches (renamed, ended, archived since).
            w_sql, f_sql, f_params = self.source_sql(q, where_only, only=wanted)
            still = {
                r["id"]
                for r in self.r.rows(
                    f"{w_sql}SELECT s.id AS id FROM {f_sql} WHERE s.id IN "
                    f"({sql.in_list(len(wanted))}) AND {where_only}",
                    [*f_params, *wanted, *where_params],
                )
            }
            wanted = [i for i in wanted if i in still]
        chains = self.chains() if q.conversations else {}
        tips = {i: chains[i][-1] for i in wanted if len(chains.get(i, ())) > 1}
        by_id = self.details(wanted + list(tips.values()))
        # Every chain on the page summed in one grouped query, not one query per chain.
        totals = self.chains_totals({i: chains[i] for i in tips})
        rows = []
        for r in ids:
            row = by_id.get(r["id"])
            if row is None or r["id"] not in wanted:
                continue
            if r["id"] in tips and tips[r["id"]] in by_id:
                row = listing.project(
                    row, by_id[tips[r["id"]]], root_title=self.rules.tip_takes_root_title
                )
                row["chain"] = totals[r["id"]]
            row["_sort_key"] = r["k"]  # lets pages from several databases merge
            row["_sort_id"] = r["id"]  # the keyset's id (a chain's root, shown as its tip)
            rows.append(row)
        cursor = encode_cursor(ids[-1]["k"], ids[-1]["id"]) if more else None
        return rows, cursor

    def chain_totals(self, members: list[str]) -> dict[str, Any]:
        """One chain's totals (its members, root first)."""
        return self.chains_totals({members[0]: members})[members[0]]

    def chains_totals(self, chains: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
        """Each chain's totals (root -> its members, root first), in one query grouped by the
        chain's root: the page's chains together."""
        if not chains:
            return {}
        summed = ("message_count", *sql.TOKEN_COLUMNS)
        pairs = [[m, root] for root, members in chains.items() for m in dict.fromkeys(members)]
        rows = self.r.rows(
            "SELECT json_extract(cm.value, '$[1]') AS chain_root, "
            + ", ".join(f"TOTAL({self.num(c)}) AS {c}" for c in summed)
            + f", TOTAL({self.cost_expr}) AS cost, COUNT(*) AS sessions, "
            f"{sql.price_counts(self.schema, 's')} FROM json_each(?) cm JOIN sessions s "
            "ON s.id = json_extract(cm.value, '$[0]') GROUP BY chain_root",
            [json.dumps(pairs)],
        )
        found = {r["chain_root"]: r for r in rows}
        result = {}
        for root, members in chains.items():
            row = found.get(root) or {}
            out: dict[str, Any] = {c: int(row.get(c) or 0) for c in summed}
            out["cost"] = row.get("cost") or 0.0
            # The chain as a group for present.filters.cost: segments of no dollar figure named.
            for k in ("sessions", "included_sessions", "unpriced_sessions"):
                out[k] = int(row.get(k) or 0)
            out["segments"] = len(members)
            out["root"] = members[0]
            out["members"] = list(members)
            result[root] = out
        return result

    def count(self, q: SessionQuery) -> tuple[int, bool]:
        """The number of matching rows, capped: (n, capped?)."""
        where, params = self.where(q)
        with_sql, from_sql, from_params = self.source_sql(q, where)
        statement = (
            f"{with_sql}SELECT COUNT(*) FROM (SELECT 1 FROM {from_sql} WHERE {where} "
            f"LIMIT {COUNT_CAP + 1})"
        )
        n = self.keeping.shared_statement(statement, [*from_params, *params], self.r.scalar)
        return min(n, COUNT_CAP), n > COUNT_CAP

    def count_among(self, q: SessionQuery, ids: Sequence[str]) -> int:
        """How many of these sessions ``q`` lists (the copies a merged list folds away)."""
        if not ids:
            return 0
        where, params = self.where(q)
        with_sql, from_sql, from_params = self.source_sql(q, where)
        return self.r.scalar(
            f"{with_sql}SELECT COUNT(*) FROM {from_sql} WHERE {where} AND s.id IN "
            "(SELECT value FROM json_each(?))",
            [*from_params, *params, json.dumps(list(ids))],
        )

    def hidden_count(self, q: SessionQuery, shown: int) -> int | None:
        """In Hermes's rows: how many more rows 'every row' would show (capped); else None.
        ``shown`` is this query's own count."""
        if not q.conversations:
            return None
        every, _ = self.count(replace(q, rows="all", after=None))
        return max(every - shown, 0)

    def source_facets(self, q: SessionQuery) -> dict[str, int]:
        """Rows per source under every other filter (the source filter itself ignored,
        so the counts say what ticking another source would add). Every known source is
        listed, zero counts included, so the filter form keeps a stable shape."""
        where, params = self.where(q, skip_source=True)
        with_sql, from_sql, from_params = self.source_sql(q, where)
        counts = {
            r["source"]: r["n"]
            for r in self.keeping.shared_statement(
                f"{with_sql}SELECT s.source AS source, COUNT(*) AS n FROM {from_sql} "
                f"WHERE {where} GROUP BY s.source",
                [*from_params, *params],
                self.r.rows,
            )
        }
        for src in self.all_sources():
            counts.setdefault(src, 0)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def all_sources(self) -> list[str]:
        return self.cached(
            "sources",
            None,
            lambda: [
                r["source"]
                for r in self.r.rows("SELECT DISTINCT source FROM sessions ORDER BY source")
            ],
        )

    def models(self) -> list[dict[str, Any]]:
        """Models for the filter form. No index covers sessions.model, so the scan (wide rows:
        system prompts) is shared by the requests of the next few seconds."""
        if not self.schema.has("sessions", "model"):
            return []
        return self.cached(
            "models",
            None,
            lambda: self.r.rows(
                "SELECT model, COUNT(*) AS n FROM sessions WHERE model IS NOT NULL "
                "GROUP BY model ORDER BY n DESC, model"
            ),
        )

    def get(self, session_id: str) -> dict[str, Any] | None:
        return self.r.one("SELECT * FROM sessions WHERE id = ?", [session_id])

    def resolve_prefix(self, prefix: str, limit: int = 20) -> list[dict[str, Any]]:
        """Sessions whose id starts with ``prefix`` (LIKE wildcards escaped, as Hermes's
        resolve_session_id does), at most ``limit`` + 1 of them."""
        return self.r.rows(
            f"SELECT s.id AS id, {self.col('title')} AS title, s.source AS source, "
            "s.started_at AS started_at FROM sessions s WHERE s.id LIKE ? ESCAPE '\\' "
            "ORDER BY s.started_at DESC LIMIT ?",
            [like_escape(prefix) + "%", limit + 1],
        )

    def children(self, session_id: str, limit: int = 200) -> list[dict[str, Any]]:
        return self.r.rows(
            f"SELECT s.id AS id, {self.col('title')} AS title, s.source AS source, "
            f"s.started_at AS started_at, {self.col('end_reason')} AS end_reason "
            "FROM sessions s WHERE s.parent_session_id = ? ORDER BY s.started_at, s.id LIMIT ?",
            [session_id, limit],
        )

    def last_activity(self) -> float | None:
        """When anything last happened: the newest message (the highest id) or the newest
        start, both read off an index."""
        newest = (
            self.r.one(
                "SELECT (SELECT timestamp FROM messages ORDER BY id DESC LIMIT 1) AS m, "
                "(SELECT MAX(started_at) FROM sessions) AS s"
            )
            or {}
        )
        times = [t for t in (newest.get("m"), newest.get("s")) if isinstance(t, (int, float))]
        return max(times) if times else None

    def brief(self, session_id: str) -> dict[str, Any] | None:
        return self.r.one(
            f"SELECT s.id AS id, {self.col('title')} AS title, s.source AS source, "
            f"s.started_at AS started_at, {self.col('end_reason')} AS end_reason, "
            f"{self.col('ended_at')} AS ended_at FROM sessions s WHERE s.id = ?",
            [session_id],
        )

    def first_user_text(self, session_id: str) -> str | None:
        """The first user message (its first 300 characters): an untitled session's name."""
        return self.r.scalar(
            f"SELECT substr({sql.col(self.schema, 'content', table='messages')}, 1, 300) "
            "FROM messages WHERE session_id = ? AND role = 'user' "
            "ORDER BY timestamp, id LIMIT 1",
            [session_id],
        )


def _tips_json(chains: dict[str, list[str]]) -> str | None:
    tips = {root: chain[-1] for root, chain in chains.items() if len(chain) > 1}
    return json.dumps(tips) if tips else None
