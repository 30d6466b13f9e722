"""Adds to a copy of the schema-22 fixture the kinds of sessions it lacks, written through
Hermes 0.19.0's own ``SessionDB`` API (run with the Python of a venv where hermes-agent 0.19.0
is installed; never imported by Logbook or its tests):

    HERMES_HOME=/tmp/h <venv>/bin/python tests/oracle/extend_fixture.py <copy of hermes-v22.db>

What it adds (ids start with ``x_`` so tests can find them): a three-segment compression chain
with a stale sibling continuation, delegate subagent runs (and a delegate of a delegate), a
generic child without markers, /branch children with and without the marker, ``tool`` sessions,
archived sessions (one of them a compression chain), rewound and compacted messages, a long
multi-line first message, a session whose first user message is empty, gateway origins (chats,
people) and workspaces. The result is kept as tests/data/fixtures/hermes-v22-extended.db.
"""

import sys
import time
from pathlib import Path

from hermes_state import SessionDB

db = SessionDB(Path(sys.argv[1]))


def session(
    sid, source="cli", *, parent=None, model="anthropic/claude-sonnet-4", config=None, cwd=None
):
    db.create_session(
        sid, source, model=model, model_config=config, parent_session_id=parent, cwd=cwd
    )
    time.sleep(0.02)  # distinct started_at values, as real sessions have
    return sid


def talk(sid, *turns, tokens=(1200, 300), cost=0.01):
    ids = []
    for i, text in enumerate(turns):
        ids.append(db.append_message(sid, "user" if i % 2 == 0 else "assistant", text))
    db.update_token_counts(
        sid,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        estimated_cost_usd=cost,
        cost_status="estimated",
        api_call_count=len(turns) // 2 or 1,
    )
    return ids


# A compression chain: root -> mid -> tip (live). A stale sibling of mid, ended by the
# websocket reaper, must not become the tip.
session("x_chain_root", cwd="/home/ana/src/atlas")
talk(
    "x_chain_root",
    "Plan the atlas migration to Postgres 16, step by step please",
    "Here is a plan.",
)
db.set_session_title("x_chain_root", "Atlas migration")
db.end_session("x_chain_root", "compression")
session("x_chain_mid", parent="x_chain_root", cwd="/home/ana/src/atlas")
talk("x_chain_mid", "Continue with the data copy", "Copying.")
db.end_session("x_chain_mid", "compression")
session("x_chain_stale", parent="x_chain_root")
talk("x_chain_stale", "stale websocket sibling", "ok")
db.end_session("x_chain_stale", "ws_orphan_reap")
session("x_chain_tip", parent="x_chain_mid", cwd="/home/ana/src/atlas")
talk("x_chain_tip", "Now verify the row counts after the copy", "All rows match.")

# Delegate subagents: a parent with two delegate runs, one of which delegates again.
session("x_deleg_parent", cwd="/home/ana/src/atlas")
talk("x_deleg_parent", "Research three vector databases and compare them", "Delegating.")
session("x_deleg_a", parent="x_deleg_parent", config={"_delegate_from": "x_deleg_parent"})
talk("x_deleg_a", "Research pgvector", "pgvector is ...")
session("x_deleg_a1", parent="x_deleg_a", config={"_delegate_from": "x_deleg_a"})
talk("x_deleg_a1", "Benchmark pgvector recall", "Recall 0.97")
session("x_deleg_b", parent="x_deleg_parent", config={"_delegate_from": "x_deleg_parent"})
talk("x_deleg_b", "Research qdrant", "qdrant is ...")
# A child without any marker (older builds' subagents): hidden from the list, orphaned on delete.
session("x_plain_child", parent="x_deleg_parent")
talk("x_plain_child", "untagged child run", "done")
db.end_session("x_deleg_parent", "cli_close")

# /branch: one child with the marker, one found by the legacy rule (parent ended 'branched'
# before the child started), and a branch whose parent was reopened and re-ended.
session("x_branch_parent")
talk("x_branch_parent", "Write a haiku about the sea", "Waves fold into foam")
db.end_session("x_branch_parent", "branched")
session("x_branch_marked", parent="x_branch_parent", config={"_branched_from": "x_branch_parent"})
talk("x_branch_marked", "Write a haiku about the sea", "Salt wind, a gull's cry")
session("x_branch_legacy", parent="x_branch_parent")
talk("x_branch_legacy", "Try a limerick instead", "There once was a sailor")
session("x_branch_reended", parent="x_chain_tip", config={"_branched_from": "x_chain_tip"})
talk("x_branch_reended", "Branch off the migration to try MySQL", "Trying MySQL.")
db.end_session("x_branch_reended", "tui_shutdown")

# Third-party tool sessions, hidden unless asked for.
session("x_tool_run", source="tool", model="gpt-4o-mini")
talk("x_tool_run", "tool-driven run: summarise the inbox", "Summary.")
session("x_tool_run2", source="tool", model="gpt-4o-mini")
talk("x_tool_run2", "tool-driven run: triage", "Triage.")

# Archived: a single session and a whole compression chain.
session("x_archived_one", source="telegram")
talk("x_archived_one", "Archived chat about groceries", "Milk, eggs.")
db.end_session("x_archived_one", "daily_reset")
db.set_session_archived("x_archived_one", True)
session("x_archived_root")
talk("x_archived_root", "Archived long conversation", "Sure.")
db.end_session("x_archived_root", "compression")
session("x_archived_tip", parent="x_archived_root")
talk("x_archived_tip", "Archived continuation", "Yes.")
db.set_session_archived("x_archived_tip", True)

# Previews: a long multi-line first message; an empty first user message; rewound and
# compacted rows.
session("x_preview_long", source="discord")
talk(
    "x_preview_long",
    "First line of a long question\r\nsecond line that goes on and on and on well past sixty",
    "Answer.",
)
session("x_preview_empty", source="slack")
db.append_message("x_preview_empty", "user", None)
db.append_message("x_preview_empty", "user", "")
db.append_message("x_preview_empty", "user", "   the real question after blanks")
session("x_rewound")
ids = talk(
    "x_rewound",
    "Deploy the docker compose stack",
    "Deploying",
    "Actually, roll it back",
    "Rolled back",
)
db.rewind_to_message("x_rewound", ids[2])

# Gateway origins and people: one Telegram DM cut by resets, a Discord channel thread.
for n, reason in enumerate(("daily_reset", "idle_timeout", None)):
    sid = session(f"x_tg_dm_{n}", source="telegram", model="openai/gpt-5")
    db.record_gateway_session_peer(
        sid,
        source="telegram",
        user_id="tg:4242",
        session_key="agent:main:telegram:dm:4242",
        chat_id="4242",
        chat_type="dm",
        display_name="Alice",
        origin_json='{"label": "Alice", "provider": "telegram", "from": "Alice"}',
    )
    talk(sid, f"Telegram DM day {n}: what's on my calendar?", "Two meetings.")
    if reason:
        db.end_session(sid, reason)
sid = session("x_dc_thread", source="discord", model="openai/gpt-5")
db.record_gateway_session_peer(
    sid,
    source="discord",
    user_id="dc:77",
    session_key="agent:main:discord:channel:900:thread:901",
    chat_id="900",
    chat_type="channel",
    thread_id="901",
    display_name="#ops",
    origin_json='{"label": "#ops / deploys", "provider": "discord", "thread": "deploys"}',
)
talk(sid, "Discord thread: is the deploy green?", "Yes, green.")
db.end_session(sid, "idle_timeout")

db.close()
print("extended", sys.argv[1])
