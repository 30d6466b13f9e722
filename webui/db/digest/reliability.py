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


def tools(conn: sqlite3.Connection, where: str, params: list[Any]) -> list[dict[str, Any]]:
    """Per tool: calls, results, failures (timeouts, non-zero exits), rate; most failures first."""
    rows = _rows(
        conn,
        "SELECT t.tool AS tool, SUM(t.calls) AS calls, SUM(t.results) AS results, "
        "SUM(t.failures) AS failures, SUM(t.timeouts) AS timeouts, SUM(t.exits) AS exits "
        "FROM main.sess s CROSS JOIN main.tool_use t ON t.session_id = s.session_id "
        f"WHERE {where} GROUP BY 1",
        params,
    )
    for r in rows:
        r["rate"] = _rate(r["failures"], r["results"])
    return sorted(rows, key=lambda r: (-r["failures"], -r["results"], r["tool"]))


def series(
    conn: sqlite3.Connection, where: str, params: list[Any], bucket: str
) -> list[dict[str, Any]]:
    """Results and failures per period bucket (``bucket``: an SQL expression over
    ``s.started_at``) and tool."""
    return _rows(
        conn,
        f"SELECT {bucket} AS bucket, t.tool AS tool, SUM(t.results) AS results, "
        "SUM(t.failures) AS failures FROM main.sess s CROSS JOIN main.tool_use t "
        f"ON t.session_id = s.session_id WHERE {where} GROUP BY 1, 2 ORDER BY 1",
        params,
    )


def loops(
    conn: sqlite3.Connection, where: str, params: list[Any], limit: int = LOOPS_SHOWN
) -> dict[str, Any]:
    """Retry loops (webui.hermes.tool_runs): how many, their calls, the longest ``limit``."""
    has_title = any(r[1] == "title" for r in conn.execute("PRAGMA st.table_info(sessions)"))
    # The title read by the session's key: a join would make the filter's columns ambiguous.
    title = "(SELECT title FROM st.sessions t WHERE t.id = l.session_id)" if has_title else "NULL"
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


def models(conn: sqlite3.Connection, where: str, params: list[Any]) -> list[dict[str, Any]]:
    """Per model: its turns that called tools, how many ended in a tool failure (a call of the
    turn failed), and the rate."""
    rows = _rows(
        conn,
        "SELECT COALESCE(s.model, '(none)') AS model, SUM(s.turns) AS turns, "
        "SUM(s.failed_turns) AS failed_turns, SUM(s.results) AS results, "
        "SUM(s.failures) AS failures FROM main.sess s "
        f"WHERE {where} GROUP BY 1 HAVING SUM(s.turns) > 0",
        params,
    )
    for r in rows:
        r["rate"] = _rate(r["failed_turns"], r["turns"])
    return sorted(rows, key=lambda r: (-(r["rate"] or 0), -r["turns"], r["model"]))


def unattended(reader: Reader, schema: Schema, where: str, params: list[Any]) -> dict[str, Any]:
    """Cost and tokens of unattended work (cron, webhooks) against interactive work, and per
    cron job (its sessions' id names the job; its newest title, the job's name)."""
    cost = sqlh.cost(schema)
    tokens = sqlh.tokens(schema)
    by_source = reader.rows(
        f"SELECT source, COUNT(*) AS sessions, {sqlh.total(tokens)} AS tokens, "
        f"{sqlh.total(cost, integer=False)} AS cost_usd, {sqlh.price_counts(schema)} "
        f"FROM sessions WHERE {where} GROUP BY 1",
        params,
    )
    kinds: dict[str, dict[str, Any]] = {}
    for r in by_source:
        kind = "unattended" if tool_runs.unattended(r["source"]) else "interactive"
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
        for f in ("sessions", "tokens", "cost_usd", "included_sessions", "unpriced_sessions"):
            k[f] += r[f] or 0
        k["sources"].append(r["source"])
    title = sqlh.col(schema, "title")
    job = (
        "CASE WHEN id GLOB 'cron_?*_[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]_"
        "[0-9][0-9][0-9][0-9][0-9][0-9]' THEN substr(id, 6, length(id) - 21) END"
    )
    # Each job's name is its newest titled session's title (Hermes titles a run when it ends).
    named = (
        "(SELECT c2.title FROM c c2 WHERE c2.job IS c.job AND c2.title IS NOT NULL "
        "ORDER BY c2.started_at DESC LIMIT 1)"
        if title != "NULL"
        else "NULL"
    )
    included, unknown = "price = 'included'", "price = 'unknown'"
    jobs = reader.rows(
        f"WITH c AS (SELECT {job} AS job, started_at, {title} AS title, {tokens} AS tokens, "
        f"{cost} AS cost, {sqlh.price_kind(schema)} AS price FROM sessions "
        f"WHERE source = 'cron' AND {where}) "
        f"SELECT job, COUNT(*) AS sessions, {sqlh.total('tokens')} AS tokens, "
        f"{sqlh.total('cost', integer=False)} AS cost_usd, "
        f"{sqlh.total(included)} AS included_sessions, "
        f"{sqlh.total(unknown)} AS unpriced_sessions, "
        f"MAX(started_at) AS last_run, {named} AS title FROM c GROUP BY job "
        "ORDER BY cost_usd DESC, sessions DESC",
        params,
    )
    for j in jobs:
        j["name"] = (
            tool_runs.cron_job_name(j["title"], j["job"]) if j["job"] else "(other cron sessions)"
        )
    return {
        "kinds": [kinds[k] for k in ("unattended", "interactive") if k in kinds],
        "cron_jobs": jobs,
    }
