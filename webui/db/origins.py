"""Where conversations come from (Hermes 0.19, schema 22): chats (one ``session_key`` across
daily and idle resets and /new), workspaces (``git_repo_root``, else ``cwd``: Hermes's
workspace_key) and people (``user_id``). Older schemas lack these columns: every query then
answers nothing and the pages say why."""

from __future__ import annotations

from typing import Any

from webui.db import sql
from webui.db.reader import Reader
from webui.db.sql import decode_cursor, encode_cursor

PAGE = 100
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
            f"TOTAL({sql.cost(self.schema, 's')}) AS cost"
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
            f"MAX({sql.col(self.schema, 'thread_id', 's')}) AS thread_id, {self._figures()} "
            "FROM sessions s WHERE s.session_key IS NOT NULL GROUP BY s.session_key"
            f"{having} ORDER BY last_active DESC, session_key LIMIT ?",
            [*params, PAGE + 1],
        )
        more = len(rows) > PAGE
        rows = rows[:PAGE]
        cursor = encode_cursor(rows[-1]["last_active"], rows[-1]["session_key"]) if more else None
        return rows, cursor

    def _label(self, alias: str) -> str:
        """display_name, else the origin's label, else the chat id."""
        origin = sql.col(self.schema, "origin_json", alias)
        origin_label = (
            f"(CASE WHEN json_valid({origin}) THEN json_extract({origin}, '$.label') END)"
            if origin != "NULL"
            else "NULL"
        )
        return (
            f"COALESCE(NULLIF({sql.col(self.schema, 'display_name', alias)}, ''), "
            f"{origin_label}, {sql.col(self.schema, 'chat_id', alias)})"
        )

    def chat(self, session_key: str) -> dict[str, Any] | None:
        if not self.has("session_key"):
            return None
        row = self.r.one(
            f"SELECT s.session_key AS session_key, MAX({self._label('s')}) AS label, "
            f"MAX(s.source) AS source, MAX({sql.col(self.schema, 'chat_type', 's')}) AS chat_type, "
            f"MAX({sql.col(self.schema, 'user_id', 's')}) AS user_id, {self._figures()} "
            "FROM sessions s WHERE s.session_key = ? GROUP BY s.session_key",
            [session_key],
        )
        return row

    def chat_sessions(
        self, session_key: str, after: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The chat's sessions in time order, each with why it ended (the reset boundary)."""
        cond, params = "", [session_key]
        if after:
            key, sid = decode_cursor(after)
            cond = " AND (s.started_at > ? OR (s.started_at = ? AND s.id > ?))"
            params += [key, key, sid]
        rows = self.r.rows(
            f"SELECT s.id AS id, {sql.col(self.schema, 'title', 's')} AS title, "
            f"s.started_at AS started_at, {sql.col(self.schema, 'ended_at', 's')} AS ended_at, "
            f"{sql.col(self.schema, 'end_reason', 's')} AS end_reason, "
            f"{sql.num(self.schema, 'message_count', 's')} AS message_count, "
            f"{sql.cost(self.schema, 's')} AS cost FROM sessions s WHERE s.session_key = ?{cond} "
            "ORDER BY s.started_at, s.id LIMIT ?",
            [*params, PAGE + 1],
        )
        more = len(rows) > PAGE
        rows = rows[:PAGE]
        cursor = encode_cursor(rows[-1]["started_at"], rows[-1]["id"]) if more else None
        return rows, cursor

    # -- workspaces and people -------------------------------------------------------------

    def workspaces(self) -> list[dict[str, Any]]:
        """Per repository (else folder), as `hermes sessions list --workspace` groups them."""
        if not self.has("cwd", "git_repo_root"):
            return []
        branch = sql.col(self.schema, "git_branch", "s")
        return self.r.rows(
            f"SELECT {WORKSPACE_KEY} AS workspace, GROUP_CONCAT(DISTINCT {branch}) AS branches, "
            f"{self._figures()} FROM sessions s WHERE {WORKSPACE_KEY} IS NOT NULL "
            "GROUP BY 1 ORDER BY last_active DESC LIMIT 500",
        )

    def people(self) -> list[dict[str, Any]]:
        if not self.has("user_id"):
            return []
        names = sql.col(self.schema, "display_name", "s")
        return self.r.rows(
            f"SELECT s.user_id AS user_id, GROUP_CONCAT(DISTINCT NULLIF({names}, '')) AS names, "
            f"GROUP_CONCAT(DISTINCT s.source) AS sources, {self._figures()} FROM sessions s "
            "WHERE s.user_id IS NOT NULL AND s.user_id != '' GROUP BY 1 "
            "ORDER BY cost DESC, sessions DESC LIMIT 500",
        )
