"""One file beside the live database, read once per change: is it a Hermes database, and what
does it hold (its summary).

A file is known by its *signature*: device, inode, size and modification time of the file,
and of its write-ahead log and rollback journal. A file replaced (``os.replace``, a copy over
it, pages rewritten in place) has another signature and is read again; one that stands still
is never read again, broken or not, so a folder of thousands of broken files costs one
``stat`` each per rescan.

Reading runs under a time limit (SQLite's progress handler): a file whose catalogue or
figures do not come within it (a view that never ends in place of a table) is *stalled*:
named, and skipped until it changes. The summary (counts, time span, sources, the bounds of
every sort key, every session id, the sessions whose parent is kept elsewhere) is kept in the
instance folder under the signature, so a restart does not read the files again; the merged
pages use it to skip stores that cannot hold a page's rows and to fold copies without asking
every store about every row."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webui.db.errors import LogbookDBError, QueryTimeout, StartupError
from webui.db.schema import SQLITE_MAGIC, StoreStalled
from webui.db.sessions.query import SessionQuery
from webui.db.sql import cost as cost_sql
from webui.db.sql import tokens as tokens_sql
from webui.hermes import listing
from webui.hermes.selection import EVERYTHING

if TYPE_CHECKING:
    from webui.db import Logbook

INSPECT_S = 2.0  # reading a file's catalogue
SUMMARY_S = 60.0  # reading its figures (a few scans of its session rows, in the background)
SUMMARY_VERSION = 5


def signature(path: Path) -> tuple | None:
    """The file's identity and state, and its logs' (None: the file is gone)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    parts: list[Any] = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    for suffix in ("-wal", "-journal"):
        try:
            lt = os.stat(f"{path}{suffix}")
            parts += [lt.st_ino, lt.st_size, lt.st_mtime_ns]
        except OSError:
            parts += [0, 0, 0]
    return tuple(parts)


def first_problem(path: Path) -> str | None:
    """Why a file cannot be a Hermes database before SQLite is asked (None: it may be)."""
    try:
        size = os.path.getsize(path)
        if size == 0:
            return "an empty file (0 bytes), not a Hermes database"
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if head != SQLITE_MAGIC:
        return "not an SQLite database (it does not start as one)"
    return None


def startup_words(exc: StartupError) -> str:
    """check_database's message without its advice on starting Logbook."""
    text = str(exc).split(" (tried:")[0]
    if isinstance(exc, StoreStalled) and "skipped until" not in text:
        text += ": skipped until the file changes"
    return text


@dataclass
class Summary:
    """What a store holds, read once per change of its file."""

    signature: list
    sessions: int = 0
    messages: int | None = None
    # (lowest, highest) of each sort key over every session row: no row of the file, shown
    # as itself or as its chain's tip, sorts outside them (last_active: the newest message).
    bounds: dict[str, list] = field(default_factory=dict)
    sources: dict[str, int] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)
    # Sessions whose parent is not in this file: (id, parent, end_reason, ended_at,
    # started_at, last_active, kind) — kind: "branch", "delegate", "tool" or "".
    dangling: list[list] = field(default_factory=list)
    # Sessions that ended 'compression' (a conversation may continue from them elsewhere).
    compressed: list[str] = field(default_factory=list)
    # This file's own compression edges: (parent, id, end_reason, ended_at, started_at,
    # last_active), parent ended 'compression' and the child a candidate continuation.
    links: list[list] = field(default_factory=list)
    # The list's menu of sources as the plain list counts it (archived sessions hidden): in
    # Hermes's rows, and over every row; and whether the rows of Hermes 0.19's reading of an
    # older file were counted (the same rule must apply when they are used).
    listed: dict[str, int] = field(default_factory=dict)
    every_row: dict[str, int] = field(default_factory=dict)
    hides_subagents: bool = False

    def facets_for(self, q: SessionQuery) -> dict[str, int] | None:
        """The list's source menu for ``q`` when this summary knows it (a list filtered by
        source at most), else None: no query needed."""
        if not _plain(q):
            return None
        return self.listed if q.conversations else self.every_row  # read only, never changed

    def count_for(self, q: SessionQuery) -> int | None:
        facets = self.facets_for(q)
        if facets is None:
            return None
        hidden = listing.hidden_sources(q.sources) if q.conversations else ()
        wanted = q.sources or list(facets)
        return sum(facets.get(src, 0) for src in set(wanted) if src not in hidden)

    def may_hold(self, since: float | None, until: float | None) -> bool:
        """Can a session that started in [since, until) be here?"""
        lo, hi = self.bounds.get("started", [None, None])
        if lo is None or hi is None:
            return self.sessions > 0
        return not ((since is not None and hi < since) or (until is not None and lo >= until))

    def id_set(self) -> frozenset[str]:
        cached = self.__dict__.get("_ids")
        if cached is None:
            cached = self.__dict__["_ids"] = frozenset(self.ids)
        return cached


