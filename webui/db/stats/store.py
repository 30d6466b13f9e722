"""SQL for token and cost statistics.

Every figure is a sum over the sessions whose ``started_at`` falls in the period (the same rule
for every panel, so they add up). Session-level columns answer most panels straight from the
sessions table; the panels that need messages (tool usage, the activity heatmap, messages per
source) read a rollup kept in the instance folder (see rollup.py), never a scan per request.
"""

from __future__ import annotations

import json
import operator
import time
from dataclasses import dataclass, field, replace
from typing import Any

from webui.db import sql, tz
from webui.db.errors import QueryTimeout
from webui.db.reader import Reader
from webui.db.search import fts_record
from webui.hermes.rules import rules_for

TOKEN_KINDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
PERIODS = {"7": 7, "30": 30, "90": 90, "365": 365, "all": None}


@dataclass
class StatsQuery:
    period: str = "30"
    since: float | None = None
    until: float | None = None
    sources: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    lineage: bool = False  # count a compressed conversation once
    cost_by: str = "model"  # stack the cost series by model or by source
    tz: str = "UTC"  # the reader's time zone: days, weeks and months are theirs
    archived: str = "include"  # Hermes's analytics count archived sessions; hide / only
    now: float = field(default_factory=time.time)
    # Sessions left out: in a report over several stores, a store's copies of sessions an
    # earlier store holds (counted once, there).
    exclude: tuple[str, ...] = ()

    @property
    def start(self) -> float | None:
        if self.since is not None:
            return self.since
        days = PERIODS.get(self.period)
        return None if days is None else self.now - days * 86400

    @property
    def end(self) -> float | None:
        return self.until

    def previous(self) -> StatsQuery | None:
        """The period of the same length just before this one, with the same filters (what
        the headline compares against); None for all time, which has nothing before it."""
        start = self.start
        if start is None:
            return None
        length = (self.end if self.end is not None else self.now) - start
        return replace(self, period="custom", since=start - length, until=start)


def bucket_for(span_seconds: float | None) -> str:
    if span_seconds is None or span_seconds > 400 * 86400:
        return "month"
    if span_seconds > 62 * 86400:
        return "week"
    return "day"


BUCKET_SQL = {
    "day": "strftime('%Y-%m-%d', {t}, 'unixepoch')",
    # ISO-ish week label: the Monday that starts it (on or before the day: six days back,
    # then forward to a Monday; "weekday 1, -7 days" put a Monday in the week before it)
    "week": "date({t}, 'unixepoch', '-6 days', 'weekday 1')",
    "month": "strftime('%Y-%m', {t}, 'unixepoch')",
}


