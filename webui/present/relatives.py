"""A session's relatives in words: its children as rows grouped by kind, and the whole
conversation summed up by Hermes's chain rule (a child is a continuation when its parent ended
with ``compression`` and it started after; a subagent run when it started while its parent was
still running; a branch after ``branched``/``session_switch``; webui.db.sessions.lineage.edge_kind)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from webui.hermes.activity import session_state
from webui.present.rows import session_label

# kind -> (one, many), in the order the groups are shown
KINDS = {
    "compression": ("continuation", "continuations"),
    "branch": ("branch", "branches"),
    "subagent": ("subagent run", "subagent runs"),
    "other": ("child session", "child sessions"),
}


@dataclass
class Group:
    kind: str
    name: str  # "subagent runs"
    rows: list[dict[str, Any]]


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n:,} times")


def child_groups(nodes: list[dict[str, Any]], session_id: str) -> list[Group]:
    """The session's direct children, grouped by kind (continuations first), each row with a
    label (title, else first message), its kind, messages, cost and state (live/open/ended)."""
    groups: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    for n in nodes:
        if n.get("parent_session_id") != session_id or n["id"] == session_id:
            continue
        kind = n.get("edge") if n.get("edge") in KINDS else "other"
        actual = n.get("actual_cost_usd")
        groups[kind].append(
            {
                "id": n["id"],
                "label": session_label(n),
                "kind": KINDS[kind][0],
                "source": n.get("source"),
                "started_at": n.get("started_at"),
                "messages": n.get("message_count"),
                "cost": actual if actual is not None else n.get("estimated_cost_usd"),
                # the cost's own figures, for the one rule that words it (filters.cost)
                "actual_cost_usd": actual,
                "estimated_cost_usd": n.get("estimated_cost_usd"),
                "cost_status": n.get("cost_status"),
                # Hermes 0.19's rule: live only when active in the last five minutes
                "state": session_state(n.get("ended_at"), n.get("last_active")),
            }
        )
    return [
        Group(kind, KINDS[kind][0 if len(rows) == 1 else 1], rows)
        for kind, rows in groups.items()
        if rows
    ]


def chain_summary(nodes: list[dict[str, Any]]) -> str:
    """The conversation in words: "continued 3 times · spawned 9 subagent runs"."""
    counts = dict.fromkeys(KINDS, 0)
    for n in nodes:
        edge = n.get("edge")
        if edge:
            counts[edge if edge in counts else "other"] += 1
    parts = []
    if counts["compression"]:
        parts.append(f"continued {_times(counts['compression'])}")
    if counts["branch"]:
        parts.append(f"branched {_times(counts['branch'])}")
    if counts["subagent"]:
        n = counts["subagent"]
        parts.append(f"spawned {n:,} subagent run{'s' if n != 1 else ''}")
    if counts["other"]:
        n = counts["other"]
        parts.append(f"{n:,} other child session{'s' if n != 1 else ''}")
    return " · ".join(parts)


_PART = re.compile(r"\s+#\d+$")


def crumbs(ancestors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A session's ancestors as breadcrumbs: parts of one conversation that read alike
    ("Project X", "Project X #2" … "#7", each continued from the last) become one crumb
    naming how many there are, linked to the first."""
    out: list[dict[str, Any]] = []
    for a in ancestors:
        stem = _PART.sub("", a.get("label") or "")
        last = out[-1] if out else None
        if last is not None and last["stem"] == stem and a.get("edge") == "compression":
            last["parts"] += 1
            continue
        out.append({"id": a["id"], "label": a.get("label"), "stem": stem, "parts": 1})
    for c in out:
        if c["parts"] > 1:
            c["label"] = f"{c['stem']} ({c['parts']} parts)"
    return out
