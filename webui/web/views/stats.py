"""Token and cost statistics: totals, breakdowns, time series, top sessions, tools, heatmap."""

from __future__ import annotations

import csv
import io
import json
import time
from datetime import datetime, timedelta
from typing import Any

from flask import Blueprint, Response, current_app, g, jsonify, render_template, request, url_for

from webui import threads
from webui.db import BadRequest, tz
from webui.db.history import stats as across_stores
from webui.db.sessions.store import parse_day
from webui.db.stats import report as stats_report
from webui.db.stats.store import PERIODS, TOKEN_KINDS, StatsQuery
from webui.hermes import listing
from webui.present import charts, fragments
from webui.present.filters import axis_money, compact, group_cost, money, num
from webui.present.headline import headline, leaders
from webui.web.logbooks import get_logbook, live_logbook
from webui.web.profiles import merged_logbooks
from webui.web.stores import request_stores, short_of_time
from webui.web.views import reliability, render_page, wants_json

bp = Blueprint("stats", __name__)

TOKEN_LABELS = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_tokens": "cache read",
    "cache_write_tokens": "cache write",
    "reasoning_tokens": "reasoning",
}
STACK_LIMIT = 6
PANELS = (
    "totals",
    "by_model",
    "by_source",
    "by_provider",
    "series",
    "top_by_tokens",
    "top_by_cost",
    "tools",
    "heatmap",
    "aux_usage",
    "cost_by_status",
)


def parse_query(date_errors: dict[str, str] | None = None) -> StatsQuery:
    """The stats query from the URL. A bad date raises BadRequest, unless ``date_errors`` is
    given: then the page says what is wrong beside the field and shows the default period."""
    a = request.args
    period = a.get("period") or "30"
    # The reader's zone: sent by the page (from the browser), remembered in a cookie; UTC
    # until one is known, as Hermes's own analytics bucket by UTC day.
    tz_name = (a.get("tz") or request.cookies.get(TZ_COOKIE) or tz.UTC).strip()
    zone = tz.zone(tz_name)
    try:
        archived = listing.archived_mode(a.get("archived") or "include")
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    dates: dict[str, float | None] = {"since": None, "until": None}
    for name in dates:
        value = (a.get(name) or "").strip()
        if not value:
            continue
        try:
            dates[name] = parse_day(value, end=name == "until", tz=zone)
        except BadRequest as exc:
            if date_errors is None:
                raise
            date_errors[name] = exc.message
    if dates["since"] is not None or dates["until"] is not None:
        period = "custom"
    elif period not in PERIODS:
        raise BadRequest(f"period must be one of {', '.join(PERIODS)} (or since/until dates).")
    cost_by = a.get("cost_by") or "model"
    if cost_by not in ("model", "source"):
        raise BadRequest("cost_by must be 'model' or 'source'.")
    return StatsQuery(
        period=period,
        since=dates["since"],
        until=dates["until"],
        sources=[s for s in a.getlist("source") if s],
        models=[m for m in a.getlist("model") if m],
        lineage=a.get("lineage") in ("1", "on", "true"),
        cost_by=cost_by,
        tz=zone.key,
        archived=archived,
    )


TZ_COOKIE = "logbook_tz"


def period_presets(now: float | None = None, zone_name: str = "UTC") -> list[dict[str, str]]:
    """ "This month" and "last month" as since/until dates (the reader's calendar)."""
    today = datetime.fromtimestamp(now or time.time(), tz.zone(zone_name)).date()
    first = today.replace(day=1)
    last_end = first - timedelta(days=1)
    return [
        {"label": "this month", "since": first.isoformat(), "until": today.isoformat()},
        {
            "label": "last month",
            "since": last_end.replace(day=1).isoformat(),
            "until": last_end.isoformat(),
        },
    ]


def period_heading(q: StatsQuery) -> str:
    """The period in words, e.g. "1 Oct 2026 – 30 Oct 2026 (30 days)"."""

    def day(ts: float) -> str:
        return datetime.fromtimestamp(ts, tz.zone(q.tz)).strftime("%-d %b %Y")

    start = q.start
    end = q.end if q.end is not None else q.now
    if start is None:
        return f"All time, up to {day(end)}"
    span = max(1, round((end - start) / 86400))
    last = end - 1 if q.end is not None else end  # until is exclusive: the day before
    name = {"custom": ""}.get(q.period, f"last {q.period} days: ")
    return f"{name}{day(start)} – {day(last)} ({span} day{'s' if span != 1 else ''})"


def build_report(q: StatsQuery) -> dict[str, Any]:
    """This request's file's report for ``q``, kept as webui.db.stats.report says."""
    return stats_report.kept_report(q, get_logbook(), _rollup_budget(), current_app.config)


def _rollup_budget() -> float:
    return float(current_app.config["LOGBOOK_ROLLUP_BUDGET"])


