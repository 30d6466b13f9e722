"""What a selection holds, read before anything changes: the prune/archive preview (its
summary, one keyset page of its sessions, totals by source, model and month, the children it
would orphan) and the ids ``hermes sessions prune --dry-run`` lists. A mixin of Actions."""

from __future__ import annotations

from typing import Any

from webui.db import selection as selection_sql
from webui.db import sql
from webui.db.errors import LogbookDBError
from webui.hermes.selection import Selection, describe

# A prune or archive preview shows its sessions this many at a time (all reachable, in order).
PREVIEW_PAGE = 50


class BadCursor(LogbookDBError):
    status = 400

    def __init__(self) -> None:
        super().__init__("The preview's page cursor is not valid; start from the first page.")


class SelectionReads:
    """Reads of a selection (``self.r``: the Reader)."""

    def _rule(self, sel: Selection, alias: str = "sessions") -> tuple[str, list]:
        """Hermes's prune filter (webui.db.selection), ended sessions only."""
        return selection_sql.where(self.r.schema, sel, alias)

    def prune_preview(
        self, sel: Selection, limit: int = PREVIEW_PAGE, cursor: str | None = None
    ) -> dict[str, Any]:
        """Exactly what `hermes sessions prune <same filters>` would delete (its --dry-run):
        ended sessions matching every filter. Active sessions never. The summary and totals
        cover every session; ``sessions`` is one keyset page of them, oldest first."""
        where, params = self._rule(sel)
        cost = sql.cost(self.r.schema)
        tok = sql.tokens(self.r.schema)
        summary = (
            self.r.one(
                f"SELECT COUNT(*) AS count, {sql.total(tok)} AS tokens, "
                f"{sql.total(cost, integer=False)} AS cost, {sql.price_counts(self.r.schema)}, "
                "MIN(started_at) AS oldest, "
                f"MAX(started_at) AS newest, "
                f"{sql.total(sql.num(self.r.schema, 'message_count'))} AS messages "
                f"FROM sessions WHERE {where}",
                params,
            )
            or {}
        )
        page = self.selection_page(sel, cursor, limit, count=summary.get("count") or 0)
        cw, cp = self._rule(sel, "p")
        kw, kp = self._rule(sel, "c")
        title = "c.title" if self.r.schema.has("sessions", "title") else "NULL"
        orphans = self.r.rows(
            f"SELECT c.id AS id, {title} AS title, c.parent_session_id AS parent FROM sessions c JOIN sessions p ON "
            f"p.id = c.parent_session_id WHERE {cw} AND NOT ({kw}) ORDER BY c.started_at LIMIT 200",
            [*cp, *kp],
        )
        return {
            **summary,
            "selection": sel,
            "described": describe(sel),
            **page,
            "totals": self.selection_totals(sel) if summary.get("count") else {},
            "orphaned_children": orphans,
        }

    def selection_page(
        self,
        sel: Selection,
        cursor: str | None = None,
        limit: int = PREVIEW_PAGE,
        count: int | None = None,
    ) -> dict[str, Any]:
        """One page of the selected sessions, oldest first (the order `--dry-run` lists
        them in), after ``cursor``; with the position of its first row, the selection's
        ``count`` (counted here unless the caller knows it) and the next cursor. Keyset
        paging, so the last of 100,000 sessions costs what the first does."""
        where, params = self._rule(sel)
        if count is None:
            count = self.r.scalar(f"SELECT COUNT(*) FROM sessions WHERE {where}", params)
        s = self.r.schema
        key = "COALESCE(CAST(started_at AS REAL), 0)"
        before = 0
        if cursor:
            try:
                after = list(sql.decode_cursor(cursor))
            except Exception:  # noqa: BLE001 - decode_cursor words its error for the list
                raise BadCursor() from None
            before = self.r.scalar(
                f"SELECT COUNT(*) FROM sessions WHERE ({where}) AND ({key}, id) <= (?, ?)",
                [*params, *after],
            )
            where, params = f"({where}) AND ({key}, id) > (?, ?)", [*params, *after]
        title = "title" if s.has("sessions", "title") else "NULL"
        rows = self.r.rows(
            f"SELECT id, {title} AS title, source, {sql.col(s, 'model')} AS model, started_at, "
            f"{sql.col(s, 'ended_at')} AS ended_at, {key} AS _key, "
            f"{sql.num(s, 'message_count')} AS message_count, {sql.cost(s)} AS cost, "
            f"{sql.col(s, 'cost_status')} AS cost_status, "
            f"{sql.col(s, 'actual_cost_usd')} AS actual_cost_usd, "
            f"{sql.col(s, 'estimated_cost_usd')} AS estimated_cost_usd "
            f"FROM sessions WHERE {where} ORDER BY {key}, id LIMIT {int(limit) + 1}",
            params,
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "sessions": rows,
            "position": before,
            "count": count,
            "next_cursor": sql.encode_cursor(rows[-1]["_key"], rows[-1]["id"]) if more else None,
        }

    def selection_totals(self, sel: Selection, top: int = 8) -> dict[str, list[dict]]:
        """The selection by source, model and month it started: sessions, messages and cost
        in each, largest first; past ``top`` groups the rest are summed as one "other"."""
        where, params = self._rule(sel)
        s = self.r.schema
        groups = {
            "source": "COALESCE(source, '')",
            "model": f"COALESCE({sql.col(s, 'model')}, '')",
            "month": "COALESCE(strftime('%Y-%m', CAST(started_at AS REAL), 'unixepoch'), '')",
        }
        out: dict[str, list[dict]] = {}
        for name, expr in groups.items():
            # Months in order (a prune takes the oldest); sources and models largest first.
            order = "label" if name == "month" else "sessions DESC, label"
            cap = 3 * top if name == "month" else top
            rows = self.r.rows(
                f"SELECT {expr} AS label, COUNT(*) AS sessions, "
                f"{sql.total(sql.num(s, 'message_count'))} AS messages, "
                f"{sql.total(sql.cost(s), integer=False)} AS cost, {sql.price_counts(s)} "
                f"FROM sessions WHERE {where} "
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
        """The ids `hermes sessions prune --dry-run` lists, oldest first as it lists them."""
        where, params = self._rule(sel)
        return [
            r["id"]
            for r in self.r.rows(
                f"SELECT id FROM sessions WHERE {where} ORDER BY started_at, id",
                params,
                time_limit_s=60,
            )
        ]
