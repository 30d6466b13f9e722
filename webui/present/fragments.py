"""Rendered rows kept between requests: the ``{% cache key %}…{% endcache %}`` tag.

A 50-row list or a 100-message page spends most of its rendering on the rows themselves
(escaping ~40 values a row, filters, macro calls), yet between two requests almost every row
is the same: sessions that got no message, messages that never change. So a row's HTML is
kept under a digest of everything it is made from; the row is rendered afresh whenever any of
that differs. The key functions below name those inputs, including the ones that move with
the clock (a relative date, live or idle), so a cached row is always the row the template
would render now.

Bounded by the characters held (keep.SizedCache); a fragment over an eighth of the cache is
rendered and not kept.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from jinja2 import nodes
from jinja2.ext import Extension
from markupsafe import Markup

from webui.hermes.activity import session_state
from webui.keep import SizedCache
from webui.present.filters import relative

MAX_CHARS = 4_000_000


def digest(*parts: Any) -> bytes:
    """A key for ``parts``: their repr (every value a row holds has a faithful one: str,
    numbers, None, bytes, and lists/dicts of those), hashed so that huge message texts are
    not kept twice."""
    return hashlib.blake2b(repr(parts).encode("utf-8", "surrogatepass"), digest_size=20).digest()


def list_row_key(row: dict[str, Any], can_change: bool, script_root: str = "") -> bytes:
    """A session row of the list: the row's values, whether rename links show, the URL prefix,
    and what the clock changes in it (live or idle, the two relative dates)."""
    now = time.time()
    last = row.get("last_active")
    return digest(
        "list-row",
        row,
        bool(can_change),
        script_root,
        session_state(row.get("ended_at"), last, now),
        relative(row.get("started_at"), now),
        relative(last, now),
    )


def hit_key(hit: dict[str, Any], show_session: bool, terms: Any, script_root: str = "") -> bytes:
    """A search hit: its values (snippet and context included), whether it names its
    session, the terms its link highlights, the URL prefix and its relative date."""
    return digest(
        "hit", hit, bool(show_session), terms, script_root, relative(hit.get("timestamp"))
    )


def message_key(view: dict[str, Any]) -> tuple | None:
    """A message of a conversation (see rows.message_view, which digests what it is made
    of), with its position and whether it shows its date."""
    made_of = view.get("fragment")
    return None if made_of is None else (made_of, view.get("n"), view.get("show_date"))


class FragmentCache(Extension):
    """``{% cache key %}body{% endcache %}``: the body rendered once per key."""

    tags = {"cache"}

    def __init__(self, environment):
        super().__init__(environment)
        self.kept = SizedCache(MAX_CHARS)
        environment.extend(fragment_cache=self)

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        key = parser.parse_expression()
        body = parser.parse_statements(("name:endcache",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", [key]), [], [], body).set_lineno(lineno)

    def _render(self, key: Any, caller) -> Markup:
        if key is None:  # nothing to key on: render as if untagged
            return caller()
        hit = self.kept.get(key)
        if hit is not None:
            return hit
        html = Markup(caller())
        self.kept.set(key, html)
        return html