def summary_path(folder: Path, path: Path) -> Path:
    return folder / (hashlib.sha1(str(path).encode()).hexdigest()[:20] + ".json")


def _plain(q: SessionQuery) -> bool:
    """Only a source filter (and the page's own parameters) narrow this list."""
    return (
        q.narrow is EVERYTHING
        and q.archived == "hide"
        and not q.active_minutes
        and not any(
            (q.models, q.state, q.since, q.until, q.q, q.workspace, q.branch, q.user)
            + (q.chat_id, q.chat_type, q.session_key)
        )
    )


def load_summary(folder: Path, path: Path, sig: tuple) -> Summary | None:
    try:
        raw = json.loads(summary_path(folder, path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("version") != SUMMARY_VERSION:
        return None
    data = raw.get("summary") or {}
    if list(sig) != data.get("signature"):
        return None
    try:
        return Summary(**data)
    except TypeError:
        return None


def save_summary(folder: Path, path: Path, summary: Summary) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target = summary_path(folder, path)
        tmp = target.with_name(target.name + ".part")
        data = {k: v for k, v in asdict(summary).items() if not k.startswith("_")}
        tmp.write_text(json.dumps({"version": SUMMARY_VERSION, "summary": data}), "utf-8")
        tmp.replace(target)
    except (OSError, TypeError, ValueError):
        pass  # a full disk: kept in memory only


def read_summary(lb: Logbook, sig: tuple, time_limit_s: float = SUMMARY_S) -> Summary:
    """The figures of one file (a handful of scans of its session rows and one of its
    messages' timestamps), under one time limit: QueryTimeout when they do not come."""
    import time

    end = time.monotonic() + time_limit_s

    def left() -> float:
        remaining = end - time.monotonic()
        if remaining <= 0:
            raise QueryTimeout("The file's figures did not come in time.")
        return remaining

    r, schema = lb.reader, lb.schema

    def col(name: str) -> str:
        return name if schema.has("sessions", name) else "NULL"

    tokens, cost = tokens_sql(schema), cost_sql(schema)
    messages = f"COALESCE({col('message_count')}, 0)"
    row = (
        r.one(
            "SELECT COUNT(*) AS n, MIN(started_at) AS s0, MAX(started_at) AS s1, "
            f"MIN({messages}) AS m0, MAX({messages}) AS m1, MIN({tokens}) AS t0, "
            f"MAX({tokens}) AS t1, MIN({cost}) AS c0, MAX({cost}) AS c1 FROM sessions",
            time_limit_s=left(),
        )
        or {}
    )
    newest = r.scalar("SELECT MAX(timestamp) FROM messages", time_limit_s=left())
    counted = r.scalar("SELECT COUNT(*) FROM messages", time_limit_s=left())
    started = [_num(row.get("s0")), _num(row.get("s1"))]
    active_hi = max((x for x in (_num(newest), started[1]) if x is not None), default=None)
    summary = Summary(
        signature=list(sig),
        sessions=int(row.get("n") or 0),
        messages=counted,
        bounds={
            "started": started,
            "last_active": [started[0], active_hi],
            "messages": [_num(row.get("m0")), _num(row.get("m1"))],
            "tokens": [_num(row.get("t0")), _num(row.get("t1"))],
            "cost": [_num(row.get("c0")), _num(row.get("c1"))],
        },
        sources={
            str(x["source"]): x["n"]
            for x in r.rows(
                "SELECT source, COUNT(*) AS n FROM sessions GROUP BY source",
                time_limit_s=left(),
            )
        },
        ids=[str(i) for i in r.column("SELECT id FROM sessions", time_limit_s=left())],
        dangling=dangling(lb, time_limit_s=left()),
        compressed=compressed(lb, time_limit_s=left()),
        links=links(lb, time_limit_s=left()),
        listed=lb.sessions.source_facets(SessionQuery()),
        every_row=lb.sessions.source_facets(SessionQuery(rows="all")),
        hides_subagents=lb.sessions.list_rules.hide_probable_subagents,
    )
    return summary


def dangling(lb: Logbook, time_limit_s: float | None = None) -> list[list]:
    """Sessions whose parent is not in this file (their parent may be kept in another store:
    an older segment of a conversation in an archive), with what the chain walk needs."""
    schema = lb.schema
    if not schema.has("sessions", "parent_session_id"):
        return []
    s = lb.sessions

    def col(name: str) -> str:
        return f"s.{name}" if schema.has("sessions", name) else "NULL"

    rows = lb.reader.rows(
        f"SELECT s.id AS id, s.parent_session_id AS parent, {col('end_reason')} AS end_reason, "
        f"{col('ended_at')} AS ended_at, s.started_at AS started_at, "
        f"{s.last_active_of('s')} AS last_active, s.source AS source, "
        f"{s.list_rules.marker('s', '_branched_from')} AS branched, "
        f"{s.list_rules.marker('s', '_delegate_from')} AS delegate "
        "FROM sessions s WHERE s.parent_session_id IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id)",
        time_limit_s=time_limit_s,
    )
    out = []
    for x in rows:
        kind = (
            "branch"
            if x["branched"] is not None
            else "delegate"
            if x["delegate"] is not None
            else "tool"
            if x["source"] == "tool"
            else ""
        )
        out.append(
            [
                str(x["id"]),
                str(x["parent"]),
                x["end_reason"],
                _num(x["ended_at"]),
                _num(x["started_at"]),
                _num(x["last_active"]),
                kind,
            ]
        )
    return out


def compressed(lb: Logbook, time_limit_s: float | None = None) -> list[str]:
    if not lb.schema.has("sessions", "end_reason"):
        return []
    return [
        str(i)
        for i in lb.reader.column(
            "SELECT id FROM sessions WHERE end_reason = 'compression'", time_limit_s=time_limit_s
        )
    ]


def links(lb: Logbook, time_limit_s: float | None = None) -> list[list]:
    return [
        [str(p), str(c.id), c.end_reason, _num(c.ended_at), _num(c.started_at), _num(c.last_active)]
        for p, c in lb.sessions.compression_edges(time_limit_s=time_limit_s)
    ]


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and value == value else None


def read_or_load(lb: Logbook, folder: Path, path: Path, sig: tuple) -> Summary:
    """The summary kept for this signature, else read now (and kept)."""
    kept = load_summary(folder, path, sig)
    if kept is not None and kept.hides_subagents == lb.sessions.list_rules.hide_probable_subagents:
        return kept
    try:
        summary = read_summary(lb, sig)
    except QueryTimeout:
        raise StoreStalled(
            f"{path} did not give its figures within {SUMMARY_S:g} s: skipped until the file "
            "changes"
        ) from None
    except LogbookDBError as exc:
        raise StartupError(f"{path} could not be read ({exc.message})") from None
    except sqlite3.Error as exc:
        raise StartupError(f"{path} could not be read ({exc})") from None
    save_summary(folder, path, summary)
    return summary
