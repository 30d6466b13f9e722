"""What the oracle asks each newer Hermes generation about its fixtures: the fixtures and their
generations, list variants, search queries, prune and archive filter combinations. Shared by the
recorder (tests/oracle/record_generations.py), the oracle tier (tests/test_oracle_generations.py)
and the everyday tests that read the recorded truth (tests/test_generation_truth.py)."""

from __future__ import annotations

import calendar

# The moment the recorded truth is taken at (Hermes's clock pinned by the driver): every
# relative filter (--older-than, --newer-than, analytics windows) is measured from here.
NOW = calendar.timegm((2026, 11, 26, 0, 0, 0))

# fixture -> (generation key, needs the CJK tokenizer runtime)
FIXTURES = {
    "hermes-v26-migrated.db": ("0.20", False),
    "hermes-v26-fresh.db": ("0.20", False),
    "hermes-v31-migrated.db": ("0.22", False),
    "hermes-v31-fresh.db": ("0.22", False),
    "hermes-v31-cjk.db": ("0.22", True),
    "hermes-v22-marks.db": ("0.19", False),
}

# `hermes sessions list` variants: name -> CLI arguments (the Logbook query each stands for is
# in the tests that compare them).
LIST_CLI = {
    "default": [],
    "source=telegram": ["--source", "telegram"],
    "source=cli": ["--source", "cli"],
    "source=tool": ["--source", "tool"],
    "source=cron": ["--source", "cron"],
    "source=claude-code": ["--source", "claude-code"],
    "workspace=atlas": ["--workspace", "atlas"],
}

# list_sessions_rich variants (what the dashboard and desktop ask): name -> keyword arguments.
LIST_RICH = {
    "default": {"exclude_sources": ["tool"]},
    "archived=include": {"exclude_sources": ["tool"], "include_archived": True},
    "archived=only": {"exclude_sources": ["tool"], "archived_only": True},
    "hidden=include": {"exclude_sources": ["tool"], "include_hidden": True},
    "pinned backfill": {"exclude_sources": ["tool"], "include_pinned": True},
    "order=last_active": {"exclude_sources": ["tool"], "order_by_last_active": True},
}

# Sessions whose whole JSONL record is kept verbatim in the truth (the others by digest).
VERBATIM_EXPORTS = ("g_compact", "g_multimodel", "g_hidden_rows", "g_rewind", "m_compacted")

# 30+ queries: words, phrases, prefixes, operators, the sanitizer's characters, zero-hit retries,
# CJK of one, two and three characters and CJK glued to Latin. name -> (query, search kwargs).
SEARCHES = {
    q: (q, {})
    for q in [
        "nginx",
        "it's",
        "ginx",
        "nginx qqqzzzxxx",
        "canary rollout",
        '"canary rollout"',
        "deploy*",
        "docker OR kubernetes",
        "nginx NOT canary",
        "TODO: fix",
        "C++",
        "node.js",
        "e-mail",
        "100%",
        "g++",
        "(110: Connection timed out)",
        "a AND",
        "*",
        "terminal",
        "kubectl",
        "PodDisruptionBudget",
        "Postgres",
        "grandmother",
        "healthcheck",
        "embedded-hal",
        "大别山",
        "项目",
        "库",
        "数据库",
        "记忆断裂",
        "东京",
        "東京",
        "タイムアウト",
        "原因",
        "안녕",
        "일본",
        "구글 일정",
        "youer",
        "修改youer服务端",
        "大别山 OR 数据库",
        "数据库 NOT 库",
        "Proxmox",
    ]
}
SEARCHES.update(
    {
        "role=tool: syntax": ("syntax", {"role_filter": ["tool"]}),
        "role=tool: kubectl": ("kubectl", {"role_filter": ["tool"]}),
        "role=tool: created": ("created", {"role_filter": ["tool"]}),
        "role=tool: billing": ("billing", {"role_filter": ["tool"]}),
        "role=user: nginx": ("nginx", {"role_filter": ["user"]}),
        "source=cron: backup": ("backup", {"source_filter": ["cron"]}),
        "source=subagent: pgvector": ("pgvector", {"source_filter": ["subagent"]}),
        "exclude telegram: calendar": ("calendar", {"exclude_sources": ["telegram"]}),
        "exclude cli: nginx": ("nginx", {"exclude_sources": ["cli"]}),
    }
)

# `hermes sessions prune --dry-run` and `archive --dry-run`: name -> CLI options.
PRUNE = {
    "bare (90 days)": [],
    "older-than 30": ["--older-than", "30"],
    "older-than 7": ["--older-than", "7"],
    "source cli": ["--source", "cli"],
    "source telegram older-than 30d": ["--source", "telegram", "--older-than", "30d"],
    "title atlas": ["--title", "atlas"],
    "title Home": ["--title", "Home"],
    "title ' Home '": ["--title", " Home "],
    "title ''": ["--title", ""],
    "min-messages 5": ["--min-messages", "5"],
    "max-messages 2": ["--max-messages", "2"],
    "end-reason compression": ["--end-reason", "compression"],
    "end-reason daily": ["--end-reason", "daily"],
    "model gpt": ["--model", "gpt"],
    "newer-than 400 older-than 6w": ["--newer-than", "400", "--older-than", "6w"],
    "min-cost 0.01": ["--min-cost", "0.01"],
    "include-archived source telegram": ["--include-archived", "--source", "telegram"],
    "include-pinned older-than 30": ["--include-pinned", "--older-than", "30"],
    "after/before": ["--after", "2026-06-01", "--before", "2026-10-01 12:00"],
    "cwd atlas": ["--cwd", "/home/ana/src/atlas"],
}
ARCHIVE = {
    "source slack": ["--source", "slack"],
    "source telegram": ["--source", "telegram"],
    "title atlas": ["--title", "atlas"],
    "title Garden": ["--title", "Garden"],
    "older-than 200 min-messages 10": ["--older-than", "200", "--min-messages", "10"],
    "end-reason idle": ["--end-reason", "idle"],
    "source cli older-than 30": ["--source", "cli", "--older-than", "30"],
}

# Analytics windows (days) at NOW; 36500 takes the whole history.
USAGE_DAYS = (30, 365)
INSIGHT_DAYS = (30, 36500)