def previous_words(q: StatsQuery) -> str:
    """The compared period in words: "the 30 days before"."""
    start = q.start
    if start is None:
        return ""
    days = max(1, round(((q.end if q.end is not None else q.now) - start) / 86400))
    return f"the {days} day{'s' if days != 1 else ''} before"


def build_charts(report: dict[str, Any]) -> dict[str, charts.Chart]:
    # A session whose start is no time (a damaged row) has no day to be drawn on; it is
    # still in the totals.
    series = [r for r in report["series"] if r["bucket"] is not None]
    buckets = sorted({r["bucket"] for r in series})
    by_bucket: dict[tuple[str, str], dict] = {}
    stack_totals: dict[str, float] = {}
    for r in series:
        by_bucket[(r["bucket"], r["stack"])] = r
        stack_totals[r["stack"]] = stack_totals.get(r["stack"], 0) + (r["cost_usd"] or 0)
    top_stacks = [k for k, _ in sorted(stack_totals.items(), key=lambda kv: -kv[1])][:STACK_LIMIT]
    rest = [k for k in stack_totals if k not in top_stacks]

    def field_sum(bucket: str, name: str, stacks: list[str]) -> float:
        return sum((by_bucket.get((bucket, s)) or {}).get(name) or 0 for s in stacks)

    all_stacks = list(stack_totals)
    unit = report["query"]["bucket"]
    out = {
        "sessions": charts.stacked_columns(
            f"Sessions per {unit}",
            buckets,
            ["sessions"],
            lambda b, _s: field_sum(b, "sessions", all_stacks),
            num,
            "sessions",
            unit,
        ),
        "tokens": charts.stacked_columns(
            f"Tokens per {unit}, by kind",
            buckets,
            [TOKEN_LABELS[k] for k in TOKEN_KINDS],
            lambda b, s: field_sum(b, _kind(s), all_stacks),
            compact,
            "tokens",
            unit,
        ),
        "cost": charts.stacked_columns(
            f"Cost per {unit}, by {report['query']['cost_by']}",
            buckets,
            top_stacks + (["other"] if rest else []),
            lambda b, s: field_sum(b, "cost_usd", rest if s == "other" else [s]),
            money,
            "USD",
            unit,
            tick_fmt=axis_money,
        ),
    }
    for key, title in (
        ("by_model", "Cost by model"),
        ("by_source", "Cost by source"),
        ("by_provider", "Cost by billing provider"),
    ):
        rows = report[key][:12]
        out[key] = charts.horizontal_bars(
            title,
            [str(r["key"]) for r in rows],
            [r["cost_usd"] or 0 for r in rows],
            money,
            texts=[group_cost(r) for r in rows],
        )
    tools = report["tools"][:15]
    out["tools"] = charts.horizontal_bars(
        "Tool calls by tool", [t["tool"] for t in tools], [t["calls"] for t in tools], num
    )
    out["heatmap"] = charts.heatmap(
        "Messages by weekday and hour",
        {(c["dow"], c["hour"]): c["messages"] for c in report["heatmap"]},
    )
    return out


def _kind(label: str) -> str:
    return next(k for k, v in TOKEN_LABELS.items() if v == label)


def build_merged_report(q: StatsQuery) -> dict[str, Any]:
    """All profiles side by side: each database's own totals and overview."""
    profiles = []
    for name, book in merged_logbooks(current_app):
        profiles.append(
            {
                "profile": name,
                "totals": book.stats.totals(q),
                "overview": {**book.stats.counts(), "size_bytes": book.size_bytes()},
                "by_source": book.stats.breakdown(q, "source"),
            }
        )
    return {
        "query": stats_report.period_json(q),
        "profiles": profiles,
    }


def whole_history(q: StatsQuery, report: dict[str, Any]) -> tuple[dict[str, Any], list]:
    """Over several stores (the live file, archives, replicas): one report for them all, and
    each store's share of the period (webui.db.history.stats); else ``report`` as is."""
    if g.get("all_profiles") or g.get("store_pin"):
        return report, []
    every = request_stores(live_logbook())
    if len(every) < 2:
        return report, []
    if every[0].kind != "live" and every[0].logbook is not None:
        report = stats_report.build_report(q, every[0].logbook, _rollup_budget())
        report["as_of"] = time.time()
    return across_stores.whole_report(
        q, every, report, stats_report.build_report, [], _rollup_budget(), short_of_time
    )


class LazyCharts:
    """build_charts(report), drawn on first use: a page whose figures are kept rendered
    never needs them."""

    def __init__(self, report: dict[str, Any]):
        self._report = report
        self._charts: dict[str, Any] | None = None

    def _all(self) -> dict[str, Any]:
        if self._charts is None:
            self._charts = build_charts(self._report)
        return self._charts

    def __getitem__(self, key: str) -> Any:
        return self._all()[key]

    def __getattr__(self, key: str) -> Any:
        try:
            return self._all()[key]
        except KeyError:
            raise AttributeError(key) from None


