"""Writes a history into a ``state.db`` through one Hermes generation's own code (0.20.1 or 0.22.2):
``SessionDB`` and the functions Hermes's CLI, gateway, compressor and importer call. No SQL of
ours writes a row. Run with the Python of that generation's oracle venv (never imported by
Logbook or its tests); tests/oracle/make_fixtures.py drives it:

    HERMES_HOME=/tmp/h <venv>/bin/python tests/oracle/write_history.py DB START END [--sweep-days N]

DB is opened (and, when it holds an older schema, migrated) by this generation's ``SessionDB``.
A simulated clock (``time.time`` replaced, as Hermes stamps every row with it) spreads the
sessions between START and END (ISO dates, UTC). Session ids start with ``g_`` except the
imported ones, which get ids from Hermes's own ``new_session_id``.

What it writes, each through the call named beside it:

* in-place compactions (``archive_and_compact``: a summary row plus the carried tail; on 0.22
  ``tail_count`` and a micro-compaction's merged ``model_only`` user row), rewinds
  (``rewind_to_message``), rows with ``display_kind='hidden'`` (the interrupt placeholder, a
  suppressed delegation delivery, a hidden first user row);
* pins (``set_session_pinned``; a pinned compression chain, a pinned archived session, a pinned
  stale session the sweep spares), hidden sessions (``set_session_hidden``), a deliberate
  archive (``set_session_archived``) and the idle sweep (``archive_stale_sessions``, which on 0.22
  stamps ``auto_archived``);
* reset children as the gateway makes them (``promote_to_session_reset`` then ``create_session``
  with ``_reset_from``), and a marker-less child on the same session key (the legacy rule);
* a session that switched models (``update_token_counts`` per model, ``update_session_model``)
  with auxiliary tasks (``record_auxiliary_usage``: compression, title_generation, vision);
* system prompts, shared and changed (``create_session(system_prompt=)``,
  ``update_system_prompt``: content-addressed in ``system_prompts`` on these generations);
* Claude Code and Codex CLI sessions imported by ``hermes_cli.foreign_sessions``;
* tool calls and tool results, cron runs (source ``cron``, titled as the scheduler titles them),
  delegate subagent runs (``_delegate_from``, source ``subagent``), /branch children
  (``_branched_from`` with the copied history), compression rotations
  (``publish_compression_child`` under the compression lease, titles ``X #2``), ``tool`` sessions,
  open sessions, an empty session;
* CJK text (Chinese, Japanese, Korean; one-, two- and three-character words, Latin glued to CJK);
* titles with inner and outer spaces around ``Home`` and auto titles (``set_auto_title``).
"""

import calendar
import inspect
import json
import sys
import tempfile
import time
from pathlib import Path

_clock = [0.0]
time.time = lambda: _clock[0]  # Hermes stamps every row and every cutoff with time.time()

from hermes_state import SessionDB  # noqa: E402

DB_PATH = Path(sys.argv[1])
START = calendar.timegm(time.strptime(sys.argv[2], "%Y-%m-%d"))
END = calendar.timegm(time.strptime(sys.argv[3], "%Y-%m-%d"))
SWEEP_DAYS = (
    float(sys.argv[sys.argv.index("--sweep-days") + 1]) if "--sweep-days" in sys.argv else None
)
PIN_OLD = sys.argv[sys.argv.index("--pin-old") + 1] if "--pin-old" in sys.argv else None

_clock[0] = float(START)
db = SessionDB(DB_PATH)
GEN22 = "tail_count" in inspect.signature(db.archive_and_compact).parameters

# The story's sessions are spread over [START, END]: each step moves the clock by an equal share.
STEPS = 40
STEP = (END - START) / STEPS


def at_step(n: int) -> None:
    _clock[0] = max(_clock[0], START + n * STEP)


def tick(seconds: float = 7.0) -> None:
    _clock[0] += seconds


