"""Writes a new schema-22 ``state.db`` whose sessions carry realistic origins, every row through
Hermes 0.19.0's own code: ``SessionDB`` (create_session, append_message, update_token_counts,
record_gateway_session_peer, promote_to_session_reset, end_session, update_session_cwd) and the
gateway's ``build_session_key`` and ``SessionSource.to_dict`` for the keys and origin JSON. Run
it with the Python of a venv where hermes-agent 0.19.0 is installed (never imported by Logbook
or its tests):

    HERMES_HOME=/tmp/h <venv>/bin/python tests/oracle/origins_fixture.py OUT.db [--big N]

A simulated clock (``time.time`` replaced) spreads the history over the weeks before
2026-11-01, as a gateway would have written it:

* Telegram DMs: Alice, one session a day for six weeks cut by daily resets, a few idle resets
  and ``/new``, the last one still open; Bob, idle resets;
* a Discord server channel (one session per person, as ``group_sessions_per_user`` keys it)
  and two Discord threads shared by everyone in them;
* a Slack channel thread, a WhatsApp DM whose display name is HTML, a Signal DM whose
  origin JSON is not JSON;
* CLI sessions across four repositories (branches, a worktree) and a folder without git.

``--big N`` appends to an existing database (the benchmark's) one Telegram DM of N sessions and
origins for its existing CLI and gateway sessions, without changing their messages.
"""

import calendar
import json
import random
import sys
import time
from pathlib import Path

from gateway.config import Platform
from gateway.session import SessionSource, build_session_key
from hermes_state import SessionDB

DAY = 86_400.0
_clock = [float(calendar.timegm((2026, 9, 15, 9, 0, 0)))]
time.time = lambda: _clock[0]  # Hermes stamps every row with time.time()
rnd = random.Random(22)


def tick(seconds: float) -> None:
    _clock[0] += seconds


def new_id() -> str:
    stamp = time.strftime("%Y%m%d_%H%M%S", time.gmtime(_clock[0]))
    return f"{stamp}_{rnd.getrandbits(24):06x}"


TOPICS = [
    ("the kubernetes rollout of the billing service", "Roll out with a canary first."),
    ("a birthday present for my sister", "A good book or a concert ticket."),
    ("why the nightly backup failed", "The disk was full; prune old snapshots."),
    ("a recipe for dinner with leeks", "Leek and potato soup, 40 minutes."),
    ("the flight to Lisbon next week", "Check in opens 24 hours before."),
    ("summarise the design doc for the search index", "Three parts: ingest, rank, serve."),
    ("translate this note into German", "Hier ist die Übersetzung."),
    ("the docker compose file for the staging stack", "Pin the image tags."),
    ("天气 for the weekend", "Sunny, 22 °C on Saturday."),
    ("plan the sprint review", "Demo first, then the metrics."),
]


TOOLS = [
    ("web_search", "query"),
    ("terminal", "command"),
    ("read_file", "path"),
]


def tool_turn(sid: str, question: str) -> None:
    """The assistant calls a tool and reads its result, as run_agent stores them."""
    name, arg = rnd.choice(TOOLS)
    call_id = f"call_{rnd.getrandbits(32):08x}"
    value = {"query": question[:40], "command": "git status --short", "path": "README.md"}[arg]
    calls = [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps({arg: value})},
        }
    ]
    db.append_message(
        sid, "assistant", "Let me check first.", tool_calls=calls, finish_reason="tool_calls"
    )
    tick(rnd.uniform(1, 8))
    db.append_message(
        sid,
        "tool",
        json.dumps({"ok": True, "result": f"{name} output for {value}"}),
        tool_name=name,
        tool_call_id=call_id,
    )
    tick(rnd.uniform(1, 8))


def talk(sid: str, turns: int, *, words: str | None = None) -> None:
    for i in range(turns):
        question, answer = rnd.choice(TOPICS)
        if words and i == 0:
            question = f"{question} ({words})"
        db.append_message(sid, "user", f"Can you help with {question}?")
        tick(rnd.uniform(5, 40))
        if rnd.random() < 0.3:
            tool_turn(sid, question)
        db.append_message(sid, "assistant", answer, finish_reason="stop")
        tick(rnd.uniform(30, 300))
    db.update_token_counts(
        sid,
        input_tokens=900 * turns + rnd.randrange(400),
        output_tokens=200 * turns + rnd.randrange(100),
        estimated_cost_usd=round(0.004 * turns + rnd.random() / 100, 6),
        cost_status="estimated",
        api_call_count=turns,
    )


