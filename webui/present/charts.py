"""Geometry for server-rendered SVG charts; templates/_chart.html draws it. Colours are CSS
classes (c0…c9), so one palette serves the light and the dark theme."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PALETTE = 10


@dataclass
class Chart:
    title: str
    width: int
    height: int
    bars: list[dict[str, Any]] = field(default_factory=list)
    xlabels: list[dict[str, Any]] = field(default_factory=list)
    yticks: list[dict[str, Any]] = field(default_factory=list)
    legend: list[dict[str, str]] = field(default_factory=list)
    plot: dict[str, int] = field(default_factory=dict)
    ylabel: str = ""
    xlabel: str = ""


def nice_max(value: float) -> float:
    """The axis's top: the next 1, 2, 2.5 or 5 times a power of ten at or above ``value``, as a
    float (a row Hermes never writes can hold 1e308: the "nice" top must not overflow)."""
    if not value > 0:
        return 1.0
    if not math.isfinite(value):
        return sys.float_info.max
    exp = 10.0 ** math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        top = m * exp
        if value <= top:
            return top if math.isfinite(top) else float(value)
    return float(value)


def stacked_columns(
    title: str,
    categories: list[str],
    stacks: list[str],
    value: Callable[[str, str], float],
    fmt: Callable[[float], str],
    ylabel: str,
    xlabel: str,
    width: int = 760,
    height: int = 260,
    tick_fmt: Callable[[float], str] | None = None,
) -> Chart:
    """Columns stacked per category; ``fmt`` words a bar's value (its tooltip), ``tick_fmt``
    (default ``fmt``) the y axis's ticks."""
    left, right, top, bottom = 64, 12, 12, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [sum(value(c, s) for s in stacks) for c in categories]
    top_value = nice_max(max(totals, default=0))
    chart = Chart(
        title,
        width,
        height,
        ylabel=ylabel,
        xlabel=xlabel,
        plot={"x": left, "y": top, "w": plot_w, "h": plot_h},
    )
    n = max(len(categories), 1)
    slot = plot_w / n
    bar_w = max(1.0, slot * 0.78)
    for i, cat in enumerate(categories):
        y = top + plot_h
        for j, stack in enumerate(stacks):
            v = value(cat, stack)
            if v <= 0:
                continue
            h = v / top_value * plot_h
            y -= h
            chart.bars.append(
                {
                    "x": round(left + i * slot + (slot - bar_w) / 2, 2),
                    "y": round(y, 2),
                    "w": round(bar_w, 2),
                    "h": round(max(h, 0.5), 2),
                    "cls": f"c{j % PALETTE}",
                    "tip": f"{cat} · {stack}: {fmt(v)}" if len(stacks) > 1 else f"{cat}: {fmt(v)}",
                }
            )
    every = max(1, math.ceil(n / 12))
    for i, cat in enumerate(categories):
        if i % every == 0:
            chart.xlabels.append(
                {"x": round(left + i * slot + slot / 2, 2), "y": top + plot_h + 16, "text": cat}
            )
    for k in range(5):
        v = top_value * k / 4
        chart.yticks.append(
            {"y": round(top + plot_h - plot_h * k / 4, 2), "text": (tick_fmt or fmt)(v)}
        )
    if len(stacks) > 1:
        chart.legend = [{"cls": f"c{j % PALETTE}", "text": s} for j, s in enumerate(stacks)]
    return chart


LABEL_CHARS = 24  # what fits the 170-pixel label column


def ellipsize(text: str, limit: int) -> str:
    """Cut a label to ``limit`` characters, saying so with "…" (the full text is the tooltip)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def horizontal_bars(
    title: str,
    labels: list[str],
    values: list[float],
    fmt: Callable[[float], str],
    width: int = 520,
    texts: list[str] | None = None,
) -> Chart:
    """One bar per label; ``texts`` (optional) replaces the formatted values, e.g. "unknown"
    where a cost of 0 would mislead."""
    row_h, left = 24, 170
    # Room after the bars for the longest value ("$0.91 + 3 unknown, 3 included" is 30
    # characters of 11 px text), at most half the width.
    shown_texts = texts if texts else [fmt(v) for v in values]
    right = int(min(width / 2, max(90, 12 + 6.4 * max(map(len, shown_texts), default=0))))
    height = max(len(labels), 1) * row_h + 8
    top_value = max(values, default=0) or 1
    chart = Chart(
        title, width, height, plot={"x": left, "y": 4, "w": width - left - right, "h": height - 8}
    )
    for i, (label, v) in enumerate(zip(labels, values, strict=False)):
        shown = texts[i] if texts else fmt(v)
        w = v / top_value * (width - left - right)
        y = 4 + i * row_h
        chart.bars.append(
            {
                "x": left,
                "y": y + 3,
                "w": round(max(w, 0.5), 2),
                "h": row_h - 6,
                "cls": f"c{i % PALETTE}",
                "tip": f"{label}: {shown}",
                "label": ellipsize(label, LABEL_CHARS),
                "value": shown,
                "ly": y + row_h / 2 + 4,
                "vx": round(left + max(w, 0.5) + 6, 2),
            }
        )
    return chart


DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")


def heatmap(title: str, counts: dict[tuple[int, int], int]) -> Chart:
    cell, left, top = 26, 44, 22
    width, height = left + 24 * cell + 8, top + 7 * cell + 8
    chart = Chart(title, width, height, plot={"x": left, "y": top, "w": 24 * cell, "h": 7 * cell})
    peak = max(counts.values(), default=0) or 1
    order = (1, 2, 3, 4, 5, 6, 0)  # Monday first
    for row, dow in enumerate(order):
        chart.xlabels.append(
            {
                "x": left - 6,
                "y": top + row * cell + cell / 2 + 4,
                "text": DAYS[dow],
                "anchor": "end",
            }
        )
        for hour in range(24):
            n = counts.get((dow, hour), 0)
            level = 0 if n == 0 else 1 + min(4, int(4 * n / peak))
            chart.bars.append(
                {
                    "x": left + hour * cell,
                    "y": top + row * cell,
                    "w": cell - 2,
                    "h": cell - 2,
                    "cls": f"heat{level}",
                    "tip": f"{DAYS[dow]} {hour:02d}:00–{hour:02d}:59: {n:,} messages",
                }
            )
    for hour in range(0, 24, 3):
        chart.yticks.append(
            {"x": left + hour * cell + cell / 2, "y": top - 6, "text": f"{hour:02d}"}
        )
    return chart
