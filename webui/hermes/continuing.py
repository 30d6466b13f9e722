"""Which conversations Hermes would still continue, by its own rules (pure: rows in, words out).

A conversation moved to cold storage leaves the live file: Hermes can no longer continue it
(its appends to a moved session fail on the foreign key). So cold storage leaves out, unless the
user includes them, the conversations Hermes would pick up again by itself:

* a session that never ended (``ended_at`` unset): Hermes may still write to it (never moved);
* a session ended for a reason Hermes's gateway treats as an accident and reopens when its chat
  writes again ("recoverable": ``agent_close``, ``ws_orphan_reap`` in 0.19 and 0.20; 0.22 adds
  ``superseded_by_resume`` and ``startup_orphan_reap``), or, from 0.22, one whose hand-off to
  another platform completed (``handoff_state = 'completed'``);
* a gateway chat's current session: the one its routing index names (the ``gateway_routing``
  table, and the ``sessions/sessions.json`` mirror beside the database);
* the session ``hermes -c`` continues: the most recently active session of the CLI (and of the
  TUI); from 0.20 also the most recent one of each workspace (its git repository's root, else
  its folder), since ``-c`` is scoped to the folder it runs in. 0.22 counts one-shot runs
  (``oneshot``) as CLI sessions. Recency is the newest of the session's last activity and its
  newest message, else its start, as Hermes computes it.

Each rule is what the Hermes that writes the file does (by its schema: 22 is 0.19, 23-30 the
0.20 line, 31 and later 0.22); older files follow 0.19's where their columns allow."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

HERMES_0_20_SCHEMA = 23
HERMES_0_22_SCHEMA = 31


@dataclass(frozen=True)
class ContinueRules:
    recoverable: tuple[str, ...]
    cli_sources: tuple[str, ...]  # what `hermes -c` counts as the CLI
    per_workspace: bool  # `hermes -c` prefers the folder's own latest session
    handoff_keeps: bool  # a completed hand-off stays recoverable


def rules_for(schema_version: int | None) -> ContinueRules:
    v = schema_version or 0
    if v >= HERMES_0_22_SCHEMA:
        return ContinueRules(
            ("agent_close", "ws_orphan_reap", "superseded_by_resume", "startup_orphan_reap"),
            ("cli", "oneshot"),
            True,
            True,
        )
    if v >= HERMES_0_20_SCHEMA:
        return ContinueRules(("agent_close", "ws_orphan_reap"), ("cli",), True, False)
    return ContinueRules(("agent_close", "ws_orphan_reap"), ("cli",), False, False)


def workspace(row: dict[str, Any]) -> str | None:
    """Hermes's workspace key: the git repository's root, else the folder, else none."""
    return (row.get("git_repo_root") or "").strip() or (row.get("cwd") or "").strip() or None


def latest(rows: Iterable[dict[str, Any]], rules: ContinueRules) -> dict[str, str]:
    """The sessions `hermes -c` would continue: id -> in words. ``rows``: id, source,
    last_active, started_at, cwd, git_repo_root (CLI and TUI sessions; others are ignored)."""
    best: dict[tuple[str, str | None], tuple[tuple, str]] = {}
    for row in rows:
        source = row.get("source")
        family = "cli" if source in rules.cli_sources else "tui" if source == "tui" else None
        if family is None:
            continue
        key = (_num(row.get("last_active")), _num(row.get("started_at")), str(row["id"]))
        places: list[str | None] = [None]
        if rules.per_workspace and workspace(row):
            places.append(workspace(row))
        for place in places:
            held = best.get((family, place))
            if held is None or key > held[0]:
                best[(family, place)] = (key, str(row["id"]))
    out: dict[str, str] = {}
    for (family, place), (_key, sid) in sorted(best.items(), key=lambda b: b[0][1] is not None):
        cmd = "hermes -c" if family == "cli" else "hermes --tui -c"
        out.setdefault(
            sid,
            f"it is the latest {family.upper()} session"
            + (f" of {place}" if place else "")
            + f", which `{cmd}` continues",
        )
    return out


def reasons(
    session: dict[str, Any],
    rules: ContinueRules,
    current: dict[str, str],
    newest: dict[str, str],
) -> list[str]:
    """Why Hermes would continue this ended session, in words ([]: it would not). ``current``:
    session id -> the gateway chat it is the current session of; ``newest``: from latest()."""
    sid = str(session["id"])
    out = []
    end = session.get("end_reason")
    if end in rules.recoverable:
        out.append(
            f"it ended as “{end}”, which Hermes's gateway reopens when its chat writes again"
        )
    if rules.handoff_keeps and session.get("handoff_state") == "completed":
        out.append("its hand-off completed, which keeps it open to Hermes")
    if sid in current:
        out.append(f"it is the current session of the chat {current[sid]}")
    if sid in newest:
        out.append(newest[sid])
    return out


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("-inf")