def gateway_session(source: SessionSource, previous: str | None, reason: str | None) -> str:
    """What the gateway's get_or_create_session does at a reset: end the chat's previous
    session with the reset's reason, create the new row with its routing peer."""
    if previous and reason:
        db.promote_to_session_reset(previous, reason)
    sid = new_id()
    key = build_session_key(source)
    db.create_session(
        sid,
        source.platform.value,
        user_id=source.user_id,
        session_key=key,
        chat_id=source.chat_id,
        chat_type=source.chat_type,
        thread_id=source.thread_id,
        model="anthropic/claude-sonnet-4",
    )
    record_peer(sid, source)
    return sid


def record_peer(sid: str, source: SessionSource) -> None:
    """The gateway's _record_gateway_session_peer: routing peer, name and origin JSON."""
    db.record_gateway_session_peer(
        sid,
        source=source.platform.value,
        user_id=source.user_id,
        session_key=build_session_key(source),
        chat_id=source.chat_id,
        chat_type=source.chat_type,
        thread_id=source.thread_id,
        display_name=source.chat_name,
        origin_json=json.dumps(source.to_dict()),
    )


def compressed(source: SessionSource, previous: str) -> str:
    """Context compression inside a chat (agent/conversation_compression.py): the session ends
    with "compression", its continuation is created with the parent link only, and the gateway
    then records the chat's routing peer on it (gateway/run.py, after the agent's result)."""
    db.end_session(previous, "compression")
    sid = new_id()
    db.create_session(
        sid, source.platform.value, model="anthropic/claude-sonnet-4", parent_session_id=previous
    )
    record_peer(sid, source)
    return sid


def daily_chat(source: SessionSource, days: int, *, words_every: int = 0) -> list[str]:
    """One chat over ``days`` days: a new session each morning after the 04:00 daily reset,
    sometimes an idle reset or a /new in the day; the last session stays open."""
    ids: list[str] = []
    previous, reason = None, None
    for day in range(days):
        tick(DAY - (_clock[0] % DAY) + 8 * 3600 + rnd.uniform(0, 4 * 3600))  # next morning
        previous = gateway_session(source, previous, reason)
        ids.append(previous)
        talk(
            previous,
            rnd.randint(1, 3),
            words=("kubernetes" if words_every and day % words_every == 0 else None),
        )
        reason = "daily"
        if day % 12 == 7:  # a long day: the context filled up and was compressed
            previous = compressed(source, previous)
            ids.append(previous)
            talk(previous, 2)
        if rnd.random() < 0.2:  # a pause long enough for the idle reset, same day
            tick(3 * 3600)
            previous = gateway_session(source, previous, "idle")
            ids.append(previous)
            talk(previous, 1)
        if rnd.random() < 0.1:  # the user typed /new
            previous = gateway_session(source, previous, "session_reset")
            ids.append(previous)
            talk(previous, 1)
    return ids


def cli_session(cwd: str, branch: str | None, root: str | None) -> str:
    tick(rnd.uniform(2 * 3600, 20 * 3600))
    sid = new_id()
    db.create_session(sid, "cli", model="openai/gpt-5", cwd=cwd)
    db.update_session_cwd(sid, cwd, git_branch=branch, git_repo_root=root)
    talk(sid, rnd.randint(1, 4))
    db.end_session(sid, "cli_close")
    return sid


