"""Where the demo's conversations come from (schema 22): the values Hermes 0.19 records for
them, planned from the generated sessions. Gateway sessions become chats: a few people per
platform in direct messages, a Discord channel keyed per person (``group_sessions_per_user``)
and a shared thread; each chat's sessions end with the gateway's reset reasons (``daily`` when
the next one starts on a later day, else ``idle``, sometimes ``session_reset`` for /new);
compression continuations keep their chat, as the gateway records the peer on them. CLI, TUI
and ACP sessions run in one of four repositories (branches, a worktree, a sub-folder) or a
folder without git.

The keys follow gateway/session.py's build_session_key and the origin JSON its
SessionSource.to_dict; the oracle tier checks both against Hermes 0.19.0's own functions."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

GATEWAYS = ("telegram", "discord", "signal", "whatsapp", "matrix", "slack", "email")
FOLDER_SOURCES = ("cli", "tui", "acp")
PEOPLE = (
    ("Alice", "1001"),
    ("Bob", "1002"),
    ("陈伟", "1003"),
    ("Dana", "1004"),
    ("Émile", "1005"),
)
REPOS = (
    ("/home/demo/src/atlas", ("main", "main", "feat/pg16", "fix/flaky-test")),
    ("/home/demo/src/hermes-logbook", ("main", "search-ranking")),
    ("/home/demo/work/billing", ("main", "release/2.4")),
    ("/home/demo/src/dotfiles", (None,)),
)
DAY = 86_400


def source_dict(
    platform: str,
    chat_id: str,
    chat_name: str | None,
    chat_type: str,
    user_id: str | None,
    user_name: str | None,
    thread_id: str | None = None,
    chat_topic: str | None = None,
    scope_id: str | None = None,
) -> dict[str, Any]:
    """SessionSource.to_dict() of Hermes 0.19's gateway: the origin_json it records."""
    d: dict[str, Any] = {
        "platform": platform,
        "chat_id": chat_id,
        "chat_name": chat_name,
        "chat_type": chat_type,
        "user_id": user_id,
        "user_name": user_name,
        "thread_id": thread_id,
        "chat_topic": chat_topic,
    }
    if scope_id:
        d["scope_id"] = scope_id
        d["guild_id"] = scope_id
    return d


def session_key(source: dict[str, Any]) -> str:
    """build_session_key() of Hermes 0.19's gateway, default profile and settings (DMs by chat
    id, groups per participant, threads shared)."""
    platform, chat_type = source["platform"], source["chat_type"]
    chat_id, thread_id, user_id = source["chat_id"], source["thread_id"], source["user_id"]
    if chat_type == "dm":
        return ":".join(p for p in ("agent:main", platform, "dm", chat_id, thread_id) if p)
    parts = ["agent:main", platform, chat_type]
    if chat_id:
        parts.append(chat_id)
    if thread_id:
        parts.append(thread_id)
    elif user_id:
        parts.append(str(user_id))
    return ":".join(parts)


def _chats(platform: str, rnd: random.Random) -> list[dict[str, Any]]:
    """The chats of one platform: DMs with a few people, and on Discord and Slack a server
    channel (one chat per person) and a thread everyone shares."""
    people = rnd.sample(PEOPLE, 3)
    chats = [source_dict(platform, uid, name, "dm", uid, name) for name, uid in people]
    if platform in ("discord", "slack"):
        for name, uid in people[:2]:
            chats.append(
                source_dict(platform, "7700", "ops", "group", uid, name, None, "on-call", "g-42")
            )
        chats.append(
            source_dict(platform, "7700", "ops / release 2.4", "thread", people[0][1],
                        people[0][0], "7702", None, "g-42")
        )
    return chats


def plan_origins(sessions: list[dict[str, Any]], seed: int = 22) -> list[dict[str, Any]]:
    """``sessions`` oldest first (id, source, parent_session_id, started_at, ended_at,
    end_reason) → the origin columns to set, one dict per session that gets any."""
    rnd = random.Random(seed)
    chats = {p: _chats(p, rnd) for p in GATEWAYS}
    plan: dict[str, dict[str, Any]] = {}
    by_id = {s["id"]: s for s in sessions}
    members: dict[str, list[dict[str, Any]]] = {}
    for s in sessions:
        parent = by_id.get(s["parent_session_id"] or "")
        if parent is not None:
            # A compression continuation stays in its chat; other children have no origin.
            if parent["end_reason"] == "compression" and parent["id"] in plan:
                row = {**plan[parent["id"]], "id": s["id"]}
                row.pop("end_reason", None)
                plan[s["id"]] = row
                if "session_key" in row:
                    members[row["session_key"]].append(s)
            continue
        if s["source"] in GATEWAYS:
            src = rnd.choice(chats[s["source"]])
            key = session_key(src)
            plan[s["id"]] = {
                "id": s["id"],
                "session_key": key,
                "user_id": src["user_id"],
                "chat_id": src["chat_id"],
                "chat_type": src["chat_type"],
                "thread_id": src["thread_id"],
                "display_name": src["chat_name"],
                "origin_json": json.dumps(src),
            }
            members.setdefault(key, []).append(s)
        elif s["source"] in FOLDER_SOURCES:
            root, branches = rnd.choice(REPOS)
            branch = rnd.choice(branches)
            cwd = root if rnd.random() < 0.8 else f"{root}/docs"
            plan[s["id"]] = {
                "id": s["id"],
                "cwd": cwd,
                "git_branch": branch,
                "git_repo_root": root if branch else None,
            }
    # Why each chat's session ended: the gateway's reset that started the next one.
    for rows in members.values():
        for here, following in itertools.pairwise(rows):
            if here["ended_at"] is None or here["end_reason"] in ("compression", "branched"):
                continue
            if int(following["started_at"] // DAY) > int(here["started_at"] // DAY):
                reason = "daily"
            else:
                reason = "session_reset" if rnd.random() < 0.2 else "idle"
            plan[here["id"]]["end_reason"] = reason
    return list(plan.values())
