"""The whole history as one: which sessions are kept in more than one store (copies, shown
once, from the first store that answered), and which conversations continue from one store
into another (a compression chain whose older segments are in an archive).

Both are worked out from what each store holds (its session ids, the sessions whose parent is
kept elsewhere, the sessions that ended 'compression'): for an archive, its summary, read once
per change of its file (webui.db.store_files); for the live file and replicas, read again
when a session appears or goes. Nothing here asks a store about single rows."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from webui import keep
from webui.db.session_keeping import CHAINS
from webui.db.store_files import compressed as read_compressed
from webui.db.store_files import dangling as read_dangling
from webui.hermes import listing

if TYPE_CHECKING:
    from webui.db import Logbook
    from webui.db.stores import Store


def kept_answer(book: Logbook, key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()`` for a read-only store's ``book`` (an archive, a replica), kept under
    ``key`` until its file changes (its files' sizes and times): its part of a merged page is
    read once, not on every request. Callers copy what they change in it."""
    version = book.reader.data_version()
    answers = book.sessions.keeper.shelf(512, name="answers")
    return answers.get_or(key, version, compute, keep=not version.startswith("unknown"))


@dataclass
class Part:
    """What one store holds, for the history's bookkeeping."""

    name: str
    ids: frozenset[str]
    dangling: list[list]
    compressed: frozenset[str]


def part_of(store: Store) -> Part:
    if store.summary is not None:
        s = store.summary
        return Part(store.name, s.id_set(), s.dangling, frozenset(s.compressed))
    lb = store.logbook
    assert lb is not None

    def read() -> tuple:
        ids = frozenset(str(i) for i in lb.reader.column("SELECT id FROM sessions"))
        return ids, read_dangling(lb), frozenset(read_compressed(lb))

    if store.kind == "live":
        token = lb.sessions._sessions_token()
        ids, dangling, done = lb.sessions.kept(
            "history:part", (token.get("n"), token.get("s")), read, CHAINS
        )
    else:
        ids, dangling, done = kept_answer(lb, ("history:part",), read)
    return Part(store.name, ids, dangling, done)


@dataclass
class History:
    order: list[str]
    # ids kept in two stores or more -> those stores, in the history's order
    holders: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # a session that ended 'compression' -> its continuations kept in other stores
    foreign: dict[str, list[tuple[str, listing.Continuation]]] = field(default_factory=dict)

    def is_copy(self, store: str, sid: str, answered: Collection[str]) -> bool:
        """An earlier store that answered also holds this session."""
        held = self.holders.get(sid)
        if not held or store not in held:
            return False
        return any(n in answered for n in held[: held.index(store)])

    def copies_in(self, store: str, answered: Collection[str]) -> list[str]:
        """This store's sessions an earlier store that answered also holds."""
        return sorted(sid for sid in self.holders if self.is_copy(store, sid, answered))

    def continues(self, tip: str, answered: Collection[str]) -> list[tuple[str, Any]]:
        return [(n, c) for n, c in self.foreign.get(tip, ()) if n in answered]


def build(parts: list[Part]) -> History:
    order = [p.name for p in parts]
    seen: dict[str, str] = {}
    holders: dict[str, list[str]] = {}
    for p in parts:
        for sid in p.ids:
            first = seen.setdefault(sid, p.name)
            if first != p.name:
                holders.setdefault(sid, [first]).append(p.name)
    compressed_in: dict[str, str] = {}
    for p in parts:
        for sid in p.compressed:
            compressed_in.setdefault(sid, p.name)
    foreign: dict[str, list[tuple[str, listing.Continuation]]] = {}
    for p in parts:
        for sid, parent, end_reason, ended_at, started_at, last_active, kind in p.dangling:
            where = compressed_in.get(parent)
            if kind or where is None or where == p.name:
                continue  # a branch, a delegate, a tool session, or no compression parent
            foreign.setdefault(parent, []).append(
                (p.name, listing.Continuation(sid, end_reason, ended_at, started_at, last_active))
            )
    return History(order, {k: tuple(v) for k, v in holders.items()}, foreign)


_histories = keep.Shelf(8)


def history_of(stores: Iterable[Store]) -> History:
    """The history of these stores (readable ones, in order), kept while none changes."""
    stores = [s for s in stores if s.logbook is not None]
    parts = [part_of(s) for s in stores]
    mark = tuple((p.name, id(p.ids), len(p.dangling), id(p.compressed)) for p in parts)
    return _histories.get_or(mark, mark, lambda: build(parts))


def walk_across(
    history: History,
    books: dict[str, Logbook],
    store: str,
    chain: list[str],
    answered: Collection[str],
) -> list[tuple[str, list[str]]]:
    """A conversation's compression chain from its local part ``chain`` (in ``store``) on
    into the other stores, as Hermes walks one within a file: [(store, its segments), …]."""
    parts = [(store, list(chain))]
    seen = set(chain)
    tip = chain[-1]
    for _ in range(listing.MAX_CHAIN):
        found = [(n, c) for n, c in history.continues(tip, answered) if c.id not in seen]
        if not found:
            break
        best = listing.next_segment(c for _n, c in found)
        where = next(n for n, c in found if c is best)
        local = books[where].sessions.chains().get(best.id) or [best.id]
        segment = [x for x in local if x not in seen]
        if not segment:
            break
        parts.append((where, segment))
        seen.update(segment)
        tip = segment[-1]
    return parts
