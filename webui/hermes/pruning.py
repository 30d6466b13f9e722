"""How a prune is cut into batches without changing what it removes, as pure functions.

Hermes prunes in one transaction; Logbook in short ones beside a writing gateway. So that a prune
stopped between two batches (a lock held too long, a kill) leaves a file Hermes's rules could
have made, a batch holds whole conversations: every selected session linked to another selected
one by a compression continuation goes in the same batch (``groups``). Inside a batch's own
transaction the selection is asked again of the batch's sessions, and 0.22's whole-lineage rule
applied to them (``kept``): an ancestor goes only with every continuation after it."""

from __future__ import annotations

from collections.abc import Iterable


def groups(order: list[str], links: Iterable[tuple[str, str]]) -> list[list[str]]:
    """``order`` (the selection, in the order the preview lists it) cut into conversations:
    sessions joined by a (child, parent) link of ``links`` are in one group, each group in
    the preview's order, the groups ordered by their first session."""
    at = {sid: i for i, sid in enumerate(order)}
    root = {sid: sid for sid in order}

    def find(x: str) -> str:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for child, parent in links:
        if child in root and parent in root:
            a, b = find(child), find(parent)
            if a != b:
                if at[a] < at[b]:
                    root[b] = a
                else:
                    root[a] = b
    out: dict[str, list[str]] = {}
    for sid in order:
        out.setdefault(find(sid), []).append(sid)
    return sorted(out.values(), key=lambda g: at[g[0]])


def batches(conversations: list[list[str]], size: int) -> tuple[list[str], list[list[str]]]:
    """(the next batch: whole conversations, at least one, up to ``size`` sessions when more
    than one fits; the conversations left)."""
    batch: list[str] = []
    taken = 0
    for group in conversations:
        if batch and len(batch) + len(group) > size:
            break
        batch.extend(group)
        taken += 1
    return batch, conversations[taken:]


def kept(selected: set[str], continuations: Iterable[tuple[str, str]]) -> set[str]:
    """Of ``selected``, the compression ancestors a whole-lineage prune keeps: those with a
    continuation (parent, child) whose child is not going too, up the chain."""
    children: dict[str, list[str]] = {}
    for parent, child in continuations:
        children.setdefault(parent, []).append(child)
    going = set(selected)
    changed = True
    while changed:
        changed = False
        for parent in list(going):
            if any(c not in going for c in children.get(parent, ())):
                going.discard(parent)
                changed = True
    return set(selected) - going
