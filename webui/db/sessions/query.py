"""The session list's query: what a URL asks for (filters, sort, page), parsed and checked
into a SessionQuery, and the limits every list shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from datetime import time as dtime
from typing import Any, cast

from webui.db.errors import BadRequest
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
# A source filter holding at least this share of the sessions lists by walking start times.
WALK_SHARE = 0.04
# Sort keys whose order is kept between requests (SessionStore._kept_order_page), and how long
# an order of counters Hermes can change without a message is trusted.
KEPT_ORDERS = ("last_active", "tokens", "cost", "messages")
ORDER_MAX_AGE_S = 10.0
# A kept order is updated in place when at most this many sessions got messages.
APPENDED_MAX = 200
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
        "hidden", "pinned", "rows", "session", "limit", "store", *NARROWING, *TIME_PARAMS,
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
    # Files with the columns (0.20+): hidden sessions left out by Hermes's rows unless asked
    # (None: as the file's Hermes lists them; hide | include | only); pinned: only | hide.
    hidden: str | None = None
    pinned: str | None = None
    rows: str = "conversations"  # Hermes's rows (webui.hermes.listing) | all: every row
    limit: int = PAGE_SIZE
    # Hermes's selection options beyond the list's own (older_than, title, cwd, min_cost, …),
    # each with its meaning in `hermes sessions prune/export`; and as they were given.
    narrow: Selection = EVERYTHING
    narrow_args: dict[str, str] = field(default_factory=dict)
    # The stores the page spans (``store=``, webui.db.stores.store_set; none: every store). Read by the
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
            hidden = listing.hidden_mode(args.get("hidden"))
            pinned = listing.pinned_mode(args.get("pinned"))
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
            # A MultiDict stays one (session= repeats); a dict copies as a dict.
            narrowing = cast(Any, args).copy()
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
            hidden=hidden,
            pinned=pinned,
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
            self.hidden,
            self.pinned,
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
            "hidden": self.hidden,
            "pinned": self.pinned,
            "rows": None if self.rows == "conversations" else self.rows,
            "limit": None if self.limit == PAGE_SIZE else self.limit,
            **self.narrow_args,
            "store": self.stores,
        }
        args.update(override)
        return {k: v for k, v in args.items() if v not in (None, [], "")}
