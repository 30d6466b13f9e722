"""The whole history as one: which sessions are kept in more than one store (copies, shown
once, from the first store that answered), and which conversations continue from one store
into another (a compression chain whose older segments are in an archive).

Both are worked out from what each store holds (its session ids, the sessions whose parent is
kept elsewhere, the sessions that ended 'compression'): for an archive, its summary, read once
per change of its file (webui.db.stores.files); for the live file and replicas, read again
when a session appears or goes. Nothing here asks a store about single rows."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from webui import keep
from webui.db.sessions.keeping import CHAINS
from webui.db.stores.files import compressed as read_compressed
from webui.db.stores.files import dangling as read_dangling
from webui.db.stores.files import links as read_links
from webui.hermes import listing

if TYPE_CHECKING:
    from webui.db import Logbook
    from webui.db.stores.store_set import Store


def kept_answer(
    book: Logbook,
    key: tuple,
    compute: Callable[[], Any],
    version: Any = None,
    keep_if: Callable[[Any], bool] | None = None,
) -> Any:
    """``compute()`` for a read-only store's ``book`` (an archive, a replica), kept under
    ``key`` until its file changes (its files' sizes and times; ``version``: the file's
    signature as the store set last checked it, when it has one): its part of a merged page
    is read once, not on every request. ``keep_if(answer)`` false: that answer is not kept (a
    partial report). Callers copy what they change in it."""
    if version is None:
        version = book.reader.data_version()
    answers = book.sessions.cache.versioned(512, name="answers")
    cacheable = not (isinstance(version, str) and version.startswith("unknown"))
    if keep_if is None:
        return answers.get_or_set(key, version, compute, cacheable)
    hit = answers.get(key, version)
    if hit is not None:
        return hit
    answer = compute()
    return answers.set(key, answer, version) if cacheable and keep_if(answer) else answer


def store_answer(
    store: Store,
    key: tuple,
    compute: Callable[[], Any],
    keep_if: Callable[[Any], bool] | None = None,
) -> Any:
    """kept_answer for a store: an archive's answers kept under its file's signature (the
    store set checks it at most once a second, and reads a changed file again as a new
    store), everything else under its data_version."""
    signature = store.signature if store.kind == "archive" else None
    return kept_answer(store.book, key, compute, signature, keep_if)


@dataclass
class Part:
    """What one store holds, for the history's bookkeeping."""

    name: str
    ids: frozenset[str]
    dangling: list[list]
    compressed: frozenset[str]
    links: list[list]


def part_of(store: Store) -> Part:
    if store.summary is not None:
        s = store.summary
        made = s.__dict__.get("_part")  # one per summary: a file standing still
        if made is None or made.name != store.name:
            made = Part(store.name, s.id_set(), s.dangling, frozenset(s.compressed), s.links)
            s.__dict__["_part"] = made
        return made
    lb = store.logbook
    assert lb is not None

    def read() -> tuple:
        ids = frozenset(str(i) for i in lb.reader.column("SELECT id FROM sessions"))
        return ids, read_dangling(lb), frozenset(read_compressed(lb)), read_links(lb)

    if store.kind == "live":
        token = lb.sessions.keeping.sessions_token()
        got = lb.sessions.cached("history:part", (token.get("n"), token.get("s")), read, CHAINS)
    else:
        got = kept_answer(lb, ("history:part",), read)
    return Part(store.name, *got)


@dataclass
class History:
    order: list[str]
    # ids kept in two stores or more -> those stores, in the history's order
    holders: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # a session that ended 'compression' -> its continuations in every store
    links: dict[str, list[tuple[str, listing.Continuation]]] = field(default_factory=dict)
    # some conversation goes on from one store into another
    split: bool = False

    def is_copy(self, store: str, sid: str, answered: Collection[str]) -> bool:
        """An earlier store that answered also holds this session."""
        held = self.holders.get(sid)
        if not held or store not in held:
            return False
        return any(n in answered for n in held[: held.index(store)])

    def copies_in(self, store: str, answered: Collection[str]) -> list[str]:
        """This store's sessions an earlier store that answered also holds."""
        if not self.holders:
            return []
        by_store = self.__dict__.get("_by_store")
        if by_store is None:
            by_store = {}
            for sid, held in self.holders.items():
                for name in held[1:]:
                    by_store.setdefault(name, []).append(sid)
            self.__dict__["_by_store"] = by_store
        return sorted(sid for sid in by_store.get(store, ()) if self.is_copy(store, sid, answered))

    def crosses(self, chain: list[str]) -> bool:
        """Does this conversation (its chain in one store) go on, or hold a segment, in
        another store?"""
        if not self.split:
            return False
        return any(c.id not in chain for sid in chain for _n, c in self.links.get(sid, ()))


