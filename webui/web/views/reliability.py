"""The Reliability section of /stats (and ``reliability`` in its JSON twin): tool failures
per tool and over time, retry loops, unattended against interactive work, per cron job, and
per model how often its turns ended in a tool failure. Same filters as the rest of the page;
figures from the digest (webui.db.digest.reliability), kept while it stands still."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from flask import current_app, request, url_for

from webui import keep
from webui.db import Logbook, LogbookDBError, tz
from webui.db.digest import reliability as rel
from webui.db.stats.store import BUCKET_SQL, StatsQuery, bucket_for
from webui.present import charts
from webui.present.filters import num
from webui.web import digests
from webui.web.logbooks import get_logbook
from webui.web.stores import readable, request_stores


def _percent(v: float) -> str:
    return f"{v:.1f}%"


def section(
    q: StatsQuery, book: Logbook | None = None, by_source: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The section for ``q`` on one store's book (the request's by default); ``by_source``:
    the statistics report's figures per source, when the page has them."""
    lb = book or get_logbook()
    cov = digests.current(lb)
    rwhere, rparams = lb.stats.rollup_where(q)
    first = q.start if q.start is not None else (lb.stats.first_started() or q.now)
    unit = bucket_for((q.end or q.now) - first)
    local = tz.local_seconds("s.started_at", tz.zone(q.tz), first, q.end or q.now)
    bucket = BUCKET_SQL[unit].format(t=local)
    # Filtered by the period alone: whole days come from the digest's daily sums.
    span = None if q.sources or q.models or q.archived != "include" else (q.start, q.end)
    # ?tool=NAME: the series is that tool's alone
    tool = ((request.args.get("tool") or "").strip() or None) if book is None else None
    # Kept as the statistics report is: by what was asked, not by the clock (a period that
    # moves with it is worked out anew as the digest moves, or served while that happens).
    key = ("reliability", repr(replace(q, now=0.0)), tool)

    seen = cov.as_json()  # how far the digest had read for these figures

    def compute(conn) -> dict[str, Any]:
        return {
            "as_of": time.time(),  # when worked out: names the section's rendering
            "coverage": seen,
            "tools": rel.tools(conn, rwhere, rparams, span),
            "series": rel.series(conn, rwhere, rparams, bucket, tool),
            "loops": rel.loops(conn, rwhere, rparams),
            "models": rel.models(conn, rwhere, rparams, span),
        }

    out = dict(digests.kept(lb, key, compute))
    where, params = lb.stats.where(q)
    # Session figures: kept as the statistics are (under the file's data_version, reused for
    # LOGBOOK_STATS_REUSE_S beside a writing gateway, then served stale while worked out anew).
    policy = keep.reused(current_app.config)
    out["unattended"] = lb.sessions.cached(
        f"reliability-unattended:{key!r}",
        lb.reader.data_version(),
        lambda: rel.unattended(lb.reader, lb.schema, where, params, by_source),
        policy,
    )
    tools = out["tools"]
    totals = {
        k: sum(t[k] for t in tools) for k in ("calls", "results", "failures", "timeouts", "exits")
    }
    totals["rate"] = round(totals["failures"] / totals["results"], 6) if totals["results"] else None
    out["totals"] = totals
    out["bucket"] = unit
    out["tool"] = tool
    if book is None:  # the page's link back to every tool's failures over time
        out["every_tool_url"] = tool_url(None)
    out["rule"] = lb.digest.generation
    return out


def tool_url(tool: str | None) -> str:
    """This page with one tool's failures over time (None: every tool's)."""
    kept_args = {k: v for k, v in request.args.lists() if k not in ("tool", "format")}
    if tool is not None:
        kept_args["tool"] = [tool]
    return url_for("stats.stats", **kept_args, _anchor="reliability")


def store_rows(q: StatsQuery) -> list[dict[str, Any]]:
    """Each store's figures for the period beside each other, when the history spans more
    than one (an archive's own digest; a store that cannot answer says so)."""
    from flask import g

    from webui.web.logbooks import live_logbook

    if g.get("all_profiles") or g.get("store_pin"):
        return []
    stores = readable(request_stores(live_logbook()))
    if len(stores) < 2:
        return []
    rows = []
    for s in stores:
        try:
            r = section(q, s.logbook)
            rows.append({"store": s.name, "totals": r["totals"], "loops": r["loops"]["count"],
                         "complete": r["coverage"]["complete"]})  # fmt: skip
        except LogbookDBError as exc:
            rows.append({"store": s.name, "error": exc.message})
    return rows


class Charts:
    """build_charts(r), drawn on first use: a section kept rendered never needs them."""

    def __init__(self, r: dict[str, Any]):
        self._r = r
        self._charts: dict[str, charts.Chart] | None = None

    def __getattr__(self, key: str) -> charts.Chart:
        if key.startswith("_"):
            raise AttributeError(key)
        if self._charts is None:
            self._charts = build_charts(self._r)
        try:
            return self._charts[key]
        except KeyError:
            raise AttributeError(key) from None


def build_charts(r: dict[str, Any]) -> dict[str, charts.Chart]:
    series = [x for x in r["series"] if x["bucket"] is not None]
    buckets = [x["bucket"] for x in series]
    cell = {x["bucket"]: x for x in series}

    def kind(b: str, k: str) -> float:
        x = cell[b]
        if k == "timeouts":
            return x["timeouts"] or 0
        if k == "non-zero exits":
            return x["exits"] or 0
        return (x["failures"] or 0) - (x["timeouts"] or 0) - (x["exits"] or 0)

    unit = r["bucket"]
    with_results = [t for t in r["tools"] if t["results"]][:15]
    return {
        "failures": charts.stacked_columns(
            f"Failed {r['tool'] or 'tool'} calls per {unit}, by kind",
            buckets,
            ["errors", "non-zero exits", "timeouts"],
            kind,
            num,
            "failures",
            unit,
        ),
        "rate": charts.stacked_columns(
            f"Failure rate per {unit} (failed results / results)",
            buckets,
            ["rate"],
            lambda b, _s: 100 * (cell[b]["failures"] or 0) / (cell[b]["results"] or 1),
            _percent,
            "failed",
            unit,
        ),
        "by_tool": charts.horizontal_bars(
            "Failure rate by tool",
            [t["tool"] for t in with_results],
            [100 * (t["rate"] or 0) for t in with_results],
            _percent,
            texts=[f"{100 * (t['rate'] or 0):.1f}% of {num(t['results'])}" for t in with_results],
        ),
    }


def loop_url(row: dict[str, Any]) -> str:
    return url_for(
        "sessions.view_session",
        session_id=row["session_id"],
        at=row["first_message"],
        _anchor=f"m-{row['first_message']}",
    )
