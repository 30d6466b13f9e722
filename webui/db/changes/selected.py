"""What a selection holds, read before anything changes: the prune/archive preview (its
summary, one keyset page of its sessions, totals by source, model and month, the children it
would orphan, what the file's Hermes spares and why) and the ids ``hermes sessions prune
--dry-run`` lists, in its order. Actions holds one (``actions.selected``), over its reader."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from webui.db import sql
from webui.db.changes import selection as selection_sql
from webui.db.errors import LogbookDBError
from webui.db.reader import Reader
from webui.hermes.rules import Rules, rules_for
from webui.hermes.selection import Selection, describe

# A prune or archive preview shows its sessions this many at a time (all reachable, in order).
PREVIEW_PAGE = 50


class BadCursor(LogbookDBError):
    status = 400

    def __init__(self) -> None:
        super().__init__("The preview's page cursor is not valid; start from the first page.")


class SelectionReads:
    """Reads of a selection, by the rules of the file's Hermes."""

    def __init__(self, reader: Reader):
        self.r = reader

    @property
    def rules(self) -> Rules:
        return rules_for(self.r.schema.version)

    def rule(self, sel: Selection, alias: str = "sessions") -> tuple[str, list]:
        """Hermes's prune filter (webui.db.changes.selection), ended sessions only, as the file's
        Hermes selects (0.22: pins spared, lineages whole)."""
        return selection_sql.lineage_where(self.r.schema, sel, alias, rules=self.rules)

    def _order(self) -> tuple[str, ...]:
        """The order `--dry-run` lists in, as sort keys over ``s``: the start (0.19), or last
        activity then the start (0.20+); the id breaks ties."""
        started = "COALESCE(CAST(s.started_at AS REAL), 0)"
        if not self.rules.age_is_inactivity:
            return (started,)
        active = selection_sql.last_active(self.r.schema, self.rules, "s")
        return (f"COALESCE({active}, -1)", started)

    def prune_preview(
        self, sel: Selection, limit: int = PREVIEW_PAGE, cursor: str | None = None
    ) -> dict[str, Any]:
        """Exactly what `hermes sessions prune <same filters>` would delete (its --dry-run):
        ended sessions matching every filter. Active sessions never. The summary and totals
        cover every session; ``sessions`` is one keyset page of them, in Hermes's order."""
        where, params = self.rule(sel, "s")
        s = self.r.schema
        cost = sql.cost(s, "s")
        tok = sql.tokens(s, "s")
        activity = ""
        if self.rules.age_is_inactivity:
            active = selection_sql.last_active(s, self.rules, "s")
            activity = f", MIN({active}) AS oldest_active, MAX({active}) AS newest_active"
        summary = (
            self.r.one(
                f"SELECT COUNT(*) AS count, {sql.total(tok)} AS tokens, "
                f"{sql.total(cost, integer=False)} AS cost, {sql.price_counts(s, 's')}, "
                "MIN(s.started_at) AS oldest, MAX(s.started_at) AS newest, "
                f"{sql.total(sql.num(s, 'message_count', 's'))} AS messages{activity} "
                f"FROM sessions s WHERE {where}",
                params,
            )
            or {}
        )
        page = self.selection_page(sel, cursor, limit, count=summary.get("count") or 0)
        cw, cp = self.rule(sel, "p")
        kw, kp = self.rule(sel, "c")
        title = sql.col(s, "title", "c")
        orphans = self.r.rows(
            f"SELECT c.id AS id, {title} AS title, c.parent_session_id AS parent FROM sessions c JOIN sessions p ON "
            f"p.id = c.parent_session_id WHERE {cw} AND NOT ({kw}) ORDER BY c.started_at LIMIT 200",
            [*cp, *kp],
        )
        return {
            **summary,
            "selection": sel,
            "described": describe(sel, inactivity=self.rules.age_is_inactivity),
            **page,
            "totals": self.selection_totals(sel) if summary.get("count") else {},
            "orphaned_children": orphans,
            "spared": self.selection_spared(sel),
        }

    def selection_spared(self, sel: Selection) -> dict[str, int]:
        """What matches the filters but is left alone, and why, as the file's Hermes says it
        (0.22 `pinned`: pinned sessions spared; 0.20+ `open`: open sessions a prune skips) and
        Logbook beside it (`kept_ancestors`: 0.22 keeps the older segments of a conversation
        whose later segment is not selected). Only the reasons that apply are keys."""
        s, rules = self.r.schema, self.rules
        out: dict[str, int] = {}
        if selection_sql.spares_pins(s, sel, rules):
            # Hermes counts the rows that carry the pin (not the continuations it covers).
            w, p = selection_sql.where(s, replace(sel, include_pinned=True), "s", rules=rules)
            out["pinned"] = self.r.scalar(
                f"SELECT COUNT(*) FROM sessions s WHERE {w} AND COALESCE(s.pinned, 0) = 1", p
            )
        if sel.command == "prune" and rules.age_is_inactivity:
            w, p = selection_sql.where(s, sel, "s", rules=rules)
            guard = "s.ended_at IS NOT NULL"
            if w.startswith(guard) and s.has("sessions", "ended_at"):
                out["open"] = self.r.scalar(
                    f"SELECT COUNT(*) FROM sessions s WHERE s.ended_at IS NULL{w[len(guard) :]}", p
                )
        if sel.command == "prune" and rules.selection_whole_lineages:
            w, p = selection_sql.where(s, sel, "s", rules=rules)
            out["kept_ancestors"] = self.r.scalar(
                f"SELECT COUNT(*) FROM sessions s WHERE {w} AND s.id IN "
                f"({selection_sql.kept_ancestors(w)})",
                [*p, *p],
            )
        return out

    def selection_page(
        self,
        sel: Selection,
        cursor: str | None = None,
        limit: int = PREVIEW_PAGE,
        count: int | None = None,
    ) -> dict[str, Any]:
        """One page of the selected sessions, in the order `--dry-run` lists them, after
        ``cursor``; with the position of its first row, the selection's ``count`` (counted
        here unless the caller knows it) and the next cursor. Keyset paging, so the last of
        100,000 sessions costs what the first does."""
        where, params = self.rule(sel, "s")
        if count is None:
            count = self.r.scalar(f"SELECT COUNT(*) FROM sessions s WHERE {where}", params)
        s = self.r.schema
        keys = self._order()
        row_key = f"({', '.join(keys)}, s.id)"
        before = 0
        if cursor:
            after = _decode(cursor, len(keys))
            marks = sql.in_list(len(after))
            before = self.r.scalar(
                f"SELECT COUNT(*) FROM sessions s WHERE ({where}) AND {row_key} <= ({marks})",
                [*params, *after],
            )
            where, params = f"({where}) AND {row_key} > ({marks})", [*params, *after]
        title = sql.col(s, "title", "s")
        key_cols = ", ".join(f"{k} AS _key{i}" for i, k in enumerate(keys))
        rows = self.r.rows(
            f"SELECT s.id AS id, {title} AS title, s.source AS source, "
            f"{sql.col(s, 'model', 's')} AS model, s.started_at AS started_at, "
            f"{sql.col(s, 'ended_at', 's')} AS ended_at, {key_cols}, "
            f"{sql.num(s, 'message_count', 's')} AS message_count, {sql.cost(s, 's')} AS cost, "
            f"{sql.col(s, 'cost_status', 's')} AS cost_status, "
            f"{sql.col(s, 'actual_cost_usd', 's')} AS actual_cost_usd, "
            f"{sql.col(s, 'estimated_cost_usd', 's')} AS estimated_cost_usd "
            f"FROM sessions s WHERE {where} ORDER BY {', '.join(keys)}, s.id "
            f"LIMIT {int(limit) + 1}",
            params,
        )
        more = len(rows) > limit
        rows = rows[:limit]
        for r in rows:
            if len(keys) > 1:
                r["last_active"] = r["_key0"] if r["_key0"] != -1 else None
        nxt = None
        if more:
            last = rows[-1]
            nxt = _encode([last[f"_key{i}"] for i in range(len(keys))], last["id"])
        return {
            "sessions": rows,
            "position": before,
            "count": count,
            "next_cursor": nxt,
            "by_activity": len(keys) > 1,
        }

    def selection_totals(self, sel: Selection, top: int = 8) -> dict[str, list[dict]]:
        """The selection by source, model and month it started: sessions, messages and cost
        in each, largest first; past ``top`` groups the rest are summed as one "other"."""
        where, params = self.rule(sel, "s")
        s = self.r.schema
        groups = {
            "source": "COALESCE(s.source, '')",
            "model": f"COALESCE({sql.col(s, 'model', 's')}, '')",
            "month": "COALESCE(strftime('%Y-%m', CAST(s.started_at AS REAL), 'unixepoch'), '')",
        }
        out: dict[str, list[dict]] = {}
        for name, expr in groups.items():
            # Months in order (a prune takes the oldest); sources and models largest first.
            order = "label" if name == "month" else "sessions DESC, label"
            cap = 3 * top if name == "month" else top
            rows = self.r.rows(
                f"SELECT {expr} AS label, COUNT(*) AS sessions, "
                f"{sql.total(sql.num(s, 'message_count', 's'))} AS messages, "
                f"{sql.total(sql.cost(s, 's'), integer=False)} AS cost, {sql.price_counts(s, 's')} "
                f"FROM sessions s WHERE {where} "
                f"GROUP BY 1 ORDER BY {order}",
                params,
            )
            if len(rows) > cap:
                rest = rows[cap - 1 :]
                rows = [
                    *rows[: cap - 1],
                    {
                        "label": f"{len(rest)} {'later months' if name == 'month' else 'others'}",
                        "other": True,
                        "sessions": sum(r["sessions"] for r in rest),
                        "messages": sum(r["messages"] or 0 for r in rest),
                        "cost": sum(r["cost"] or 0 for r in rest),
                        "included_sessions": sum(r["included_sessions"] or 0 for r in rest),
                        "unpriced_sessions": sum(r["unpriced_sessions"] or 0 for r in rest),
                    },
                ]
            out[name] = rows
        return out

    def prune_ids(self, sel: Selection) -> list[str]:
        """The ids `hermes sessions prune --dry-run` lists, in its order (oldest start first on
        0.19 files; least recently active first since 0.20)."""
        where, params = self.rule(sel, "s")
        return [
            r["id"]
            for r in self.r.rows(
                f"SELECT s.id AS id FROM sessions s WHERE {where} "
                f"ORDER BY {', '.join(self._order())}, s.id",
                params,
                time_limit_s=60,
            )
        ]


def _encode(keys: list, row_id: str) -> str:
    if len(keys) == 1:
        return sql.encode_cursor(keys[0], row_id)
    # several keys: the first as the cursor's key, the rest with the id (JSON)
    return sql.encode_cursor(keys[0], json.dumps([*keys[1:], row_id]))


def _decode(cursor: str, n: int) -> list:
    try:
        key, rest = sql.decode_cursor(cursor)
        if n == 1:
            return [key, rest]
        more = json.loads(rest)
        if not (isinstance(more, list) and len(more) == n):
            raise ValueError
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in more[:-1]):
            raise ValueError
        if not isinstance(more[-1], str):
            raise ValueError
        return [key, *more]
    except Exception:  # noqa: BLE001 - decode_cursor words its error for the list
        raise BadCursor() from None