PROMPT_CODER = (
    "You are Hermes, a careful coding agent.\n\n## Tools\nterminal, read_file, web_search.\n"
    "Answer in the user's language."
)
PROMPT_CHAT = "You are Hermes on a messaging platform. Keep answers short; use the user's language."
PROMPT_CRON = "You are Hermes running a scheduled job. Report results plainly."
PROMPT_NEW = PROMPT_CODER + "\n\n## Memory\nThe user prefers Postgres and short answers."


def session(sid, source="cli", *, model="anthropic/claude-sonnet-4.6", prompt=PROMPT_CODER, **kw):
    db.create_session(sid, source, model=model, system_prompt=prompt, **kw)
    tick(2)
    return sid


def say(sid, role, content, **kw):
    tick()
    return db.append_message(sid, role, content, **kw)


def talk(sid, *turns, tokens=(1800, 420), cost=0.012, model=None):
    ids = [say(sid, "user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(turns)]
    db.update_token_counts(
        sid,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        model=model,
        estimated_cost_usd=cost,
        cost_status="estimated",
        cost_source="provider_models_api",
        billing_provider="openrouter",
        api_call_count=max(1, len(turns) // 2),
    )
    return ids


def tool_round(sid, name, args, result, call_id):
    """The assistant calls a tool and reads its result, as the agent loop stores them."""
    calls = [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
    ]
    a = say(sid, "assistant", "", tool_calls=calls, finish_reason="tool_calls")
    r = say(sid, "tool", result, tool_name=name, tool_call_id=call_id)
    return a, r


def carried(rows):
    """The compressor's carried tail: copies of the live rows, same role/content/timestamp."""
    keep = (
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "tool_name",
        "timestamp",
        "finish_reason",
    )
    return [
        {k: m[k] for k in keep if m.get(k) not in (None, "", [])}
        | {"content": m.get("content") or ""}
        for m in rows
    ]


def summary_row(text):
    from agent.context_compressor import SUMMARY_PREFIX

    return {"role": "user", "content": f"{SUMMARY_PREFIX}\n\n{text}", "_compressed_summary": True}


def compact_in_place(sid, summary, keep_tail, merged=None):
    """One in-place compaction as the compressor commits it: the live rows become compacted,
    a summary row and the carried tail become the new live rows. ``merged`` (0.22): two carried
    user turns joined into one row the model reads but nobody typed (``model_only``)."""
    tick(30)
    live = db.get_messages(sid)
    tail = carried(live[-keep_tail:]) if keep_tail else []
    new = [summary_row(summary), *tail]
    kwargs = {}
    if GEN22:
        kwargs["tail_count"] = len(tail)
        if merged:
            new.insert(
                1, {"role": "user", "content": merged, "display_metadata": {"model_only": True}}
            )
    db.archive_and_compact(sid, new, **kwargs)


def rotate(parent, child, summary, title=None, source="cli"):
    """A compression rotation: parent ends 'compression', child published with the handoff."""
    tick(30)
    holder = f"compressor:{parent}"
    assert db.try_acquire_compression_lock(parent, holder)
    live = db.get_messages(parent)
    handoff = [summary_row(summary), *carried(live[-2:])]
    db.publish_compression_child(
        parent_session_id=parent,
        child_session_id=child,
        source=source,
        messages=handoff,
        model="anthropic/claude-sonnet-4.6",
        system_prompt=PROMPT_CODER,
        compression_lock_holder=holder,
    )
    db.release_compression_lock(parent, holder)
    if title:
        db.set_session_title(child, db.get_next_title_in_lineage(title))
    tick(5)
    return child


# ---------------------------------------------------------------------------------------------
# 0. Before anything else: a session the idle sweep will archive, one it spares because it is
#    pinned, and an old ended session that only a pin keeps out of prune.
at_step(0)
session("g_stale_idle", "telegram", model="openai/gpt-5", prompt=PROMPT_CHAT)
talk(
    "g_stale_idle",
    "Remind me what the plumber said about the boiler",
    "He said to bleed the radiators.",
)
db.end_session("g_stale_idle", "idle")
session("g_stale_pinned", "cli")
talk("g_stale_pinned", "Keep this: the recipe for my grandmother's bread", "Noted, 500 g flour ...")
db.end_session("g_stale_pinned", "cli_close")
db.set_session_pinned("g_stale_pinned", True)
session("g_stale_open", "discord", model="openai/gpt-5", prompt=PROMPT_CHAT)
talk("g_stale_open", "Is the game night still on?", "Yes, Friday 8pm.")  # never ended

# 1. A long coding session compacted in place twice, with tool calls, then more turns.
at_step(8)
session("g_compact", "cli", cwd="/home/ana/src/atlas")
db.update_session_cwd(
    "g_compact", "/home/ana/src/atlas", git_branch="main", git_repo_root="/home/ana/src/atlas"
)
db.set_session_title("g_compact", "Kubernetes migration plan")
talk(
    "g_compact",
    "Plan the migration of the billing service to Kubernetes",
    "Step one: containerise it.",
)
tool_round(
    "g_compact",
    "terminal",
    {"command": "kubectl get pods -n billing"},
    "NAME READY STATUS\nbilling-7d9 1/1 Running",
    "call_k8s_1",
)
talk("g_compact", "Now write the Deployment manifest", "Here is deployment.yaml with 3 replicas.")
tool_round(
    "g_compact",
    "read_file",
    {"path": "deploy/billing.yaml"},
    "apiVersion: apps/v1\nkind: Deployment",
    "call_k8s_2",
)
talk(
    "g_compact",
    "Add a canary rollout with nginx ingress",
    "Added an nginx canary annotation at 10%.",
    "What about the database migrations?",
    "Run them as a pre-upgrade Job.",
)
compact_in_place(
    "g_compact", "The user is moving billing to Kubernetes: manifest written, canary via nginx.", 4
)
talk("g_compact", "Next: the HorizontalPodAutoscaler", "Target 70% CPU, 3 to 10 replicas.")
tool_round(
    "g_compact",
    "terminal",
    {"command": "kubectl apply -f hpa.yaml"},
    "hpa.autoscaling/billing created",
    "call_k8s_3",
)
talk("g_compact", "And the PodDisruptionBudget", "minAvailable: 2.")
compact_in_place(
    "g_compact",
    "Billing on Kubernetes: deployment, canary, HPA and PDB done.",
    2,
    merged="Next: the HorizontalPodAutoscaler\n\nAnd the PodDisruptionBudget",
)
talk("g_compact", "Summarise what is left to do", "Only the load test and the DNS switch remain.")
db.end_session("g_compact", "cli_close")

# 2. Rewind: the user took back two turns and asked again.
at_step(10)
session("g_rewind", "cli", cwd="/home/ana/src/atlas")
ids = talk(
    "g_rewind",
    "Deploy the docker compose stack to staging",
    "Deploying now.",
    "Actually roll it back to yesterday's images",
    "Rolled back.",
)
tick(20)
db.rewind_to_message("g_rewind", ids[2])
talk(
    "g_rewind",
    "Instead, pin the image tags in compose.yaml",
    "Pinned all tags to the current digests.",
)
db.set_auto_title("g_rewind", "Docker compose staging deploy", source="llm")
db.end_session("g_rewind", "cli_close")

# 3. Hidden rows: the first user row is hidden (a suppressed delegation delivery), an interrupted
#    turn left a hidden placeholder, and a visible question follows.
at_step(12)
session("g_hidden_rows", "tui")
say(
    "g_hidden_rows",
    "user",
    "[delegation result delivered to the model only]",
    display_kind="hidden",
    display_metadata={"delegation_id": "dlg_1", "presentation_suppressed": True},
)
say("g_hidden_rows", "user", "Why did the nightly backup fail?")
say(
    "g_hidden_rows",
    "assistant",
    "",
    display_kind="hidden",
    api_content="[interrupt: no assistant output for this turn]",
)
talk(
    "g_hidden_rows",
    "Check the disk usage on the backup host",
    "The disk is 97% full; prune old snapshots.",
)
db.end_session("g_hidden_rows", "tui_shutdown")

# 4. Pins: a compression chain pinned through its tip; an archived session that is pinned.
at_step(14)
session("g_pin_root", "cli", cwd="/home/ana/src/garden")
db.set_session_title("g_pin_root", "Garden irrigation controller")
talk(
    "g_pin_root",
    "Design an irrigation controller on an ESP32",
    "Use a relay board and soil sensors.",
)
rotate(
    "g_pin_root",
    "g_pin_tip",
    "ESP32 irrigation: relays + soil sensors chosen.",
    title="Garden irrigation controller",
)
talk("g_pin_tip", "Now the MQTT topics", "garden/zone1/moisture and garden/zone1/valve.")
db.end_session("g_pin_tip", "cli_close")
db.set_session_pinned("g_pin_tip", True)

session("g_pin_archived", "slack", model="openai/gpt-5", prompt=PROMPT_CHAT)
talk("g_pin_archived", "Draft the quarterly OKRs for the platform team", "Three objectives: ...")
db.end_session("g_pin_archived", "session_switch")
db.set_session_archived("g_pin_archived", True)
db.set_session_pinned("g_pin_archived", True)

# 5. A hidden session (Bot Mode marks its own sessions hidden) and one hidden then pinned (a pin
#    clears hidden).
at_step(16)
session("g_hidden_session", "api_server", prompt=PROMPT_CHAT)
talk("g_hidden_session", "status check from the bot", "all systems nominal")
db.end_session("g_hidden_session", "agent_close")
db.set_session_hidden("g_hidden_session", True)
session("g_hidden_then_pinned", "cli")
talk("g_hidden_then_pinned", "Notes on the Home Assistant upgrade", "Back up the config first.")
db.end_session("g_hidden_then_pinned", "cli_close")
db.set_session_hidden("g_hidden_then_pinned", True)
db.set_session_pinned("g_hidden_then_pinned", True)

# 6. A Telegram DM cut by the gateway's resets: daily, /reset, idle; the last one still open.
#    A marker-less child on the same key stands for rows written before the marker existed.
at_step(18)
key = "agent:main:telegram:dm:4242"
peer = {
    "source": "telegram",
    "user_id": "tg:4242",
    "session_key": key,
    "chat_id": "4242",
    "chat_type": "dm",
    "display_name": "Alice",
    "origin_json": json.dumps({"label": "Alice", "provider": "telegram"}),
}
prev = None
for n, reason in enumerate(("daily", "session_reset", "idle", None)):
    sid = f"g_tg_{n}"
    kw = {
        "user_id": "tg:4242",
        "session_key": key,
        "chat_id": "4242",
        "chat_type": "dm",
        "display_name": "Alice",
        "origin_json": peer["origin_json"],
    }
    if prev:
        kw.update(parent_session_id=prev, model_config={"_reset_from": prev})
    session(sid, "telegram", model="openai/gpt-5", prompt=PROMPT_CHAT, **kw)
    db.record_gateway_session_peer(sid, **peer)
    talk(
        sid,
        f"Telegram day {n}: what's on my calendar?",
        f"Day {n}: two meetings.",
        model="openai/gpt-5",
    )
    if reason:
        tick(3600)
        db.promote_to_session_reset(sid, reason)
    prev = sid
    at_step(18 + n)
# the legacy shape: parent ended at a reset boundary, child on the same key, no marker
session(
    "g_tg_legacy_parent",
    "telegram",
    model="openai/gpt-5",
    prompt=PROMPT_CHAT,
    user_id="tg:77",
    session_key="agent:main:telegram:dm:77",
    chat_id="77",
    chat_type="dm",
)
talk("g_tg_legacy_parent", "Bob here, what's the weather?", "Sunny, 22 °C.")
db.promote_to_session_reset("g_tg_legacy_parent", "daily")
session(
    "g_tg_legacy_child",
    "telegram",
    model="openai/gpt-5",
    prompt=PROMPT_CHAT,
    user_id="tg:77",
    session_key="agent:main:telegram:dm:77",
    chat_id="77",
    chat_type="dm",
    parent_session_id="g_tg_legacy_parent",
)
talk("g_tg_legacy_child", "And tomorrow?", "Rain in the afternoon.")

# 7. A session that switched models, with auxiliary tasks booked on other models.
at_step(22)
session("g_multimodel", "cli", model="anthropic/claude-sonnet-4.6", cwd="/home/ana/src/atlas")
db.set_session_title("g_multimodel", "Model switch mid-session")
talk(
    "g_multimodel",
    "Review this SQL query plan",
    "The seq scan comes from a missing index.",
    tokens=(12000, 900),
    cost=0.05,
    model="anthropic/claude-sonnet-4.6",
)
tick(60)
db.update_session_model("g_multimodel", "openai/gpt-5", "openrouter")
talk(
    "g_multimodel",
    "/model gpt-5 — now explain it again more briefly",
    "Add an index on (tenant, ts).",
    tokens=(8000, 300),
    cost=0.03,
    model="openai/gpt-5",
)
db.record_auxiliary_usage(
    "g_multimodel",
    "compression",
    model="google/gemini-2.5-flash",
    billing_provider="openrouter",
    input_tokens=15000,
    output_tokens=700,
    estimated_cost_usd=0.004,
)
db.record_auxiliary_usage(
    "g_multimodel",
    "title_generation",
    model="google/gemini-2.5-flash",
    billing_provider="openrouter",
    input_tokens=300,
    output_tokens=12,
    estimated_cost_usd=0.0001,
)
db.record_auxiliary_usage(
    "g_multimodel",
    "vision",
    model="openai/gpt-4o-mini",
    billing_provider="openrouter",
    input_tokens=2200,
    output_tokens=80,
    estimated_cost_usd=0.0006,
)
db.end_session("g_multimodel", "cli_close")

# 8. System prompts: shared by many sessions (above), and one session whose prompt changed.
at_step(24)
session("g_prompt_changed", "cli")
talk("g_prompt_changed", "Remember that I prefer Postgres", "Saved to memory.")
db.update_system_prompt("g_prompt_changed", PROMPT_NEW)
talk("g_prompt_changed", "Which database should the new service use?", "Postgres, as you prefer.")
db.end_session("g_prompt_changed", "cli_close")

# 9. Imports from Claude Code and Codex CLI, through Hermes's importer.
at_step(26)
from hermes_cli.foreign_sessions import import_foreign_session  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    claude = Path(tmp) / ".claude" / "projects" / "-home-ana-src-atlas" / "5b1c7e2a.jsonl"
    claude.parent.mkdir(parents=True)
    claude.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"type": "summary", "summary": "Fix flaky nginx healthcheck"},
                {
                    "type": "user",
                    "cwd": "/home/ana/src/atlas",
                    "sessionId": "5b1c7e2a",
                    "message": {
                        "role": "user",
                        "content": "The nginx healthcheck flaps every few minutes",
                    },
                },
                {
                    "type": "assistant",
                    "sessionId": "5b1c7e2a",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": "Let me look at the upstream timeouts."},
                            {
                                "type": "tool_use",
                                "name": "Bash",
                                "input": {"command": "cat nginx.conf"},
                            },
                        ],
                    },
                },
                {
                    "type": "user",
                    "sessionId": "5b1c7e2a",
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "content": "proxy_read_timeout 5s;"}],
                    },
                },
                {
                    "type": "assistant",
                    "sessionId": "5b1c7e2a",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "text",
                                "text": "Raise proxy_read_timeout to 30s; the check takes 6s under load.",
                            }
                        ],
                    },
                },
            ]
        )
        + "\n"
    )
    codex = (
        Path(tmp)
        / ".codex"
        / "sessions"
        / "2026"
        / "11"
        / "20"
        / "rollout-2026-11-20T10-00-00-abc.jsonl"
    )
    codex.parent.mkdir(parents=True)
    codex.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {
                    "type": "session_meta",
                    "payload": {"id": "abc-codex-1", "cwd": "/home/ana/src/garden"},
                },
                {
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "developer",
                        "content": [{"type": "input_text", "text": "sandbox rules"}],
                    },
                },
                {
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "user",
                        "content": [
                            {"type": "input_text", "text": "Port the sensor driver to Rust"}
                        ],
                    },
                },
                {
                    "type": "response_item",
                    "payload": {"type": "function_call", "name": "shell", "arguments": "{}"},
                },
                {
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "Ported to embedded-hal 1.0."}],
                    },
                },
            ]
        )
        + "\n"
    )
    tick()
    IMPORTED = [import_foreign_session("claude", claude, db=db)]
    tick(60)
    IMPORTED.append(import_foreign_session("codex", codex, db=db))

