"""A conversation as the Hermes that wrote the file shows it (its display projection), as pure
functions over message rows; ``webui.db.sessions.messages`` reads the rows and pages through them.

The generations (``docs/hermes-generations.md`` §2; ``Rules.display`` picks one):

* ``"all"`` (schemas 8 and 11): every stored row.
* ``"live"`` (Hermes 0.19): the live rows (``active != 0``) by id. Rows compacted away and rows
  undone by /rewind are not shown; Logbook shows them behind a toggle, labelled.
* ``"dedupe"`` (Hermes 0.20): the *display set* (live rows and compaction-archived ones:
  ``active = 1 OR compacted = 1``) with each logical message once: rows equal in (role, content,
  timestamp, tool_call_id, tool_calls, tool_name) are one message, shown by the live copy, else
  the newest, at that row's place (ordered by the chosen row's id).
* ``"groups"`` (Hermes 0.22): the display set less model-only rows (``display_metadata`` says
  ``model_only``: what the model read, never typed by anyone), one row per logical message (a
  ``display_order`` group, or on a file without it the same key, except that an assistant row
  whose tool calls all carry ids is keyed by those ids), the live copy preferred, then the
  newest, at the place of the logical message's first row.

Rows with ``display_kind = 'hidden'`` stay in the projection (Hermes's gateway never paints
them): Logbook counts them and never paints them either.

Logbook's pages walk a conversation in *slots*: an item's slot is the id of the row whose place
it takes (its own id, or for 0.22 its logical message's first row). ``Census`` holds, for one
session, the few rows that are not their own item (copies, model-only rows, rows out of the
display set, hidden rows), so a page needs no more than its own rows and the census.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

Row = Mapping[str, Any]

ALL, LIVE, DEDUPE, GROUPS = "all", "live", "dedupe", "groups"
MODEL_ONLY_KEY = "model_only"
HIDDEN_KIND = "hidden"
# The columns a display key reads (0.20's key, in its order).
KEY_COLUMNS = ("role", "content", "timestamp", "tool_call_id", "tool_calls", "tool_name")
# The beginnings of Hermes's compaction summaries (current and legacy forms).
SUMMARY_PREFIXES = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:")


def dedupes(display: str) -> bool:
    """Does this generation fold copies of one message into one row?"""
    return display in (DEDUPE, GROUPS)


def decode_metadata(raw: Any) -> dict | None:
    """``display_metadata`` as Hermes reads it: a JSON object (rows written before Hermes
    guarded its writes carry a second string layer), else nothing."""
    meta = raw
    for _ in range(2):
        if isinstance(meta, (bytes, bytearray)):
            meta = bytes(meta).decode("utf-8", "replace")
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except (ValueError, RecursionError):
                return None
    return meta if isinstance(meta, dict) else None


def is_model_only(row: Row) -> bool:
    return bool((decode_metadata(row.get("display_metadata")) or {}).get(MODEL_ONLY_KEY))


def is_hidden(row: Row) -> bool:
    """A row the gateway never paints (``display_kind = 'hidden'``)."""
    return row.get("display_kind") == HIDDEN_KIND


def is_summary(row: Row) -> bool:
    """A compaction summary (Hermes 0.22 also flags it ``_compressed_summary``)."""
    if row.get("_compressed_summary"):
        return True
    content = row.get("content")
    return (
        row.get("role") == "user"
        and isinstance(content, str)
        and content.startswith(SUMMARY_PREFIXES)
    )


def in_display_set(row: Row, display: str) -> bool:
    """Is the row one the generation's projection reads from (before folding copies)?"""
    if display == ALL:
        return True
    active = row.get("active")
    if display == LIVE:
        return active is None or active != 0
    if not (active == 1 or row.get("compacted") == 1):
        return False
    return not (display == GROUPS and is_model_only(row))


def _call_ids(raw: Any) -> tuple[str, ...]:
    try:
        calls = json.loads(raw or "[]")
    except (ValueError, TypeError, RecursionError):
        return ()
    ids = []
    for call in calls if isinstance(calls, list) else ():
        value = ""
        for name in ("call_id", "id"):
            got = call.get(name) if isinstance(call, dict) else None
            if isinstance(got, str) and got.strip():
                value = got.strip().split("|", 1)[0].strip() or got.strip()
                break
        ids.append(value)
    return tuple(ids)


