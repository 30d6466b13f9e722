"""How often tools fail, where they loop, what unattended work costs: the Reliability section
of /stats. Figures follow the statistics' rule — the sessions whose start falls in the period,
with the same source, model and archived filters (``where`` over the digest's ``sess s``,
built by StatsStore.rollup_where) — so they add up with the rest of the page.

Tool figures come from the digest (webui.db.digest): per tool, its calls (entries in
assistants' ``tool_calls``), its results (tool rows) and the results Hermes's own rule counts as
failures (webui.hermes.tool_results), of which timeouts and non-zero exits; the failure rate is
failures / results. Cost and tokens of unattended work are session figures, read from
state.db (cost: what the provider billed, else the estimate).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from webui.db import sql as sqlh
from webui.db.daily_sums import EDGE, Span, days
from webui.db.digest.tables import NO_MODEL
from webui.db.reader import Reader
from webui.db.schema import Schema
from webui.hermes import tool_runs

LOOPS_SHOWN = 50


def _rows(conn: sqlite3.Connection, statement: str, params: list[Any]) -> list[dict[str, Any]]:
    cur = conn.execute(statement, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _rate(failures: int, results: int) -> float | None:
    return round(failures / results, 6) if results else None


def _summed(
    conn: sqlite3.Connection,
    per_session: str,
    where: str,
    params: list[Any],
    span: Span | None,
    key: str,
    sums: tuple[str, ...],
    daily: str,
) -> list[dict[str, Any]]:
    """Rows of ``sums`` per ``key``: ``per_session`` (a statement over ``sess s`` with
    ``{extra}`` and ``{where}`` to fill) for every session the filter takes; with a ``span``
    (the period the only filter), whole days from the ``daily`` table and only the period's
    first and last day session by session (webui.db.daily_sums)."""
    if span is None:
        return _rows(conn, per_session.format(extra="", where=where), params)
    inside, inside_params, edges = days(span)
    acc: dict[str, dict[str, Any]] = {}
    for r in (
        *_rows(conn, per_session.format(extra=EDGE, where=where), [*edges, *params]),
        *_rows(
            conn,
            f"SELECT {key}, {', '.join(f'SUM({k}) AS {k}' for k in sums)} "
            f"FROM main.{daily} WHERE {inside} GROUP BY 1",
            inside_params,
        ),
    ):
        a = acc.setdefault(r[key], {key: r[key], **dict.fromkeys(sums, 0)})
        for k in sums:
            a[k] += r[k] or 0
    return list(acc.values())


TOOL_SUMS = ("calls", "results", "failures", "timeouts", "exits")


def tools(
    conn: sqlite3.Connection,
    where: str,
    params: list[Any],
    span: Span | None = None,
) -> list[dict[str, Any]]:
    """Per tool: calls, results, failures (timeouts, non-zero exits), rate; most failures
    first. ``span`` (start, end), when the period is the only filter: whole days from the
    daily sums."""
    sums = ", ".join(f"SUM(t.{k}) AS {k}" for k in TOOL_SUMS)
    per_session = (
        f"SELECT t.tool AS tool, {sums} FROM main.sess s CROSS JOIN main.tool_use t "
        "ON t.session_id = s.session_id WHERE {extra}({where}) GROUP BY 1"
    )
    rows = _summed(conn, per_session, where, params, span, "tool", TOOL_SUMS, "tool_day")
    if span is not None:  # the daily sums can hold a tool whose figures went back to zero
        rows = [r for r in rows if r["calls"] or r["results"]]
    for r in rows:
        r["rate"] = _rate(r["failures"], r["results"])
    return sorted(rows, key=lambda r: (-r["failures"], -r["results"], r["tool"]))


def series(
    conn: sqlite3.Connection,
    where: str,
    params: list[Any],
    bucket: str,
    tool: str | None = None,
) -> list[dict[str, Any]]:
    """Results and failures (timeouts, non-zero exits) per period bucket (``bucket``: an SQL
    expression over ``s.started_at``, the reader's days), from the sessions' own sums; of one
    ``tool`` from its rows per session."""
    if tool is None:
        return _rows(
            conn,
            f"SELECT {bucket} AS bucket, SUM(s.results) AS results, SUM(s.failures) AS failures, "
            "SUM(s.timeouts) AS timeouts, SUM(s.exits) AS exits FROM main.sess s "
            f"WHERE {where} AND s.results > 0 GROUP BY 1 ORDER BY 1",
            params,
        )
    return _rows(
        conn,
        f"SELECT {bucket} AS bucket, SUM(t.results) AS results, SUM(t.failures) AS failures, "
        "SUM(t.timeouts) AS timeouts, SUM(t.exits) AS exits FROM main.sess s CROSS JOIN "
        "main.tool_use t ON t.session_id = s.session_id AND t.tool = ? "
        f"WHERE {where} AND t.results > 0 GROUP BY 1 ORDER BY 1",
        [tool, *params],
    )


def loops(
    conn: sqlite3.Connection, where: str, params: list[Any], limit: int = LOOPS_SHOWN
) -> dict[str, Any]:
    """Retry loops (webui.hermes.tool_runs): how many, their calls, the longest ``limit``."""
    # The title read by the session's key: a join would make the filter's columns ambiguous.
    title = (
        f"(SELECT {sqlh.attached_col(conn, 'st', 'title', 't')} FROM st.sessions t "
        "WHERE t.id = l.session_id)"
    )
    summary = conn.execute(
        "SELECT COUNT(*), TOTAL(l.calls) FROM main.loops l JOIN main.sess s "
        f"ON s.session_id = l.session_id WHERE {where}",
        params,
    ).fetchone()
    longest = _rows(
        conn,
        "SELECT l.id AS id, l.session_id AS session_id, l.tool AS tool, l.first_message AS "
        "first_message, l.last_message AS last_message, l.calls AS calls, l.sample AS sample, "
        f"s.source AS source, {title} AS title FROM main.loops l JOIN main.sess s "
        f"ON s.session_id = l.session_id WHERE {where} ORDER BY l.calls DESC, l.id LIMIT ?",
        [*params, limit],
    )
    by_tool = _rows(
        conn,
        "SELECT l.tool AS tool, COUNT(*) AS loops, SUM(l.calls) AS calls FROM main.loops l "
        f"JOIN main.sess s ON s.session_id = l.session_id WHERE {where} GROUP BY 1 "
        "ORDER BY loops DESC, calls DESC",
        params,
    )
    return {
        "count": summary[0],
        "calls": int(summary[1]),
        "min_calls": tool_runs.LOOP_MIN,
        "longest": longest,
        "by_tool": by_tool,
    }


MODEL_SUMS = ("turns", "failed_turns", "results", "failures")


def models(
    conn: sqlite3.Connection,
    where: str,
    params: list[Any],
    span: Span | None = None,
) -> list[dict[str, Any]]:
    """Per model: its turns that called tools, how many ended in a tool failure (a call of the
    turn failed), and the rate. ``span`` as for :func:`tools`."""
    sums = ", ".join(f"SUM(s.{k}) AS {k}" for k in MODEL_SUMS)
    per_session = (
        f"SELECT COALESCE(s.model, '{NO_MODEL}') AS model, {sums} FROM main.sess s "
        "WHERE {extra}({where}) GROUP BY 1"
    )
    rows = _summed(conn, per_session, where, params, span, "model", MODEL_SUMS, "model_day")
    rows = [r for r in rows if r["turns"]]
    for r in rows:
        r["rate"] = _rate(r["failed_turns"], r["turns"])
    return sorted(rows, key=lambda r: (-(r["rate"] or 0), -r["turns"], r["model"]))


def unattended(
    reader: Reader,
    schema: Schema,
    where: str,
    params: list[Any],
    by_source: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Cost and tokens of unattended work (cron, webhooks) against interactive work, and per
    cron job (its sessions' id names the job; its newest title, the job's name).
    ``by_source``: the statistics' own figures per source for the same filters, when the page
    has them already (the same sums; one scan of the sessions fewer)."""
    cost = sqlh.cost(schema)
    tokens = sqlh.tokens(schema)
    if by_source is None:
        by_source = reader.rows(
            f"SELECT source AS key, COUNT(*) AS sessions, {sqlh.total(tokens)} AS tokens, "
            f"{sqlh.total(cost, integer=False)} AS cost_usd, {sqlh.price_counts(schema)} "
            f"FROM sessions WHERE {where} GROUP BY 1",
            params,
        )
    kinds: dict[str, dict[str, Any]] = {}
    for r in by_source:
        source = None if r["key"] == "(none)" else r["key"]
        kind = "unattended" if tool_runs.unattended(source) else "interactive"
        k = kinds.setdefault(
            kind,
            {
                "kind": kind,
                "sessions": 0,
                "tokens": 0,
                "cost_usd": 0.0,
                "sources": [],
                "included_sessions": 0,
                "unpriced_sessions": 0,
            },  # fmt: skip
        )
        row_tokens = r.get("tokens")
        if row_tokens is None:  # the statistics' rows: tokens by kind
            row_tokens = sum(r.get(c) or 0 for c in sqlh.TOKEN_COLUMNS)
        k["tokens"] += row_tokens
        for f in ("sessions", "cost_usd", "included_sessions", "unpriced_sessions"):
            k[f] += r.get(f) or 0
        k["sources"].append(r["key"])
    job = (
        "CASE WHEN id GLOB 'cron_?*_[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]_"
        "[0-9][0-9][0-9][0-9][0-9][0-9]' THEN substr(id, 6, length(id) - 21) END"
    )
    jobs = reader.rows(
        f"SELECT {job} AS job, COUNT(*) AS sessions, {sqlh.total(tokens)} AS tokens, "
        f"{sqlh.total(cost, integer=False)} AS cost_usd, {sqlh.price_counts(schema)}, "
        f"MAX(started_at) AS last_run FROM sessions WHERE source = 'cron' AND {where} "
        "GROUP BY 1 ORDER BY cost_usd DESC, sessions DESC",
        params,
    )
    # Each job's name: its newest titled session's title (Hermes titles a run as it ends);
    # SQLite takes a bare column from the row holding the MAX.
    titles = (
        {
            r["job"]: r["title"]
            for r in reader.rows(
                f"SELECT {job} AS job, title, MAX(started_at) AS at FROM sessions "
                f"WHERE source = 'cron' AND title IS NOT NULL AND {where} GROUP BY 1",
                params,
            )
        }
        if schema.has("sessions", "title")
        else {}
    )
    for j in jobs:
        j["title"] = titles.get(j["job"])
        j["name"] = (
            tool_runs.cron_job_name(j["title"], j["job"]) if j["job"] else "(other cron sessions)"
        )
    return {
        "kinds": [kinds[k] for k in ("unattended", "interactive") if k in kinds],
        "cron_jobs": jobs,
    }
