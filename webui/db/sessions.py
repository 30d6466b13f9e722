"""SQL about sessions: the list (filters, facets, keyset pages) and one session's row."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from datetime import time as dtime
from typing import Any

from webui.db import sql
from webui.db.errors import BadRequest
from webui.db.reader import Reader
from webui.db.sql import SESSION_FIGURES, decode_cursor, encode_cursor  # noqa: F401 - the list's cursor

PAGE_SIZE = 50
COUNT_CAP = 10_000
SORT_KEYS = ("started", "last_active", "messages", "tokens", "cost")
STATES = ("active", "ended")
# A title or id filter longer than any title (Hermes caps them at 100 characters) is cut here:
# a 200 KB LIKE pattern is "too complex" for SQLite.
MAX_FILTER_CHARS = 500


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def parse_day(value: str, *, end: bool = False) -> float:
    """An ISO date (or date-time) in the server's local time zone, as epoch seconds.
    ``end`` makes a bare date inclusive: until=2026-03-01 means before March 2nd."""
    try:
        if len(value) == 10:
            d = date.fromisoformat(value)
            moment = datetime.combine(d + timedelta(days=1) if end else d, dtime())
        else:
            moment = datetime.fromisoformat(value)
        return moment.astimezone().timestamp() if moment.tzinfo is None else moment.timestamp()
    except (ValueError, OverflowError, OSError):
        raise BadRequest(f"'{value}' is not a usable date; use YYYY-MM-DD.") from None


def date_range(column: str, since: str | None, until: str | None) -> tuple[list[str], list]:
    """SQL conditions for an inclusive date range (ISO dates, the server's local time)."""
    clauses, params = [], []
    if since:
        clauses.append(f"{column} >= ?")
        params.append(parse_day(since))
    if until:
        clauses.append(f"{column} < ?")
        params.append(parse_day(until, end=True))
    return clauses, params


@dataclass
class SessionQuery:
    sources: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    state: str | None = None
    since: str | None = None
    until: str | None = None
    q: str = ""
    sort: str = "-started"
    after: str | None = None
    archived: bool = False
    conversations: bool = False  # one row per lineage: its newest segment, chain totals
    limit: int = PAGE_SIZE

    @classmethod
    def from_args(cls, args: Mapping) -> SessionQuery:
        getlist = getattr(args, "getlist", lambda k: [args[k]] if k in args else [])
        sort = (args.get("sort") or "-started").strip()
        if sort.lstrip("-") not in SORT_KEYS:
            raise BadRequest(
                f"Unknown sort '{sort}'. Use one of {', '.join(SORT_KEYS)} "
                "(prefix '-' for descending)."
            )
        state = (args.get("state") or "").strip() or None
        if state not in (None, *STATES):
            raise BadRequest("state must be 'active' or 'ended'.")
        query = cls(
            sources=[s for s in getlist("source") if s],
            models=[m for m in getlist("model") if m],
            state=state,
            since=(args.get("since") or "").strip() or None,
            until=(args.get("until") or "").strip() or None,
            q=(args.get("q") or "").strip()[:MAX_FILTER_CHARS],
            sort=sort,
            after=args.get("after") or None,
            archived=(args.get("archived") or "") in ("1", "true", "yes", "on"),
            conversations=args.get("view") == "conversations",
        )
        # Validate dates now so a bad one is a 400 before any SQL runs.
        for value, end in ((query.since, False), (query.until, True)):
            if value:
                parse_day(value, end=end)
        return query

    @property
    def sort_key(self) -> str:
        return self.sort.lstrip("-")

    @property
    def descending(self) -> bool:
        return self.sort.startswith("-")

    def url_args(self, **override: Any) -> dict[str, Any]:
        """The query as URL parameters (all page state lives in the URL)."""
        args: dict[str, Any] = {
            "source": self.sources,
            "model": self.models,
            "state": self.state,
            "since": self.since,
            "until": self.until,
            "q": self.q or None,
            "sort": None if self.sort == "-started" else self.sort,
            "archived": "1" if self.archived else None,
            "view": "conversations" if self.conversations else None,
        }
        args.update(override)
        return {k: v for k, v in args.items() if v not in (None, [], "")}


class SessionStore:
    """Named queries over the sessions table, built from the columns that exist."""

    def __init__(self, reader: Reader):
        self.r = reader
        self.schema = reader.schema
        self._cache: dict[str, tuple[float, Any]] = {}
        self._order_cache: dict[tuple, tuple[str, list]] = {}

    def col(self, name: str, alias: str = "s") -> str:
        return f"{alias}.{name}" if self.schema.has("sessions", name) else "NULL"

    def num(self, name: str) -> str:
        return f"COALESCE({self.col(name)}, 0)"

    # -- expressions ------------------------------------------------------------------------

    @property
    def last_active_expr(self) -> str:
        # Hermes's own definition (export_all / sessions list): the newest message, else start.
        # MAX over idx_messages_session(session_id, timestamp) is a single index seek.
        return (
            "COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id),"
            " s.started_at)"
        )

    @property
    def tokens_expr(self) -> str:
        return sql.tokens(self.schema, "s")

    @property
    def cost_expr(self) -> str:
        return sql.cost(self.schema, "s")

    def sort_expr(self, key: str) -> str:
        return {
            "started": "s.started_at",
            "last_active": self.last_active_expr,
            "messages": self.num("message_count"),
            "tokens": f"({self.tokens_expr})",
            "cost": self.cost_expr,
        }[key]

    def preview_expr(self) -> str:
        # Like `hermes sessions list`: the first user message stands in for a missing title.
        return (
            f"(SELECT substr({sql.col(self.schema, 'content', 'm', 'messages')}, 1, 300) "
            "FROM messages m WHERE m.session_id = s.id "
            "AND m.role = 'user' ORDER BY m.timestamp, m.id LIMIT 1)"
        )

    # -- filters ------------------------------------------------------------------------------

    def where(self, q: SessionQuery, *, skip_source: bool = False) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if q.sources and not skip_source:
            clauses.append(f"s.source IN ({','.join('?' * len(q.sources))})")
            params += q.sources
        if q.models and self.schema.has("sessions", "model"):
            clauses.append(f"s.model IN ({','.join('?' * len(q.models))})")
            params += q.models
        if q.state == "active":
            clauses.append(f"{self.col('ended_at')} IS NULL")
        elif q.state == "ended":
            clauses.append(f"{self.col('ended_at')} IS NOT NULL")
        dc, dp = date_range("s.started_at", q.since, q.until)
        clauses += dc
        params += dp
        if q.q:
            pattern = like_escape(q.q)
            title = self.col("title")
            clauses.append(f"({title} LIKE ? ESCAPE '\\' OR s.id LIKE ? ESCAPE '\\')")
            params += [f"%{pattern}%", f"{pattern}%"]
        if self.schema.has("sessions", "archived") and not q.archived:
            clauses.append("COALESCE(s.archived, 0) = 0")
        return (" AND ".join(clauses) or "1"), params

    # -- queries ------------------------------------------------------------------------------

    def list_columns(self) -> str:
        wanted = (
            "id",
            "source",
            "user_id",
            "model",
            "title",
            "started_at",
            "ended_at",
            "end_reason",
            "message_count",
            "tool_call_count",
            *SESSION_FIGURES,
            "cost_status",
            "parent_session_id",
            "archived",
        )
        cols = [f"{self.col(c)} AS {c}" for c in wanted]
        cols.append(f"{self.last_active_expr} AS last_active")
        cols.append(f"{self.preview_expr()} AS preview")
        cols.append(
            "(SELECT COUNT(*) FROM sessions c WHERE c.parent_session_id = s.id) AS child_count"
        )
        return ", ".join(cols)

    def page(self, q: SessionQuery) -> tuple[list[dict[str, Any]], str | None]:
        """One keyset page: the rows and the cursor of the next page (or None)."""
        where, params = self.where(q)
        where_only, where_params = where, list(params)
        key = self.sort_expr(q.sort_key)
        direction = "DESC" if q.descending else "ASC"
        op = "<" if q.descending else ">"
        if q.sort_key == "last_active":
            ids = self._last_active_page(q, where, params, key, direction)
        else:
            if q.after:
                after_key, after_id = decode_cursor(q.after)
                if after_key is None:
                    after_key = 0
                # The extra single-column bound lets SQLite range-scan an index on the key.
                where += f" AND {key} {op}= ? AND ({key} {op} ? OR ({key} = ? AND s.id {op} ?))"
                params += [after_key, after_key, after_key, after_id]
            # Step 1 orders bare ids (cheap); step 2 computes display columns for one page.
            ids = self.r.rows(
                f"SELECT s.id AS id, {key} AS k FROM sessions s WHERE {where} "
                f"ORDER BY k {direction}, s.id {direction} LIMIT ?",
                [*params, q.limit + 1],
            )
        more = len(ids) > q.limit
        ids = ids[: q.limit]
        if not ids:
            return [], None
        # The filter again: an order kept from an earlier request (last activity) must not show
        # a session that no longer matches (renamed, ended, archived since).
        details = self.r.rows(
            f"SELECT {self.list_columns()} FROM sessions s "
            f"WHERE s.id IN ({','.join('?' * len(ids))}) AND {where_only}",
            [r["id"] for r in ids] + where_params,
        )
        by_id = {d["id"]: d for d in details}
        rows = []
        for r in ids:
            if r["id"] in by_id:
                by_id[r["id"]]["_sort_key"] = r["k"]  # lets pages from several databases merge
                rows.append(by_id[r["id"]])
        cursor = encode_cursor(ids[-1]["k"], ids[-1]["id"]) if more else None
        return rows, cursor

    FAMILY_CTE = sql.FAMILY_CTE

    # How a conversation (a whole lineage) sorts: by its newest segment's start or its last
    # activity, or by the chain's totals.
    CONVERSATION_KEYS = {
        "started": "c.newest_started",
        "last_active": "c.newest_active",
        "messages": "c.chain_message_count",
        "tokens": "(c.chain_input_tokens + c.chain_output_tokens + c.chain_cache_read_tokens"
        " + c.chain_cache_write_tokens)",
        "cost": "c.chain_cost",
    }

    def conversation_page(self, q: SessionQuery) -> tuple[list[dict[str, Any]], str | None]:
        """One row per logical conversation (a lineage): its newest segment, with the whole
        chain's totals. A conversation matches when any of its segments matches the filters
        (a title or id search finds the conversation of an older segment too). Sessions
        caught in a parent cycle, which have no root, stand alone."""
        where, params = self.where(q)
        key = self.CONVERSATION_KEYS[q.sort_key]
        direction = "DESC" if q.descending else "ASC"
        op = "<" if q.descending else ">"
        keyset = ""
        if q.after:
            after_key, after_id = decode_cursor(q.after)
            keyset = f" AND ({key} {op} ? OR ({key} = ? AND c.newest_id {op} ?))"
            params = [*params, after_key, after_key, after_id]
        cost = sql.cost(self.schema, "x")
        summed = (
            "message_count",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
        )
        member_cols = ", ".join(f"COALESCE({self.col(c, 'x')}, 0) AS {c}" for c in summed)
        windows = ", ".join(f"SUM({c}) OVER fam_w AS chain_{c}" for c in summed)
        # Window functions pick each family's newest segment and sum the family in one pass.
        rows = self.r.rows(
            f"{self.FAMILY_CTE}, members AS (SELECT x.id AS id, COALESCE(fam.root, x.id) AS root, "
            f"x.started_at AS started_at, COALESCE(x.ended_at, x.started_at) AS active_at, "
            f"{cost} AS cost, {member_cols} FROM sessions x LEFT JOIN fam ON fam.id = x.id), "
            f"c AS (SELECT * FROM (SELECT id AS newest_id, root, started_at AS newest_started, "
            f"ROW_NUMBER() OVER (PARTITION BY root ORDER BY started_at DESC, id DESC) AS rn, "
            f"COUNT(*) OVER fam_w AS segments, MAX(active_at) OVER fam_w AS newest_active, "
            f"SUM(cost) OVER fam_w AS chain_cost, {windows} "
            f"FROM members WINDOW fam_w AS (PARTITION BY root)) WHERE rn = 1) "
            f"SELECT c.*, {key} AS k FROM c WHERE c.root IN (SELECT m.root FROM members m "
            f"JOIN sessions s ON s.id = m.id WHERE {where}){keyset} "
            f"ORDER BY {key} {direction}, c.newest_id {direction} LIMIT ?",
            [*params, q.limit + 1],
        )
        more = len(rows) > q.limit
        rows = rows[: q.limit]
        if not rows:
            return [], None
        details = {
            d["id"]: d
            for d in self.r.rows(
                f"SELECT {self.list_columns()} FROM sessions s "
                f"WHERE s.id IN ({','.join('?' * len(rows))})",
                [r["newest_id"] for r in rows],
            )
        }
        out = []
        for r in rows:
            d = details.get(r["newest_id"])
            if d:
                d["chain"] = {k[6:]: v for k, v in r.items() if k.startswith("chain_")}
                d["chain"]["segments"] = r["segments"]
                d["chain"]["root"] = r["root"]
                out.append(d)
        cursor = encode_cursor(rows[-1]["k"], rows[-1]["newest_id"]) if more else None
        return out, cursor

    def _last_active_page(
        self, q: SessionQuery, where: str, params: list[Any], key: str, direction: str
    ) -> list[dict[str, Any]]:
        """Last activity is not a column: ordering by it costs one index seek per session.
        The ordered (key, id) list is kept per filter and reused until the database changes
        (a new message, a new or deleted session), so paging and repeated views are cheap."""
        token = self.order_token()
        cache_key = (where, tuple(params), direction)
        hit = self._order_cache.get(cache_key)
        if hit is None or hit[0] != token:
            rows = self.r.rows(
                f"SELECT s.id AS id, {key} AS k FROM sessions s WHERE {where} "
                f"ORDER BY k {direction}, s.id {direction}",
                params,
            )
            hit = (token, [(r["k"], r["id"]) for r in rows])
            if len(self._order_cache) >= 8:
                try:
                    self._order_cache.pop(next(iter(self._order_cache)), None)
                except (RuntimeError, StopIteration):  # another thread got there first
                    pass
            self._order_cache[cache_key] = hit
        ordered = hit[1]
        start = 0
        if q.after:
            after = decode_cursor(q.after)
            beyond = (lambda kv: kv < after) if q.descending else (lambda kv: kv > after)
            start = next((i for i, kv in enumerate(ordered) if beyond(kv)), len(ordered))
        return [{"id": i, "k": k} for k, i in ordered[start : start + q.limit + 1]]

    def invalidate(self) -> None:
        """After one of Logbook's own writes: nothing cached may outlive it."""
        self._order_cache.clear()
        self._cache.clear()

    def order_token(self) -> str:
        """Changes whenever a message is added or a session appears or goes: cheap (rowid and
        index maxima, a covering-index count)."""
        row = (
            self.r.one(
                "SELECT (SELECT MAX(id) FROM messages) AS m, (SELECT COUNT(*) FROM "
                "sessions) AS n, (SELECT MAX(started_at) FROM sessions) AS s"
            )
            or {}
        )
        return f"{row.get('m')}-{row.get('n')}-{row.get('s')}"

    def count(self, q: SessionQuery) -> tuple[int, bool]:
        """The number of matching sessions, capped: (n, capped?)."""
        where, params = self.where(q)
        n = self.r.scalar(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM sessions s WHERE {where} LIMIT {COUNT_CAP + 1})",
            params,
        )
        return min(n, COUNT_CAP), n > COUNT_CAP

    def source_facets(self, q: SessionQuery) -> dict[str, int]:
        """Sessions per source under every other filter (the source filter itself ignored,
        so the counts say what ticking another source would add). Every known source is
        listed, zero counts included, so the filter form keeps a stable shape."""
        where, params = self.where(q, skip_source=True)
        counts = {
            r["source"]: r["n"]
            for r in self.r.rows(
                f"SELECT s.source AS source, COUNT(*) AS n FROM sessions s WHERE {where} "
                "GROUP BY s.source",
                params,
            )
        }
        for src in self.all_sources():
            counts.setdefault(src, 0)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def all_sources(self) -> list[str]:
        return self._cached(
            "sources",
            lambda: [
                r["source"]
                for r in self.r.rows("SELECT DISTINCT source FROM sessions ORDER BY source")
            ],
        )

    def models(self) -> list[dict[str, Any]]:
        """Models for the filter form. No index covers sessions.model, so the scan (wide rows:
        system prompts) is shared by the requests of the next few seconds."""
        if not self.schema.has("sessions", "model"):
            return []
        return self._cached(
            "models",
            lambda: self.r.rows(
                "SELECT model, COUNT(*) AS n FROM sessions WHERE model IS NOT NULL "
                "GROUP BY model ORDER BY n DESC, model"
            ),
        )

    def _cached(self, key: str, compute, ttl: float = 10.0):
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit and now - hit[0] < ttl:
            return hit[1]
        value = compute()
        self._cache[key] = (now, value)
        return value

    def change_token(self) -> str:
        """Cheap: MAX over two rowid/index orders and a count of live sessions."""
        row = (
            self.r.one(
                "SELECT (SELECT MAX(id) FROM messages) AS m, (SELECT MAX(started_at) FROM sessions) "
                f"AS s, (SELECT COUNT(*) FROM sessions WHERE {self.col('ended_at', 'sessions')} IS NULL) "
                "AS live"
            )
            or {}
        )
        return f"{row.get('m')}-{row.get('s')}-{row.get('live')}"

    def get(self, session_id: str) -> dict[str, Any] | None:
        return self.r.one("SELECT * FROM sessions WHERE id = ?", [session_id])

    def resolve_prefix(self, prefix: str, limit: int = 20) -> list[dict[str, Any]]:
        """Sessions whose id starts with ``prefix`` (LIKE wildcards escaped, as Hermes's
        resolve_session_id does), at most ``limit`` + 1 of them."""
        return self.r.rows(
            f"SELECT s.id AS id, {self.col('title')} AS title, s.source AS source, "
            "s.started_at AS started_at FROM sessions s WHERE s.id LIKE ? ESCAPE '\\' "
            "ORDER BY s.started_at DESC LIMIT ?",
            [like_escape(prefix) + "%", limit + 1],
        )

    def children(self, session_id: str, limit: int = 200) -> list[dict[str, Any]]:
        return self.r.rows(
            f"SELECT s.id AS id, {self.col('title')} AS title, s.source AS source, "
            f"s.started_at AS started_at, {self.col('end_reason')} AS end_reason "
            "FROM sessions s WHERE s.parent_session_id = ? ORDER BY s.started_at, s.id LIMIT ?",
            [session_id, limit],
        )

    def brief(self, session_id: str) -> dict[str, Any] | None:
        return self.r.one(
            f"SELECT s.id AS id, {self.col('title')} AS title, s.source AS source, "
            f"s.started_at AS started_at, {self.col('end_reason')} AS end_reason, "
            f"{self.col('ended_at')} AS ended_at FROM sessions s WHERE s.id = ?",
            [session_id],
        )

    def first_user_text(self, session_id: str) -> str | None:
        """The first user message (its first 300 characters): an untitled session's name."""
        return self.r.scalar(
            f"SELECT substr({sql.col(self.schema, 'content', table='messages')}, 1, 300) "
            "FROM messages WHERE session_id = ? AND role = 'user' "
            "ORDER BY timestamp, id LIMIT 1",
            [session_id],
        )
