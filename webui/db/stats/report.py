"""One file's statistics report: every panel of /stats for a query, and the report kept between
requests (the "Statistics" row of the README's "What may lag" table). The view reads the
request and gives what this reads: the Logbook, the rollup's time budget and the app's
settings for reuse (LOGBOOK_STATS_REUSE_S, LOGBOOK_STATS_STALE_S). Over several stores the
reports are added up by webui.db.history.stats."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, cast

from webui import keep, threads
from webui.db import tz
from webui.db.stats import models as stats_models
from webui.db.stats.rollup import Coverage
from webui.db.stats.store import StatsQuery, StatsStore, bucket_for, merge_aux_into_by_model

if TYPE_CHECKING:
    from webui.db.changes.maintenance import Maintenance
    from webui.db.reader import Reader
    from webui.db.sessions.store import SessionStore
    from webui.db.stats.rollup import Rollup


class Logbook(Protocol):
    """What a report reads of a file's Logbook (webui.db.Logbook is one)."""

    @property
    def reader(self) -> Reader: ...

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def stats(self) -> StatsStore: ...

    @property
    def rollup(self) -> Rollup: ...

    @property
    def maintenance(self) -> Maintenance: ...

    def size_bytes(self) -> int: ...


def period_json(q: StatsQuery) -> dict[str, Any]:
    """The period and filters a report covers, as its JSON twin states them."""
    return {
        "period": q.period,
        "since": q.start,
        "until": q.end,
        "source": q.sources,
        "model": q.models,
    }


def kept_report(
    q: StatsQuery, lb: Logbook, rollup_budget_s: float, settings: Mapping[str, Any]
) -> dict[str, Any]:
    """The report for ``q`` (``settings``: the app's, for keep.reused), cached by the store's cache (webui.keep) under the file's
    data_version (every figure scans the period's session rows: half a second on a million
    messages):

    * while nobody commits to the file, a report is reused as is;
    * beside a live gateway, whose every message is a commit, a report younger than
      LOGBOOK_STATS_REUSE_S (3 s) is reused all the same, so one query is computed at most
      once in that time however many readers ask; the report says when it was computed
      (``as_of``), and the page says so when it is not of this moment;
    * an older one, up to LOGBOOK_STATS_STALE_S, is still served at once while one
      background thread computes its successor, so a reader beside a busy gateway does not
      wait for the computation either;
    * requests asking for a report nobody has, while it is being computed, wait for that one
      computation; a partial report (the rollup still building) is not kept.

    Logbook's own changes drop every kept report."""
    asked = (q.period, q.since, q.until, q.sources, q.models, q.lineage, q.cost_by, q.tz)
    policy = keep.reused(settings, cacheable=lambda report: report["coverage"]["complete"])
    return lb.sessions.cached(
        f"stats:{asked!r}:{q.archived}",
        lb.reader.data_version(),
        lambda: dated_report(q, lb, rollup_budget_s),
        policy,
    )


def dated_report(q: StatsQuery, lb: Logbook, rollup_budget_s: float) -> dict[str, Any]:
    """build_report, saying when it was computed (``as_of``)."""
    report = build_report(q, lb, rollup_budget_s)
    report["as_of"] = time.time()
    return report


