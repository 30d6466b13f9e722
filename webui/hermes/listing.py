"""Which sessions `hermes sessions list` shows, and how it shows them (``SessionDB.
list_sessions_rich`` and ``get_compression_tip`` of Hermes 0.19.0, 0.20.1 and 0.22.2; what
differs between them is a field of ``webui.hermes.rules.Rules``).

A database holds more session rows than conversations: a subagent run, a compression
continuation and a third-party ``tool`` session are rows of their own. Hermes lists

- roots (no parent) and branches (``/branch``: a ``_branched_from`` marker in ``model_config``,
  or a parent that ended ``'branched'`` before the child started), and since 0.20 the session a
  reset started (a ``_reset_from`` marker, or a parent that ended with one of
  ``RESET_END_REASONS`` and the child riding the same non-empty ``session_key``),
- since 0.20 no hidden sessions (``sessions.hidden``) unless asked; pinned ones on request,
- never delegate subagent runs (a ``_delegate_from`` marker), compression continuations (a
  child of a parent that ended ``'compression'``) or, unless a source is asked for, ``tool``
  sessions,
- a compression chain once, as its root's slot (the root's start time) showing its newest
  segment (the *tip*: id, title, messages, activity, preview, end …).

These are pure functions over plain values; ``webui.db.sessions.store`` turns them into SQL."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PREVIEW_CHARS = 60
# Sources `hermes sessions list` leaves out unless --source names them.
HIDDEN_SOURCES = ("tool",)
# The fields a compression root takes from its tip; everything else (started_at, tokens,
# cost …) stays the root's, exactly as list_sessions_rich merges them.
TIP_FIELDS = (
    "id",
    "ended_at",
    "end_reason",
    "message_count",
    "tool_call_count",
    "title",
    "last_active",
    "preview",
    "model",
    "cwd",
    "git_branch",
    "git_repo_root",
)
# A chain longer than this is pathological; Hermes stops walking after 100 steps too.
MAX_CHAIN = 100


@dataclass(frozen=True)
class ProbableSubagent:
    """Hermes 0.19's schema-16 migration tags, in a file written before it, every root with
    no title, no ``_branched_from``/``_delegate_from`` marker, at most ``max_messages``
    messages (a NULL count never qualifies), at least one message of role ``tool_role`` and
    no children as a delegate run whose parent was deleted (``_delegate_from:
    '__orphaned__'``); its list never shows them. Logbook reads such a file read-only beside a
    0.19 history, so it applies the same test instead of the tag."""

    max_messages: int = 25
    tool_role: str = "tool"


PROBABLE_SUBAGENT = ProbableSubagent()

ROW_MODES = ("conversations", "all")
ARCHIVED_MODES = ("hide", "include", "only")
HIDDEN_MODES = ("hide", "include", "only")
PINNED_MODES = ("only", "hide")

# A parent that ended so was reset: a child with its session_key is the next conversation of
# the same chat (0.20+, the legacy rule for rows written before the `_reset_from` marker).
RESET_END_REASONS = (
    "session_reset",
    "session_switch",
    "idle",
    "daily",
    "suspended",
    "resume_pending_expired",
)

# -- the preview's compaction rows (0.22) ---------------------------------------------------
# A compaction summary starts with one of these (after whitespace): the long form's fixed
# introduction, or the legacy label. It is never previewed, unless the user's own message
# follows SUMMARY_END_MARKER in it; a message merged before a summary (MERGED_DELIMITER, then
# a summary) previews its own part, without MERGED_HEADER.
SUMMARY_PREFIXES = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary "
    "below. This is a handoff from a previous context window — treat it as background "
    "reference, NOT as active instructions. ",
    "[CONTEXT SUMMARY]:",
)
SUMMARY_END_MARKER = (
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
)
MERGED_DELIMITER = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
MERGED_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"
# The whitespace Hermes trims around these parts in SQL (tab, newline, carriage return, space).
SQL_WHITESPACE = "\t\n\r "
# Hermes's sane window for a timestamp (0.22's coerce_epoch): a value outside it is ignored
# when last activity is worked out.
EPOCH_MIN = 0.0
EPOCH_MAX = 4_200_000_000.0


def preview(raw: str | None) -> str:
    """The list's preview of a first user message: Hermes reads 63 characters with line
    breaks turned into spaces, strips them, and shows 60 plus '...' when more remain."""
    if not raw:
        return ""
    text = raw[:63].replace("\n", " ").replace("\r", " ").strip()
    if not text:
        return ""
    return text[:PREVIEW_CHARS] + ("..." if len(text) > PREVIEW_CHARS else "")


def row_mode(value: str | None) -> str:
    """``rows=`` in the URL: Hermes's rows (the default) or every session row."""
    value = (value or "").strip().lower()
    if value in ("", "conversations", "hermes", "default"):
        return "conversations"
    if value in ("all", "every"):
        return "all"
    raise ValueError("rows must be 'all' (every session row) or left out (Hermes's rows).")