@bp.get("/stats")
def stats():
    date_errors: dict[str, str] = {}
    q = parse_query(None if wants_json() else date_errors)
    if g.get("all_profiles"):
        report = build_merged_report(q)
        if wants_json():
            return jsonify(report)
        return render_template(
            "stats_all.html", report=report, q=q, periods=list(PERIODS), token_labels=TOKEN_LABELS
        )
    lb = get_logbook()
    # The page's model menu scans every session row when it is not shared (its cache
    # lapsed, or after one of Logbook's own changes): beside the report, not after it.
    menu = None if wants_json() else threads.Beside(lb.sessions.models)
    report, stores = whole_history(q, build_report(q))
    # the Reliability section (webui.web.views.reliability), with the report's sums per source
    reliable = reliability.section(q, by_source=report["by_source"])
    if menu is None:
        extra = {"stores": stores} if stores else {}
        return jsonify({**report, **extra, "reliability": reliable})
    args = {
        k: request.args.getlist(k)
        for k in request.args
        if k not in ("format", "panel") and not k.startswith("_")
    }
    # A bad date: the page still renders, with the message beside the field, as a 400.
    status = 400 if date_errors else 200
    heading, before = period_heading(q), previous_words(q)
    sources, models = lb.sessions.all_sources(), [m["model"] for m in menu.result()]
    response = render_page(
        "stats.html",
        {"stats-body": "body"},
        report=report,
        charts=LazyCharts(report),
        # The figures below the heading, kept rendered while the report is shared (see
        # present/fragments.py): this report (its time), the page's address and the words
        # around it. Its charts are only drawn when it is rendered.
        body_key=fragments.digest(
            "stats-body",
            report.get("as_of"),
            # over several stores: each store's share (an archive's report read again)
            [(r["store"], (r.get("totals") or {}).get("sessions")) for r in stores],
            report.get("totals", {}).get("cost_usd"),
            request.full_path,
            heading,
            before,
            sources,
            models,
        ),
        q=q,
        args=args,
        periods=list(PERIODS),
        sources=sources,
        date_errors=date_errors,
        presets=period_presets(zone_name=q.tz),
        has_archived=lb.schema.has("sessions", "archived"),
        heading=heading,
        headline=headline(report, q.lineage),
        leaders=leaders(report),
        previous_words=before,
        age_s=int(time.time() - report.get("as_of", time.time())),
        models=models,
        token_labels=TOKEN_LABELS,
        stores=stores,
        reliability=reliable,
        # the section kept rendered while its answer is shared (present/fragments.py)
        reliability_key=fragments.digest(
            "reliability", reliable.get("as_of"), reliable["unattended"], request.full_path
        ),
        reliability_charts=reliability.Charts(reliable),
        reliability_stores=reliability.store_rows(q),
        loop_url=reliability.loop_url,
        tool_url=reliability.tool_url,
        json_url=url_for("stats.stats", **args, format="json"),
    )
    response = current_app.make_response((response, status))
    if (
        request.htmx
        and request.headers.get("HX-Trigger") == "rollup-progress"
        and report["coverage"]["complete"]
    ):
        # The page was filling in by itself; say so when it is whole.
        response.headers["HX-Trigger"] = json.dumps(
            {"toast": "Statistics are complete: every message is now counted."}
        )
    if request.args.get("tz"):
        response.set_cookie(TZ_COOKIE, q.tz, max_age=365 * 86400, samesite="Lax", httponly=True)
    return response


@bp.get("/stats.csv")
def stats_csv():
    panel = request.args.get("panel", "totals")
    if panel not in PANELS:
        raise BadRequest(f"panel must be one of {', '.join(PANELS)}.")
    report = build_report(parse_query())
    data: Any
    if panel.startswith("top_by_"):
        data = report["top_sessions"][panel[len("top_by_") :]]
    elif panel == "cost_by_status":
        data = report["totals"]["cost_by_status"]
    elif panel == "totals":
        data = [{k: v for k, v in report["totals"].items() if not isinstance(v, list)}]
    else:
        data = report[panel]
    buf = io.StringIO()
    if data:
        # Every key any row has, in first-seen order: rows of one panel may differ (a model
        # used only for auxiliary calls has figures of its own).
        writer = csv.DictWriter(buf, fieldnames=list(dict.fromkeys(k for r in data for k in r)))
        writer.writeheader()
        for row in data:
            writer.writerow({k: _csv_safe(v) for k, v in row.items()})
    return Response(
        buf.getvalue(),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="logbook-{panel}.csv"'},
    )


def _csv_safe(value: Any) -> Any:
    """Spreadsheet formula injection: text that starts like a formula is prefixed."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