class StatsStore:
    def __init__(self, reader: Reader):
        self.r = reader
        self.schema = reader.schema
        # Whose rules apply (webui.hermes.rules): usage by model follows the file's Hermes.
        self.rules = rules_for(self.schema.version)

    def col(self, name: str) -> str:
        return sql.col(self.schema, name)

    def num(self, name: str) -> str:
        return f"COALESCE({self.col(name)}, 0)"

    @property
    def cost(self) -> str:
        return sql.cost(self.schema)

    def rollup_where(self, q: StatsQuery) -> tuple[str, list[Any]]:
        """The same filter for the rollup's panels, which read its ``sess`` copy of the
        filterable columns: the archived flag changes after a session is rolled up, so it is
        read from the attached state database (``st``) itself."""
        return self.where(q, archived_from="st.sessions", ident="s.session_id")

    def where(
        self, q: StatsQuery, archived_from: str | None = None, ident: str = "id"
    ) -> tuple[str, list[Any]]:
        """``ident``: how the session's id is named where the clause is used (a bare ``id``
        is ambiguous beside the lineage's ``fam``)."""
        clauses: list[str] = []
        params: list[Any] = []
        if q.exclude:
            clauses.append(f"{ident} NOT IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(q.exclude)))
        if q.start is not None:
            # For long periods a plain scan beats walking idx_sessions_started and fetching
            # almost every row through it ("+" keeps SQLite off the index).
            wide = (q.end or q.now) - q.start > 60 * 86400
            clauses.append("+started_at >= ?" if wide else "started_at >= ?")
            params.append(q.start)
        if q.end is not None:
            clauses.append("started_at < ?")
            params.append(q.end)
        if q.sources:
            clauses.append(f"source IN ({sql.in_list(len(q.sources))})")
            params += q.sources
        if q.models and self.schema.has("sessions", "model"):
            clauses.append(f"model IN ({sql.in_list(len(q.models))})")
            params += q.models
        if self.schema.has("sessions", "archived") and q.archived in ("hide", "only"):
            test = "= 0" if q.archived == "hide" else "!= 0"
            if archived_from:
                clauses.append(
                    f"s.session_id IN (SELECT id FROM {archived_from} WHERE COALESCE(archived, 0) "
                    f"{test})"
                )
            else:
                clauses.append(f"COALESCE(archived, 0) {test}")
        return (" AND ".join(clauses) or "1"), params

    def _sums(self, *, status_counts: bool = True) -> str:
        """Every summed figure. ``status_counts=False`` leaves out the sessions counted by
        their cost status, for a query grouped by that status (the caller counts them from
        the groups: two aggregates fewer per row)."""
        parts = [
            "COUNT(*) AS sessions",
            f"{_total(self.col('message_count'))} AS messages",
            f"{_total(self.col('api_call_count'))} AS api_calls",
            f"{_total(self.col('tool_call_count'))} AS tool_calls",
        ]
        parts += [f"{_total(self.col(k))} AS {k}" for k in TOKEN_KINDS]
        parts += [
            f"{sql.total(self.num('estimated_cost_usd'), integer=False)} AS estimated_cost_usd",
            f"{sql.total(self.num('actual_cost_usd'), integer=False)} AS actual_cost_usd",
            f"{sql.total(self.cost, integer=False)} AS cost_usd",
            f"SUM({self.col('actual_cost_usd')} IS NOT NULL) AS actual_known",
        ]
        if status_counts:
            parts.append(sql.price_counts(self.schema))
        return ", ".join(parts)

    def totals(self, q: StatsQuery) -> dict[str, Any]:
        where, params = self.where(q)
        row = self.r.one(f"SELECT {self._sums()} FROM sessions WHERE {where}", params) or {}
        row = {k: (v or 0) for k, v in row.items()}
        row["total_tokens"] = sum(row.get(k, 0) for k in TOKEN_KINDS[:4])
        row["cost_by_status"] = self.r.rows(
            f"SELECT COALESCE({self.col('cost_status')}, 'none') AS status, COUNT(*) AS sessions, "
            f"{sql.total(self.cost, integer=False)} AS cost_usd, {sql.total(self.num('actual_cost_usd'), integer=False)} AS actual_cost_usd, "
            f"{sql.total(self.num('estimated_cost_usd'), integer=False)} AS estimated_cost_usd FROM sessions "
            f"WHERE {where} GROUP BY 1 ORDER BY cost_usd DESC",
            params,
        )
        if q.lineage:
            row["conversations"] = self._conversations(q)
        return row

    def _conversations(self, q: StatsQuery) -> int:
        """Sessions counted once per compressed conversation (lineage root)."""
        where, params = self.where(q, ident="x.id")
        return self.r.scalar(
            f"{FAMILY} SELECT COUNT(DISTINCT COALESCE(fam.root, x.id)) FROM sessions x "
            f"LEFT JOIN fam ON fam.id = x.id WHERE {where}",
            params,
        )

    def summary(self, q: StatsQuery, limit: int = 50) -> dict[str, Any]:
        """``totals`` (with cost by status) and the by-model, by-source and by-provider
        breakdowns in one pass: the rows are grouped once by those four columns (a few
        hundred groups however many sessions), and each panel adds up its groups. The same
        figures as :meth:`totals` and :meth:`breakdown`, for a quarter of the work."""
        where, params = self.where(q)
        dims = {
            "model": self.col("model"),
            "source": "source",
            "billing_provider": self.col("billing_provider"),
            "cost_status": self.col("cost_status"),
            "price": sql.price_kind(self.schema),
        }
        groups = self.r.rows(
            f"SELECT {', '.join(f'{e} AS g_{k}' for k, e in dims.items())}, "
            f"{self._sums(status_counts=False)} FROM sessions WHERE {where} "
            "GROUP BY 1, 2, 3, 4, 5",
            params,
        )
        for g in groups:
            # Sessions whose cost is no dollar figure: every sum says how many it leaves out.
            g["included_sessions"] = g["sessions"] if g["g_price"] == "included" else 0
            g["unpriced_sessions"] = g["sessions"] if g["g_price"] == "unknown" else 0
        keys = _SUM_KEYS
        # Each group's figures as a list, added to its panels' running lists element-wise
        # (a few hundred groups into five panels: per-key dict updates cost ~5 ms of it).
        total = [0] * len(keys)
        by: dict[str, dict[str, list]] = {k: {} for k in dims if k not in ("cost_status", "price")}
        status: dict[str, list] = {}

        def add(into: dict[str, list], key: str, values: list) -> None:
            sums = into.get(key)
            if sums is None:
                into[key] = list(values)
            else:
                sums[:] = map(operator.add, sums, values)

        for g in groups:
            values = [g[k] or 0 for k in keys]
            total[:] = map(operator.add, total, values)
            for dim, table in by.items():
                key = g[f"g_{dim}"]
                add(table, "(none)" if key is None else key, values)
            add(status, g["g_cost_status"] or "none", values)
        totals: dict[str, Any] = dict(zip(keys, total, strict=True))
        tables: dict[str, dict[Any, dict[str, Any]]] = {
            dim: {
                key: {"key": key, **dict(zip(keys, sums, strict=True))} for key, sums in t.items()
            }
            for dim, t in by.items()
        }
        by_status = {k: dict(zip(keys, sums, strict=True)) for k, sums in status.items()}
        totals["total_tokens"] = sum(totals.get(k, 0) for k in TOKEN_KINDS[:4])
        totals["cost_by_status"] = sorted(
            (
                {
                    "status": k,
                    "sessions": v["sessions"],
                    "cost_usd": v["cost_usd"],
                    "actual_cost_usd": v["actual_cost_usd"],
                    "estimated_cost_usd": v["estimated_cost_usd"],
                    "included_sessions": v["included_sessions"],
                    "unpriced_sessions": v["unpriced_sessions"],
                }
                for k, v in by_status.items()
            ),
            key=lambda r: -(r["cost_usd"] or 0),
        )
        if q.lineage:
            totals["conversations"] = self._conversations(q)

        def ranked(dim: str) -> list[dict[str, Any]]:
            if dims[dim] == "NULL":
                return []
            rows = sorted(
                tables[dim].values(),
                key=lambda r: (-(r["cost_usd"] or 0), -r["sessions"], r["key"]),
            )
            return rows[:limit]

        return {
            "totals": totals,
            "by_model": ranked("model"),
            "by_source": ranked("source"),
            "by_provider": ranked("billing_provider"),
        }

    def breakdown(self, q: StatsQuery, column: str, limit: int = 50) -> list[dict[str, Any]]:
        if not self.schema.has("sessions", column):
            return []
        where, params = self.where(q)
        return self.r.rows(
            f"SELECT COALESCE({column}, '(none)') AS key, {self._sums()} FROM sessions "
            f"WHERE {where} GROUP BY 1 ORDER BY cost_usd DESC, sessions DESC LIMIT {limit}",
            params,
        )

    def series(
        self, q: StatsQuery, bucket: str, stack_by: str, first: float | None = None
    ) -> list[dict[str, Any]]:
        """Per day/week/month of the reader's zone (``q.tz``), stacked by model or source."""
        where, params = self.where(q)
        start = q.start if q.start is not None else (first if first is not None else q.now)
        local = tz.local_seconds("started_at", tz.zone(q.tz), start, q.end or q.now)
        stack = sql.col(self.schema, stack_by)
        token_sums = ", ".join(f"{_total(self.col(k))} AS {k}" for k in TOKEN_KINDS)
        return self.r.rows(
            f"SELECT {BUCKET_SQL[bucket].format(t=local)} AS bucket, COALESCE({stack}, '(none)') AS stack, "
            f"COUNT(*) AS sessions, {token_sums}, {sql.total(self.cost, integer=False)} AS cost_usd, "
            f"{sql.price_counts(self.schema)} FROM sessions "
            f"WHERE {where} GROUP BY 1, 2 ORDER BY 1",
            params,
        )

    def top_sessions(self, q: StatsQuery, by: str, limit: int = 10) -> list[dict[str, Any]]:
        where, params = self.where(q, ident="x.id" if q.lineage else "id")
        key = self.cost if by == "cost" else " + ".join(self.num(k) for k in TOKEN_KINDS[:4])
        title = self.col("title")
        kind = sql.price_kind(self.schema)  # a value of no dollar figure is named by its kind
        if q.lineage:
            # fam has only (id, root): every other column name resolves to x unambiguously.
            return self.r.rows(
                f"{FAMILY}, agg AS (SELECT COALESCE(fam.root, x.id) AS root, COUNT(*) AS segments, "
                f"{sql.total(key, integer=False) if by == 'cost' else _total(key)} AS value, "
                f"{_total(self.num('message_count'))} AS messages, {sql.price_counts(self.schema, 'x')} "
                f"FROM sessions x LEFT JOIN fam ON fam.id = x.id WHERE {where} GROUP BY 1) "
                f"SELECT agg.root AS id, {sql.col(self.schema, 'title', 's')} AS title, "
                f"s.source AS source, s.started_at AS started_at, agg.value AS value, "
                f"agg.segments AS segments, agg.messages AS messages, agg.included_sessions AS "
                f"included_sessions, agg.unpriced_sessions AS unpriced_sessions FROM agg JOIN "
                f"sessions s ON s.id = agg.root ORDER BY value DESC LIMIT {limit}",
                params,
            )
        return self.r.rows(
            f"SELECT id, {title} AS title, source, started_at, {key} AS value, 1 AS segments, "
            f"{self.num('message_count')} AS messages, ({kind} = 'included') AS "
            f"included_sessions, ({kind} = 'unknown') AS unpriced_sessions "
            f"FROM sessions WHERE {where} ORDER BY value DESC LIMIT {limit}",
            params,
        )

    def sources_overview(self) -> list[dict[str, Any]]:
        """`hermes sessions stats`: sessions per source (whole database)."""
        return self.r.rows(
            "SELECT source, COUNT(*) AS sessions FROM sessions GROUP BY source "
            "ORDER BY sessions DESC, source"
        )

    def first_started(self) -> float | None:
        """When the oldest session started (the start of "all time")."""
        return self.r.scalar("SELECT MIN(started_at) FROM sessions")

    def counts(self, rollup_messages: int | None = None) -> dict[str, int | None]:
        """Sessions and messages in the whole database; an up-to-date rollup already knows
        the second, and otherwise Hermes's FTS index does (one record: counting ten million
        rows took longer than a page may). A file without that index is counted, and when
        even that runs out of time the number is left out (None)."""
        messages = rollup_messages
        if messages is None:
            messages = fts_record.indexed_messages(self.r)
        if messages is None:
            try:
                messages = self.r.scalar("SELECT COUNT(*) FROM messages")
            except QueryTimeout:
                messages = None
        return {"sessions": self.r.scalar("SELECT COUNT(*) FROM sessions"), "messages": messages}

    def models_by_usage(self) -> bool:
        """Does usage by model come from session_model_usage (Hermes 0.20+: insights' rule)?"""
        return self.rules.usage_by_model_rows and self.schema.has("session_model_usage")

    def hermes_stats(self, messages: int | None) -> dict[str, Any]:
        """What `hermes sessions stats` prints: the sessions not archived (every child and
        hidden one included), every stored message (rewound and compacted ones too) — given
        here, counted elsewhere — and the five sources it names, where not zero."""
        live = f"{self.num('archived')} = 0"
        # one pass: the sessions not archived, by source
        counts = {
            r["source"]: r["n"]
            for r in self.r.rows(
                f"SELECT source, COUNT(*) AS n FROM sessions WHERE {live} GROUP BY source"
            )
        }
        return {
            "sessions": sum(counts.values()),
            "messages": messages,
            "per_source": {
                k: counts[k]
                for k in ("cli", "telegram", "discord", "whatsapp", "slack")
                if counts.get(k)
            },
        }

    def aux(self, q: StatsQuery) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Per-task model usage (title generation, compression, vision …) of the period's
        sessions, from one read of Hermes's usage rows grouped by (task, model), regrouped two
        ways: by model for the auxiliary tasks only (what Hermes 0.19's analytics add into
        by-model: input and output tokens, estimated cost, API calls), and by task and model
        with ``main`` for the sessions' own use (the usage panel).

        The period's sessions lead and each finds its usage rows through Hermes's
        ``session_id`` index (CROSS JOIN keeps that order): testing every usage row against
        an ``IN`` list of the period's ids built first cost half as much again (50 against
        36 ms for 20,000 sessions)."""
        if not self.schema.has("session_model_usage"):
            return [], []

        def c(name: str) -> str:
            return sql.col(self.schema, name, "u", table="session_model_usage")

        where, params = self.where(q)
        tokens = " + ".join(f"COALESCE({c(k)}, 0)" for k in TOKEN_KINDS[:4])
        cost = f"COALESCE({c('actual_cost_usd')}, 0)"
        est = f"COALESCE({c('estimated_cost_usd')}, 0)"
        # A usage row's cost is no dollar figure when Hermes says so (included, unknown), or
        # when it gives no status and no figure: counted by session, as the groups name them.
        status = f"COALESCE({c('cost_status')}, '')"
        included = f"CASE WHEN {status} = 'included' THEN u.session_id END"
        unknown = (
            f"CASE WHEN {status} = 'unknown' OR ({status} = '' AND {cost} = 0 AND {est} = 0) "
            "THEN u.session_id END"
        )
        groups = self.r.rows(
            f"SELECT {c('task')} AS task, u.model AS model, "
            f"COUNT(DISTINCT u.session_id) AS sessions, "
            f"COUNT(DISTINCT {included}) AS included_sessions, "
            f"COUNT(DISTINCT {unknown}) AS unpriced_sessions, "
            f"{_total(c('input_tokens'))} AS input_tokens, "
            f"{_total(c('output_tokens'))} AS output_tokens, "
            f"TOTAL({c('estimated_cost_usd')}) AS estimated_cost_usd, "
            f"{_total(c('api_call_count'))} AS api_calls, {_total(tokens)} AS tokens, "
            f"{sql.total(f'CASE WHEN {cost} > 0 THEN {cost} ELSE {est} END', integer=False)} AS cost_usd "
            f"FROM (SELECT id FROM sessions WHERE {where}) p "
            f"CROSS JOIN session_model_usage u ON u.session_id = p.id GROUP BY 1, 2",
            params,
        )
        by_model = []
        if self.schema.has("session_model_usage", "task"):
            by_model = [
                {
                    "model": "unknown" if g["model"] is None else g["model"],
                    "task": g["task"],
                    **{k: g[k] for k in (*ADDED_BY_AUX, *PRICED_BY)},
                }
                for g in groups
                if g["task"] not in (None, "")
            ]
        usage: dict[tuple, dict[str, Any]] = {}
        for g in groups:
            key = (g["task"] or "main", g["model"])
            row = usage.setdefault(
                key,
                {
                    "task": key[0],
                    "model": key[1],
                    "api_calls": 0,
                    "tokens": 0,
                    "cost_usd": 0,
                    **dict.fromkeys(PRICED_BY, 0),
                },
            )
            for k in ("api_calls", "tokens", "cost_usd", *PRICED_BY):
                row[k] += g[k] or 0
        return by_model, sorted(usage.values(), key=lambda r: -r["tokens"])


FAMILY = sql.FAMILY_CTE


def merge_aux_into_by_model(
    by_model: list[dict[str, Any]], aux: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Hermes 0.19's by-model: each auxiliary row adds its input and output tokens, estimated
    cost and API calls to its model's row (a model used only for auxiliary tasks gets a row
    with no sessions); ``main`` keeps the sessions' own figures, ``aux_tasks`` the
    auxiliary part, so the split stays visible."""
    rows = {r["key"]: dict(r) for r in by_model}
    for r in rows.values():
        r["main"] = {k: r.get(k) or 0 for k in ADDED_BY_AUX}
        r["aux_tasks"] = []
    for a in aux:
        row = rows.get(a["model"])
        if row is None:
            row = rows[a["model"]] = {"key": a["model"], "sessions": 0, "messages": 0}
            row.update(dict.fromkeys((*ADDED_BY_AUX, "cost_usd", "actual_cost_usd"), 0))
            row["main"] = dict.fromkeys(ADDED_BY_AUX, 0)
            row["aux_tasks"] = []
            # A model used only for auxiliary calls: its cost is theirs, and so is what says
            # whether it is a dollar figure (sessions whose calls these are, unpriced ones).
            row.update(dict.fromkeys(("aux_sessions", "included_sessions", "unpriced_sessions"), 0))
        if "aux_sessions" in row:
            row["aux_sessions"] += a.get("sessions") or 0
            row["included_sessions"] += a.get("included_sessions") or 0
            row["unpriced_sessions"] += a.get("unpriced_sessions") or 0
        for k in ADDED_BY_AUX:
            row[k] = (row.get(k) or 0) + (a[k] or 0)
        row["cost_usd"] = (row.get("cost_usd") or 0) + (a["estimated_cost_usd"] or 0)
        row["aux_tasks"].append({k: a[k] for k in ("task", *ADDED_BY_AUX)})
    return sorted(
        rows.values(),
        key=lambda r: (
            -(r.get("cost_usd") or 0),
            -(r.get("input_tokens") or 0) - (r.get("output_tokens") or 0),
        ),
    )


_SUM_KEYS = (
    "sessions",
    "messages",
    "api_calls",
    "tool_calls",
    *TOKEN_KINDS,
    "estimated_cost_usd",
    "actual_cost_usd",
    "cost_usd",
    "actual_known",
    "included_sessions",
    "unpriced_sessions",
)
ADDED_BY_AUX = ("input_tokens", "output_tokens", "estimated_cost_usd", "api_calls")
# What tells whether a group's cost is a dollar figure (present.filters.group_cost).
PRICED_BY = ("sessions", "included_sessions", "unpriced_sessions")


_total = sql.total
