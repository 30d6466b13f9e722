"""The session list's rules as SQL, for the Hermes that wrote the file (webui.hermes.rules):
which rows are Hermes's (roots, branches, reset children), how a session's last activity and
its preview are worked out, which hidden and pinned sessions a list shows. SessionStore holds
one (``store.list_rules``), made from its reader, its rules and its shared figures."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from webui.db import sql
from webui.db.reader import Reader
from webui.hermes import listing
from webui.hermes.rules import Rules


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_WS = "char(9) || char(10) || char(13) || ' '"
_PREVIEW_WIDE = 400  # a summary carrier's own text: plenty for the 60 characters shown


class ListRules:
    """SQL pieces of the list, each chosen by the file's rules. ``shared``: SessionStore's
    figures shared while no session appears or goes (webui.db.sessions.keeping)."""

    def __init__(self, reader: Reader, rules: Rules, shared: Callable[..., Any]):
        self.r = reader
        self.schema = reader.schema
        self.rules = rules
        self.shared = shared
        # An older file read beside a Hermes 0.19 history: listed as Hermes 0.19 lists it once
        # it has opened (and migrated) the file (webui.hermes.listing.PROBABLE_SUBAGENT).
        self.hide_probable_subagents = False

    def col(self, name: str, alias: str = "s") -> str:
        return sql.col(self.schema, name, alias)

    # -- which rows are Hermes's ------------------------------------------------------------

    def marker(self, alias: str, key: str) -> str:
        """A marker in model_config (``_branched_from``, ``_delegate_from``, ``_reset_from``);
        a row whose model_config is not valid JSON has none (Hermes reads it as {})."""
        mc = self.col("model_config", alias)
        if mc == "NULL":
            return "NULL"
        # instr() first: parsing every row's JSON only to find most have no marker is what
        # made a full count slow on a million-message database.
        return (
            f"(CASE WHEN instr({mc}, '{key}') > 0 AND json_valid({mc}) "
            f"THEN json_extract({mc}, '$.{key}') END)"
        )

    def reset_child(self, alias: str) -> str:
        """The session a reset started (0.20+): a ``_reset_from`` marker, or (rows written
        before the marker) a parent that ended with a reset reason and the same non-empty
        session_key."""
        key = self.col("session_key", alias)
        legacy = "0"
        if key != "NULL":
            reasons = ", ".join(_literal(r) for r in listing.RESET_END_REASONS)
            legacy = (
                f"({key} IS NOT NULL AND {key} != '' AND EXISTS (SELECT 1 FROM sessions rp "
                f"WHERE rp.id = {alias}.parent_session_id AND rp.end_reason IN ({reasons}) "
                f"AND rp.session_key = {key}))"
            )
        return f"({self.marker(alias, '_reset_from')} IS NOT NULL OR {legacy})"

    def listable(self) -> str:
        """Roots, branches and (0.20+) reset children; never delegate subagent runs
        (list_sessions_rich's child rule and its delegate test)."""
        parent = self.col("parent_session_id")
        probable = self._probable_subagent() if self.hide_probable_subagents else ""
        if parent == "NULL":
            return f"NOT {probable}" if probable else "1"
        branch = (
            f"{self.marker('s', '_branched_from')} IS NOT NULL OR EXISTS (SELECT 1 FROM "
            f"sessions p WHERE p.id = s.parent_session_id AND {self.col('end_reason', 'p')} = "
            f"'branched' AND s.started_at >= {self.col('ended_at', 'p')})"
        )
        if self.rules.lists_reset_children:
            branch += f" OR {self.reset_child('s')}"
        listed = (
            f"(s.parent_session_id IS NULL OR {branch}) AND "
            f"{self.marker('s', '_delegate_from')} IS NULL"
        )
        return f"{listed} AND NOT {probable}" if probable else listed

    def _probable_subagent(self) -> str:
        """Hermes 0.19's schema-16 migration, as a condition (nothing is written): a root with
        no title, no marker, few messages, a tool message and no children was a subagent run
        whose parent was deleted; the migration tags it ``_delegate_from`` and the list hides
        it from then on (an older archive read beside a 0.19 history)."""
        rule = listing.PROBABLE_SUBAGENT
        title = self.col("title")
        count = self.col("message_count")
        if title == "NULL" or count == "NULL":
            return ""
        return (
            f"(s.parent_session_id IS NULL AND {self.marker('s', '_delegate_from')} IS NULL AND "
            f"{self.marker('s', '_branched_from')} IS NULL AND {title} IS NULL AND "
            f"{count} <= {rule.max_messages} AND EXISTS (SELECT 1 FROM messages m WHERE "
            f"m.session_id = s.id AND m.role = '{rule.tool_role}') AND NOT EXISTS "
            "(SELECT 1 FROM sessions ch WHERE ch.parent_session_id = s.id))"
        )

    def continuation_filter(self, child: str = "child") -> str:
        """What makes a child of a compression-ended session its continuation: not a branch,
        not a delegate run, not a ``tool`` session and (0.22) not a reset child."""
        parts = [
            f"{self.marker(child, '_branched_from')} IS NULL",
            f"{self.marker(child, '_delegate_from')} IS NULL",
            f"COALESCE({child}.source, '') != 'tool'",
        ]
        if self.rules.chain_skips_reset_children:
            parts.append(f"NOT {self.reset_child(child)}")
        return " AND ".join(parts)

    # -- hidden and pinned ------------------------------------------------------------------

    def hidden_clause(self, q) -> tuple[str | None, list[Any]]:
        """The hidden sessions a list shows (None: no condition). Hermes's rows leave them out
        unless asked (0.20+); every session row (``rows=all``, the whole export) keeps them
        unless ``hidden=`` says otherwise."""
        if q.hidden is None and not (q.conversations and self.rules.hides_hidden):
            return None, []
        mode = listing.hidden_rows_shown(
            q.hidden, q.archived, archived_view_shows_hidden=self.rules.archived_view_shows_hidden
        )
        if mode == "include":
            return None, []
        if not self.schema.has("sessions", "hidden"):
            # no session of this file is hidden
            return ("0", []) if mode == "only" else (None, [])
        if mode == "hide":
            return "s.hidden = 0", []
        # Hidden sessions are few: found by their ids (shared), not by reading every row.
        return "s.id IN (SELECT value FROM json_each(?)) AND s.hidden != 0", [
            self._flagged_ids("hidden")
        ]

    def pinned_clause(self, q) -> tuple[str | None, list[Any]]:
        if q.pinned is None:
            return None, []
        has = self.schema.has("sessions", "pinned")
        if q.pinned == "hide":
            return ("COALESCE(s.pinned, 0) = 0", []) if has else (None, [])
        if not has:
            return "0", []
        return "s.id IN (SELECT value FROM json_each(?)) AND s.pinned = 1", [
            self._flagged_ids("pinned")
        ]

    def archived_applies(self, q) -> bool:
        """`hermes sessions pinned` of 0.22 lists archived pins too (its back-fill drops the
        page's ``archived = 0``); every other list keeps the archived filter."""
        return not (
            q.pinned == "only" and q.archived == "hide" and self.rules.pins_include_archived
        )

    def _flagged_ids(self, column: str) -> str:
        """The ids of the sessions with this flag set, as JSON, shared while no session appears
        or goes (a flag set by Hermes shows within seconds; Logbook's own changes at once).
        Pins and hidden sessions are a handful: the page reads them by id."""
        return self.shared(
            f"flagged:{column}",
            lambda: json.dumps(
                [r["id"] for r in self.r.rows(f"SELECT id FROM sessions WHERE {column} != 0")]
            ),
        )

    # -- last activity and preview ------------------------------------------------------------

    def last_active_of(self, alias: str = "s") -> str:
        """A session's last activity as its Hermes works it out (``sql.last_active``: the
        newest message, else its start (0.19); the freshest of the activity heartbeat and the
        newest message (0.20); the same inside the epoch window (0.22))."""
        return sql.last_active(self.schema, self.rules.last_active, alias)

    def preview_expr(self) -> str:
        """The raw text of the list's preview: the first user message with content, by
        (timestamp, id), its first 63 characters (webui.hermes.listing.preview trims them to
        60 + '...'). 0.22 skips ``display_kind='hidden'`` rows and pure compaction summaries,
        and previews a summary carrier by the user's own text in it."""
        content = sql.col(self.schema, "content", "m", "messages")
        base = (
            "FROM messages m WHERE m.session_id = s.id AND m.role = 'user' "
            f"AND {content} IS NOT NULL"
        )
        if not self.rules.preview_skips_hidden_and_summaries or content == "NULL":
            return f"(SELECT substr({content}, 1, 63) {base} ORDER BY m.timestamp, m.id LIMIT 1)"
        text, eligible = _summary_aware(
            content, sql.col(self.schema, "display_kind", "m", "messages")
        )
        return f"(SELECT {text} {base} AND {eligible} ORDER BY m.timestamp, m.id LIMIT 1)"


def _summary_aware(c: str, display_kind: str) -> tuple[str, str]:
    """(the preview text of a user row, whether the row may be previewed), 0.22's rules: a row
    the gateway never paints (display_kind 'hidden') is never previewed; a compaction summary
    only when the user's own message follows its end marker (then that message); a message
    merged before a summary by its own part (without the merged header)."""

    def ltrim(x: str) -> str:
        return f"ltrim({x}, {_WS})"

    def opens_summary(x: str) -> str:
        return (
            "("
            + " OR ".join(
                f"substr({ltrim(x)}, 1, {len(p)}) = {_literal(p)}" for p in listing.SUMMARY_PREFIXES
            )
            + ")"
        )

    end, delim, header = listing.SUMMARY_END_MARKER, listing.MERGED_DELIMITER, listing.MERGED_HEADER
    standalone = opens_summary(c)
    at = f"instr({c}, {_literal(delim)})"
    merged = f"({at} > 0 AND {opens_summary(f'substr({c}, {at} + {len(delim)})')})"
    after_end = f"substr({c}, instr({c}, {_literal(end)}) + {len(end)})"
    prior = f"trim(substr({c}, 1, {at} - 1), {_WS})"
    own = (
        f"(CASE WHEN substr({ltrim(prior)}, 1, {len(header)}) = {_literal(header)} "
        f"THEN {ltrim(f'substr({ltrim(prior)}, {len(header) + 1})')} ELSE {prior} END)"
    )
    eligible = (
        f"(COALESCE({display_kind}, '') <> 'hidden' AND ("
        f"(NOT {standalone} AND NOT {merged}) "
        f"OR ({standalone} AND instr({c}, {_literal(end)}) > 0 "
        f"AND length(trim({after_end}, {_WS})) > 0) "
        f"OR ({merged} AND length(trim({own}, {_WS})) > 0)))"
    )
    text = (
        f"(CASE WHEN {standalone} THEN substr({ltrim(after_end)}, 1, {_PREVIEW_WIDE}) "
        f"WHEN {merged} THEN substr({own}, 1, {_PREVIEW_WIDE}) ELSE substr({c}, 1, 63) END)"
    )
    return text, eligible
