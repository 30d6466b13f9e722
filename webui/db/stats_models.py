"""Usage by model as Hermes 0.20 and 0.22 count it (``hermes insights``, InsightsEngine): from
``session_model_usage``, one row per session, model, billing route and task (the session's own
calls under task '', auxiliary calls — compression, title generation, vision… — under theirs),
so a session that switched models is counted on each; then each session's *residual* — what its
``sessions`` totals hold beyond its usage rows (older rows, calls recorded before the table),
floored at 0 — on the session's recorded model. A model's sessions are the sessions that put
anything on it. Messages and tool calls stay with the session's recorded model (Hermes ties
tool calls to no particular API call).

Hermes 0.19's analytics grouped sessions by their recorded model and added the auxiliary rows
(webui.db.stats.merge_aux_into_by_model); files of 0.19 keep that rule (webui.hermes.rules,
``usage_by_model_rows``)."""

from __future__ import annotations

from typing import Any

# Token columns of session_model_usage, as sessions names them too.
_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_FIGURES = (*_TOKENS, "reasoning_tokens", "api_calls", "estimated_cost_usd", "actual_cost_usd")


def model_usage(st, q) -> list[dict[str, Any]]:
    """Per model (full name; "(none)" for a session without one): ``sessions`` and each figure
    of ``_FIGURES``, by InsightsEngine's rule, for the sessions of ``q`` (StatsStore ``st``)."""
    where, params = st.where(q)
    cols = st.schema.columns.get("session_model_usage", ())

    def u(name: str, total: bool = False) -> str:
        if name not in cols:
            return "0"
        return f"TOTAL(u.{name})" if total else f"SUM(COALESCE(u.{name}, 0))"

    def s(name: str) -> str:
        return st.num(name)

    task = "COALESCE(u.task, '')" if "task" in cols else "''"
    # reasoning tokens are not reconciled (Hermes puts 0 there)
    residual = ", ".join(f"MAX(0, p.{k} - COALESCE(t.{k}, 0)) AS {k}" for k in _TOKENS)
    statement = f"""
        WITH p AS (SELECT id, {st.col('model')} AS model, {', '.join(f'{s(k)} AS {k}' for k in _TOKENS)},
                          {s('api_call_count')} AS api_calls, {s('estimated_cost_usd')} AS est,
                          {s('actual_cost_usd')} AS act
                   FROM sessions WHERE {where}),
        u AS (SELECT u.session_id AS sid, u.model AS model, {task} AS task,
                     {', '.join(f'{u(k)} AS {k}' for k in _TOKENS)},
                     {u('reasoning_tokens')} AS reasoning_tokens, {u('api_call_count')} AS api_calls,
                     {u('estimated_cost_usd', True)} AS estimated_cost_usd,
                     {u('actual_cost_usd', True)} AS actual_cost_usd
              FROM p CROSS JOIN session_model_usage u ON u.session_id = p.id GROUP BY 1, 2, 3),
        t AS (SELECT sid, {', '.join(f'SUM({k}) AS {k}' for k in _TOKENS)}, SUM(api_calls) AS api_calls,
                     TOTAL(estimated_cost_usd) AS est, TOTAL(actual_cost_usd) AS act
              FROM u GROUP BY sid),
        r AS (SELECT p.id AS sid, p.model AS model, '' AS task, {residual},
              0 AS reasoning_tokens, MAX(0, p.api_calls - COALESCE(t.api_calls, 0)) AS api_calls,
              MAX(0.0, p.est - COALESCE(t.est, 0)) AS estimated_cost_usd,
              MAX(0.0, p.act - COALESCE(t.act, 0)) AS actual_cost_usd
              FROM p LEFT JOIN t ON t.sid = p.id),
        x AS (SELECT * FROM u UNION ALL SELECT * FROM r WHERE {' OR '.join(f'{k} > 0' for k in _FIGURES)}),
        per AS (SELECT model, sid, {', '.join(f'SUM({k}) AS {k}' for k in _FIGURES)}
                FROM x GROUP BY model, sid)
        SELECT model, COUNT(*) AS sessions, {', '.join(f'SUM({k}) AS {k}' for k in _FIGURES)}
        FROM per GROUP BY model"""
    return st.r.rows(statement, params)


def by_model(
    st, q, recorded: list[dict[str, Any]], aux: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The by-model panel by InsightsEngine's rule, in the shape of Hermes's dashboard rows:
    each model's figures, ``main`` (its sessions' own use) and ``aux_tasks`` (its auxiliary
    calls, per task). ``recorded``: the panel grouped by the sessions' recorded model (its
    messages, tool calls and price kinds are kept); ``aux``: the auxiliary rows by (task,
    model) (StatsStore.aux)."""
    by_key = {r["key"]: r for r in recorded}
    rows: dict[str, dict[str, Any]] = {}
    for m in model_usage(st, q):
        key = "(none)" if m["model"] is None else m["model"]
        base = by_key.get(key, {})
        row = {
            "key": key,
            "sessions": m["sessions"],
            "messages": base.get("messages") or 0,
            "tool_calls": base.get("tool_calls") or 0,
            **{k: m[k] or 0 for k in _FIGURES},
            "actual_known": base.get("actual_known") or 0,
            "included_sessions": base.get("included_sessions") or 0,
            "unpriced_sessions": base.get("unpriced_sessions") or 0,
            "aux_tasks": [],
        }
        actual, estimate = row["actual_cost_usd"], row["estimated_cost_usd"]
        row["cost_usd"] = actual if actual > 0 else estimate
        rows[key] = row
    for a in aux:
        row = rows.get(a["model"])
        if row is not None:
            row["aux_tasks"].append({k: a[k] for k in ("task", *AUX_KEYS)})
    for row in rows.values():
        row["main"] = {
            k: (row[k] or 0) - sum(a[k] or 0 for a in row["aux_tasks"]) for k in AUX_KEYS
        }
    return sorted(
        rows.values(),
        key=lambda r: (-(r["cost_usd"] or 0), -(r["input_tokens"] + r["output_tokens"]), r["key"]),
    )


AUX_KEYS = ("input_tokens", "output_tokens", "estimated_cost_usd", "api_calls")


def usage_by_task(rows: list[dict[str, Any]], aux: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The "model usage by task" panel to match: each model's own use (``main``: its usage
    rows with no task and the residuals) and each auxiliary task's."""
    out = []
    for r in rows:
        main = r["main"]
        tokens = (r["input_tokens"] + r["output_tokens"]) - sum(
            (a["input_tokens"] or 0) + (a["output_tokens"] or 0) for a in r["aux_tasks"]
        )
        if main["api_calls"] or tokens:
            cost = r["cost_usd"] - sum(a["estimated_cost_usd"] or 0 for a in r["aux_tasks"])
            out.append(
                {
                    "task": "main",
                    "model": r["key"],
                    "api_calls": main["api_calls"],
                    "tokens": tokens,
                    "cost_usd": max(0.0, cost),
                }
            )
    for a in aux:
        out.append(
            {
                "task": a["task"],
                "model": a["model"],
                "api_calls": a["api_calls"],
                "tokens": (a["input_tokens"] or 0) + (a["output_tokens"] or 0),
                "cost_usd": a["estimated_cost_usd"] or 0,
            }
        )
    return sorted(out, key=lambda r: -r["tokens"])
