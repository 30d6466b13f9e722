"""Rendered text kept between requests, bounded by size.

Turning a message into HTML (Markdown, Pygments on JSON tool calls and results) is most of the
CPU a viewer page costs, and under load it is what the pages queue for (one interpreter lock).
Messages do not change once written, and the same ones are shown again and again (a page
reloaded, a live session polled, the same tool result opened twice), so the rendering is
memoised by its input text. The caches are bounded by the characters they hold, input and
output counted, so a few huge messages cannot grow the server: an entry larger than an eighth
of its cache is computed and not kept."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from cachetools import LRUCache

T = TypeVar("T")


class SizedCache(LRUCache):
    """A least-recently-used cache bounded by the size of what it holds (``getsizeof``),
    for use from any thread; an entry larger than an eighth of it is not kept, so one huge
    value cannot push everything else out."""

    def __init__(self, maxsize: int, getsizeof: Callable[[Any], int] = len):
        super().__init__(maxsize=maxsize, getsizeof=getsizeof)
        self._lock = threading.Lock()

    def find(self, key: Any) -> Any:
        with self._lock:
            return self.get(key)

    def keep(self, key: Any, value: Any) -> None:
        if self.getsizeof(value) <= self.maxsize // 8:
            with self._lock:
                self[key] = value


def by_text(max_chars: int, cost: Callable[[Any], int] = len):
    """Memoise ``fn(text)`` by ``text`` in a least-recently-used cache holding at most
    ``max_chars`` characters (``len(text) + cost(result)`` each)."""

    def decorate(fn: Callable[[str], T]) -> Callable[[str], T]:
        cache = SizedCache(max_chars, getsizeof=lambda entry: entry[0])
        largest = max_chars // 8

        @wraps(fn)
        def run(text: str) -> T:
            if not isinstance(text, str) or len(text) > largest:
                return fn(text)
            hit = cache.find(text)
            if hit is not None:
                return hit[1]
            value = fn(text)
            cache.keep(text, (len(text) + cost(value), value))
            return value

        run.cache = cache  # type: ignore[attr-defined]
        return run

    return decorate
