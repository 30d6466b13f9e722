"""Content-addressed system prompts (Hermes 0.20 on): ``sessions.system_prompt_hash`` names a
row of ``system_prompts`` (since its migration 25 the inline ``sessions.system_prompt`` is NULL
and only a read fallback), and 0.22's ``sessions.tool_names`` is a hash into the same table (the
session's pinned tool list; old rows: the inline list). The SQL that reads a session row with
both resolved, as Hermes's get_session does."""

from __future__ import annotations

from typing import Any

from webui.db import sql
from webui.db.reader import Reader
from webui.hermes import records


def resolving(schema, rules, alias: str = "s", tools: bool = True) -> tuple[str, str]:
    """(select, join): the columns ``_system_prompt_resolved`` (and with ``tools``
    ``_tool_names_resolved``) and the joins that read them, for a ``sessions`` row named
    ``alias``; empty where the file keeps prompts inline."""
    if not (
        rules.prompts_by_hash
        and schema.has("system_prompts")
        and schema.has("sessions", "system_prompt_hash")
    ):
        return "", ""
    inline = sql.col(schema, "system_prompt", alias)
    select = f", COALESCE(sp.prompt, {inline}) AS _system_prompt_resolved"
    join = f" LEFT JOIN system_prompts sp ON sp.hash = {alias}.system_prompt_hash"
    if tools and rules.tool_names_by_hash and schema.has("sessions", "tool_names"):
        select += f", COALESCE(tp.prompt, {alias}.tool_names) AS _tool_names_resolved"
        join += f" LEFT JOIN system_prompts tp ON tp.hash = {alias}.tool_names"
    return select, join


def session_with_prompts(r: Reader, session_id: str, rules) -> dict[str, Any] | None:
    """Every column of a session, its system prompt and tool list resolved (get_session)."""
    select, join = resolving(r.schema, rules)
    row = r.one(f"SELECT s.*{select} FROM sessions s{join} WHERE s.id = ?", [session_id])
    if row is None:
        return None
    shaped = records.session_record(row, rules)
    # The viewer shows the stored columns; markers lifted out of model_config are export keys.
    for marker in records.MARKERS:
        if marker not in row:
            shaped.pop(marker, None)
    return shaped
