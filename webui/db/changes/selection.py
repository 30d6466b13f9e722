"""A selection (webui.hermes.selection) as SQL: ``SessionDB._prune_filter_where`` of the Hermes
that wrote the file (webui.hermes.rules), clause for clause, over the columns this database
has. A filter on a column the database lacks matches nothing (the session cannot be shown to
have that value). The SQL reads ``sessions`` under an alias (``s`` unless told)."""

from __future__ import annotations

from typing import Any

from webui.db import sql
from webui.db.schema import Schema
from webui.hermes.rules import Rules, rules_for
from webui.hermes.selection import Selection


def _like(text: str, escaped: bool) -> tuple[str, str]:
    """(the LIKE pattern of a case-insensitive substring, its ESCAPE clause). 0.19 leaves %
    and _ in the text as wildcards; 0.20+ matches them literally."""
    text = text.lower()
    if not escaped:
        return f"%{text}%", ""
    text = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{text}%", " ESCAPE '\\'"


def last_active(schema: Schema, rules: Rules, alias: str = "s") -> str:
    """Last activity as the selection's Hermes works it out: 0.20's prune reads the newest
    message alone (no heartbeat), 0.22's the list's own windowed rule (``sql.last_active``)."""
    kind = "windowed" if rules.last_active == "windowed" else "messages"
    return sql.last_active(schema, kind, alias)


def where(
    schema: Schema,
    sel: Selection,
    alias: str = "s",
    *,
    ended_only: bool = True,
    rules: Rules | None = None,
) -> tuple[str, list[Any]]:
    """``ended_only``: Hermes's base for prune, archive and export (only ended sessions are
    ever candidates); the list applies the same filters without it. Prune and archive of 0.22
    files also spare pins and keep lineages whole (``lineage_where``)."""
    rules = rules or rules_for(schema.version)
    a = f"{alias}."

    def col(name: str) -> str:
        return sql.col(schema, name, alias)

    clauses = [f"{col('ended_at')} IS NOT NULL"] if ended_only else []
    params: list[Any] = []

    def add(clause: str, *values: Any) -> None:
        clauses.append(clause)
        params.extend(values)

    escaped = rules.selection_escapes_like
    if rules.age_is_inactivity:
        active = last_active(schema, rules, alias)
        if sel.active_before is not None:
            add(f"{active} < ?", sel.active_before)
            if rules.orphan_reap_ages_from_end:
                # a row the start-up orphan sweep closed ages from that close
                add(
                    f"(COALESCE({col('end_reason')}, '') != 'startup_orphan_reap' "
                    f"OR {col('ended_at')} < ?)",
                    sel.active_before,
                )
        if sel.active_after is not None:
            add(f"{active} >= ?", sel.active_after)
    else:
        # 0.19: every time bound bounds the start; the tighter of two wins
        if sel.active_before is not None:
            add(f"{a}started_at < ?", sel.active_before)
        if sel.active_after is not None:
            add(f"{a}started_at >= ?", sel.active_after)
    if sel.started_before is not None:
        add(f"{a}started_at < ?", sel.started_before)
    if sel.started_after is not None:
        add(f"{a}started_at >= ?", sel.started_after)
    if sel.source:
        add(f"{a}source = ?", sel.source)
    for key, column in (("title_like", "title"), ("model_like", "model")):
        if getattr(sel, key):
            pattern, esc = _like(getattr(sel, key), escaped)
            add(f"LOWER(COALESCE({col(column)}, '')) LIKE ?{esc}", pattern)
    if sel.end_reason:
        add(f"{col('end_reason')} = ?", sel.end_reason)
    if sel.cwd_prefix:
        prefix = sel.cwd_prefix.rstrip("/\\") or sel.cwd_prefix
        if escaped:
            stem = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            add(
                f"({col('cwd')} = ? OR {col('cwd')} LIKE ? ESCAPE '\\' "
                f"OR {col('cwd')} LIKE ? ESCAPE '\\')",
                prefix,
                f"{stem}/%",
                f"{stem}\\\\%",
            )
        else:
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
    if sel.provider:
        add(f"LOWER(COALESCE({col('billing_provider')}, '')) = ?", sel.provider.lower())
    for key, column in (("user_id", "user_id"), ("chat_id", "chat_id"), ("chat_type", "chat_type")):
        if getattr(sel, key):
            add(f"{col(column)} = ?", getattr(sel, key))
    if sel.branch_like:
        pattern, esc = _like(sel.branch_like, escaped)
        add(f"LOWER(COALESCE({col('git_branch')}, '')) LIKE ?{esc}", pattern)
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
    if ended_only and sel.command == "archive" and rules.selection_whole_lineages:
        # archive matches lineage tips only: an old ancestor is archived with its tip, never
        # on its own age
        clauses.append(f"COALESCE({col('end_reason')}, '') <> 'compression'")
    if ended_only and spares_pins(schema, sel, rules):
        clauses.append(not_pinned(alias))
    return " AND ".join(clauses) or "1", params


