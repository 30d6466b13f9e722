"""Periods over daily sums: the stats rollup (webui.db.stats.rollup_panels) and the digest
(webui.db.digest.reliability) each keep per-session rows and the same figures summed per day
the sessions started (UTC, days since 1970). A period's whole days are added up from the daily
sums; its first and last day (and sessions with no day) are read session by session with the
exact time test."""

from __future__ import annotations

import math
from typing import Any

DAY_S = 86400
# The period's first and last day (and sessions with no day), read session by session: a
# condition over ``s`` (a ``sess`` table) taking the two ``edges`` days of :func:`days`.
EDGE = "(s.day IS NULL OR s.day IN (?, ?)) AND "

Span = tuple[float | None, float | None]


def days(span: Span) -> tuple[str, list[Any], list[Any]]:
    """For a period [start, end): the condition on the daily sums (the days strictly inside
    it), its parameters, and the period's first and last day (None when open)."""
    start, end = span
    first = None if start is None else math.floor(start / DAY_S)
    last = None if end is None else math.floor(end / DAY_S)
    clauses, params = ["1"], []
    if first is not None:
        clauses.append("day > ?")
        params.append(first)
    if last is not None:
        clauses.append("day < ?")
        params.append(last)
    return " AND ".join(clauses), params, [first, last]