def archived_mode(value: str | None) -> str:
    """``archived=``: hidden (Hermes's default), included, or only archived sessions.
    ``1``/``true`` (Logbook 0.2) mean included."""
    value = (value or "").strip().lower()
    if value in ("", "hide", "0", "false", "no", "off"):
        return "hide"
    if value in ("include", "1", "true", "yes", "on", "all"):
        return "include"
    if value == "only":
        return "only"
    raise ValueError("archived must be 'hide', 'include' or 'only'.")


def hidden_mode(value: str | None) -> str | None:
    """``hidden=``: left out (Hermes's default, None), ``include`` or ``only``."""
    value = (value or "").strip().lower()
    if value == "":
        return None
    if value in ("hide", "0", "false", "no", "off"):
        return "hide"
    if value in ("include", "1", "true", "yes", "on", "all"):
        return "include"
    if value == "only":
        return "only"
    raise ValueError("hidden must be 'include' or 'only' (or 'hide', the default).")


def pinned_mode(value: str | None) -> str | None:
    """``pinned=``: ``only`` (what `hermes sessions pinned` lists) or ``hide``; None: both."""
    value = (value or "").strip().lower()
    if value in ("", "include", "all", "any"):
        return None
    if value in ("only", "1", "true", "yes", "on"):
        return "only"
    if value in ("hide", "0", "false", "no", "off"):
        return "hide"
    raise ValueError("pinned must be 'only' or 'hide'.")


def hidden_rows_shown(mode: str | None, archived: str, *, archived_view_shows_hidden: bool) -> str:
    """Which hidden sessions a list shows: ``"hide"``, ``"include"`` or ``"only"``. Asked for
    explicitly, as asked; else left out, except from the archived-only view of 0.22 (the
    recovery surface for a session both archived and hidden)."""
    if mode is not None:
        return mode
    if archived == "only" and archived_view_shows_hidden:
        return "include"
    return "hide"


def hidden_sources(asked_sources: Iterable[str]) -> tuple[str, ...]:
    """The sources left out: ``tool`` unless the user asked for particular sources."""
    return () if any(asked_sources) else HIDDEN_SOURCES


@dataclass(frozen=True)
class Continuation:
    """A candidate next segment of a compression chain: a child of a session that ended
    ``'compression'``, not a branch, not a delegate, not a ``tool`` session."""

    id: str
    end_reason: str | None
    ended_at: float | None
    started_at: float | None
    last_active: float | None


def _preference(c: Continuation) -> tuple:
    # Hermes: a child that compressed again first, then a live one, then stale closed
    # siblings; newest activity, newest start, greatest id break ties.
    rank = 0 if c.end_reason == "compression" else 1 if c.ended_at is None else 2
    return (rank, -(c.last_active or 0.0), -(c.started_at or 0.0))


def next_segment(candidates: Iterable[Continuation]) -> Continuation | None:
    """The preferred continuation: the least by _preference, the greatest id among equals
    (one pass, no sort: a chains walk picks among 70,000 children on ten million messages)."""
    best: Continuation | None = None
    best_key: tuple = ()
    for c in candidates:
        key = _preference(c)
        if best is None or key < best_key or (key == best_key and c.id > best.id):
            best, best_key = c, key
    return best


def compression_chain(
    start: str,
    children: Mapping[str, list[Continuation]],
    following: Mapping[str, Continuation | None] | None = None,
) -> list[str]:
    """The chain from ``start`` forward to its tip, as ``get_compression_tip`` walks it.
    ``children`` maps a compression-ended session to its candidate continuations;
    ``following``, when given, each one's preferred continuation, worked out already."""
    chain = [start]
    seen = {start}
    current = start
    for _ in range(MAX_CHAIN):
        if following is not None:
            step = following.get(current)
        else:
            step = next_segment(children.get(current, ()))
        if step is None or step.id in seen:
            break
        seen.add(step.id)
        chain.append(step.id)
        current = step.id
    return chain


def compression_chains(children: Mapping[str, list[Continuation]]) -> dict[str, list[str]]:
    """Every compression chain, from each compression-ended session with continuations to
    its tip; each session's next segment picked once for all the walks."""
    following = {parent: next_segment(kids) for parent, kids in children.items()}
    return {root: compression_chain(root, children, following) for root in children}


def project(
    root_row: Mapping[str, Any], tip_row: Mapping[str, Any], *, root_title: bool = False
) -> dict[str, Any]:
    """A listed compression root shown as its tip (root's start and figures, tip's identity).
    ``root_title`` (0.22): an untitled tip shows the root's title, and the row says it is a
    compression continuation."""
    merged = dict(root_row)
    for key in TIP_FIELDS:
        if key in tip_row:
            merged[key] = tip_row[key]
    if root_title:
        if merged.get("title") is None:
            merged["title"] = root_row.get("title")
        merged["continuation_kind"] = "compression"
    merged["lineage_root_id"] = root_row["id"]
    return merged


# -- profiles (hermes_cli/profiles.py: list_profiles) ---------------------------------------

_PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def is_profile_name(name: str) -> bool:
    """A directory under ``profiles/`` is a profile when its name is one Hermes accepts
    (lower-case letters, digits, '-' and '_', at most 64) and it is not ``default``, which
    is the Hermes root itself."""
    return name != "default" and bool(_PROFILE_NAME.match(name))
