"""What a session cost, by Hermes's own bookkeeping.

Hermes stores two figures and a status (``agent/usage_pricing.py``: ``CostStatus =
"actual" | "estimated" | "included" | "unknown"``): ``estimated_cost_usd`` from token counts
and the price table, ``actual_cost_usd`` when the provider reported a charge. Logbook's one
figure is the actual cost where known, else the estimate; "included" (a subscription) and
"unknown" (no price) are words, never "$0"."""

from __future__ import annotations

from typing import Any


def session_cost(actual: Any, estimated: Any, status: Any = None) -> tuple[float | None, str]:
    """(amount or None, kind): kind is 'actual', 'estimated', 'included' or 'unknown'."""
    if status == "included":
        return None, "included"
    # "unknown": Hermes had no price, and the 0 it stores as the estimate means nothing.
    candidates = (
        ((actual, "actual"),)
        if status == "unknown"
        else ((actual, "actual"), (estimated, "estimated"))
    )
    for value, kind in candidates:
        if value is None:
            continue
        try:
            return float(value), kind
        except (TypeError, ValueError):
            continue
    return None, "unknown"


def group_cost(
    amount: Any, sessions: Any, included: Any = 0, unpriced: Any = 0
) -> tuple[float | None, int, int]:
    """What a group of sessions cost (a model, a day, a chat, a conversation's segments):
    (dollars or None, sessions of unknown cost, sessions included in a subscription).

    The dollars are the priced sessions' sum; a group whose every session is unknown or
    included has no dollar figure at all (None), never "$0": Hermes stores 0 for what it did
    not price. An empty group (no sessions) keeps the amount it was given."""

    def count(value: Any) -> int:
        try:
            return max(0, int(value or 0))
        except (TypeError, ValueError):
            return 0

    n, inc, unk = count(sessions), count(included), count(unpriced)
    try:
        figure = None if amount is None else float(amount)
    except (TypeError, ValueError):
        figure = None
    if n and inc + unk >= n:
        figure = None
    return figure, unk, inc
