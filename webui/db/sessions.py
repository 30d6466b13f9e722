"""SQL about sessions: the list (filters, facets, keyset pages) and one session's row."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, tzinfo
from datetime import time as dtime
from typing import Any

from flask import current_app, g, has_app_context, has_request_context

from webui import threads
from webui.db import deadline as request_deadline
from webui.db import selection as selection_sql
from webui.db import sql
from webui.db.errors import BadRequest
from webui.db.kept_order import KeptOrder
from webui.db.reader import Reader
from webui.db.sql import SESSION_FIGURES, decode_cursor, encode_cursor, is_cursor  # noqa: F401 - the list's cursor
from webui.hermes import listing
from webui.hermes.selection import (
    EVERYTHING,
    NARROWING,
    TIME_PARAMS,
    Selection,
    SelectionError,
    narrowing_args,
    narrowing_from_args,
)

PAGE_SIZE = 50
COUNT_CAP = 10_000
# Figures that scan every session row are shared this long (SessionStore.shared).
SHARED_TTL_S = 10.0
# While a prune runs: figures up to STALE_MAX_S old are served (and refreshed in the background)
# until SOFT_S after its last batch.
SOFT_S = 3.0
STALE_MAX_S = 10.0
# A source filter holding at least this share of the sessions lists by walking start times.
WALK_SHARE = 0.04
# Sort keys whose order is kept between requests (SessionStore._kept_order_page), and how long
# an order of counters Hermes can change without a message is trusted.
KEPT_ORDERS = ("last_active", "tokens", "cost", "messages")
ORDER_MAX_AGE_S = 10.0
# A kept order is updated in place when at most this many sessions got messages.
APPENDED_MAX = 200
# A shared figure past its ttl but with the same key is served (and refreshed behind) this long.
AGED_MAX_S = 60.0
# Background refreshes of shared figures running at once (each is one scan of the sessions).
REFRESHERS = 2
SORT_KEYS = ("started", "last_active", "messages", "tokens", "cost")
STATES = ("active", "ended")
# A title or id filter longer than any title (Hermes caps them at 100 characters) is cut here:
# a 200 KB LIKE pattern is "too complex" for SQLite.
MAX_FILTER_CHARS = 500


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def parse_day(value: str, *, end: bool = False, tz: tzinfo | None = None) -> float:
    """An ISO date (or date-time) as epoch seconds, read in ``tz`` (the reader's zone; the
    server's local zone when None). ``end`` makes a bare date inclusive: until=2026-03-01
    means before March 2nd."""
    try:
        if len(value) == 10:
            d = date.fromisoformat(value)
            moment = datetime.combine(d + timedelta(days=1) if end else d, dtime())
        else:
            moment = datetime.fromisoformat(value)
        if not 1970 <= moment.year <= 9998:
            raise ValueError("out of range")
        if moment.tzinfo is None:
            return moment.replace(tzinfo=tz).timestamp() if tz else moment.astimezone().timestamp()
        return moment.timestamp()
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


# Every URL parameter the session list reads (and so every export made from it): its own
# filters, Hermes's selection options, the page cursor. Anything else is refused, never dropped.
LIST_PARAMS = frozenset(
    {
        "source", "model", "state", "since", "until", "q", "sort", "after", "active",
        "workspace", "branch", "user", "chat_id", "chat_type", "session_key", "archived",
        "rows", "session", "limit", "store", *NARROWING, *TIME_PARAMS,
    }
)  # fmt: skip
MAX_PAGE_SIZE = 500


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
    # Where a conversation comes from (schema 22): Hermes's meanings, as `hermes sessions
    # list --workspace` and the prune filters read them.
    workspace: str = ""
    branch: str = ""
    user: str = ""
    chat_id: str = ""
    chat_type: str = ""
    session_key: str = ""  # one chat across its resets (Hermes's gateway routing key)
    active_minutes: int | None = None  # active in the last N minutes (a message or its start)
    archived: str = "hide"  # hide (Hermes's default) | include | only
    rows: str = "conversations"  # Hermes's rows (webui.hermes.listing) | all: every row
    limit: int = PAGE_SIZE
    # Hermes's selection options beyond the list's own (older_than, title, cwd, min_cost, …),
    # each with its meaning in `hermes sessions prune/export`; and as they were given.
    narrow: Selection = EVERYTHING
    narrow_args: dict[str, str] = field(default_factory=dict)
    # The stores the page spans (``store=``, webui.db.stores; none: every store). Read by the
    # web layer, which picks the databases; kept here so every link keeps it.
    stores: list[str] = field(default_factory=list)

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
        try:
            rows = listing.row_mode(args.get("rows"))
            archived = listing.archived_mode(args.get("archived"))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        active = (args.get("active") or "").strip()
        if active and not (active.isdigit() and 1 <= int(active) <= 525_600):
            raise BadRequest("active must be a number of minutes (1 to 525600).")
        limit = (args.get("limit") or "").strip()
        if limit and not (limit.isdigit() and 1 <= int(limit) <= MAX_PAGE_SIZE):
            raise BadRequest(f"limit is the page size: a whole number from 1 to {MAX_PAGE_SIZE}.")
        # ``after`` is the page cursor when it is one, else Hermes's --after (a time).
        cursor = (args.get("after") or "").strip() or None
        narrowing = args
        if cursor and not is_cursor(cursor):
            cursor = None
        elif cursor:
            narrowing = args.copy()  # a MultiDict stays one: session= repeats
            narrowing.pop("after", None)
        try:
            narrow = narrowing_from_args(narrowing)
        except SelectionError as exc:
            raise BadRequest(str(exc)) from None
        query = cls(
            active_minutes=int(active) if active else None,
            sources=[s for s in getlist("source") if s],
            models=[m for m in getlist("model") if m],
            state=state,
            since=(args.get("since") or "").strip() or None,
            until=(args.get("until") or "").strip() or None,
            q=(args.get("q") or "").strip()[:MAX_FILTER_CHARS],
            sort=sort,
            after=cursor,
            archived=archived,
            rows=rows,
            limit=int(limit) if limit else PAGE_SIZE,
            narrow=narrow,
            narrow_args=narrowing_args(narrowing, narrow) if narrow is not EVERYTHING else {},
            stores=[s for s in getlist("store") if s],
            **{
                k: (args.get(k) or "").strip()[:MAX_FILTER_CHARS]
                for k in ("workspace", "branch", "user", "chat_id", "chat_type", "session_key")
            },
        )
        # Validate dates now so a bad one is a 400 before any SQL runs.
        for value, end in ((query.since, False), (query.until, True)):
            if value:
                parse_day(value, end=end)
        return query

    @property
    def active_filter_count(self) -> int:
        """How many filters narrow the list (for the folded filter form's summary)."""
        given = (
            self.sources,
            self.models,
            self.state,
            self.since,
            self.until,
            self.active_minutes,
            self.workspace,
            self.branch,
            self.user,
            self.chat_id,
            self.chat_type,
            self.session_key,
            self.archived != "hide",
            self.rows != "conversations",
        )
        return sum(1 for value in given if value) + len(self.narrow_args)

    @property
    def conversations(self) -> bool:
        """Hermes's rows: one per conversation, a compression chain shown as its tip."""
        return self.rows == "conversations"

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
            "active": self.active_minutes,
            "workspace": self.workspace or None,
            "branch": self.branch or None,
            "user": self.user or None,
            "chat_id": self.chat_id or None,
            "chat_type": self.chat_type or None,
            "session_key": self.session_key or None,
            "archived": None if self.archived == "hide" else self.archived,
            "rows": None if self.rows == "conversations" else self.rows,
            "limit": None if self.limit == PAGE_SIZE else self.limit,
            **self.narrow_args,
            "store": self.stores,
        }
        args.update(override)
        return {k: v for k, v in args.items() if v not in (None, [], "")}


class SessionStore:
    """Named queries over the sessions table, built from the columns that exist."""

    def __init__(self, reader: Reader):
        self.r = reader
        self.schema = reader.schema
        self._cache: dict[str, tuple[float, Any, Any]] = {}  # slot: (when, key, value)
        self._soft_until = 0.0
        self._refresh_lock = threading.Lock()
        self._refreshing: set[str] = set()
        self._flights: dict[str, threading.Lock] = {}
        self._order_cache: dict[tuple, tuple[tuple, list, float]] = {}
        # The sessions token as last read, under the file's data_version at that moment.
        self._token_kept: tuple[str, dict[str, Any]] | None = None
        # Every chain's tip as JSON, for the chains walk it was made from (source_sql).
        self._tips_json: tuple[dict, str | None] | None = None

    def col(self, name: str, alias: str = "s") -> str:
        return f"{alias}.{name}" if self.schema.has("sessions", name) else "NULL"

    def num(self, name: str) -> str:
        return f"COALESCE({self.col(name)}, 0)"

    # -- expressions ------------------------------------------------------------------------

    def last_active_of(self, alias: str = "s") -> str:
        # Hermes's own definition (export_all / sessions list): the newest message, else start.
        # MAX over idx_messages_session(session_id, timestamp) is a single index seek.
        return (
            f"COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = {alias}.id),"
            f" {alias}.started_at)"
        )

    @property
    def last_active_expr(self) -> str:
        return self.last_active_of("s")

    @property
    def tokens_expr(self) -> str:
        return sql.tokens(self.schema, "s")

    @property
    def cost_expr(self) -> str:
        return sql.cost(self.schema, "s")

    def shown(self, name: str, q: SessionQuery) -> str:
        """A column as the list shows it: in Hermes's rows a compression root shows its tip's
        value for the fields the tip lends it (``listing.TIP_FIELDS``), its own otherwise."""
        own = self.col(name)
        if not q.conversations or name not in listing.TIP_FIELDS or own == "NULL":
            return own
        return f"(CASE WHEN t.id IS NULL THEN {own} ELSE {self.col(name, 't')} END)"

    def sort_expr(self, key: str, q: SessionQuery | None = None) -> str:
        if q is not None and q.conversations:
            if key == "messages":
                return f"COALESCE({self.shown('message_count', q)}, 0)"
            if key == "last_active":
                # Hermes (order_by_last_active): a chain's newest activity.
                mine = self.last_active_of("s")
                return f"MAX({mine}, COALESCE({self.last_active_of('t')}, {mine}))"
        return {
            "started": "s.started_at",
            "last_active": self.last_active_expr,
            "messages": self.num("message_count"),
            "tokens": f"({self.tokens_expr})",
            "cost": self.cost_expr,
        }[key]

    def preview_expr(self) -> str:
        # Hermes's list preview reads the first 63 characters of the first user message with
        # content; webui.hermes.listing.preview trims them to its 60 + '...'.
        return (
            f"(SELECT substr({sql.col(self.schema, 'content', 'm', 'messages')}, 1, 63) "
            "FROM messages m WHERE m.session_id = s.id AND m.role = 'user' "
            f"AND {sql.col(self.schema, 'content', 'm', 'messages')} IS NOT NULL "
            "ORDER BY m.timestamp, m.id LIMIT 1)"
        )

    # -- which rows: Hermes's or all -----------------------------------------------------------

    def _marker(self, alias: str, key: str) -> str:
        """A marker in model_config (``_branched_from``, ``_delegate_from``); a row whose
        model_config is not valid JSON has none (Hermes's json_extract would fail on it)."""
        mc = self.col("model_config", alias)
        if mc == "NULL":
            return "NULL"
        # instr() first: parsing every row's JSON only to find most have no marker is what
        # made a full count slow on a million-message database.
        return (
            f"(CASE WHEN instr({mc}, '{key}') > 0 AND json_valid({mc}) "
            f"THEN json_extract({mc}, '$.{key}') END)"
        )

    def listable(self) -> str:
        """Roots and branches, never delegate subagent runs (``_LISTABLE_CHILD_SQL`` and the
        delegate test of list_sessions_rich)."""
        parent = self.col("parent_session_id")
        if parent == "NULL":
            return "1"
        branch = (
            f"{self._marker('s', '_branched_from')} IS NOT NULL OR EXISTS (SELECT 1 FROM "
            f"sessions p WHERE p.id = s.parent_session_id AND {self.col('end_reason', 'p')} = "
            f"'branched' AND s.started_at >= {self.col('ended_at', 'p')})"
        )
        return f"(s.parent_session_id IS NULL OR {branch}) AND {self._marker('s', '_delegate_from')} IS NULL"

    def source_sql(
        self, q: SessionQuery, uses: str = "t.", only: Sequence[str] | None = None
    ) -> tuple[str, str, list[Any]]:
        """(WITH prefix, FROM clause, their parameters). Hermes's rows join each listed
        compression root to its tip (``t``); every other row has no ``t``. ``uses`` is the
        SQL that will read from it: without a ``t.`` in it no join is needed (a count or the
        facets with no filter on a tip's values). ``only``: the query reads just these
        sessions, so only their tips are passed (not every chain's, on every request)."""
        if not q.conversations or "t." not in uses:
            return "", "sessions s", []
        chains = self.chains()
        if only is None:
            # Every chain's tip, written out once per walk of the chains (on ten million
            # messages, 24,000 tips: 18 ms a request to rebuild and encode).
            kept = self._tips_json
            if kept is None or kept[0] is not chains:
                tips = {root: chain[-1] for root, chain in chains.items() if len(chain) > 1}
                kept = self._tips_json = (chains, json.dumps(tips) if tips else None)
            encoded = kept[1]
        else:
            tips = {r: chains[r][-1] for r in only if len(chains.get(r, ())) > 1}
            encoded = json.dumps(tips) if tips else None
        if encoded is None:
            return "", "sessions s LEFT JOIN sessions t ON 0", []
        # MATERIALIZED: an ephemeral table SQLite can index, probed once per listed row.
        return (
            "WITH tm AS MATERIALIZED (SELECT key AS root, value AS tip FROM json_each(?)) ",
            "sessions s LEFT JOIN tm ON tm.root = s.id LEFT JOIN sessions t ON t.id = tm.tip",
            [encoded],
        )

    def chains(self) -> dict[str, list[str]]:
        """Every compression chain, root → [root, …, tip], walked by Hermes's rule. Only
        sessions that ended 'compression' start one; the walk is cached for a few seconds and
        until sessions appear, go or end."""
        if not (
            self.schema.has("sessions", "end_reason")
            and self.schema.has("sessions", "parent_session_id")
        ):
            return {}
        token = self._sessions_token()
        return self._fresh_or_stale(
            "chains", (token.get("n"), token.get("s")), self._walk_chains, ttl=5.0
        )

    def _walk_chains(self) -> dict[str, list[str]]:
        edges = self.r.rows(
            f"SELECT parent.id AS parent, child.id AS id, child.end_reason AS end_reason, "
            f"{self.col('ended_at', 'child')} AS ended_at, child.started_at AS started_at, "
            f"{self.last_active_of('child')} AS last_active "
            "FROM sessions parent JOIN sessions child ON child.parent_session_id = parent.id "
            "WHERE parent.end_reason = 'compression' "
            f"AND {self._marker('child', '_branched_from')} IS NULL "
            f"AND {self._marker('child', '_delegate_from')} IS NULL "
            "AND COALESCE(child.source, '') != 'tool'"
        )
        children: dict[str, list[listing.Continuation]] = {}
        for e in edges:
            children.setdefault(e["parent"], []).append(
                listing.Continuation(
                    id=e["id"],
                    end_reason=e["end_reason"],
                    ended_at=e["ended_at"],
                    started_at=e["started_at"],
                    last_active=e["last_active"],
                )
            )
        return listing.compression_chains(children)

    # -- filters ------------------------------------------------------------------------------

    def where(
        self, q: SessionQuery, *, skip_source: bool = False, walk_started: bool = False
    ) -> tuple[str, list[Any]]:
        """``walk_started``: the source test is written so that SQLite cannot use the source
        index (a unary +), and walks the start-time index newest first instead."""
        clauses: list[str] = []
        params: list[Any] = []
        if q.sources and not skip_source:
            plus = "+" if walk_started else ""
            clauses.append(f"{plus}s.source IN ({','.join('?' * len(q.sources))})")
            params += q.sources
        if q.conversations:
            clauses.append(self.listable())
            hidden = () if skip_source else listing.hidden_sources(q.sources)
            if hidden:
                clauses.append(f"s.source NOT IN ({sql.in_list(len(hidden))})")
                params += hidden
        if q.models and self.schema.has("sessions", "model"):
            # Hermes's --model: a case-insensitive part of the name (either of several).
            model = f"LOWER(COALESCE({self.shown('model', q)}, ''))"
            clauses.append("(" + " OR ".join(f"{model} LIKE ?" for _ in q.models) + ")")
            params += [f"%{m.lower()}%" for m in q.models]
        ended = self.shown("ended_at", q)
        if q.state == "active":
            clauses.append(f"{ended} IS NULL")
        elif q.state == "ended":
            clauses.append(f"{ended} IS NOT NULL")
        dc, dp = date_range("s.started_at", q.since, q.until)
        clauses += dc
        params += dp
        if q.active_minutes:
            # A conversation's newest activity (its tip's, in Hermes's rows).
            clauses.append(f"{self.sort_expr('last_active', q)} >= ?")
            params.append(time.time() - q.active_minutes * 60)
        if q.q:
            pattern = like_escape(q.q)
            match = f"({self.col('title')} LIKE ? ESCAPE '\\' OR s.id LIKE ? ESCAPE '\\')"
            clauses_params = [f"%{pattern}%", f"{pattern}%"]
            if q.conversations:
                # A conversation is found by its root's or its tip's title or id.
                match = f"({match} OR {match.replace('s.', 't.')})"
                clauses_params *= 2
            clauses.append(match)
            params += clauses_params
        if q.workspace:
            # Hermes's workspace_key: the git repo root, else the cwd; matched as a
            # case-insensitive part of the path (the folder's own name is one).
            key = (
                f"COALESCE(NULLIF(TRIM({self.shown('git_repo_root', q)}), ''), "
                f"NULLIF(TRIM({self.shown('cwd', q)}), ''))"
            )
            clauses.append(f"instr(LOWER({key}), ?) > 0")
            params.append(q.workspace.lower())
        if q.branch:
            clauses.append(f"instr(LOWER(COALESCE({self.shown('git_branch', q)}, '')), ?) > 0")
            params.append(q.branch.lower())
        for name, column in (
            ("user", "user_id"),
            ("chat_id", "chat_id"),
            ("chat_type", "chat_type"),
            ("session_key", "session_key"),
        ):
            if getattr(q, name):
                clauses.append(f"{self.col(column)} = ?")
                params.append(getattr(q, name))
        if self.schema.has("sessions", "archived"):
            if q.archived == "hide":
                clauses.append("COALESCE(s.archived, 0) = 0")
            elif q.archived == "only":
                clauses.append("COALESCE(s.archived, 0) != 0")
        if q.narrow is not EVERYTHING:
            narrow, narrow_params = selection_sql.where(self.schema, q.narrow, ended_only=False)
            if narrow != "1":
                clauses.append(narrow)
                params += narrow_params
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
            "cwd",
            "git_branch",
            "git_repo_root",
            "display_name",
            "chat_type",
            "origin_json",
        )
        cols = [f"{self.col(c)} AS {c}" for c in wanted]
        cols.append(f"{self.last_active_expr} AS last_active")
        cols.append(f"{self.preview_expr()} AS preview")
        cols.append(
            "(SELECT COUNT(*) FROM sessions c WHERE c.parent_session_id = s.id) AS child_count"
        )
        return ", ".join(cols)

    def details(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The list's columns for these sessions, the preview as Hermes trims it."""
        if not ids:
            return {}
        out = {}
        for d in self.r.rows(
            f"SELECT {self.list_columns()} FROM sessions s WHERE s.id IN ({sql.in_list(len(ids))})",
            ids,
        ):
            d["preview"] = listing.preview(d["preview"])
            out[d["id"]] = d
        return out

    def page(self, q: SessionQuery) -> tuple[list[dict[str, Any]], str | None]:
        """One keyset page: the rows and the cursor of the next page (or None)."""
        where, params = self.where(q, walk_started=self._walk_started(q))
        key = self.sort_expr(q.sort_key, q)
        with_sql, from_sql, from_params = self.source_sql(q, where + key)
        where_only, where_params = where, list(params)
        direction = "DESC" if q.descending else "ASC"
        op = "<" if q.descending else ">"
        if q.sort_key in KEPT_ORDERS:
            ids = self._kept_order_page(
                q, (with_sql, from_sql, from_params), where, params, key, direction
            )
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
                f"{with_sql}SELECT s.id AS id, {key} AS k FROM {from_sql} WHERE {where} "
                f"ORDER BY k {direction}, s.id {direction} LIMIT ?",
                [*from_params, *params, q.limit + 1],
            )
        more = len(ids) > q.limit
        ids = ids[: q.limit]
        if not ids:
            return [], None
        wanted = [r["id"] for r in ids]
        if q.sort_key in KEPT_ORDERS:
            # An order kept from an earlier request must not show a session that no longer
            # matches (renamed, ended, archived since).
            w_sql, f_sql, f_params = self.source_sql(q, where_only, only=wanted)
            still = {
                r["id"]
                for r in self.r.rows(
                    f"{w_sql}SELECT s.id AS id FROM {f_sql} WHERE s.id IN "
                    f"({sql.in_list(len(wanted))}) AND {where_only}",
                    [*f_params, *wanted, *where_params],
                )
            }
            wanted = [i for i in wanted if i in still]
        chains = self.chains() if q.conversations else {}
        tips = {i: chains[i][-1] for i in wanted if len(chains.get(i, ())) > 1}
        by_id = self.details(wanted + list(tips.values()))
        rows = []
        for r in ids:
            row = by_id.get(r["id"])
            if row is None or r["id"] not in wanted:
                continue
            if r["id"] in tips and tips[r["id"]] in by_id:
                row = listing.project(row, by_id[tips[r["id"]]])
                row["chain"] = self._chain_totals(chains[r["id"]])
            row["_sort_key"] = r["k"]  # lets pages from several databases merge
            rows.append(row)
        cursor = encode_cursor(ids[-1]["k"], ids[-1]["id"]) if more else None
        return rows, cursor

    def _walk_started(self, q: SessionQuery) -> bool:
        """Newest first within common sources: walking the start-time index and testing each
        row's source stops after a page's worth (about limit / share rows read), where the
        source index would read every row of the source to sort them (a third of the table
        for 'cli'). Rare sources keep the source index. Sizes come from the source index
        alone (shared)."""
        if not q.sources or q.sort_key != "started":
            return False
        sizes = self.shared(
            "source-sizes",
            lambda: {
                r["source"]: r["n"]
                for r in self.r.rows("SELECT source, COUNT(*) AS n FROM sessions GROUP BY source")
            },
        )
        total = sum(sizes.values())
        return total > 0 and sum(sizes.get(src, 0) for src in q.sources) >= WALK_SHARE * total

    def _chain_totals(self, members: list[str]) -> dict[str, Any]:
        summed = ("message_count", *sql.TOKEN_COLUMNS)
        row = (
            self.r.one(
                "SELECT "
                + ", ".join(f"TOTAL({self.num(c)}) AS {c}" for c in summed)
                + f", TOTAL({self.cost_expr}) AS cost FROM sessions s WHERE s.id IN "
                f"({sql.in_list(len(members))})",
                members,
            )
            or {}
        )
        out: dict[str, Any] = {c: int(row.get(c) or 0) for c in summed}
        out["cost"] = row.get("cost") or 0.0
        out["segments"] = len(members)
        out["root"] = members[0]
        out["members"] = list(members)
        return out

    def _kept_order_page(
        self,
        q: SessionQuery,
        source: tuple[str, str, list[Any]],
        where: str,
        params: list[Any],
        key: str,
        direction: str,
    ) -> list[dict[str, Any]]:
        """Orders no index serves (last activity: one index seek per session; tokens, cost,
        message count: every wide session row read and sorted) are worked out once per
        filter and kept: the (key, id) list is reused until the database changes, and moved
        in place when messages were only appended (see _order_after_appends). Counters that
        Hermes updates without a message (tokens after a turn) may leave an order out by
        one turn for at most ORDER_MAX_AGE_S; the rows shown are always read fresh."""
        with_sql, from_sql, from_params = source
        token = self.order_marks()
        cache_key = (key, with_sql, from_sql, tuple(from_params), where, tuple(params), direction)
        hit = self._order_cache.get(cache_key)
        if (
            hit is not None
            and q.sort_key != "last_active"
            and time.monotonic() - hit[2] > ORDER_MAX_AGE_S
        ):
            hit = None
        if hit is not None and hit[0] != token and _only_appended(hit[0], token):
            hit = self._order_after_appends(hit, token, source, where, params, key, q)
        if hit is None or hit[0] != token:
            statement = (
                f"{with_sql}SELECT {key} AS k, s.id AS id FROM {from_sql} WHERE {where} "
                f"ORDER BY k {direction}, s.id {direction}"
            )
            # Tuples as SQLite gives them: 200,000 dicts for a moment are 60 MB more.
            pairs = self.r.run(
                lambda raw: raw.execute(statement, [*from_params, *params]).fetchall()
            )
            hit = (token, KeptOrder(pairs, q.descending), time.monotonic())
        if self._order_cache.get(cache_key) is not hit:
            if len(self._order_cache) >= 8:
                try:
                    self._order_cache.pop(next(iter(self._order_cache)), None)
                except (RuntimeError, StopIteration):  # another thread got there first
                    pass
            self._order_cache[cache_key] = hit
        return hit[1].page(decode_cursor(q.after) if q.after else None, q.limit + 1)

    def _order_after_appends(self, hit, token, source, where, params, key, q):
        """A kept last-activity order brought up to date after messages were only appended
        (a live gateway's steady state): just the sessions that got them (and, in Hermes's
        rows, the compression roots they are the tip of) are read again and moved, instead
        of one index seek per session. None when too much changed: order afresh."""
        changed = {
            r["session_id"]
            for r in self.r.rows(
                # NOT INDEXED: a rowid range, where the planner would rather walk the whole
                # session index to get DISTINCT for free.
                "SELECT DISTINCT session_id FROM messages NOT INDEXED WHERE id > ? LIMIT ?",
                [hit[0][0], APPENDED_MAX + 1],
            )
        }
        if len(changed) > APPENDED_MAX:
            return None
        if q.conversations:
            tip_of = {chain[-1]: root for root, chain in self.chains().items()}
            changed |= {tip_of[i] for i in changed if i in tip_of}
        with_sql, from_sql, from_params = source
        fresh = []
        if changed:
            fresh = self.r.rows(
                f"{with_sql}SELECT s.id AS id, {key} AS k FROM {from_sql} WHERE {where} "
                f"AND s.id IN ({sql.in_list(len(changed))})",
                [*from_params, *params, *changed],
            )
        ordered = hit[1].without(changed)
        for r in fresh:
            ordered.insert(r["k"], r["id"])
        return (token, ordered, hit[2])

    def invalidate(self, soft: bool = False) -> None:
        """After one of Logbook's own writes: nothing cached may outlive it. ``soft``: one
        batch of a prune still running. Its rows are read fresh as always, but the figures
        that scan every session (counts, facets, compression chains: a third of a second on a
        million messages) are not recomputed by every request after every batch: for
        SOFT_S after the last batch, requests get the previous figures while one background
        thread works out the new ones."""
        self._order_cache.clear()
        self._token_kept = None
        if soft:
            self._soft_until = time.monotonic() + SOFT_S
            return
        self._soft_until = 0.0
        self._cache.clear()

    def _fresh_or_stale(self, slot: str, key: Any, compute, ttl: float, keep=None):
        """``compute()``, kept in ``slot`` while the key stays ``key`` (for ``ttl`` s).

        Served as it is, while one background thread works out the new value:
        * a value past its ``ttl`` whose key has not moved (no session appeared or went), up
          to AGED_MAX_S old: the ttl only bounds how late in-place edits by others show, and
          a crowd of requests must not each rescan every session row when it runs out;
        * during a prune (soft changes), a value whose key moved, up to STALE_MAX_S old.
        Otherwise the request computes it itself; requests that find the same slot already
        being computed get the previous value if there is one (else wait for that one
        answer), instead of rescanning alongside it."""
        now = time.monotonic()
        hit = self._cache.get(slot)
        if hit:
            age, same = now - hit[0], hit[1] == key
            if same and age < ttl:
                return hit[2]
            if (same and age < AGED_MAX_S) or (now < self._soft_until and age < STALE_MAX_S):
                self._refresh_later(slot, key, compute, keep)
                return hit[2]
        with self._refresh_lock:
            if len(self._flights) > 512:
                self._flights = {k: v for k, v in self._flights.items() if v.locked()}
            flight = self._flights.setdefault(slot, threading.Lock())
        if hit and flight.locked() and now - hit[0] < AGED_MAX_S:
            # Another request is already working out the new value: answer with the
            # previous one rather than queue behind it (the one computing pays, not a crowd).
            return hit[2]
        left = request_deadline.remaining()
        # Waiting is bounded by this request's own deadline; past it, compute regardless
        # (its queries then stop at once with "took too long").
        waited = time.monotonic()
        got = flight.acquire(timeout=max(left, 0.0) if left is not None else -1)
        waited = time.monotonic() - waited
        if waited > 1.0 and has_app_context():
            current_app.logger.warning(
                "waited %.1f s for another request to work out %s", waited, slot[:60]
            )
        try:
            hit = self._cache.get(slot)
            if got and hit and hit[1] == key and hit[0] >= now:
                return hit[2]  # computed by the request this one waited for
            value = compute()
            self._store(slot, key, value, keep)
            return value
        finally:
            if got:
                flight.release()

    def _store(self, slot: str, key: Any, value: Any, keep) -> None:
        if keep is not None and not keep(value):
            return
        if len(self._cache) > 256:
            self._cache.clear()
        self._cache[slot] = (time.monotonic(), key, value)

    def _refresh_later(self, slot: str, key: Any, compute, keep) -> None:
        """One thread per slot, and at most REFRESHERS at once: when all are busy the old
        value is served again and a later request asks anew."""
        with self._refresh_lock:
            if slot in self._refreshing or len(self._refreshing) >= REFRESHERS:
                return
            self._refreshing.add(slot)

        def work() -> None:
            try:
                self._store(slot, key, compute(), keep)
            except Exception:  # noqa: BLE001 - the next request computes it itself
                self._cache.pop(slot, None)
                if has_app_context():
                    current_app.logger.exception("refreshing %s failed", slot)
            finally:
                with self._refresh_lock:
                    self._refreshing.discard(slot)

        # In the app's context: without it every refresh failed, the slot was dropped and
        # the next request recounted in line (what the pages under a prune waited for).
        threads.start_in_app(work, f"refresh-{slot[:20]}")

    def order_marks(self) -> tuple[Any, Any, Any]:
        """(newest message id, number of sessions, newest start): moves whenever a message is
        added or a session appears or goes; cheap (a rowid maximum, and the sessions token
        this request has already read)."""
        token = self._sessions_token()
        return (self.r.scalar("SELECT MAX(id) FROM messages"), token.get("n"), token.get("s"))

    def count(self, q: SessionQuery) -> tuple[int, bool]:
        """The number of matching rows, capped: (n, capped?)."""
        where, params = self.where(q)
        with_sql, from_sql, from_params = self.source_sql(q, where)
        statement = (
            f"{with_sql}SELECT COUNT(*) FROM (SELECT 1 FROM {from_sql} WHERE {where} "
            f"LIMIT {COUNT_CAP + 1})"
        )
        n = self._shared(statement, [*from_params, *params], self.r.scalar)
        return min(n, COUNT_CAP), n > COUNT_CAP

    def matching_ids(self, q: SessionQuery) -> list[str]:
        """The ids of the rows ``q`` lists (at most COUNT_CAP + 1), shared like its count:
        for folding the copies a merged page over several stores leaves out."""
        where, params = self.where(q)
        with_sql, from_sql, from_params = self.source_sql(q, where)
        statement = f"{with_sql}SELECT s.id FROM {from_sql} WHERE {where} LIMIT {COUNT_CAP + 1}"
        return self._shared(
            statement,
            [*from_params, *params],
            lambda st, ps: [r[0] for r in self.r.run(lambda raw: raw.execute(st, ps).fetchall())],
        )

    def _shared(self, statement: str, params: list[Any], run):
        """A count over the whole table (Hermes's rows read every row's parent link and
        markers), shared by the requests of the next seconds while no session appears or
        goes. Counts are a guide; the rows themselves are always read fresh."""
        return self.shared(f"{statement}:{params!r}", lambda: run(statement, params))

    def recall(self, key: str) -> Any:
        """A value kept by ``keep_value`` (None when absent or dropped by one of Logbook's own
        changes): for callers that decide themselves how old is too old."""
        hit = self._cache.get(f"kept:{key}")
        return hit[2] if hit else None

    def keep_value(self, key: str, value: Any) -> None:
        if len(self._cache) > 256:
            self._cache.clear()
        self._cache[f"kept:{key}"] = (time.monotonic(), None, value)

    def _sessions_token(self) -> dict[str, Any]:
        """How many sessions there are and the newest start: read once per request (a page
        asks for several shared figures; on schema 22 each read costs over a millisecond)."""
        holder = g if has_request_context() else None
        key = f"_sessions_token_{id(self)}"
        if holder is not None and key in holder:
            return holder.get(key)
        # Nobody has committed since it was last read (data_version reads no page): the
        # same token, without counting every session's index entry again.
        version = self.r.data_version()
        kept = self._token_kept
        if kept is not None and kept[0] == version:
            token = kept[1]
        else:
            token = self.r.one("SELECT COUNT(*) AS n, MAX(started_at) AS s FROM sessions") or {}
            self._token_kept = (version, token)
        if holder is not None:
            setattr(holder, key, token)
        return token

    def shared(self, name: str, compute, ttl: float = SHARED_TTL_S, keep=None):
        """``compute()``, shared by the requests of the next ``ttl`` seconds while no session
        appears or goes (and until Logbook's own next change): for figures that scan every
        session row, which a gateway's steady appends hardly move. ``keep(value)`` false:
        not shared (a partial answer)."""
        token = self._sessions_token()
        return self._fresh_or_stale(
            f"shared:{name}", (token.get("n"), token.get("s")), compute, ttl, keep
        )

    def hidden_count(self, q: SessionQuery, shown: int) -> int | None:
        """In Hermes's rows: how many more rows 'every row' would show (capped); else None.
        ``shown`` is this query's own count."""
        if not q.conversations:
            return None
        every, _ = self.count(replace(q, rows="all", after=None))
        return max(every - shown, 0)

    def source_facets(self, q: SessionQuery) -> dict[str, int]:
        """Rows per source under every other filter (the source filter itself ignored,
        so the counts say what ticking another source would add). Every known source is
        listed, zero counts included, so the filter form keeps a stable shape."""
        where, params = self.where(q, skip_source=True)
        with_sql, from_sql, from_params = self.source_sql(q, where)
        counts = {
            r["source"]: r["n"]
            for r in self._shared(
                f"{with_sql}SELECT s.source AS source, COUNT(*) AS n FROM {from_sql} "
                f"WHERE {where} GROUP BY s.source",
                [*from_params, *params],
                self.r.rows,
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
        return self._fresh_or_stale(key, None, compute, ttl)

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

    def existing(self, ids: Sequence[str]) -> set[str]:
        """Which of these session ids this database holds (one primary-key probe each)."""
        if not ids:
            return set()
        return {
            r["id"]
            for r in self.r.rows(
                "SELECT s.id AS id FROM json_each(?) j CROSS JOIN sessions s ON s.id = j.value",
                [json.dumps(list(ids))],
            )
        }

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

    def last_activity(self) -> float | None:
        """When anything last happened: the newest message (the highest id) or the newest
        start, both read off an index."""
        newest = (
            self.r.one(
                "SELECT (SELECT timestamp FROM messages ORDER BY id DESC LIMIT 1) AS m, "
                "(SELECT MAX(started_at) FROM sessions) AS s"
            )
            or {}
        )
        times = [t for t in (newest.get("m"), newest.get("s")) if isinstance(t, (int, float))]
        return max(times) if times else None

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


def _only_appended(old: tuple, new: tuple) -> bool:
    """Between two order_marks: messages were added and no session appeared or went."""
    return (
        old[1:] == new[1:]
        and isinstance(old[0], int)
        and isinstance(new[0], int)
        and new[0] > old[0]
    )
