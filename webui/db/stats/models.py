"""Usage by model as Hermes 0.20 and 0.22 count it (``hermes insights``, InsightsEngine): from
``session_model_usage``, one row per session, model, billing route and task (the session's own
calls under task '', auxiliary calls — compression, title generation, vision… — under theirs),
so a session that switched models is counted on each; then each session's *residual* — what its
``sessions`` totals hold beyond its usage rows (older rows, calls recorded before the table),
floored at 0 — on the session's recorded model. A model's sessions are the sessions that put
anything on it. Messages and tool calls stay with the session's recorded model (Hermes ties
tool calls to no particular API call).

Hermes 0.19's analytics grouped sessions by their recorded model and added the auxiliary rows
(webui.db.stats.store.merge_aux_into_by_model); files of 0.19 keep that rule (webui.hermes.rules,
``usage_by_model_rows``)."""

from __future__ import annotations

from typing import Any

# Token columns of session_model_usage, as sessions names them too.
_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_FIGURES = (*_TOKENS, "reasoning_tokens", "api_calls", "estimated_cost_usd", "actual_cost_usd")


def model_usage(st, q) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(per model, per auxiliary task and model) for the sessions of ``q`` (StatsStore ``st``).

    Per model (full name; None for a session without one): ``sessions`` and each figure of
    ``_FIGURES``, by InsightsEngine's rule. Per (task, model), the auxiliary rows (a task other
    than ''): input and output tokens, estimated cost, API calls, as StatsStore.aux gives them.

    Three reads: the usage rows summed by (model, task) in one pass over them; the sessions
    with a row on each model, from the table's own key (an index read, no row); and each
    session's residual — its totals less all its usage rows, auxiliary ones included, floored
    at 0 — grouped by its recorded model, with how many of those sessions have no usage row on
    that model (they add to its sessions)."""
    where, params = st.where(q)
    cols = st.schema.columns.get("session_model_usage", ())

    def u(name: str) -> str:
        return f"TOTAL(u.{name})" if name in cols else "0"

    task = "COALESCE(u.task, '')" if "task" in cols else "''"
    figures = (
        ", ".join(f"{u(k)} AS {k}" for k in _TOKENS)
        + f", {u('reasoning_tokens')} AS reasoning_tokens, {u('api_call_count')} AS api_calls, "
        f"{u('estimated_cost_usd')} AS estimated_cost_usd, "
        f"{u('actual_cost_usd')} AS actual_cost_usd"
    )

    def usage_of(source: str, args: list[Any]) -> tuple[list[dict], dict[Any, int]]:
        """The usage rows of ``source`` summed by (model, task), and per model the sessions
        with a row on it (their (session, model) pairs: the table's own key, an index read)."""
        sums = st.r.rows(
            f"SELECT u.model AS model, {task} AS task, {figures} FROM {source} GROUP BY 1, 2",
            args,
        )
        pairs = st.r.rows(
            "SELECT model, COUNT(*) AS n FROM (SELECT DISTINCT u.session_id, u.model "
            f"FROM {source}) GROUP BY model",
            args,
        )
        return sums, {r["model"]: r["n"] for r in pairs}

    # Every usage row read in table order (Hermes's index on model would cost a lookup a row).
    table = "session_model_usage u NOT INDEXED"
    # Sessions picked by rowid first: when the filter names only started_at, that pick is a
    # walk of Hermes's started_at index, and only the sessions picked are read (a scan of the
    # table reads every wide session row: 10 ms on 20,000 sessions).
    picked_ids = "SELECT id FROM sessions WHERE rowid IN (SELECT rowid FROM sessions WHERE {})"
    long = where != "1" and (q.start is None or (q.end or q.now) - q.start > 60 * 86400)
    if where == "1":
        sums, users = usage_of(table, [])
    elif long:
        # A long period holds most sessions: every usage row, less those of the sessions
        # outside it (sums and (session, model) pairs both subtract), instead of a lookup per
        # session in it.
        sums, users = usage_of(table, [])
        outside = (
            f"({picked_ids.format(f'NOT COALESCE(({where}), 0)')}) p "
            "CROSS JOIN session_model_usage u ON u.session_id = p.id"
        )
        out_sums, out_users = usage_of(outside, params)
        sums = _less(sums, out_sums)
        users = {m: n - out_users.get(m, 0) for m, n in users.items()}
    else:
        # A short one: its sessions lead, each finding its rows through Hermes's session_id
        # index (CROSS JOIN keeps that order).
        sums, users = usage_of(
            f"({picked_ids.format(where)}) p CROSS JOIN session_model_usage u "
            "ON u.session_id = p.id",
            params,
        )
    left = {
        "api_calls": ("api_call_count", "0"),
        "estimated_cost_usd": ("estimated_cost_usd", "0.0"),
        "actual_cost_usd": ("actual_cost_usd", "0.0"),
        **{k: (k, "0") for k in _TOKENS},
    }
    parts = ", ".join(
        f"MAX({zero}, p.{mine} - {u(mine)}) AS {name}" for name, (mine, zero) in left.items()
    )
    # p's columns read once, in rowid order (grouping by rowid needs no sort); a short
    # period's sessions picked first by rowid, as above
    short_pick = (
        where if where == "1" or long else f"rowid IN (SELECT rowid FROM sessions WHERE {where})"
    )
    picked = ", ".join(f"{st.num(mine)} AS {mine}" for mine, _ in left.values())
    residual = st.r.rows(
        "SELECT model, SUM(NOT own) AS sessions, "
        + ", ".join(f"TOTAL({k}) AS {k}" for k in left)
        + " FROM (SELECT p.model AS model, "
        + parts
        + ", MAX(u.session_id IS NOT NULL AND u.model IS p.model) AS own "
        f"FROM (SELECT rowid AS pr, id, {st.col('model')} AS model, {picked} FROM sessions "
        f"WHERE {short_pick}) p LEFT JOIN session_model_usage u ON u.session_id = p.id "
        "GROUP BY p.pr) WHERE " + " OR ".join(f"{k} > 0" for k in left) + " GROUP BY model",
        params,
    )
    out: dict[Any, dict[str, Any]] = {}

    def model_row(model: Any) -> dict[str, Any]:
        if model not in out:
            out[model] = {"model": model, "sessions": 0, **dict.fromkeys(_FIGURES, 0)}
        return out[model]

    per_task = []
    for row in sums:
        into = model_row(row["model"])
        for k in _FIGURES:
            into[k] = (into.get(k) or 0) + (row.get(k) or 0)
        if row["task"]:
            per_task.append(
                {
                    "model": row["model"],
                    "task": row["task"],
                    **{k: row[k] for k in ("input_tokens", "output_tokens", "estimated_cost_usd")},
                    "api_calls": row["api_calls"],
                }
            )
    for model, n in users.items():
        if n:
            model_row(model)["sessions"] += n
    for row in residual:
        into = model_row(row["model"])
        into["sessions"] += row["sessions"] or 0
        for k in _FIGURES:
            into[k] = (into.get(k) or 0) + (row.get(k) or 0)
    for into in (*out.values(), *per_task):  # TOTAL() sums as floats: counts are whole
        for k in _FIGURES:
            if k in into and not k.endswith("_usd"):
                into[k] = int(into[k] or 0)
    return list(out.values()), per_task


def _less(every: list[dict], outside: list[dict]) -> list[dict]:
    """Sums by (model, task) less those of the sessions outside the period; a (model, task)
    left with nothing is dropped."""
    out = {(r["model"], r["task"]): dict(r) for r in every}
    for r in outside:
        row = out.get((r["model"], r["task"]))
        if row is not None:
            for k in _FIGURES:
                row[k] = (row[k] or 0) - (r[k] or 0)
    return [r for r in out.values() if any(abs(r[k] or 0) > 1e-9 for k in _FIGURES)]


def by_model(
    usage: list[dict[str, Any]], recorded: list[dict[str, Any]], aux: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The by-model panel by InsightsEngine's rule, in the shape of Hermes's dashboard rows:
    each model's figures, ``main`` (its sessions' own use) and ``aux_tasks`` (its auxiliary
    calls, per task). ``usage``: model_usage's rows; ``recorded``: the panel grouped by the
    sessions' recorded model (its
    messages, tool calls and price kinds are kept); ``aux``: the auxiliary rows by (task,
    model) (StatsStore.aux)."""
    by_key = {r["key"]: r for r in recorded}
    rows: dict[str, dict[str, Any]] = {}
    for m in usage:
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
        held = rows.get(a["model"])
        if held is not None:
            held["aux_tasks"].append({k: a[k] for k in ("task", *AUX_KEYS)})
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