# 10. Cron runs, titled as the scheduler titles them.
at_step(28)
for n in range(3):
    sid = f"g_cron_backup_{n}"
    session(sid, "cron", model="openai/gpt-4o-mini", prompt=PROMPT_CRON)
    talk(
        sid,
        "Run the nightly backup report",
        f"Backup {n}: 14 GB, 0 errors.",
        tokens=(900, 60),
        cost=0.0004,
    )
    db.set_session_title(sid, f"Nightly backup · Nov {20 + n:02d} 03:00")
    db.end_session(sid, "cron_complete")
    at_step(28 + n)

# 11. A delegate parent with two subagent runs (one delegates again) and a /branch.
at_step(31)
session("g_deleg_parent", "cli", cwd="/home/ana/src/atlas")
talk(
    "g_deleg_parent", "Research three vector databases and compare them", "Delegating to subagents."
)
for child, parent, topic in (
    ("g_deleg_a", "g_deleg_parent", "pgvector"),
    ("g_deleg_b", "g_deleg_parent", "qdrant"),
    ("g_deleg_a1", "g_deleg_a", "pgvector recall"),
):
    session(child, "subagent", parent_session_id=parent, model_config={"_delegate_from": parent})
    talk(child, f"Research {topic}", f"{topic}: findings ...")
    db.end_session(child, "subagent_complete")
