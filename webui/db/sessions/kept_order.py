"""An order of sessions kept between requests: their ids in list order, with their keys.

On ten million messages a kept order holds 200,000 sessions; as a list of (key, id) tuples it
took ~30 MB, and every sort kept its own copy of every id. Here the keys and the ids are two
plain lists and each id string is shared by every kept order (interned): ~8 MB an order. A
page starts by binary search at its cursor, not by walking the list to it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any


def sqlite_order(value: Any) -> tuple[int, Any]:
    """SQLite's ORDER BY for mixed types: NULL, numbers, text, blobs."""
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    return (2, value) if isinstance(value, str) else (3, bytes(value))


def _shared(session_id: Any) -> Any:
    return sys.intern(session_id) if isinstance(session_id, str) else session_id


class KeptOrder:
    """Sessions in ``ORDER BY key, id`` (both DESC when ``descending``)."""

    __slots__ = ("keys", "ids", "descending")

    def __init__(self, pairs: Iterable[tuple[Any, Any]], descending: bool):
        self.keys: list[Any] = []
        self.ids: list[Any] = []
        for key, session_id in pairs:
            self.keys.append(key)
            self.ids.append(_shared(session_id))
        self.descending = descending

    def __len__(self) -> int:
        return len(self.ids)

    def _before(self, i: int, mine: tuple) -> bool:
        """Does entry ``i`` come before ``mine`` ((sqlite_order(key), id)) in this order?"""
        there = (sqlite_order(self.keys[i]), self.ids[i])
        return there > mine if self.descending else there < mine

    def _position(self, key: Any, session_id: Any, strictly_after: bool) -> int:
        """Where (key, id) goes: the first entry that does not come before it (or, with
        ``strictly_after``, the first that comes after it)."""
        mine = (sqlite_order(key), session_id)
        lo, hi = 0, len(self.ids)
        while lo < hi:
            mid = (lo + hi) // 2
            there = (sqlite_order(self.keys[mid]), self.ids[mid])
            before = self._before(mid, mine) or (strictly_after and there == mine)
            if before:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def without(self, gone: set[Any]) -> KeptOrder:
        kept = KeptOrder((), self.descending)
        for key, session_id in zip(self.keys, self.ids, strict=True):
            if session_id not in gone:
                kept.keys.append(key)
                kept.ids.append(session_id)
        return kept

    def insert(self, key: Any, session_id: Any) -> None:
        at = self._position(key, session_id, strictly_after=False)
        self.keys.insert(at, key)
        self.ids.insert(at, _shared(session_id))

    def page(self, after: tuple[Any, Any] | None, n: int) -> list[dict[str, Any]]:
        """``n`` entries from the one after the cursor (key, id), or from the first."""
        start = 0 if after is None else self._position(after[0], after[1], strictly_after=True)
        return [
            {"id": self.ids[i], "k": self.keys[i]} for i in range(start, min(start + n, len(self)))
        ]
