"""Positions for the lineage graph (server-rendered SVG; the template draws them).

A compression chain is one conversation, so its segments sit side by side and wrap after
COLUMNS segments: a 200-segment chain becomes 40 rows, not a line 40,000 pixels long. Other
children (branches, subagents) hang below their parent, one indent deeper; beyond FAN_LIMIT
children the rest collapse into a "+N more" box (all of them are in the table under the
graph). The walk is iterative, so a 1,000-deep chain of branches cannot overflow the stack.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

NODE_W, NODE_H = 216, 70
GAP_X, GAP_Y = 34, 34
COLUMNS = 5
INDENT = 44
MAX_INDENT_LEVELS = 10
FAN_LIMIT = 12
MARGIN = 28
TITLE_CHARS = 28


@dataclass
class Box:
    id: str
    x: int
    y: int
    node: dict[str, Any] | None = None  # None for a "+N more" box
    more: int = 0
    current: bool = False
    lane: int = 0  # x of the free vertical lane left of this box's chain


@dataclass
class Layout:
    boxes: list[Box] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    width: int = 0
    height: int = 0
    node_w: int = NODE_W
    node_h: int = NODE_H


def _width(ch: str) -> float:
    """About how wide a character draws, in widths of an average Latin letter: a CJK or
    full-width character takes two, capitals and m/w a little more, narrow marks less."""
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return 2.0
    if ch.isupper() or ch in "mwMW@%":
        return 1.25
    if ch in "il.,:;'|!ftrj ()[]":
        return 0.6
    return 1.0


def clip(text: str, n: int = TITLE_CHARS) -> str:
    """Shorten to fit a box (``n`` average letters wide), keeping a lineage suffix (" #3")
    that tells segments apart."""
    text = " ".join((text or "").split())
    if sum(map(_width, text)) <= n:
        return text
    m = re.search(r" #\d+$", text)
    suffix = m.group(0) if m else ""
    room = n - 1 - sum(map(_width, suffix))
    kept, used = [], 0.0
    for ch in text[: len(text) - len(suffix)]:
        used += _width(ch)
        if used > room:
            break
        kept.append(ch)
    return "".join(kept).rstrip() + "…" + suffix


def layout(nodes: list[dict[str, Any]], root: str, current: str) -> Layout:
    by_id = {n["id"]: n for n in nodes}
    children: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for n in nodes:
        if n["id"] != root and n.get("parent_session_id") in by_id:
            children[n["parent_session_id"]].append(n)  # nodes arrive in start order
    out = Layout()
    placed: set[str] = set()
    pos: dict[str, Box] = {}
    y = MARGIN
    stack: list[tuple[dict[str, Any], int, str | None]] = (
        [(by_id[root], 0, None)] if root in by_id else []
    )
    while stack:
        node, level, anchor = stack.pop()
        if node["id"].startswith("+more:"):
            _place_more(out, pos, node, level, anchor, y)
            y += NODE_H // 2 + GAP_Y
            continue
        if node["id"] in placed:
            continue
        chain = [node]
        placed.add(node["id"])
        while True:
            nxt = next(
                (
                    c
                    for c in children[chain[-1]["id"]]
                    if c.get("edge") == "compression" and c["id"] not in placed
                ),
                None,
            )
            if nxt is None:
                break
            chain.append(nxt)
            placed.add(nxt["id"])
        x0 = MARGIN + min(level, MAX_INDENT_LEVELS) * INDENT
        for i, n in enumerate(chain):
            row, col = divmod(i, COLUMNS)
            box = Box(
                n["id"],
                x0 + col * (NODE_W + GAP_X),
                y + row * (NODE_H + GAP_Y),
                n,
                current=n["id"] == current,
                lane=x0 - 14,
            )
            pos[n["id"]] = box
            out.boxes.append(box)
        for a, b in zip(chain, chain[1:], strict=False):
            pa, pb = pos[a["id"]], pos[b["id"]]
            if pa.y == pb.y:
                d = f"M{pa.x + NODE_W} {pa.y + NODE_H // 2} H{pb.x - 4}"
            else:
                mid = pa.y + NODE_H + GAP_Y // 2
                d = (
                    f"M{pa.x + NODE_W // 2} {pa.y + NODE_H} V{mid} H{pb.x + NODE_W // 2} "
                    f"V{pb.y - 4}"
                )
            out.edges.append({"d": d, "kind": "compression", "from": a["id"], "to": b["id"]})
        if anchor is not None:
            d = _drop(pos[anchor], pos[node["id"]].x, pos[node["id"]].y + NODE_H // 2)
            out.edges.append(
                {"d": d, "kind": node.get("edge") or "other", "from": anchor, "to": node["id"]}
            )
        rows = (len(chain) - 1) // COLUMNS + 1
        y += rows * (NODE_H + GAP_Y)
        # Children of the chain's segments, placed below in the order a reader expects:
        # the first segment's children first. The stack is LIFO, so push in reverse.
        pending: list[tuple[dict[str, Any], int, str | None]] = []
        for n in chain:
            others = [c for c in children[n["id"]] if c["id"] not in placed]
            for c in others[:FAN_LIMIT]:
                pending.append((c, level + 1, n["id"]))
            if len(others) > FAN_LIMIT:
                pending.append(
                    (
                        {
                            "id": f"+more:{n['id']}",
                            "more": len(others) - FAN_LIMIT,
                            "hidden": others[FAN_LIMIT:],
                        },
                        level + 1,
                        n["id"],
                    )
                )
        stack.extend(reversed(pending))
    out.width = max((b.x + NODE_W for b in out.boxes), default=NODE_W) + MARGIN
    out.height = max(y, MARGIN + NODE_H) + MARGIN
    return out


def _place_more(
    out: Layout, pos: dict[str, Box], more: dict[str, Any], level: int, anchor: str, y: int
) -> None:
    x = MARGIN + min(level, MAX_INDENT_LEVELS) * INDENT
    box = Box(more["id"], x, y, None, more=more["more"])
    out.boxes.append(box)
    out.edges.append(
        {
            "d": _drop(pos[anchor], x, y + NODE_H // 4),
            "kind": "collapsed",
            "from": anchor,
            "to": more["id"],
        }
    )


def _drop(parent: Box, x: int, y: int) -> str:
    """From under the parent, along the row gap to the chain's free lane, down, then right:
    the path never crosses a box."""
    gap = parent.y + NODE_H + GAP_Y // 2
    return f"M{parent.x + NODE_W // 2} {parent.y + NODE_H} V{gap} H{parent.lane} V{y} H{x - 4}"