def build(parts: list[Part]) -> History:
    order = [p.name for p in parts]
    seen: dict[str, str] = {}
    holders: dict[str, list[str]] = {}
    for p in parts:
        for sid in p.ids:
            first = seen.setdefault(sid, p.name)
            if first != p.name:
                holders.setdefault(sid, [first]).append(p.name)
    compressed = set().union(*(p.compressed for p in parts)) if parts else set()
    links: dict[str, list[tuple[str, listing.Continuation]]] = {}
    split = False
    for p in parts:
        for parent, sid, end_reason, ended_at, started_at, last_active in p.links:
            links.setdefault(parent, []).append(
                (p.name, listing.Continuation(sid, end_reason, ended_at, started_at, last_active))
            )
        for sid, parent, end_reason, ended_at, started_at, last_active, kind in p.dangling:
            if kind or parent not in compressed:
                continue  # a branch, a delegate, a tool session, or no compression parent
            split = True
            links.setdefault(parent, []).append(
                (p.name, listing.Continuation(sid, end_reason, ended_at, started_at, last_active))
            )
    if not split and len(parts) > 1:
        split = _uneven(parts, links)
    return History(order, {k: tuple(v) for k, v in holders.items()}, links, split)


def _uneven(parts: list[Part], links: dict[str, list[tuple[str, Any]]]) -> bool:
    """A conversation also goes on across stores when a store holding one of its segments
    lacks a continuation another store has (an older copy beside a longer one)."""
    for parent, found in links.items():
        kids = {c.id for _n, c in found}
        given = {n for n, _c in found}
        for p in parts:
            if parent in p.compressed and (
                p.name not in given or {c.id for n, c in found if n == p.name} != kids
            ):
                return True
    return False


_histories = keep.VersionedCache(8)


def history_of(stores: Iterable[Store]) -> History:
    """The history of these stores (readable ones, in order), kept while none changes."""
    stores = [s for s in stores if s.logbook is not None]
    parts = [part_of(s) for s in stores]
    mark = tuple((p.name, id(p.ids), len(p.ids), id(p.dangling), id(p.links)) for p in parts)
    return _histories.get_or_set(mark, mark, lambda: build(parts))


@dataclass
class Copies:
    """The copies among some readable stores (in the history's order): the one way a page
    over a fixed set of stores (statistics, exports, chats) leaves them out. (The list asks
    ``History`` itself: its stores that answered change while it pages.)"""

    history: History
    names: list[str]

    def of(self, store: str) -> list[str]:
        """This store's sessions an earlier store of the set also holds."""
        return self.history.copies_in(store, self.names)

    def is_copy(self, store: str, sid: str) -> bool:
        return self.history.is_copy(store, sid, self.names)


def copies_among(readable: list[Store]) -> Copies:
    """The copies among ``readable`` (stores that can be read, live first)."""
    return Copies(history_of(readable), [s.name for s in readable])


def walk_across(
    history: History, root: str, answered: Collection[str]
) -> list[tuple[str, list[str]]]:
    """A conversation's compression chain from ``root`` through every store, as Hermes walks
    one within a file (its candidates gathered from all of them): [(store, segments), …],
    each segment from the first store (in the history's order) that holds it."""
    order = {n: i for i, n in enumerate(history.order)}
    chain, seen, cur = [], {root}, root
    for _ in range(listing.MAX_CHAIN):
        found: dict[str, tuple[str, listing.Continuation]] = {}
        for name, c in history.links.get(cur, ()):
            if name in answered and c.id not in seen:
                had = found.get(c.id)
                if had is None or order.get(name, 0) < order.get(had[0], 0):
                    found[c.id] = (name, c)
        if not found:
            break
        best = listing.next_segment(c for _n, c in found.values())
        if best is None:
            break
        chain.append(found[best.id])
        seen.add(best.id)
        cur = best.id
    parts: list[tuple[str, list[str]]] = []
    for name, c in chain:
        if parts and parts[-1][0] == name:
            parts[-1][1].append(c.id)
        else:
            parts.append((name, [c.id]))
    return parts