def compact(row: Row) -> dict[str, Any]:
    """A row with what a key compares and nothing more: content and tool calls as digests
    (equal exactly when the text is), the call ids parsed out (a census keeps these)."""
    out = dict(row)
    out["_call_ids"] = _call_ids(row.get("tool_calls")) if row.get("role") == "assistant" else ()
    for name in ("content", "tool_calls"):
        value = row.get(name)
        if value is not None:
            raw = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")
            out[name] = (type(value).__name__, hashlib.sha1(raw).digest())
    return out


def dedupe_key(row: Row, display: str) -> tuple:
    """What makes two rows one logical message. 0.22 keys an assistant row whose tool calls all
    carry an id by those ids (a pruned copy of the arguments is still the same turn)."""
    if display == GROUPS and row.get("role") == "assistant":
        ids = row["_call_ids"] if "_call_ids" in row else _call_ids(row.get("tool_calls"))
        if ids and all(ids):
            return (
                "assistant",
                None,
                row.get("timestamp"),
                row.get("tool_call_id"),
                ids,
                row.get("tool_name"),
            )
    return tuple(row.get(c) for c in KEY_COLUMNS)


def group(rows: Iterable[Row], display: str, by_order: bool = False) -> list[list[Row]]:
    """The logical messages among display-set rows: lists of rows (by id), in the order of
    their first row. ``by_order``: group by the stored ``display_order`` (0.22 files that have
    it for every display row), else by :func:`dedupe_key`."""
    groups: dict[Any, list[Row]] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        key = row.get("display_order") if by_order else dedupe_key(row, display)
        groups.setdefault(key, []).append(row)
    return sorted(groups.values(), key=lambda g: g[0]["id"])


def chosen(members: list[Row]) -> Row:
    """The row Hermes shows for a logical message: the live copy, then the newest."""
    return max(members, key=lambda r: (1 if r.get("active") == 1 else 0, r["id"]))


@dataclass(frozen=True)
class Label:
    """Why Logbook shows a row Hermes does not, in words the viewer and the JSON twin use:
    ``why`` one of "rewound", "compacted" (0.19: summarised away), "copy" (an earlier copy of a
    message shown as ``of``), "carried" (0.22: an original carried into a newer generation as
    ``of``), "model_only"; ``of``: the message it points to (the summary it was compacted into,
    the copy shown), when known."""

    why: str
    of: int | None = None


@dataclass
class Census:
    """One session's rows that are not simply their own item, for one generation.

    ``slot_of``: rows shown at another row's place (0.22: a logical message's later rows, at its
    first row's id). ``rep_of``: a slot whose item is another row (the chosen copy). ``groups``:
    a slot's rows when it has more than one (0.22), by id. ``labels``:
    rows Hermes does not show, and why (rows out of the display set are labelled by their flags
    when not listed). ``skip``: display-set rows that are not items (sorted). ``out``: rows out
    of the display set (sorted). ``hidden``: rows never painted (sorted)."""

    display: str
    slot_of: dict[int, int] = field(default_factory=dict)
    rep_of: dict[int, int] = field(default_factory=dict)
    groups: dict[int, list[int]] = field(default_factory=dict)
    labels: dict[int, Label] = field(default_factory=dict)
    skip: list[int] = field(default_factory=list)
    out: list[int] = field(default_factory=list)
    hidden: list[int] = field(default_factory=list)

    @cached_property
    def not_items(self) -> frozenset[int]:
        """Rows that are no item of Hermes's view (out of the display set, later copies)."""
        return frozenset(self.skip) | frozenset(self.out)

    @cached_property
    def unpainted(self) -> list[int]:
        """Rows Hermes's view does not paint (no item, or hidden), sorted."""
        return sorted(self.not_items | frozenset(self.hidden))

    def members(self, slot: int) -> list[int]:
        """Every row at this slot (0.22: a message's later rows with its first one), by id."""
        return self.groups.get(slot, [slot])