def origins_fixture() -> None:
    tg, dc, sl = Platform.TELEGRAM, Platform.DISCORD, Platform.SLACK
    alice = SessionSource(
        tg, "1001", chat_name="Alice", chat_type="dm", user_id="1001", user_name="Alice"
    )
    bob = SessionSource(
        tg, "1002", chat_name="Bob", chat_type="dm", user_id="1002", user_name="Bob"
    )
    start = _clock[0]
    daily_chat(alice, 42, words_every=5)
    _clock[0] = start + 3600
    previous = None
    for _ in range(8):  # Bob: idle resets only
        tick(rnd.uniform(DAY, 4 * DAY))
        previous = gateway_session(bob, previous, "idle" if previous else None)
        talk(previous, rnd.randint(1, 2))
    db.end_session(previous, "agent_close")
    # A Discord server channel: one session per person; two threads shared by all.
    for n, (uid, name) in enumerate((("d-501", "carol"), ("d-502", "dmitri"), ("d-503", "erin"))):
        _clock[0] = start + (n + 1) * 7200
        person = SessionSource(
            dc,
            "7700",
            chat_name="ops",
            chat_type="group",
            user_id=uid,
            user_name=name,
            chat_topic="on-call and incidents",
            guild_id="g-42",
        )
        previous = None
        for _ in range(4):
            tick(rnd.uniform(DAY, 6 * DAY))
            previous = gateway_session(person, previous, "idle" if previous else None)
            talk(previous, rnd.randint(1, 2))
    for thread, topic in (("7701", "postmortem"), ("7702", "release 2.4")):
        _clock[0] = start + 5 * DAY
        previous = None
        for uid, name in (("d-501", "carol"), ("d-503", "erin"), ("d-502", "dmitri")):
            src = SessionSource(
                dc,
                "7700",
                chat_name=f"ops / {topic}",
                chat_type="thread",
                user_id=uid,
                user_name=name,
                thread_id=thread,
                parent_chat_id="7700",
                guild_id="g-42",
            )
            tick(rnd.uniform(DAY / 2, 2 * DAY))
            previous = gateway_session(src, previous, "idle" if previous else None)
            talk(previous, 1)
    _clock[0] = start + 9 * DAY
    slack = SessionSource(
        sl,
        "C0451",
        chat_name="#deploys",
        chat_type="thread",
        user_id="U77",
        user_name="farid",
        thread_id="1726.0042",
        scope_id="T01",
    )
    previous = None
    for _ in range(3):
        tick(DAY)
        previous = gateway_session(slack, previous, "daily" if previous else None)
        talk(previous, 2)
    # Untrusted text: a display name made of HTML; an origin that is not JSON.
    _clock[0] = start + 11 * DAY
    mallory = SessionSource(
        Platform.WHATSAPP,
        "4915550001",
        chat_name='<img src=x onerror="alert(1)">',
        chat_type="dm",
        user_id="4915550001",
        user_name="<b>mallory</b>",
    )
    sid = gateway_session(mallory, None, None)
    db.append_message(sid, "user", 'Render this: <script>alert("pwned")</script> & <b>bold</b>')
    db.append_message(sid, "assistant", "I will not run scripts: `<script>` stays text.")
    sid = new_id()
    db.create_session(
        sid,
        "signal",
        user_id="+15550002",
        session_key="agent:main:signal:dm:+15550002",
        chat_id="+15550002",
        chat_type="dm",
    )
    db.record_gateway_session_peer(
        sid,
        source="signal",
        user_id="+15550002",
        session_key="agent:main:signal:dm:+15550002",
        chat_id="+15550002",
        chat_type="dm",
        origin_json='{"label": "Zoë", "thread": [1, {"x": ',
    )
    talk(sid, 1)
    # CLI work across repositories, branches, a worktree and a folder without git.
    _clock[0] = start
    repos = [
        ("/home/ana/src/atlas", ["main", "main", "feat/pg16", "feat/pg16", "fix/flaky-test"]),
        ("/home/ana/src/hermes-logbook", ["main", "search-ranking", "main"]),
        ("/home/ana/work/billing", ["main", "release/2.4"]),
        ("/home/ana/src/dotfiles", [None]),
    ]
    for _ in range(3):
        for root, branches in repos:
            for branch in branches:
                cli_session(root, branch, root if branch else None)
    cli_session("/home/ana/src/atlas/.worktrees/pg16", "feat/pg16", "/home/ana/src/atlas")
    cli_session("/home/ana/notes", None, None)
    cli_session("/home/ana/src/atlas/docs", "main", "/home/ana/src/atlas")


def big(n: int) -> None:
    """For the benchmark database: a DM of ``n`` sessions, and origins for the rows there."""
    rows = db._conn.execute(
        "SELECT id, source FROM sessions WHERE session_key IS NULL AND cwd IS NULL ORDER BY started_at"
    ).fetchall()
    people = [(str(3000 + i), f"user{i}") for i in range(40)]
    repos = [f"/home/dev/src/repo{i}" for i in range(5)]
    for i, (sid, source) in enumerate(rows):
        if source == "cli":
            root = repos[i % len(repos)]
            db.update_session_cwd(
                sid, root, git_branch=("main", "dev", f"feat/{i % 7}")[i % 3], git_repo_root=root
            )
        elif source in ("telegram", "discord", "slack", "whatsapp", "signal"):
            uid, name = people[i % len(people)]
            src = SessionSource(
                Platform(source), uid, chat_name=name, chat_type="dm", user_id=uid, user_name=name
            )
            record_peer(sid, src)
    _clock[0] = (
        max(db._conn.execute("SELECT MAX(started_at) FROM sessions").fetchone()[0], _clock[0])
        + 3600
    )
    dm = SessionSource(
        Platform.TELEGRAM,
        "99",
        chat_name="Big chat",
        chat_type="dm",
        user_id="99",
        user_name="Big chat",
    )
    previous = None
    for _ in range(n):
        tick(DAY / 3)
        previous = gateway_session(dm, previous, "daily" if previous else None)
        talk(previous, 2)


db = SessionDB(Path(sys.argv[1]))
if "--big" in sys.argv:
    big(int(sys.argv[sys.argv.index("--big") + 1]))
else:
    origins_fixture()
db.close()