def build_report(q: StatsQuery, lb: Logbook, budget_s: float) -> dict[str, Any]:
    """The report in two halves that share nothing but the request's deadline: the panels
    summed from the period's session rows and the rollup's panels (this thread), and beside
    them the per-task usage and the series (a side thread, when one is free). On a million
    messages each half is about 90 ms of one core. The halves' statements read the file at
    slightly different moments, as they did one after another: beside a live gateway the
    series may hold a message or two more than the totals; every figure follows one rule."""
    st = lb.stats
    first = q.start if q.start is not None else (st.first_started() or q.now)
    beside = threads.Beside(lambda: _side_panels(q, first, lb))
    report = _session_panels(st, q, first, lb)
    report.update(_rollup_panels(q, lb, budget_s))
    side = cast(dict[str, Any], beside.result())
    coverage: Coverage = report.pop("coverage")
    aux_by_model, aux_usage = side["aux"]
    report["overview"] = {
        **st.counts(rollup_messages=coverage.messages if coverage.complete else None),
        **report["overview"],
        "messages_by_source": report.pop("messages_by_source"),
    }
    if st.models_by_usage():
        # Hermes 0.20+: every model a session used, from its usage rows (and its residual)
        report["by_model"] = stats_models.by_model(side["models"], report["by_model"], aux_by_model)
        report["aux_usage"] = stats_models.usage_by_task(report["by_model"], aux_by_model)
    else:
        report["by_model"] = merge_aux_into_by_model(report["by_model"], aux_by_model)
        report["aux_usage"] = aux_usage
    # `hermes sessions stats`, beside Logbook's own counts of the whole database
    report["overview"]["hermes_stats"] = st.hermes_stats(report["overview"]["messages"])
    report["series"] = side["series"]
    report["coverage"] = {
        "complete": coverage.complete,
        "messages_seen_up_to_id": coverage.seen_max_id,
        "newest_message_id": coverage.db_max_id,
        # the longest single read the rollup has made of state.db (a read transaction)
        "longest_read_ms": round(lb.rollup.longest_read_s * 1000, 1),
    }
    return report


def _side_panels(q: StatsQuery, first: float, lb: Logbook) -> dict[str, Any]:
    """The per-task usage (Hermes's usage rows) and the series."""
    st = lb.stats
    if st.models_by_usage():
        # Hermes 0.20+: usage by model and by task from its per-model rows (stats_models)
        models, per_task = stats_models.model_usage(st, q)
        aux: tuple[Any, Any] = (per_task, [])
    else:
        models, aux = None, st.aux(q)
    return {
        "models": models,
        "aux": aux,
        "series": st.series(q, bucket_for((q.end or q.now) - first), q.cost_by, first=first),
    }


def _rollup_panels(q: StatsQuery, lb: Logbook, budget: float) -> dict[str, Any]:
    """Tool usage, the heatmap and messages per source, from the rollup of the messages.
    ``budget``: the time this request may spend reading more into it (0: none, the report
    says how far the rollup is)."""
    st = lb.stats
    # Never queue behind the start-up warmer: while it reads, the page says how far it got.
    coverage = lb.rollup.refresh(budget, wait=False) if budget > 0 else lb.rollup.coverage()
    # The rollup's panels read their own copy of the columns; the archived flag they take live.
    rwhere, rparams = st.rollup_where(q)
    # Filtered by the period alone: whole days are read from the rollup's daily sums.
    span = None if q.sources or q.models or q.archived != "include" else (q.start, q.end)
    with lb.rollup.reading():
        tools = lb.rollup.tools(rwhere, rparams, span)
        offset = datetime.now(tz.zone(q.tz)).utcoffset() or timedelta(0)
        heatmap = lb.rollup.heatmap(rwhere, rparams, int(offset.total_seconds()), span)
        by_source = lb.rollup.messages_by_source()
    all_calls = sum(t["calls"] for t in tools) or 1
    for t in tools:
        t["share"] = round(t["calls"] / all_calls, 6)
    return {
        "coverage": coverage,
        "tools": tools,
        "heatmap": heatmap,
        "messages_by_source": by_source,
    }


def _session_panels(st: StatsStore, q: StatsQuery, first: float, lb: Logbook) -> dict[str, Any]:
    """Every panel summed from the session rows."""
    bucket = bucket_for((q.end or q.now) - first)
    prev = q.previous()
    summary = st.summary(q)
    return {
        "query": {
            **period_json(q),
            "lineage": q.lineage,
            "bucket": bucket,
            "cost_by": q.cost_by,
            "time_zone": q.tz,
            "archived": q.archived,
            # by_model counts every model a session used (Hermes 0.20+'s insights)
            "models_by_usage": st.models_by_usage(),
        },
        "overview": {
            "size_bytes": lb.size_bytes(),
            "maintenance": lb.maintenance.state(),
            "sessions_by_source": st.sources_overview(),
        },
        **summary,
        # The same-length period just before, same filters: what the headline compares with.
        "previous": None
        if prev is None
        else {"since": prev.since, "until": prev.until, "totals": st.totals(prev)},
        "top_sessions": {
            "tokens": st.top_sessions(q, "tokens"),
            "cost": st.top_sessions(q, "cost"),
        },
    }