def census(
    display: str,
    twins: Iterable[Row],
    marked: Iterable[Row],
    by_order: bool = False,
) -> Census:
    """The census of one session. ``twins``: every row (any flags) that shares its timestamp
    (0.22 with ``display_order``: its display group) with another, with the key columns;
    ``marked``: rows out of the display set and rows with a ``display_kind`` or
    ``display_metadata`` (id, flags, those columns)."""
    c = Census(display)
    out: set[int] = set()
    skip: set[int] = set()
    hidden: set[int] = set()
    for row in marked:
        if is_hidden(row):
            hidden.add(row["id"])
        if not in_display_set(row, display):
            out.add(row["id"])
            if (
                display == GROUPS
                and is_model_only(row)
                and (row.get("active") == 1 or row.get("compacted") == 1)
            ):
                c.labels[row["id"]] = Label("model_only")
    if dedupes(display):
        twins = list(twins)
        shown = [r for r in twins if in_display_set(r, display)]
        groups = group(shown, display, by_order)
        keys = {}
        for members in groups:
            rep = chosen(members)
            first = members[0]["id"]
            for r in members:
                keys[dedupe_key(r, display)] = rep["id"]
                if r["id"] != rep["id"]:
                    c.labels[r["id"]] = Label("copy", rep["id"])
                    skip.add(r["id"])
                if display == GROUPS and r["id"] != first:
                    c.slot_of[r["id"]] = first
            if display == GROUPS:
                skip.discard(first)
                skip.update(r["id"] for r in members if r["id"] != first)
                if rep["id"] != first:
                    c.rep_of[first] = rep["id"]
                if len(members) > 1:
                    c.groups[first] = [r["id"] for r in members]
        # A row out of the set whose message is shown as a copy (0.22 retires the originals
        # of what a compaction carries over): "carried", not undone.
        for r in twins:
            if r["id"] in out or not in_display_set(r, display):
                rep = keys.get(dedupe_key(r, display))
                if rep is not None and r.get("active") == 0 and not r.get("compacted"):
                    c.labels[r["id"]] = Label("carried", rep)
    c.skip, c.out, c.hidden = sorted(skip), sorted(out), sorted(hidden)
    return c


def label_of(row: Row, census_: Census | None, display: str) -> Label | None:
    """Why Hermes does not show this row (None: it does, as an item or within one)."""
    if census_ is not None and row["id"] in census_.labels:
        label = census_.labels[row["id"]]
        return label
    if in_display_set(row, display):
        return None
    if row.get("compacted"):
        return Label("compacted")
    return Label("rewound")


def why_words(label: Label | None) -> str | None:
    """The label as the viewer says it."""
    if label is None:
        return None
    return {
        "rewound": "undone by /rewind",
        "compacted": "compacted: summarised into message {of}"
        if label.of is not None
        else "compacted: summarised away",
        "copy": "an earlier copy of message {of}",
        "carried": "carried into message {of} by a compaction",
        "model_only": "model only: what the model read (the messages it joins are shown)",
    }[label.why].format(of=label.of)


def summary_after(row_id: int, summaries: list[int]) -> int | None:
    """The first compaction summary after a compacted row: what it was summarised into."""
    i = bisect_left(summaries, row_id + 1)
    return summaries[i] if i < len(summaries) else None


def project(rows: Iterable[Row], display: str, by_order: bool = False) -> list[Row]:
    """A whole conversation as the generation shows it, from its rows (any flags): what its
    transcript exports hold (0.22's ``get_messages(include_compacted=True)``)."""
    rows = sorted(rows, key=lambda r: r["id"])
    shown = [r for r in rows if in_display_set(r, display)]
    if not dedupes(display):
        return shown
    groups = group(shown, display, by_order)
    if display == DEDUPE:
        return sorted((chosen(g) for g in groups), key=lambda r: r["id"])
    return [chosen(g) for g in groups]


def keeps_order(rows: Iterable[Row]) -> bool:
    """Does every display-set row carry its display group (0.22 then reads by it)?"""
    return all(
        r.get("display_order") is not None and r.get("display_identity") is not None
        for r in rows
        if r.get("active") == 1 or r.get("compacted") == 1
    )
