"""Lineages: the tree of sessions linked by parent_session_id (compression splits, /branch,
subagents). Two recursive queries per tree, whatever its size: one up to the root, one down
to every descendant. Both use UNION (not UNION ALL), so a cycle written by hand or by a bug
ends the recursion instead of looping, and both are bounded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webui.db import sql
from webui.db.reader import Reader
from webui.db.sessions.store import like_escape
from webui.db.sql import SESSION_FIGURES
from webui.hermes.cost import session_cost
from webui.hermes.origin import ORIGIN_COLUMNS

MAX_NODES = 20_000


@dataclass
class Lineage:
    root: str
    nodes: list[dict[str, Any]]  # in (started_at, id) order
    dangling_parent: str | None = None  # the root's parent, when it no longer exists
    cycle: bool = False
    truncated: bool = False
    totals: dict[str, Any] = field(default_factory=dict)

    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        return {n["id"]: n for n in self.nodes}


TOTAL_COLUMNS = (
    "message_count",
    "tool_call_count",
    "api_call_count",
    *SESSION_FIGURES,
)


class LineageStore:
    def __init__(self, reader: Reader):
        self.r = reader
        self.schema = reader.schema

    def col(self, name: str) -> str:
        return sql.col(self.schema, name, "s")

    def _up(self, session_id: str) -> list[dict[str, Any]]:
        """The session and every ancestor (id, parent, started_at, whether the parent row
        exists). UNION ends the walk at a repeated row, so a cycle cannot loop."""
        return self.r.rows(
            "WITH RECURSIVE up(id, parent) AS ("
            " SELECT id, parent_session_id FROM sessions WHERE id = ?"
            " UNION"
            " SELECT s.id, s.parent_session_id FROM sessions s JOIN up ON s.id = up.parent"
            f" LIMIT {MAX_NODES})"
            " SELECT up.id AS id, up.parent AS parent, s.started_at AS started_at,"
            " (SELECT COUNT(*) FROM sessions p WHERE p.id = up.parent) AS parent_exists"
            " FROM up JOIN sessions s ON s.id = up.id",
            [session_id],
        )

    def ancestors(self, session_id: str) -> list[dict[str, Any]]:
        """From the root down to ``session_id``'s parent (root first)."""
        parent_of = {r["id"]: r["parent"] for r in self._up(session_id)}
        chain: list[str] = []
        seen = {session_id}
        cur = parent_of.get(session_id)
        while cur and cur in parent_of and cur not in seen:
            chain.append(cur)
            seen.add(cur)
            cur = parent_of[cur]
        chain.reverse()
        brief = self._brief(chain)
        return [brief[i] for i in chain if i in brief]

    def _root_of(self, session_id: str) -> tuple[str, str | None, bool]:
        """(root id, its dangling parent id or None, whether a cycle was met)."""
        rows = self._up(session_id)
        ids = {r["id"] for r in rows}
        for r in rows:
            if r["parent"] is None:
                return r["id"], None, False
            if not r["parent_exists"]:
                return r["id"], r["parent"], False
        # Every ancestor has a parent inside the set: a cycle. Its oldest member stands as root.
        in_cycle = [r for r in rows if r["parent"] in ids]
        root = min(in_cycle or rows, key=lambda r: (r["started_at"], r["id"]))
        return root["id"], None, True

    def tree(self, session_id: str) -> Lineage:
        root, dangling, cycle = self._root_of(session_id)
        cols = ", ".join(
            f"{self.col(c)} AS {c}"
            for c in (
                "title",
                "end_reason",
                "ended_at",
                "model",
                "cost_status",
                *TOTAL_COLUMNS,
                *ORIGIN_COLUMNS,
            )
        )
        rows = self.r.rows(
            f"{sql.descendants_cte(MAX_NODES + 1)}"
            f" SELECT s.id AS id, s.parent_session_id AS parent_session_id, s.source AS source,"
            f" s.started_at AS started_at, {cols},"
            f" (SELECT substr({sql.col(self.schema, 'content', 'm', 'messages')}, 1, 200)"
            " FROM messages m WHERE m.session_id = s.id AND"
            "  m.role = 'user' ORDER BY m.timestamp, m.id LIMIT 1) AS preview,"
            " COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id),"
            "  s.started_at) AS last_active"
            " FROM down JOIN sessions s ON s.id = down.id ORDER BY s.started_at, s.id",
            [root],
        )
        truncated = len(rows) > MAX_NODES
        rows = rows[:MAX_NODES]
        lineage = Lineage(
            root=root, nodes=rows, dangling_parent=dangling, cycle=cycle, truncated=truncated
        )
        lineage.totals = totals(rows)
        classify_edges(lineage)
        return lineage

    def children_of(self, ids: list[str]) -> list[str]:
        """The sessions whose parent is one of ``ids`` (at most 500 ids a call)."""
        return [
            r["id"]
            for r in self.r.rows(
                f"SELECT id FROM sessions WHERE parent_session_id IN ({sql.in_list(len(ids))})",
                ids,
            )
        ]

    def has_family(self, session: dict[str, Any]) -> bool:
        if session.get("parent_session_id"):
            return True
        return (
            self.r.one(
                "SELECT 1 AS x FROM sessions WHERE parent_session_id = ? LIMIT 1", [session["id"]]
            )
            is not None
        )

    def _brief(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            for r in self.r.rows(
                f"SELECT s.id AS id, {self.col('title')} AS title, s.source AS source, "
                f"{self.col('end_reason')} AS end_reason, s.started_at AS started_at "
                f"FROM sessions s WHERE s.id IN ({sql.in_list(len(chunk))})",
                chunk,
            ):
                out[r["id"]] = r
        return out

    def resolve_title(self, title: str) -> str | None:
        """Hermes's resolve_session_by_title: the most recently started "title #N" wins (LIKE,
        so ASCII case is ignored, wildcards escaped), else the exact title, else None."""
        if not self.schema.has("sessions", "title"):
            return None
        row = self.r.one(
            "SELECT id FROM sessions WHERE title LIKE ? ESCAPE '\\' "
            "ORDER BY started_at DESC LIMIT 1",
            [like_escape(title) + " #%"],
        )
        if row:
            return row["id"]
        row = self.r.one("SELECT id FROM sessions WHERE title = ? LIMIT 1", [title])
        return row["id"] if row else None


def tree_across(books: list[tuple[str, Any]], session_id: str, here: str) -> Lineage:
    """The family of ``session_id`` (kept in store ``here``) followed through every store in
    ``books`` [(name, Logbook)]: up through a parent kept in another store (an older segment
    in an archive), down through children kept elsewhere (the newest in the live file). Each
    node says its ``store``; a session kept in two stores is taken from the first that gives
    it (the walk starts where the page is)."""
    by_name = dict(books)
    store, sid, dangling, cycle = here, session_id, None, False
    seen_roots: set[str] = set()
    while True:  # up, store by store
        root, dangling, cycle = by_name[store].lineage._root_of(sid)
        if cycle or dangling is None or root in seen_roots:
            break
        seen_roots.add(root)
        elsewhere = next(
            (n for n, b in books if n != store and b.sessions.brief(dangling) is not None), None
        )
        if elsewhere is None:
            break
        store, sid = elsewhere, dangling
    nodes: dict[str, dict[str, Any]] = {}
    todo = [(store, root)]
    truncated = False
    while todo and len(nodes) < MAX_NODES:
        name, top = todo.pop()
        part = by_name[name].lineage.tree(top)
        truncated = truncated or part.truncated
        fresh = []
        for n in part.nodes:
            if n["id"] not in nodes:
                nodes[n["id"]] = {**n, "store": name}
                fresh.append(n["id"])
        for other, book in books:
            if other == name or not fresh:
                continue
            for i in range(0, len(fresh), 500):
                for c in book.lineage.children_of(fresh[i : i + 500]):
                    if c not in nodes:
                        todo.append((other, c))
    rows = sorted(nodes.values(), key=lambda n: (_number(n["started_at"]), n["id"]))
    lineage = Lineage(
        root=root,
        nodes=rows,
        dangling_parent=dangling,
        cycle=cycle,
        truncated=truncated or bool(todo),
    )
    lineage.totals = totals(rows)
    classify_edges(lineage)
    return lineage


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    t: dict[str, Any] = dict.fromkeys(TOTAL_COLUMNS, 0)
    t["estimated_cost_usd"] = t["actual_cost_usd"] = 0.0
    cost = 0.0
    unpriced = {"included": 0, "unknown": 0}
    for r in rows:
        for c in TOTAL_COLUMNS:
            t[c] += _number(r.get(c))
        actual = r.get("actual_cost_usd")
        cost += _number(actual if actual is not None else r.get("estimated_cost_usd"))
        amount, kind = session_cost(actual, r.get("estimated_cost_usd"), r.get("cost_status"))
        if amount is None:
            unpriced[kind] += 1
    t["cost_usd"] = round(cost, 10)
    # Segments whose cost is no dollar figure: the total says what it leaves out.
    t["sessions"] = len(rows)
    t["included_sessions"] = unpriced["included"]
    t["unpriced_sessions"] = unpriced["unknown"]
    t["estimated_cost_usd"] = round(t["estimated_cost_usd"], 10)
    t["actual_cost_usd"] = round(t["actual_cost_usd"], 10)
    t["segments"] = len(rows)
    t["started_at"] = min((_number(r["started_at"]) for r in rows), default=None)
    t["last_active"] = max(
        (max(_number(r.get("ended_at")), _number(r.get("last_active"))) for r in rows),
        default=None,
    )
    return t


def _number(value: Any) -> float:
    """A figure from a row written by anyone: text, NULL or garbage count as 0, never raise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0


def edge_kind(parent: dict[str, Any], child: dict[str, Any]) -> str:
    """compression / branch / subagent / other, from the parent's end reason and timing."""
    ended = parent.get("ended_at")
    if ended is None or child["started_at"] < ended - 1.0:
        return "subagent"  # started while the parent was still running
    reason = parent.get("end_reason") or ""
    if reason == "compression":
        return "compression"
    if reason in ("branched", "session_switch"):
        return "branch"
    return "other"


def classify_edges(lineage: Lineage) -> None:
    by_id = lineage.by_id
    for node in lineage.nodes:
        parent = by_id.get(node["parent_session_id"] or "")
        node["edge"] = edge_kind(parent, node) if parent and node["id"] != lineage.root else None
