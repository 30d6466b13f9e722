"""The SQL vocabulary every query module shares, each piece written once: columns that
may be missing from older schemas, the cost and token sums, the lineage CTEs, IN-lists, the
keyset cursor codec, and the one short transaction on a file of Logbook's own or an archive."""

from __future__ import annotations

import base64
import json
import math
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from webui.db.errors import BadRequest
from webui.db.schema import Schema
from webui.hermes import listing

TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
# A session's figures, in the order every list, JSON twin and export shows them.
SESSION_FIGURES = (*TOKEN_COLUMNS, "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd")

# Every session's lineage root: roots are sessions without a parent, or whose parent is gone
# (pruned). UNION (not UNION ALL) means a parent cycle cannot loop forever.
FAMILY_CTE = (
    "WITH RECURSIVE fam(id, root) AS ("
    " SELECT id, id FROM sessions WHERE parent_session_id IS NULL"
    "  OR parent_session_id NOT IN (SELECT id FROM sessions)"
    " UNION"
    " SELECT s.id, fam.root FROM sessions s JOIN fam ON s.parent_session_id = fam.id)"
)


def descendants_cte(limit: int | None = None) -> str:
    """``down(id)``: the session bound to the one ``?`` and everything below it."""
    cap = f" LIMIT {int(limit)}" if limit is not None else ""
    return (
        "WITH RECURSIVE down(id) AS (SELECT ? UNION SELECT s.id FROM sessions s "
        f"JOIN down ON s.parent_session_id = down.id{cap})"
    )


def col(schema: Schema, name: str, alias: str = "", table: str = "sessions") -> str:
    """``alias.name`` when the column exists in this database's schema, else ``NULL``."""
    if not schema.has(table, name):
        return "NULL"
    return f"{alias}.{name}" if alias else name


def attached_col(
    conn: sqlite3.Connection, db: str, name: str, alias: str = "", table: str = "sessions"
) -> str:
    """``col`` for a file attached to ``conn`` as ``db`` whose Schema was not read (a ledger
    file's view of state.db): the column when ``PRAGMA table_info`` lists it, else ``NULL``."""
    if not any(r[1] == name for r in conn.execute(f"PRAGMA {db}.table_info({table})")):
        return "NULL"
    return f"{alias}.{name}" if alias else name


def num(schema: Schema, name: str, alias: str = "") -> str:
    return f"COALESCE({col(schema, name, alias)}, 0)"


def cost(schema: Schema, alias: str = "") -> str:
    """A session's one cost figure: what the provider billed where known, else the estimate
    (``webui.hermes.cost.session_cost`` is the same rule for a row already read)."""
    return (
        f"COALESCE({col(schema, 'actual_cost_usd', alias)}, "
        f"{col(schema, 'estimated_cost_usd', alias)}, 0)"
    )


def price_kind(schema: Schema, alias: str = "") -> str:
    """How a session's cost is known: 'included' (a subscription: no per-token charge),
    'unknown' (Hermes had no price: marked so, or no figure at all), '' (a dollar figure).
    ``webui.hermes.cost`` reads a row already fetched by the same rule."""
    status = f"COALESCE({col(schema, 'cost_status', alias)}, '')"
    actual, estimated = (
        col(schema, "actual_cost_usd", alias),
        col(schema, "estimated_cost_usd", alias),
    )
    return (
        f"(CASE WHEN {status} = 'included' THEN 'included' WHEN {status} = 'unknown' OR "
        f"({actual} IS NULL AND {estimated} IS NULL) THEN 'unknown' ELSE '' END)"
    )


def price_counts(schema: Schema, alias: str = "") -> str:
    """A group's sessions whose cost is no dollar figure, as ``included_sessions`` and
    ``unpriced_sessions``: a group's sum says what it leaves out (present.filters.group_cost)."""
    kind = price_kind(schema, alias)
    return (
        f"{total(f'{kind} = ' + repr('included'))} AS included_sessions, "
        f"{total(f'{kind} = ' + repr('unknown'))} AS unpriced_sessions"
    )


def tokens(schema: Schema, alias: str = "") -> str:
    """A session's tokens: input + output + cache read + cache write (reasoning tokens are part
    of output). The one definition every page's "tokens" uses."""
    return " + ".join(num(schema, c, alias) for c in TOKEN_COLUMNS)


