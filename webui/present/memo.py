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


def by_text(max_chars: int, cost: Callable[[Any], int] = len):
    """Memoise ``fn(text)`` by ``text`` in a least-recently-used cache holding at most
    ``max_chars`` characters (``len(text) + cost(result)`` each)."""

    def decorate(fn: Callable[[str], T]) -> Callable[[str], T]:
        cache: LRUCache = LRUCache(maxsize=max_chars, getsizeof=lambda entry: entry[0])
        lock = threading.Lock()
        largest = max_chars // 8

        @wraps(fn)
        def run(text: str) -> T:
            if not isinstance(text, str) or len(text) > largest:
                return fn(text)
            with lock:
                hit = cache.get(text)
            if hit is not None:
                return hit[1]
            value = fn(text)
            size = len(text) + cost(value)
            if size <= largest:
                with lock:
                    cache[text] = (size, value)
            return value

        run.cache = cache  # type: ignore[attr-defined]
        return run

    return decorate
