"""Where conversations come from (Hermes 0.19, schema 22): chats (one ``session_key`` across
daily and idle resets and /new), workspaces (``git_repo_root``, else ``cwd``: Hermes's
workspace_key) and people (``user_id``). Older schemas lack these columns: every query then
answers nothing and the pages say why."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from webui.db import sql
from webui.db.errors import BadRequest
from webui.db.reader import Reader
from webui.db.sessions.messages import MessageStore
from webui.db.sql import decode_cursor, encode_cursor
from webui.hermes.origin import ORIGIN_NAME_KEYS, chat_name, distinct_labels

PAGE = 100
# A chat's timeline: messages per page, and sessions looked at per page (empty ones cost a
# query each, so a page that finds few messages still ends).
TIMELINE_MESSAGES = 100
TIMELINE_SESSIONS = 200
FACET_TOP = 40  # values per origin facet in the list's filter form


@dataclass
class TimelinePart:
    """One session of a chat's timeline page: its row and the page's messages of it."""

    session: dict[str, Any]
    messages: list[dict[str, Any]]
    from_start: bool  # the page shows this session from its first message
    marks: dict = field(
        default_factory=dict
    )  # what Hermes does with each (webui.db.sessions.messages)


@dataclass
class Timeline:
    parts: list[TimelinePart]
    next_session: str | None  # where the next page starts: this session…
    next_after: str | None  # …after this message cursor (None: from its first message)


WORKSPACE_KEY = "COALESCE(NULLIF(TRIM(s.git_repo_root), ''), NULLIF(TRIM(s.cwd), ''))"


class OriginStore:
    def __init__(self, reader: Reader):
        self.r = reader
        self.schema = reader.schema

    def has(self, *columns: str) -> bool:
        return all(self.schema.has("sessions", c) for c in columns)

    def _figures(self) -> str:
        return (
            f"COUNT(*) AS sessions, MIN(s.started_at) AS first_active, "
            f"MAX(COALESCE(s.ended_at, s.started_at)) AS last_active, "
            f"CAST(TOTAL({sql.num(self.schema, 'message_count', 's')}) AS INTEGER) AS messages, "
            f"CAST(TOTAL({sql.tokens(self.schema, 's')}) AS INTEGER) AS tokens, "
            f"TOTAL({sql.cost(self.schema, 's')}) AS cost, {sql.price_counts(self.schema, 's')}"
        )

    # -- chats ---------------------------------------------------------------------------------

    def chats(self, after: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One row per session_key, most recently active first (keyset pages)."""
        if not self.has("session_key"):
            return [], None
        label = self._label("s")
        having, params = "", []
        if after:
            key, last_key = decode_cursor(after)
            having = " HAVING (last_active < ? OR (last_active = ? AND session_key > ?))"
            params = [key, key, last_key]
        rows = self.r.rows(
            f"SELECT s.session_key AS session_key, MAX({label}) AS label, MAX(s.source) AS source, "
            f"MAX({sql.col(self.schema, 'chat_type', 's')}) AS chat_type, "
            f"MAX({sql.col(self.schema, 'thread_id', 's')}) AS thread_id, "
            f"MAX({self._person('s')}) AS user_name, MAX({sql.col(self.schema, 'user_id', 's')}) "
            f"AS user_id, {self._figures()} "
            "FROM sessions s WHERE s.session_key IS NOT NULL GROUP BY s.session_key"
            f"{having} ORDER BY last_active DESC, session_key LIMIT ?",
            [*params, PAGE + 1],
        )
        more = len(rows) > PAGE
        rows = rows[:PAGE]
        for r in rows:
            r["label"] = chat_name(r)
        distinct_labels(rows, within=("source",))  # the page shows each chat's source
        cursor = encode_cursor(rows[-1]["last_active"], rows[-1]["session_key"]) if more else None
        return rows, cursor

    def all_chats(self, exclude: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Every chat with its figures (``exclude``: sessions left out, copies of sessions
        another store holds): this store's part of the chats of a history of several."""
        if not self.has("session_key"):
            return []
        where, params = _excluding(exclude)
        label = self._label("s")
        return self.r.rows(
            f"SELECT s.session_key AS session_key, MAX({label}) AS label, MAX(s.source) AS source, "
            f"MAX({sql.col(self.schema, 'chat_type', 's')}) AS chat_type, "
            f"MAX({sql.col(self.schema, 'thread_id', 's')}) AS thread_id, "
            f"MAX({self._person('s')}) AS user_name, MAX({sql.col(self.schema, 'user_id', 's')}) "
            f"AS user_id, {self._figures()} "
            f"FROM sessions s WHERE s.session_key IS NOT NULL{where} GROUP BY s.session_key",
            params,
        )

    def _origin_key(self, alias: str, key: str) -> str:
        """One text field of origin_json (the gateway's SessionSource), NULL when absent."""
        origin = sql.col(self.schema, "origin_json", alias)
        if origin == "NULL":
            return "NULL"
        return (
            f"(CASE WHEN json_valid({origin}) AND json_type({origin}, '$.{key}') = 'text' THEN "
            f"NULLIF(TRIM(json_extract({origin}, '$.{key}')), '') END)"
        )

    def _person(self, alias: str) -> str:
        """The person a session is with: the gateway's user_name; in a DM the chat's own
        name is the person's too. (In a group the display name is the group's.)"""
        names = sql.col(self.schema, "display_name", alias)
        kind = sql.col(self.schema, "chat_type", alias)
        return (
            f"COALESCE({self._origin_key(alias, 'user_name')}, CASE WHEN {kind} = 'dm' THEN "
            f"NULLIF(TRIM({names}), '') END)"
        )

    def _label(self, alias: str) -> str:
        """display_name, else the origin's label, else the chat id."""
        origin = sql.col(self.schema, "origin_json", alias)
        # The first name-like key of origin.ORIGIN_NAME_KEYS that holds text.
        origin_label = (
            f"(CASE WHEN json_valid({origin}) THEN COALESCE("
            + ", ".join(
                f"NULLIF(TRIM(CASE WHEN json_type({origin}, '$.{k}') = 'text' THEN "
                f"json_extract({origin}, '$.{k}') END), '')"
                for k in ORIGIN_NAME_KEYS
            )
            + ") END)"
            if origin != "NULL"
            else "NULL"
        )
        return (
            f"COALESCE(NULLIF(TRIM({sql.col(self.schema, 'display_name', alias)}), ''), "
            f"{origin_label}, {sql.col(self.schema, 'chat_id', alias)})"
        )

    def chat(self, session_key: str) -> dict[str, Any] | None:
        if not self.has("session_key"):
            return None
        row = self.r.one(
            f"SELECT s.session_key AS session_key, MAX({self._label('s')}) AS label, "
            f"MAX(s.source) AS source, MAX({sql.col(self.schema, 'chat_type', 's')}) AS chat_type, "
            f"MAX({sql.col(self.schema, 'thread_id', 's')}) AS thread_id, "
            f"MAX({self._person('s')}) AS user_name, "
            f"MAX({sql.col(self.schema, 'user_id', 's')}) AS user_id, {self._figures()} "
            "FROM sessions s WHERE s.session_key = ? GROUP BY s.session_key",
            [session_key],
        )
        if row is not None:
            row["label"] = chat_name(row)
        return row

    def chat_sessions(
        self, session_key: str, after: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The chat's sessions in time order, each with why it ended (the reset boundary)."""
        cond = ""
        params: list[Any] = [session_key]
        if after:
            key, sid = decode_cursor(after)
            cond = " AND (s.started_at > ? OR (s.started_at = ? AND s.id > ?))"
            params += [key, key, sid]
        rows = self.r.rows(
            f"SELECT {self._session_columns()} FROM sessions s WHERE s.session_key = ?{cond} "
            "ORDER BY s.started_at, s.id LIMIT ?",
            [*params, PAGE + 1],
        )
        more = len(rows) > PAGE
        rows = rows[:PAGE]
        cursor = encode_cursor(rows[-1]["started_at"], rows[-1]["id"]) if more else None
        return rows, cursor

    def _session_columns(self) -> str:
        return (
            f"s.id AS id, {sql.col(self.schema, 'title', 's')} AS title, "
            f"s.started_at AS started_at, {sql.col(self.schema, 'ended_at', 's')} AS ended_at, "
            f"{sql.col(self.schema, 'end_reason', 's')} AS end_reason, "
            f"{sql.num(self.schema, 'message_count', 's')} AS message_count, "
            f"{sql.cost(self.schema, 's')} AS cost, "
            # Each session's cost by the one rule (present.filters.cost): its two figures
            # and its status, so an unknown or included cost is named, never "$0".
            f"{sql.col(self.schema, 'actual_cost_usd', 's')} AS actual_cost_usd, "
            f"{sql.col(self.schema, 'estimated_cost_usd', 's')} AS estimated_cost_usd, "
            f"{sql.col(self.schema, 'cost_status', 's')} AS cost_status, "
            f"{sql.col(self.schema, 'display_name', 's')} AS display_name, "
            f"{sql.col(self.schema, 'user_id', 's')} AS user_id"
        )

    def timeline_sessions(
        self, session_key: str, start: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """The chat's sessions in time order from ``start`` (a session id, included) on, on
        Hermes's (session_key, started_at) index."""
        cond, params = "", [session_key]
        if start:
            at = self.r.one(
                "SELECT started_at FROM sessions WHERE id = ? AND session_key = ?",
                [start, session_key],
            )
            if at is None:
                raise BadRequest(f"Session “{start}” is not part of this chat.")
            cond = " AND (s.started_at > ? OR (s.started_at = ? AND s.id >= ?))"
            params += [at["started_at"], at["started_at"], start]
        return self.r.rows(
            f"SELECT {self._session_columns()} FROM sessions s WHERE s.session_key = ?{cond} "
            "ORDER BY s.started_at, s.id LIMIT ?",
            [*params, limit],
        )

    def timeline(
        self,
        messages: MessageStore,
        session_key: str,
        start: str | None = None,
        after: str | None = None,
        limit: int = TIMELINE_MESSAGES,
    ) -> Timeline:
        """A page of the chat as one conversation: its sessions' messages in order, from
        session ``start`` (after message cursor ``after``), up to ``limit`` messages."""
        sessions = self.timeline_sessions(session_key, start, TIMELINE_SESSIONS + 1)
        parts: list[TimelinePart] = []
        shown = 0
        for i, row in enumerate(sessions[:TIMELINE_SESSIONS]):
            cursor = after if i == 0 else None
            page = messages.page(row["id"], after=cursor, limit=limit - shown)
            parts.append(TimelinePart(row, page.messages, cursor is None, page.marks))
            shown += len(page.messages)
            if page.next_cursor:
                return Timeline(parts, row["id"], page.next_cursor)
            if shown >= limit:
                break
        following = sessions[len(parts)] if len(sessions) > len(parts) else None
        return Timeline(parts, following["id"] if following else None, None)

    def last_session(self, session_key: str) -> str | None:
        return self.r.scalar(
            "SELECT id FROM sessions WHERE session_key = ? ORDER BY started_at DESC, id DESC "
            "LIMIT 1",
            [session_key],
        )

    # -- facets for the list's filter form ---------------------------------------------------

    def facets(self, top: int = FACET_TOP) -> dict[str, list[dict[str, Any]]]:
        """Sessions per chat type, chat, workspace and user (the most used ``top`` of each),
        with the list's parameter names: each value is what its filter takes. Counts come
        from Hermes's indexes where one covers the column (chat type and user: the gateway
        peer index; chat: the session_key index), names only for the values shown; only
        the workspace needs a pass over the table (no index holds cwd)."""
        if not self.has("session_key", "chat_type", "user_id", "cwd", "git_repo_root"):
            return {}

        def counted(expression: str, extra: str = "") -> list[dict[str, Any]]:
            return self.r.rows(
                f"SELECT {expression} AS value, COUNT(*) AS n{extra} FROM sessions s "
                f"WHERE NULLIF({expression}, '') IS NOT NULL GROUP BY 1 ORDER BY n DESC, 1 "
                "LIMIT ?",
                [top],
            )

        chats = counted("s.session_key")
        users = counted("s.user_id", ", MAX(s.source) AS source")
        # Each chat as its newest session names it (hermes.origin.chat_name: a thread by its
        # chat and thread, a direct chat by the person), with its source.
        label, person = self._label("x"), self._person("x")
        thread = sql.col(self.schema, "thread_id", "x")
        chat_labels = {
            r["value"]: r
            for r in self.r.rows(
                f"SELECT k.value AS value, {label} AS label, x.source AS source, {person} AS "
                f"user_name, x.user_id AS user_id, {thread} AS thread_id, x.chat_type AS "
                "chat_type FROM json_each(?) k "
                "JOIN sessions x ON x.id = (SELECT s.id FROM sessions s WHERE s.session_key = "
                "k.value ORDER BY s.started_at DESC LIMIT 1)",
                [json.dumps([c["value"] for c in chats])],
            )
        }
        for c in chats:
            found = chat_labels.get(c["value"])
            c["label"] = (
                f"{chat_name({**found, 'session_key': c['value']})} · {found['source']}"
                if found
                else c["value"]
            )
        distinct_labels(chats)
        # A person's newest name (the gateway's user_name), found through the gateway peer
        # index (source, user_id, …); a group's name is never a person's.
        user_labels = {
            r["value"]: r["label"]
            for r in self.r.rows(
                f"SELECT k.value AS value, (SELECT {self._person('s')} FROM sessions s "
                "WHERE s.source = k.source AND s.user_id = k.value AND "
                f"{self._person('s')} IS NOT NULL ORDER BY s.started_at DESC LIMIT 1) "
                "AS label FROM (SELECT json_extract(value, '$[0]') AS value, "
                "json_extract(value, '$[1]') AS source FROM json_each(?)) k",
                [json.dumps([[u["value"], u["source"]] for u in users])],
            )
        }
        for r in users:
            r["label"] = user_labels.get(r["value"]) or r["value"]
        kinds = counted("s.chat_type")
        workspaces = counted(WORKSPACE_KEY)
        for r in (*kinds, *workspaces):
            r["label"] = r["value"]
        for r in users:
            r.pop("source")
        return {"chat_type": kinds, "session_key": chats, "workspace": workspaces, "user": users}

    # -- workspaces and people -------------------------------------------------------------

    def workspaces(
        self, exclude: Sequence[str] = (), limit: int | None = 500
    ) -> list[dict[str, Any]]:
        """Per repository (else folder), as `hermes sessions list --workspace` groups them.
        ``exclude``: sessions left out (another store's copies); ``limit`` None: every one."""
        if not self.has("cwd", "git_repo_root"):
            return []
        where, params = _excluding(exclude)
        branch = sql.col(self.schema, "git_branch", "s")
        return self.r.rows(
            f"SELECT {WORKSPACE_KEY} AS workspace, GROUP_CONCAT(DISTINCT {branch}) AS branches, "
            f"{self._figures()} FROM sessions s WHERE {WORKSPACE_KEY} IS NOT NULL{where} "
            f"GROUP BY 1 ORDER BY last_active DESC{_limit(limit)}",
            params,
        )

    def branches(
        self, exclude: Sequence[str] = (), limit: int | None = 5000
    ) -> dict[str, list[dict[str, Any]]]:
        """Per workspace, its branches with their sessions and cost (most sessions first)."""
        if not self.has("cwd", "git_repo_root", "git_branch"):
            return {}
        where, params = _excluding(exclude)
        out: dict[str, list[dict[str, Any]]] = {}
        for r in self.r.rows(
            f"SELECT {WORKSPACE_KEY} AS workspace, s.git_branch AS branch, COUNT(*) AS sessions, "
            f"TOTAL({sql.cost(self.schema, 's')}) AS cost, {sql.price_counts(self.schema, 's')} "
            "FROM sessions s "
            f"WHERE {WORKSPACE_KEY} IS NOT NULL AND NULLIF(TRIM(s.git_branch), '') IS NOT NULL"
            f"{where} GROUP BY 1, 2 ORDER BY 1, sessions DESC, 2{_limit(limit)}",
            params,
        ):
            out.setdefault(r.pop("workspace"), []).append(r)
        return out

    def people(self, exclude: Sequence[str] = (), limit: int | None = 500) -> list[dict[str, Any]]:
        """Per user id: the names the gateway recorded for that person (never a group's
        name), the platforms, and the figures."""
        if not self.has("user_id"):
            return []
        where, params = _excluding(exclude)
        return self.r.rows(
            f"SELECT s.user_id AS user_id, GROUP_CONCAT(DISTINCT {self._person('s')}) AS names, "
            f"GROUP_CONCAT(DISTINCT s.source) AS sources, {self._figures()} FROM sessions s "
            f"WHERE s.user_id IS NOT NULL AND s.user_id != ''{where} GROUP BY 1 "
            f"ORDER BY cost DESC, sessions DESC{_limit(limit)}",
            params,
        )


def _excluding(ids: Sequence[str]) -> tuple[str, list[Any]]:
    if not ids:
        return "", []
    return " AND s.id NOT IN (SELECT value FROM json_each(?))", [json.dumps(list(ids))]


def _limit(n: int | None) -> str:
    return f" LIMIT {int(n)}" if n is not None else ""
