"""One statistics report for the whole history: every store's report for the period (its
copies of sessions an earlier store holds left out), added up into one, with each store's
share below it.

A store whose sessions all started outside the period and the period before it adds nothing
and is not asked; an archive's report is kept while its file stands still (for a period that
moves with the clock, by the minute, unless every session of it lies inside the period). An
archive's tool usage and heatmap come from its own rollup (read in the background, and by
requests within the stats budget); until it is whole the report says so, as for the live
file."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from webui import keep
from webui.db import LogbookDBError
from webui.db.deadline import OUT_OF_TIME
from webui.db.stats.merge import merge
from webui.db.stats.store import StatsQuery
from webui.db.stores.history import copies_among, store_answer
from webui.db.stores.store_set import Store

_merged = keep.VersionedCache(16)
# The live report with its rows labelled, kept while the report itself is (by identity).
_first_labelled = keep.VersionedCache(8, identity=True)


def _windows(q: StatsQuery) -> list[tuple[float | None, float | None]]:
    out = [(q.start, q.end if q.end is not None else None)]
    prev = q.previous()
    if prev is not None:
        out.append((prev.start, prev.end))
    return out


def _touches(s: Store, q: StatsQuery) -> bool:
    if s.summary is None:
        return True
    return any(s.summary.may_hold(a, b) for a, b in _windows(q))


def _inside(s: Store, q: StatsQuery) -> bool:
    """Every session of the store started inside the period (and none in the one before)."""
    if s.summary is None:
        return False
    lo, hi = s.summary.bounds.get("started") or [None, None]
    if lo is None or hi is None:
        return False
    start, end = q.start, q.end if q.end is not None else q.now
    return (start is None or lo >= start) and hi < end


def whole_report(
    q: StatsQuery,
    stores: list[Store],
    live_report: dict[str, Any],
    build,
    missing: list[str],
    rollup_budget_s: float,
    short_of_time: Callable[[], bool],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the whole history's report, each store's share). ``build(q, lb, budget_s)``: a
    store's report; ``rollup_budget_s``: the time the stores' rollups may take, together;
    ``missing``: the stores not read (those failing now are added); ``short_of_time``: is the
    page's budget too short to ask one more store (webui.db.deadline.short_of_time)?"""
    readable = [s for s in stores if s.logbook is not None]
    copies = copies_among(readable)
    first = _first_labelled.get_or_set(
        id(live_report), live_report, lambda: _labelled(live_report, stores[0].name)
    )
    reports = [first]
    rows: list[dict[str, Any]] = [
        {"store": stores[0].name, "kind": stores[0].kind, "totals": _share(live_report["totals"])}
    ]
    budget = [float(rollup_budget_s)]
    for s in stores[1:]:
        if s.logbook is None:
            rows.append({"store": s.name, "kind": s.kind, "totals": None, "error": s.message})
            missing.append(f"{s.name}: {s.message or s.status}")
            continue
        if not _touches(s, q):
            rows.append({"store": s.name, "kind": s.kind, "totals": _zero(), "outside": True})
            continue
        if short_of_time():
            rows.append({"store": s.name, "kind": s.kind, "totals": None, "error": OUT_OF_TIME})
            missing.append(f"{s.name}: {OUT_OF_TIME}")
            continue
        qs = replace(q, exclude=tuple(copies.of(s.name)))
        try:
            report = _store_report(s, qs, build, budget)
        except (LogbookDBError, sqlite3.Error) as exc:
            message = exc.message if isinstance(exc, LogbookDBError) else str(exc)
            rows.append({"store": s.name, "kind": s.kind, "totals": None, "error": message})
            missing.append(f"{s.name}: {message}")
            continue
        reports.append(report)
        rows.append({"store": s.name, "kind": s.kind, "totals": _share(report["totals"])})
    mark = tuple((id(r), r.get("as_of")) for r in reports)
    whole = _merged.get_or_set(mark, mark, lambda: merge(reports))
    left_out = sum(len(copies.of(s.name)) for s in readable[1:])
    whole = {
        **whole,
        "covers": {
            "stores": [r["store"] for r in rows if r.get("totals") is not None],
            "missing": list(missing),
            "copies_left_out": left_out,
        },
    }
    return whole, rows


def _labelled(report: dict[str, Any], store: str) -> dict[str, Any]:
    """The report with its top sessions naming their store (the merged list is of all)."""
    top = report.get("top_sessions") or {}
    return {
        **report,
        "top_sessions": {
            by: [{**x, "store": store} for x in top.get(by) or ()] for by in ("tokens", "cost")
        },
    }


def _store_report(s: Store, q: StatsQuery, build, budget: list[float]) -> dict[str, Any]:
    lb = s.book
    asked = (q.period, q.since, q.until, q.sources, q.models, q.lineage, q.cost_by, q.tz)
    when = "inside" if _inside(s, q) else int(q.now // 60)
    key = ("stats", repr(asked), q.archived, q.exclude, when)

    def compute() -> dict[str, Any]:
        t0 = time.monotonic()
        report = build(q, lb, budget[0])
        budget[0] = max(0.0, budget[0] - (time.monotonic() - t0))
        report = _labelled(report, s.name)
        report["as_of"] = time.time()
        return report

    # A partial report (the store's rollup still reading) is not kept.
    return store_answer(s, key, compute, keep_if=lambda r: r["coverage"]["complete"])


SHARE = ("sessions", "messages", "total_tokens", "cost_usd", "api_calls", "tool_calls")


def _share(totals: dict[str, Any]) -> dict[str, Any]:
    """A store's share of the period, as the page lists it."""
    return {k: totals.get(k) for k in SHARE}


def _zero() -> dict[str, Any]:
    return {"sessions": 0, "messages": 0, "total_tokens": 0, "cost_usd": 0.0}