def spares_pins(schema: Schema, sel: Selection, rules: Rules) -> bool:
    """0.22's prune and archive leave pinned sessions (and the unpinned continuations of a
    pinned segment) alone unless include_pinned; its export takes them."""
    return (
        rules.selection_spares_pins
        and sel.command in ("prune", "archive")
        and not sel.include_pinned
        and schema.has("sessions", "pinned")
    )


# A child continues a compression-ended parent (c, p): not a branch, delegate or reset fork
# of that parent, not a `tool` session. Markers name the parent they fork from: a continuation
# inherits model_config verbatim, so a marker naming another row is inherited, not a fork.
_CONTINUES = (
    "p.end_reason = 'compression'"
    + "".join(
        f" AND COALESCE(CASE WHEN json_valid(c.model_config) THEN "
        f"json_extract(c.model_config, '$.{marker}') END, '') != p.id"
        for marker in ("_branched_from", "_delegate_from", "_reset_from")
    )
    + " AND COALESCE(c.source, '') != 'tool'"
)


def not_pinned(alias: str = "s") -> str:
    """Neither pinned nor an unpinned later segment of a pinned conversation (walked forward
    from every pinned compression-ended session; pins are few)."""
    tail = (
        "WITH RECURSIVE tail(id) AS (SELECT c.id FROM sessions c JOIN sessions p "
        f"ON p.id = c.parent_session_id WHERE COALESCE(p.pinned, 0) = 1 AND {_CONTINUES} "
        "UNION SELECT c.id FROM tail t JOIN sessions p ON p.id = t.id "
        f"JOIN sessions c ON c.parent_session_id = p.id WHERE {_CONTINUES}) SELECT id FROM tail"
    )
    return f"COALESCE({alias}.pinned, 0) = 0 AND {alias}.id NOT IN ({tail})"


def kept_ancestors(candidates_where: str) -> str:
    """The compression ancestors (alias-free: a SELECT of ids) of every continuation that
    ``candidates_where`` (over alias ``s``) does not select: 0.22's prune keeps them, so a
    conversation still in use never loses its start."""
    return (
        "WITH RECURSIVE kept(id) AS (SELECT p.id FROM sessions c JOIN sessions p "
        f"ON p.id = c.parent_session_id WHERE {_CONTINUES} AND NOT EXISTS (SELECT 1 FROM "
        f"sessions s WHERE s.id = c.id AND {candidates_where}) UNION SELECT p.id FROM kept k "
        "JOIN sessions c ON c.id = k.id JOIN sessions p ON p.id = c.parent_session_id "
        f"WHERE {_CONTINUES}) SELECT id FROM kept"
    )


def lineage_where(
    schema: Schema, sel: Selection, alias: str = "s", *, rules: Rules | None = None
) -> tuple[str, list[Any]]:
    """``where`` of a prune, archive or export, with 0.22's whole-lineage rule for prune: a
    compression ancestor goes only with every continuation after it."""
    rules = rules or rules_for(schema.version)
    if not (sel.command == "prune" and rules.selection_whole_lineages):
        return where(schema, sel, alias, rules=rules)
    base, params = where(schema, sel, "s", rules=rules)
    base, params = f"{base} AND s.id NOT IN ({kept_ancestors(base)})", [*params, *params]
    if alias != "s":
        base = f"{alias}.id IN (SELECT s.id FROM sessions s WHERE {base})"
    return base, params


def continuations(conn, ids: list[str]) -> list[tuple[str, str]]:
    """(parent, child) for each compression continuation of a session among ``ids``, by the
    rule ``kept_ancestors`` reads (run on a writer's connection inside its transaction)."""
    out: list[tuple[str, str]] = []
    for i in range(0, len(ids), 900):
        chunk = ids[i : i + 900]
        out.extend(
            conn.execute(
                f"SELECT p.id, c.id FROM sessions c JOIN sessions p ON p.id = "
                f"c.parent_session_id WHERE p.id IN ({sql.in_list(len(chunk))}) AND {_CONTINUES}",
                chunk,
            ).fetchall()
        )
    return out


def compression_links(conn, ids: list[str]) -> list[tuple[str, str]]:
    """(child, parent) for each of ``ids`` whose parent ended 'compression': the links that
    make one conversation of several sessions (a prune keeps them in one batch)."""
    out: list[tuple[str, str]] = []
    for i in range(0, len(ids), 900):
        chunk = ids[i : i + 900]
        out.extend(
            conn.execute(
                f"SELECT c.id, p.id FROM sessions c JOIN sessions p ON p.id = "
                f"c.parent_session_id WHERE c.id IN ({sql.in_list(len(chunk))}) "
                "AND p.end_reason = 'compression'",
                chunk,
            ).fetchall()
        )
    return out
