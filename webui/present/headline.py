"""The stats page's headline: the period's figures beside the same-length period before it,
and the few sessions, models and tools that account for most of it."""

from __future__ import annotations

from typing import Any

# (key in the totals, label); "sessions" reads "conversations" when they are counted once.
FIGURES = (
    ("sessions", "Sessions"),
    ("messages", "Messages"),
    ("total_tokens", "Tokens"),
    ("cost_usd", "Cost"),
)


def change(now: float, before: float | None) -> dict[str, Any] | None:
    """How ``now`` differs from ``before``: direction, the percentage in words. None when
    there is nothing to compare with."""
    if before is None:
        return None
    now, before = now or 0, before or 0
    if before == 0:
        return {"dir": "up" if now else "flat", "pct": None, "text": "new" if now else "same"}
    pct = (now - before) / before * 100
    if abs(pct) < 0.5:
        return {"dir": "flat", "pct": 0.0, "text": "same"}
    sign = "+" if pct > 0 else "−"
    # Whole percent up to 10×; past that the ratio says more than "+4,317%".
    text = f"{sign}{abs(pct):,.0f}%" if abs(pct) < 900 else f"{now / before:,.0f}×"
    return {"dir": "up" if pct > 0 else "down", "pct": round(pct, 1), "text": text}


def headline(report: dict[str, Any], lineage: bool) -> list[dict[str, Any]]:
    """The headline figures: label, value, the value before and its change."""
    totals = report.get("totals") or {}
    previous = (report.get("previous") or {}).get("totals")
    out = []
    for key, label in FIGURES:
        if key == "sessions" and lineage:
            key, label = "conversations", "Conversations"
        now = totals.get(key) or 0
        before = None if previous is None else (previous.get(key) or 0)
        out.append(
            {
                "key": key,
                "label": label,
                "value": now,
                "before": before,
                "change": change(now, before),
            }
        )
    return out


def leaders(report: dict[str, Any], n: int = 5) -> dict[str, list[dict[str, Any]]]:
    """The period's most expensive sessions and models, and its most used tools."""
    return {
        "sessions": (report.get("top_sessions") or {}).get("cost", [])[:n],
        "models": [r for r in report.get("by_model") or [] if (r.get("cost_usd") or 0) > 0][:n]
        or (report.get("by_model") or [])[:n],
        "tools": (report.get("tools") or [])[:n],
    }
