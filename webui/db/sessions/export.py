"""Streamed exports. Every JSONL line is the record `hermes sessions export` writes (reference
§7): the session's columns, then ``messages`` with content decoded, tool_calls parsed (``[]``
when invalid) and the other JSON columns left as strings. Sessions are read in keyset batches
and each session's messages through a cursor, so memory stays flat whatever the size, and no
read transaction stays open across the whole export."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

from webui import keep, threads
from webui.db import sql
from webui.db.reader import Reader
from webui.db.sessions.prompts import resolving
from webui.db.sessions.store import SessionQuery, SessionStore
from webui.db.sql import SESSION_FIGURES
from webui.hermes import display, exports, records
from webui.hermes.content import content_parts, parse_tool_calls, pretty_json
from webui.hermes.redaction import redact_record, redact_text
from webui.hermes.rules import rules_for

BATCH = 100
BATCH_BYTES = 4 << 20  # encoded records held at once by a streamed export
EXPORT_TIME_LIMIT = 600.0

# The sizes behind an export's estimate: a sample's averages, at most five minutes old.
SIZES = keep.EXPORT_SIZES


class Exporter:
    def __init__(self, reader: Reader, sessions: SessionStore):
        self.r = reader
        self.sessions = sessions
        self.schema = reader.schema
        # Each of an export's reads may take this long (a store beside the live file gets
        # less: one that stalls must end its part of an export, not hold it for ten minutes).
        self.time_limit_s = EXPORT_TIME_LIMIT

    # -- selection ---------------------------------------------------------------------------

    def session_ids(
        self,
        q: SessionQuery | None = None,
        ids: list[str] | None = None,
        lineage_root: str | None = None,
    ) -> Iterator[str]:
        """The ids to export, newest first (sort=started: oldest first), in batches (keyset
        on started_at, id)."""
        if ids is not None:
            yield from ids
            return
        if lineage_root is not None:
            yield from self.r.column(
                f"{sql.descendants_cte()} SELECT s.id AS id FROM down JOIN "
                "sessions s ON s.id = down.id ORDER BY s.started_at, s.id",
                [lineage_root],
                time_limit_s=self.time_limit_s,
            )
            return
        # An export holds every session row that matches (as `hermes sessions export`), not
        # only the rows the list shows.
        q = replace(q or SessionQuery(), rows="all")
        where, params = self.sessions.where(q)
        if where == "1":
            # Everything: export_all's order, most recently active first.
            rules = rules_for(self.schema.version)
            yield from self.r.column(
                f"SELECT s.id AS id FROM sessions s ORDER BY "
                f"{sql.last_active(self.schema, rules.last_active)} DESC, s.started_at DESC, "
                "s.id DESC",
                [],
                time_limit_s=self.time_limit_s,
            )
            return
        # Newest first, as Hermes's filtered export; sort=started (oldest first) reads a chat
        # or a project from its beginning.
        op, d = (">", "") if q.sort == "started" else ("<", " DESC")
        after: tuple[float, str] | None = None
        while True:
            cond, extra = "", []
            if after:
                cond = f" AND (s.started_at {op} ? OR (s.started_at = ? AND s.id {op} ?))"
                extra = [after[0], after[0], after[1]]
            rows = self.r.rows(
                f"SELECT s.id AS id, s.started_at AS started_at FROM sessions s "
                f"WHERE {where}{cond} ORDER BY s.started_at{d}, s.id{d} LIMIT ?",
                [*params, *extra, BATCH],
                time_limit_s=self.time_limit_s,
            )
            if not rows:
                return
            for r in rows:
                yield r["id"]
            after = (rows[-1]["started_at"], rows[-1]["id"])

    def summary(
        self,
        q: SessionQuery | None = None,
        ids: list[str] | None = None,
        exclude: list[str] | None = None,
    ) -> dict:
        """What an export of this selection holds, before it is made: sessions, messages and
        about how many bytes of JSONL (messages times the average size of a sample of
        messages, plus each session's row). Counts read the sessions table only.
        ``exclude``: sessions left out (copies of sessions another store exports)."""
        if ids is not None:
            where, params = f"s.id IN ({sql.in_list(len(ids))})", list(ids)
        else:
            where, params = self.sessions.where(replace(q or SessionQuery(), rows="all"))
        if exclude:
            where = f"({where}) AND s.id NOT IN (SELECT value FROM json_each(?))"
            params = [*params, json.dumps(list(exclude))]
        n = sql.num(self.schema, "message_count", "s")
        row = self.r.one(
            f"SELECT COUNT(*) AS sessions, {sql.total(n)} AS messages FROM sessions s "
            f"WHERE {where}",
            params,
        ) or {"sessions": 0, "messages": 0}
        per_message, per_session = self.sizes()
        return {
            "sessions": row["sessions"],
            "messages": row["messages"],
            "bytes": int(row["messages"] * per_message + row["sessions"] * per_session),
        }

    def sizes(self) -> tuple[float, float]:
        """Average bytes of a message and of a session's row in a JSONL export, from a
        sample spread over the ids (200 of each): kept while the file is unchanged."""
        return self.sessions.shared("export-sizes", self._measure_sizes, SIZES)

    def _measure_sizes(self) -> tuple[float, float]:
        top = self.r.scalar("SELECT MAX(id) FROM messages") or 0
        sample = list(range(1, top + 1, max(1, top // 200)))[:200] or [0]
        text = " + ".join(
            f"COALESCE(length(CAST({sql.col(self.schema, c, table='messages')} AS BLOB)), 0)"
            for c in ("content", "tool_calls", "reasoning")
        )
        # 280: the keys and other columns of a message record, written as JSON.
        m = self.r.scalar(
            f"SELECT AVG({text} + 280) FROM messages WHERE id IN ({sql.in_list(len(sample))})",
            sample,
        )
        prompt = f"COALESCE(length(CAST({sql.col(self.schema, 'system_prompt')} AS BLOB)), 0)"
        per_session = self.r.scalar(
            f"SELECT AVG(600 + {prompt}) FROM (SELECT * FROM sessions ORDER BY started_at DESC "
            "LIMIT 200)"
        )
        return float(m or 400.0), float(per_session or 600.0)

    # -- records -----------------------------------------------------------------------------

    def record(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        include_rewound: bool = False,
        last_active: bool = True,
        transcript: bool = False,
    ) -> dict[str, Any] | None:
        """One export record, read on ``conn``, as the generation that wrote the file builds
        it (webui.hermes.records): the session's columns (its system prompt resolved from
        ``system_prompts``), then ``messages`` (0.22: ``timings``). With ``last_active``
        (schema 11 on) the record of Hermes's export_all, the whole-database export; without,
        that of export_session (one id, or a filtered export; 0.22 resolves ``tool_names``
        there too). The rows: ``transcript`` (Markdown, QMD, HTML, user prompts) the
        conversation as that Hermes shows it (0.22: its display projection), else what its
        JSONL holds (0.22: every stored row, flagged; before: the live rows);
        ``include_rewound``: every stored row in either."""
        rules = rules_for(self.schema.version)
        select, join = resolving(self.schema, rules, tools=not last_active)
        with_last = last_active and self.schema.version is not None and self.schema.version >= 11
        if with_last:
            select += f", {sql.last_active(self.schema, rules.last_active)} AS last_active"
        cur = conn.execute(
            f"SELECT s.*{select} FROM sessions s{join} WHERE s.id = ?", (session_id,)
        )
        row = cur.fetchone()
        if row is None:
            return None
        session = records.session_record(
            dict(zip([d[0] for d in cur.description], row, strict=False)), rules
        )
        v22 = rules.export_active_by_id
        every = include_rewound or (rules.export_every_row and not transcript)
        shown = transcript and rules.transcript_display and not include_rewound
        if v22:
            active = (
                " AND active = 1"
                if self.schema.has("messages", "active") and not every and not shown
                else ""
            )
            cur = conn.execute(
                f"SELECT * FROM messages WHERE session_id = ?{active} ORDER BY id", (session_id,)
            )
        else:
            cur = conn.execute(
                "SELECT * FROM messages WHERE session_id = ? ORDER BY timestamp, id", (session_id,)
            )
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, values, strict=False)) for values in cur]
        if shown:
            rows = display.project(rows, rules.display, display.keeps_order(rows))
        session["messages"] = [records.message_record(m, rules) for m in rows]
        if rules.export_timings:
            session["timings"] = records.timings(session["messages"])
        return session

    def records(
        self,
        ids: Iterator[str],
        include_rewound: bool = False,
        last_active: bool = False,
        batch_size: int = BATCH,
        encode=None,
        transcript: bool = False,
    ) -> Iterator[Any]:
        """Export records for ``ids``, read a batch per connection; nothing stays open while
        the caller (a slow download) consumes them. ``encode`` turns each record into what is
        kept for the batch (its bytes, say), inside the batch, so memory holds the smaller.
        ``transcript``: the records of a Markdown, QMD, HTML or user-prompts export
        (see ``record``)."""
        batch: list[str] = []
        for sid in ids:
            batch.append(sid)
            if len(batch) >= batch_size:
                yield from self._drain(batch, (include_rewound, last_active, transcript), encode)
                batch = []
                threads.make_way()  # pages first: an export is never in a hurry
        if batch:
            yield from self._drain(batch, (include_rewound, last_active, transcript), encode)

    def _drain(self, ids: list[str], how: tuple, encode):
        """Every record of ``ids``, a read connection per part: a part ends after its
        hundredth session or BATCH_BYTES of encoded records, whichever comes first, so a run
        of long sessions is not held in memory a hundred at a time."""
        while ids:
            out, done = self._records_batch(ids, how, encode)
            yield from out
            ids = ids[done:]

    def _records_batch(self, ids: list[str], how: tuple, encode=None) -> tuple[list[Any], int]:
        """The records of ``ids`` from their start, read on one connection, and how many ids
        that covered (all, or fewer when the encoded ones reached BATCH_BYTES). ``how``:
        (include_rewound, last_active, transcript)."""
        size = 0
        with self.r.connection(self.time_limit_s) as conn:
            out = []
            for n, sid in enumerate(ids, 1):
                rec = self.record(conn, sid, *how)
                if rec is not None:
                    out.append(encode(rec) if encode else rec)
                    size += len(out[-1]) if isinstance(out[-1], (bytes, str)) else 0
                if size >= BATCH_BYTES:
                    return out, n
        # Returned, not yielded, inside the connection: a slow client never holds a read
        # transaction open.
        return out, len(ids)

    def session_record(
        self, session_id: str, include_rewound: bool = False, transcript: bool = False
    ):
        """Hermes's export_session(id)."""
        with self.r.connection(self.time_limit_s) as conn:
            return self.record(conn, session_id, include_rewound, False, transcript)

    def lineage_record(self, session_id: str, include_rewound: bool = False):
        """Hermes's export_session_lineage(id): the compression chain the session belongs to,
        as one logical record (``--lineage logical``, a Markdown or QMD export: each segment
        as that Hermes shows it)."""
        with self.r.connection(self.time_limit_s) as conn:
            conn.row_factory = sqlite3.Row

            def get(sid: str):
                row = conn.execute("SELECT * FROM sessions WHERE id = ?", (sid,)).fetchone()
                return dict(row) if row else None

            def children(sid: str):
                return [
                    dict(r)
                    for r in conn.execute(
                        "SELECT * FROM sessions WHERE parent_session_id = ? ORDER BY started_at",
                        (sid,),
                    )
                ]

            ids = exports.compression_lineage(session_id, get, children)
            conn.row_factory = None
            segments = [self.record(conn, sid, include_rewound, False, True) for sid in ids]
        logical = exports.logical_record([s for s in segments if s is not None])
        if logical is not None and rules_for(self.schema.version).export_timings:
            logical["timings"] = records.timings(logical["messages"])
        return logical

    def jsonl(
        self,
        ids: Iterator[str],
        include_rewound: bool = False,
        last_active: bool = True,
        redact: bool = False,
    ) -> Iterator[bytes]:
        """Streamed JSONL, a batch of sessions per read connection (short read transactions,
        memory bounded by one batch of encoded lines). The bytes are Hermes's: Python's json
        with its default separators (``", "``, ``": "``), characters as they are, floats as
        Python writes them."""

        def line(rec: dict[str, Any]) -> bytes:
            if redact:
                rec = redact_record(rec)
            return (_ENCODER.encode(rec) + "\n").encode()

        return self.records(ids, include_rewound, last_active, encode=line)

    def sidebar_rows(self, ids: list[str]) -> Iterator[dict[str, Any]]:
        """Id, title and start of each session, in ``ids``' order, read a batch at a time (the
        sidebar of a multi-session HTML page)."""
        title = sql.col(self.schema, "title", "s")
        for start in range(0, len(ids), BATCH):
            batch = ids[start : start + BATCH]
            found = {
                r["id"]: r
                for r in self.r.rows(
                    f"SELECT s.id AS id, {title} AS title, s.started_at AS started_at "
                    f"FROM sessions s WHERE s.id IN ({sql.in_list(len(batch))})",
                    batch,
                    time_limit_s=self.time_limit_s,
                )
            }
            yield from (found[sid] for sid in batch if sid in found)

    def csv(
        self,
        ids: Iterator[str],
        columns: list[str] | None = None,
        header: bool = True,
        redact: bool = False,
    ) -> Iterator[str]:
        """A metadata row per session. ``columns``: another store's header to follow (a column
        this file lacks is left empty); ``header``: False for a store after the first;
        ``redact``: every text value through Hermes's redaction (a title can hold a key)."""
        cols = columns or self.csv_columns()
        if header:
            yield _csv_line(cols)
        batch: list[str] = []
        for sid in ids:
            batch.append(sid)
            if len(batch) >= BATCH:
                yield from self._csv_rows(batch, cols, redact)
                batch = []
        if batch:
            yield from self._csv_rows(batch, cols, redact)

    def csv_columns(self) -> list[str]:
        return [
            c
            for c in (
                "id",
                "title",
                "source",
                "model",
                "started_at",
                "ended_at",
                "end_reason",
                "parent_session_id",
                "message_count",
                "tool_call_count",
                "api_call_count",
                *SESSION_FIGURES,
                "cost_status",
                "billing_provider",
            )
            if self.schema.has("sessions", c)
        ]

    def _csv_rows(self, ids: list[str], cols: list[str], redact: bool) -> Iterator[str]:
        picked = ", ".join(f"{sql.col(self.schema, c)} AS {c}" for c in cols)
        rows = {
            r["id"]: r
            for r in self.r.rows(
                f"SELECT {picked} FROM sessions WHERE id IN ({sql.in_list(len(ids))})",
                ids,
            )
        }
        for sid in ids:
            r = rows.get(sid)
            if r:
                values = [_iso(r[c]) if c in ("started_at", "ended_at") else r[c] for c in cols]
                if redact:
                    values = [redact_text(v) if isinstance(v, str) else v for v in values]
                yield _csv_line(values)

    def markdown(
        self, ids: Iterator[str], redact: bool = False, pages=None, every: bool = False
    ) -> Iterator[str]:
        """Logbook's readable transcript; ``redact``: every text through Hermes's redaction.
        ``pages`` (the MessageStore's ``page``): the conversation as the viewer shows it,
        as Hermes shows it (``every``: every stored row, those Hermes does not show
        labelled), hidden rows left out, a page of 500 at a time; else every stored row."""
        rules = rules_for(self.schema.version)
        select, join = resolving(self.schema, rules)
        for n, sid in enumerate(ids):
            s = self.r.one(f"SELECT s.*{select} FROM sessions s{join} WHERE s.id = ?", [sid])
            if s is None:
                continue
            s = records.session_record(s, rules)
            if redact:
                s = {k: redact_text(v) if isinstance(v, str) else v for k, v in s.items()}
            if n:
                yield "\n\n---\n\n"
            yield f"# {_inline(s.get('title') or sid)}\n\n"
            for key in (
                "id",
                "source",
                "model",
                "started_at",
                "ended_at",
                "end_reason",
                "parent_session_id",
                "input_tokens",
                "output_tokens",
                "estimated_cost_usd",
                "actual_cost_usd",
            ):
                if s.get(key) is not None:
                    value = _iso(s[key]) if key in ("started_at", "ended_at") else s[key]
                    yield f"- **{key}**: {_inline(value)}\n"
            if s.get("system_prompt"):
                yield "\n## System prompt\n\n" + _fence(str(s["system_prompt"]), "text")
            shown = self._messages_in_batches(sid) if pages is None else _paged(pages, sid, every)
            for m, note in shown:
                if redact:
                    m = {k: redact_text(v) if isinstance(v, str) else v for k, v in m.items()}
                who = _inline(m["role"]) + (
                    f" · {_inline(m['tool_name'])}" if m.get("tool_name") else ""
                )
                yield f"\n## {who} — {_iso(m['timestamp'])}\n\n"
                if note:
                    yield f"_Not shown by {_inline(rules.hermes)}: {_inline(note)}._\n\n"
                text = "\n\n".join(p["text"] for p in content_parts(m.get("content")))
                if m["role"] == "tool":
                    yield _fence(pretty_json(text), "json") if text else ""
                elif text:
                    # Fenced: a message cannot fake a "## user — <date>" heading of its own
                    # or carry raw HTML into a Markdown viewer.
                    yield _fence(text, "markdown")
                for call in parse_tool_calls(m.get("tool_calls")):
                    yield f"\n**Tool call** {_inline(call['name'])}\n\n" + _fence(
                        pretty_json(call["arguments"]), "json"
                    )

    def _messages_in_batches(self, session_id: str, size: int = 500):
        """A session's messages in keyset batches: each batch is one short read, and nothing
        stays open while a slow client downloads."""
        by_id = rules_for(self.schema.version).messages_by_id
        order = "id" if by_id else "timestamp, id"
        after: tuple[float, int] | None = None
        while True:
            cond = ""
            params: list[Any] = [session_id]
            if after:
                cond = " AND id > ?" if by_id else " AND (timestamp, id) > (?, ?)"
                params += [after[1]] if by_id else list(after)
            rows = self.r.rows(
                f"SELECT * FROM messages WHERE session_id = ?{cond} ORDER BY {order} LIMIT ?",
                [*params, size],
            )
            yield from ((row, None) for row in rows)
            if len(rows) < size:
                return
            after = (rows[-1]["timestamp"], rows[-1]["id"])


