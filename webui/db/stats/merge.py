"""One statistics report from several: each store's report (the same shape, its copies of
earlier stores' sessions left out) added up panel by panel, as if they were one file. Pure
functions over the reports' dicts."""

from __future__ import annotations

from typing import Any

RANKED = ("by_model", "by_source", "by_provider")
LIMIT = 50


def _add(into: dict[str, Any], more: dict[str, Any]) -> None:
    for k, v in more.items():
        if isinstance(v, bool) or k in ("key", "status", "model", "task", "tool", "bucket"):
            into.setdefault(k, v)
        elif isinstance(v, (int, float)):
            into[k] = (into.get(k) or 0) + v
        elif k not in into:
            into[k] = v


def _grouped(lists: list[list[dict]], key) -> list[dict]:
    out: dict[Any, dict] = {}
    for rows in lists:
        for r in rows or ():
            k = key(r)
            if k in out:
                _add(out[k], r)
            else:
                out[k] = dict(r)
    return list(out.values())


def totals(parts: list[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t in parts:
        _add(out, {k: v for k, v in t.items() if k != "cost_by_status"})
    out["cost_by_status"] = sorted(
        _grouped([t.get("cost_by_status") or [] for t in parts], lambda r: r["status"]),
        key=lambda r: -(r.get("cost_usd") or 0),
    )
    return out


def merge(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The reports as one (the first gives the query and what is not summed)."""
    first = reports[0]
    out = dict(first)
    out["totals"] = totals([r["totals"] for r in reports])
    for key in RANKED:
        rows = _grouped([r.get(key) or [] for r in reports], lambda r: r["key"])
        out[key] = sorted(
            rows,
            key=lambda r: (-(r.get("cost_usd") or 0), -(r.get("sessions") or 0), str(r["key"])),
        )[:LIMIT]
    prev = [r["previous"] for r in reports if r.get("previous")]
    if prev:
        out["previous"] = {**prev[0], "totals": totals([p["totals"] for p in prev])}
    out["top_sessions"] = {
        by: sorted(
            (dict(x) for r in reports for x in (r.get("top_sessions") or {}).get(by) or ()),
            key=lambda x: -(x.get("value") or 0),
        )[:10]
        for by in ("tokens", "cost")
    }
    out["series"] = sorted(
        _grouped([r.get("series") or [] for r in reports], lambda r: (r["bucket"], r["stack"])),
        key=lambda r: (r["bucket"] is None, r["bucket"] or "", str(r["stack"])),
    )
    tools = _grouped([r.get("tools") or [] for r in reports], lambda t: t["tool"])
    every = sum(t.get("calls") or 0 for t in tools) or 1
    for t in tools:
        t["share"] = round((t.get("calls") or 0) / every, 6)
    out["tools"] = sorted(tools, key=lambda t: (-(t.get("calls") or 0), t["tool"]))
    out["heatmap"] = _grouped(
        [r.get("heatmap") or [] for r in reports], lambda c: (c["dow"], c["hour"])
    )
    out["aux_usage"] = sorted(
        _grouped([r.get("aux_usage") or [] for r in reports], lambda u: (u["task"], u["model"])),
        key=lambda u: -(u.get("tokens") or 0),
    )
    overview = dict(first.get("overview") or {})
    for key in ("sessions", "messages", "size_bytes"):
        overview[key] = sum((r.get("overview") or {}).get(key) or 0 for r in reports)
    for key, name in (("sessions_by_source", "sessions"), ("messages_by_source", "messages")):
        rows = _grouped(
            [(r.get("overview") or {}).get(key) or [] for r in reports], lambda x: x["source"]
        )
        overview[key] = sorted(rows, key=lambda x: (-(x.get(name) or 0), str(x["source"])))
    out["overview"] = overview
    cov = [r.get("coverage") or {} for r in reports]
    out["coverage"] = {
        "complete": all(c.get("complete", True) for c in cov),
        "messages_seen_up_to_id": sum(c.get("messages_seen_up_to_id") or 0 for c in cov),
        "newest_message_id": sum(c.get("newest_message_id") or 0 for c in cov),
        "longest_read_ms": max((c.get("longest_read_ms") or 0 for c in cov), default=0),
    }
    out["as_of"] = min((r.get("as_of") or 0) for r in reports) or first.get("as_of")
    return out