def total(expr: str, *, integer: bool = True) -> str:
    """SUM that cannot overflow on a damaged row (a token count near 2**63): TOTAL() adds in
    floating point; for counts the CAST gives back an integer (saturating at the 64-bit limit).
    TOTAL skips NULLs (and is 0 with none), so a column needs no COALESCE inside it."""
    return f"CAST(TOTAL({expr}) AS INTEGER)" if integer else f"TOTAL({expr})"


def in_list(n: int) -> str:
    """``?,?,?`` for an IN (...) of n values."""
    return ",".join("?" * n)


@contextmanager
def transaction(conn: sqlite3.Connection, *, immediate: bool = True) -> Iterator[None]:
    """One short transaction on ``conn`` (opened with ``isolation_level=None``): ``BEGIN
    IMMEDIATE``, the file's write lock from its first statement (``immediate=False``: a
    deferred ``BEGIN``, the lock at its first write); committed when the block ends, also by a
    ``return`` (a block that wrote nothing commits nothing), and rolled back on any error,
    the ``COMMIT``'s own included. Never for the live state.db: its writes go through the
    Writer (webui.db.changes.writer), whose retries and pause after each commit let the
    gateway in."""
    conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        yield
        conn.execute("COMMIT")
    finally:
        if conn.in_transaction:  # an error (SQLite may have rolled back already)
            conn.execute("ROLLBACK")


def encode_cursor(key: Any, row_id: str | int) -> str:
    raw = json.dumps([key, row_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def is_cursor(text: str) -> bool:
    """Is this a page cursor, not some other value (a time given as ``after``)? One
    database's (encode_cursor: a key and an id) or a merged list's (a cursor per database,
    as a JSON object), both base64 of JSON."""
    try:
        decode_cursor(text)
        return True
    except Exception:  # noqa: BLE001 - decode_cursor words its own errors
        pass
    try:
        return isinstance(json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))), dict)
    except (ValueError, TypeError):
        return False


def decode_cursor(cursor: str) -> tuple[Any, str | int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key, sid = json.loads(raw)
        if (
            not isinstance(sid, (str, int))
            or isinstance(sid, bool)
            or not isinstance(key, (int, float))
            or isinstance(key, bool)
        ):
            raise ValueError
        if (
            not math.isfinite(key)
            or abs(key) >= 2**63
            or (isinstance(sid, int) and abs(sid) >= 2**63)
        ):
            raise ValueError
        return key, sid
    except (ValueError, TypeError, json.JSONDecodeError):
        raise BadRequest(
            "The page cursor ('after') is not valid; start from the first page."
        ) from None


# The window of times Hermes 0.22 trusts (its coerce_epoch): a cell outside it is skipped.
EPOCH_WINDOW = f"BETWEEN {listing.EPOCH_MIN!r} AND {listing.EPOCH_MAX!r}"


def last_active(schema: Schema, kind: str, alias: str = "s") -> str:
    """A session's last activity as the generation computes it (``Rules.last_active``):
    "messages" (0.19: the newest message, else the start), "heartbeat" (0.20: the freshest of
    ``last_activity_at`` and the newest message, else the start), "windowed" (0.22: the same,
    each value only inside Hermes's epoch window). MAX over Hermes's (session_id, timestamp)
    index is one seek."""
    newest = f"(SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = {alias}.id"
    if kind == "messages":
        return f"COALESCE({newest}), {alias}.started_at)"
    activity = col(schema, "last_activity_at", alias)
    if kind == "heartbeat":
        return (
            f"COALESCE((SELECT MAX(v) FROM (SELECT {activity} AS v UNION ALL "
            f"SELECT {newest}))), {alias}.started_at)"
        )
    return (
        f"COALESCE((SELECT MAX(v) FROM (SELECT {activity} AS v UNION ALL "
        f"SELECT {newest} AND m.timestamp {EPOCH_WINDOW})) WHERE v {EPOCH_WINDOW}), "
        f"(SELECT v FROM (SELECT {alias}.started_at AS v) WHERE v {EPOCH_WINDOW}))"
    )