db.end_session("g_deleg_parent", "cli_close")

session("g_branch_parent", "cli")
db.set_session_title("g_branch_parent", "Sea haiku")
talk("g_branch_parent", "Write a haiku about the sea", "Waves fold into foam")
db.end_session("g_branch_parent", "branched")
session(
    "g_branch_child",
    "cli",
    parent_session_id="g_branch_parent",
    model_config={"_branched_from": "g_branch_parent"},
)
db.append_messages_batch(
    "g_branch_child",
    [
        {k: m[k] for k in ("role", "content", "timestamp")}
        for m in db.get_messages("g_branch_parent")
    ],
)
db.set_session_title("g_branch_child", db.get_next_title_in_lineage("Sea haiku"))
talk("g_branch_child", "Now a limerick instead", "There once was a sailor from Brest")
db.end_session("g_branch_child", "cli_close")

# 12. A compression chain of three segments (rotation), its tip still open.
at_step(33)
session("g_chain_root", "cli", cwd="/home/ana/src/atlas")
db.set_session_title("g_chain_root", "Atlas Postgres upgrade")
talk("g_chain_root", "Plan the upgrade of atlas to Postgres 17", "Use logical replication.")
rotate(
    "g_chain_root",
    "g_chain_mid",
    "Atlas: logical replication chosen.",
    title="Atlas Postgres upgrade",
)
talk("g_chain_mid", "Set up the publication", "CREATE PUBLICATION atlas_pub FOR ALL TABLES;")
rotate("g_chain_mid", "g_chain_tip", "Atlas: publication created.", title="Atlas Postgres upgrade")
talk("g_chain_tip", "Verify row counts after the copy", "All 41 tables match.")

