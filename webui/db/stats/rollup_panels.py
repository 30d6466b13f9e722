"""The stats panels read from the rollup: tool usage, the weekday x hour heatmap and messages
per source, for whole days from the daily sums and for the period's first and last day
session by session; one connection shared by a report's panels."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from webui.db.daily_sums import EDGE, Span, days
from webui.db.reader import Reader


class Panels:
    """Reads of the rollup's file (``connect`` opens one), under the reader's query limit."""

    def __init__(self, reader: Reader, connect: Callable[[], sqlite3.Connection]):
        self.r = reader
        self._connect = connect
        self._local = threading.local()  # a connection shared by panels (reading())

    @contextmanager
    def reading(self) -> Iterator[None]:
        """The panels' queries inside share one connection: opening one (the schema check
        and attaching the state database) costs ~0.8 ms, six times per stats report."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        self._local.conn = self._connect()
        try:
            yield
        finally:
            conn, self._local.conn = self._local.conn, None
            conn.close()

    def query(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        # No lock: readers of our own file run side by side (WAL); only refresh() serialises.
        shared = getattr(self._local, "conn", None)
        conn = shared or self._connect()
        try:
            deadline = time.monotonic() + self.r.time_limit_s
            conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
            cur = conn.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=False)) for r in cur.fetchall()]
        finally:
            conn.set_progress_handler(None, 0)
            if shared is None:
                conn.close()

    # -- panels ------------------------------------------------------------------------

    def tools(
        self,
        where: str,
        params: list[Any],
        span: Span | None = None,
    ) -> list[dict[str, Any]]:
        """Per tool, as Hermes's analytics count it: the larger of its tool-result rows and
        its entries in assistants' tool_calls (both also given). ``span`` (start, end), when
        the only filter is the period: whole days come from the daily sums."""

        def per_tool(table: str, extra: str = "", extra_params: Sequence[Any] = ()) -> Counter:
            return Counter(
                {
                    r["tool"]: r["n"]
                    for r in self.query(
                        # CROSS JOIN keeps SQLite's order: the period's sessions first, then
                        # each one's rows by their primary key (not every row, then its session).
                        f"SELECT t.tool_name AS tool, SUM(t.n) AS n FROM main.sess s CROSS JOIN "
                        f"main.{table} t ON t.session_id = s.session_id WHERE {extra}({where}) "
                        "GROUP BY 1",
                        [*extra_params, *params],
                    )
                }
            )

        if span is None:
            results, entries = per_tool("tools"), per_tool("calls")
        else:
            inside, inside_params, edges = days(span)
            results, entries = per_tool("tools", EDGE, edges), per_tool("calls", EDGE, edges)
            for r in self.query(
                "SELECT tool_name AS tool, SUM(results) AS results, SUM(entries) AS entries "
                f"FROM main.tools_day WHERE {inside} GROUP BY 1",
                inside_params,
            ):
                results[r["tool"]] += r["results"]
                entries[r["tool"]] += r["entries"]
        out = [
            {
                "tool": name,
                "calls": max(results.get(name, 0), entries.get(name, 0)),
                "results": results.get(name, 0),
                "call_entries": entries.get(name, 0),
            }
            for name in set(results) | set(entries)
            if results.get(name, 0) or entries.get(name, 0)
        ]
        return sorted(out, key=lambda t: (-t["calls"], t["tool"]))

    def heatmap(
        self,
        where: str,
        params: list[Any],
        offset_s: int = 0,
        span: Span | None = None,
    ) -> list[dict[str, Any]]:
        """Messages per weekday and hour, counted in UTC and shown in the reader's zone
        (shifted by its offset now: an hour off for the part of the year on the other side
        of a daylight-saving change). ``span`` as for :meth:`tools`."""
        shift = round(offset_s / 3600)
        per_session = (
            "SELECT h.dow AS dow, h.hour AS hour, SUM(h.n) AS messages FROM main.sess s CROSS "
            "JOIN main.hours h ON h.session_id = s.session_id WHERE {extra}({where}) GROUP BY 1, 2"
        )
        if span is None:
            rows = self.query(per_session.format(extra="", where=where), params)
        else:
            inside, inside_params, edges = days(span)
            cells: Counter = Counter()
            for r in self.query(
                per_session.format(extra=EDGE, where=where),
                [*edges, *params],
            ):
                cells[(r["dow"], r["hour"])] += r["messages"]
            for r in self.query(
                "SELECT dow, hour, SUM(n) AS messages FROM main.hours_day "
                f"WHERE {inside} GROUP BY 1, 2",
                inside_params,
            ):
                cells[(r["dow"], r["hour"])] += r["messages"]
            rows = [{"dow": d, "hour": h, "messages": n} for (d, h), n in cells.items()]
        out = []
        for r in rows:
            if r["dow"] is None or r["hour"] is None:  # a timestamp SQLite cannot read
                continue
            slot = (r["dow"] * 24 + r["hour"] + shift) % 168
            r["dow"], r["hour"] = divmod(slot, 24)
            out.append(r)
        return out

    def messages_by_source(self) -> list[dict[str, Any]]:
        return self.query(
            "SELECT source, n AS messages FROM main.source_messages WHERE n > 0 "
            "ORDER BY messages DESC, source",
            [],
        )
