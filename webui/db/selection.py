"""A selection (webui.hermes.selection) as SQL: ``SessionDB._prune_filter_where`` of Hermes
0.19.0, clause for clause, over the columns this database has. A filter on a column the
database lacks matches nothing (the session cannot be shown to have that value)."""

from __future__ import annotations

from typing import Any

from webui.db import sql
from webui.db.schema import Schema
from webui.hermes.selection import Selection


def where(
    schema: Schema, sel: Selection, alias: str = "s", *, ended_only: bool = True
) -> tuple[str, list[Any]]:
    """``ended_only``: Hermes's base for prune, archive and export (only ended sessions are
    ever candidates); the list applies the same filters without it."""
    a = f"{alias}."

    def col(name: str) -> str:
        return f"{a}{name}" if schema.has("sessions", name) else "NULL"

    clauses = [f"{col('ended_at')} IS NOT NULL"] if ended_only else []
    params: list[Any] = []

    def add(clause: str, *values: Any) -> None:
        clauses.append(clause)
        params.extend(values)

    if sel.started_before is not None:
        add(f"{a}started_at < ?", sel.started_before)
    if sel.started_after is not None:
        add(f"{a}started_at >= ?", sel.started_after)
    if sel.source:
        add(f"{a}source = ?", sel.source)
    if sel.title_like:
        # Hermes does not escape LIKE here: % and _ in the text are wildcards there too.
        add(f"LOWER(COALESCE({col('title')}, '')) LIKE ?", f"%{sel.title_like.lower()}%")
    if sel.end_reason:
        add(f"{col('end_reason')} = ?", sel.end_reason)
    if sel.cwd_prefix:
        prefix = sel.cwd_prefix.rstrip("/\\") or sel.cwd_prefix
        add(
            f"({col('cwd')} = ? OR {col('cwd')} LIKE ? OR {col('cwd')} LIKE ?)",
            prefix,
            f"{prefix}/%",
            f"{prefix}\\%",
        )
    if sel.min_messages is not None:
        add(f"{col('message_count')} >= ?", sel.min_messages)
    if sel.max_messages is not None:
        add(f"{col('message_count')} <= ?", sel.max_messages)
    if sel.model_like:
        add(f"LOWER(COALESCE({col('model')}, '')) LIKE ?", f"%{sel.model_like.lower()}%")
    if sel.provider:
        add(f"LOWER(COALESCE({col('billing_provider')}, '')) = ?", sel.provider.lower())
    for key, column in (("user_id", "user_id"), ("chat_id", "chat_id"), ("chat_type", "chat_type")):
        if getattr(sel, key):
            add(f"{col(column)} = ?", getattr(sel, key))
    if sel.branch_like:
        add(f"LOWER(COALESCE({col('git_branch')}, '')) LIKE ?", f"%{sel.branch_like.lower()}%")
    tokens = f"(COALESCE({col('input_tokens')}, 0) + COALESCE({col('output_tokens')}, 0))"
    cost = sql.cost(schema, alias)
    tools = f"COALESCE({col('tool_call_count')}, 0)"
    for low, high, expr in (
        ("min_tokens", "max_tokens", tokens),
        ("min_cost", "max_cost", cost),
        ("min_tool_calls", "max_tool_calls", tools),
    ):
        if getattr(sel, low) is not None:
            add(f"{expr} >= ?", getattr(sel, low))
        if getattr(sel, high) is not None:
            add(f"{expr} <= ?", getattr(sel, high))
    if schema.has("sessions", "archived"):
        if sel.archived is True:
            clauses.append(f"{a}archived = 1")
        elif sel.archived is False:
            clauses.append(f"{a}archived = 0")
    if sel.sessions:
        add(f"{a}id IN ({sql.in_list(len(sel.sessions))})", *sel.sessions)
    return " AND ".join(clauses) or "1", params