# 13. CJK conversations (Chinese, Japanese, Korean; short and long words; Latin glued to CJK).
at_step(35)
session("g_cjk_zh", "feishu", model="qwen/qwen3-max", prompt=PROMPT_CHAT)
talk(
    "g_cjk_zh",
    "请帮我修改youer服务端的数据库配置",
    "已把数据库连接池改为 20。",
    "大别山项目的进展怎么样？",
    "大别山项目已完成第二阶段，记忆断裂的问题也修好了。",
    "库 和 数据库 有什么区别",
    "库是集合，数据库是管理系统。",
)
session("g_cjk_ja", "line", model="qwen/qwen3-max", prompt=PROMPT_CHAT)
talk(
    "g_cjk_ja",
    "このエラーの原因を教えて",
    "原因はタイムアウトです。東京リージョンの遅延が大きいです。",
)
session("g_cjk_ko", "kakao", model="qwen/qwen3-max", prompt=PROMPT_CHAT)
talk("g_cjk_ko", "안녕하세요, 구글 일정 동기화가 안 돼요", "일본 출장 일정은 동기화되었습니다.")
for sid in ("g_cjk_zh", "g_cjk_ja", "g_cjk_ko"):
    db.end_session(sid, "idle")

# 14. Titles around "Home" (leading, inner and trailing spaces matter to a title filter), a tool
#     session, an empty session, open sessions, sanitizer material (it's, nginx, ginx, quotes).
at_step(36)
for sid, title, text in (
    ("g_home_1", "Home lab notes", "My home lab runs Proxmox"),
    ("g_home_2", "My Home server", "The home server needs more RAM"),
    ("g_home_3", "Homework help", "Explain photosynthesis"),
    ("g_home_4", " Home ", "A title typed with spaces around it"),
):
    session(sid, "cli")
    try:
        db.set_session_title(sid, title)
    except ValueError:
        pass
    talk(sid, text, "Sure.")
    db.end_session(sid, "cli_close")