def _paged(pages, session_id: str, every: bool, size: int = 500):
    """(row, why Hermes does not show it or None) for the rows a conversation paints."""
    after = None
    while True:
        page = pages(session_id, after=after, include_rewound=every, limit=size)
        for m in page.messages:
            mark = page.marks.get(m["id"])
            if mark is None or mark.painted:
                yield m, display.why_words(mark.label) if mark is not None else None
        if not page.next_cursor:
            return
        after = page.next_cursor


def _jsonable(value: Any) -> Any:
    """A value JSON has no form for (a BLOB written by some other tool): as text. Hermes's own
    export stops at such a row; Logbook writes it on."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


# One encoder for every line: json.dumps with options builds a new one per call, and a record
# read from SQLite cannot hold itself, so the circularity check only costs time. Same bytes.
_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False, default=_jsonable)


def _inline(value: Any) -> str:
    """Untrusted text on one Markdown line: no line breaks, HTML escaped, and no character that
    starts Markdown syntax at the beginning (a heading, a list, a quote)."""
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "\\" + text if text[:1] in "#-*+>|=`~[!_" and text else text


def _fence(text: str, lang: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}\n"


def _iso(ts: Any) -> str:
    try:
        return datetime.fromtimestamp(float(ts)).astimezone().isoformat(timespec="seconds")
    except (TypeError, ValueError, OSError, OverflowError):
        return ""


def _csv_line(values: list[Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerow(
        [("'" + v) if isinstance(v, str) and v[:1] in "=+-@\t\r" and v else v for v in values]
    )
    return buf.getvalue()