session("g_tool_run", "tool", model="openai/gpt-4o-mini", prompt=None)
talk("g_tool_run", "tool-driven run: summarise the inbox", "Summary: 3 invoices.")
session("g_empty", "cli")
db.end_session("g_empty", "cli_close")
at_step(37)
session("g_words", "cli")
talk(
    "g_words",
    "it's the nginx config again: upstream timed out (110: Connection timed out)",
    "The ginx typo in the include path broke it; it's fixed now.",
    "Check C++ and node.js versions, e-mail the 100% report",
    "g++ 13, node.js 22; report sent.",
)
db.set_auto_title("g_words", "Nginx upstream timeouts", source="llm")
session("g_open_cli", "cli", cwd="/home/ana/src/atlas")
talk("g_open_cli", "Still working on the nginx canary", "Canary at 25% now.")  # left open

# 15. The idle sweep (sessions.auto_archive), run by this generation as the gateway runs it.
at_step(39)
if PIN_OLD:
    db.set_session_pinned(PIN_OLD, True)
if SWEEP_DAYS is not None:
    archived = db.archive_stale_sessions(SWEEP_DAYS)
    print("idle sweep archived", archived, "session(s)")
_clock[0] = float(END)
db.vacuum()  # Hermes's own maintenance: FTS segments merged, then VACUUM
db.close()
print(json.dumps({"db": str(DB_PATH), "imported": IMPORTED, "gen22": GEN22}))
