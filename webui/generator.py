"""Deterministic synthetic Hermes ``state.db`` (schema v11) for the demo, tests and benchmarks.

The database is written in exactly the layout of Hermes Agent's ``hermes_state.py`` at schema
version 11 (same DDL text in ``sqlite_master``, inline FTS5 tables kept in sync by the six
triggers, WAL journal).  The content copies the *shape* of real Hermes data: 14 sources, session id
formats per source, several models (and NULL), billing/cost columns, compression lineages titled
"X", "X #2", ..., /branch children that copy their parent's history, subagent children, active
sessions, sessions without messages, OpenAI-style tool calls followed by their tool results,
reasoning fields per model family, Markdown/code, CJK, emoji, an XSS corpus and multimodal
``"\\x00json:"`` messages.

Everything is derived from ``random.Random(seed)`` and the ``now`` anchor, so the same arguments
always give byte-identical rows.  Messages of concurrent sessions are inserted in global timestamp
order (like a live Hermes), so message ids interleave between overlapping sessions.

Usage::

    from webui.generator import generate
    info = generate("/tmp/demo.db", sessions=300)

    python -m webui.generator OUT.db --sessions 20000 --messages-per-session 50
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import heapq
import json
import math
import os
import queue
import random
import sqlite3
import sys
import threading
import time
from typing import Callable, Iterator

__all__ = ["SCHEMA_VERSION", "DEFAULT_NOW", "GeneratedInfo", "create_schema", "generate", "main"]

SCHEMA_VERSION = 11
DEFAULT_NOW = 1793491200.0  # 2026-11-01 00:00:00 UTC

# --------------------------------------------------------------------------------------------
# Schema: the statements exactly as Hermes v11 leaves them in sqlite_master (SQLite drops the
# "IF NOT EXISTS", so the stored text is identical to the fixture's).
# --------------------------------------------------------------------------------------------

_SCHEMA_STATEMENTS = (
    """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT,
    model TEXT,
    model_config TEXT,
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    billing_provider TEXT,
    billing_base_url TEXT,
    billing_mode TEXT,
    estimated_cost_usd REAL,
    actual_cost_usd REAL,
    cost_status TEXT,
    cost_source TEXT,
    pricing_version TEXT,
    title TEXT,
    api_call_count INTEGER DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
)""",
    """CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    finish_reason TEXT,
    reasoning TEXT,
    reasoning_content TEXT,
    reasoning_details TEXT,
    codex_reasoning_items TEXT,
    codex_message_items TEXT
)""",
    """CREATE TABLE IF NOT EXISTS state_meta (
    key TEXT PRIMARY KEY,
    value TEXT
)""",
    """CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source)""",
    """CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id)""",
    """CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC)""",
    """CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp)""",
    """CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique ON sessions(title) WHERE title IS NOT NULL""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    content
)""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
END""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    INSERT INTO messages_fts(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts_trigram USING fts5(
    content,
    tokenize='trigram'
)""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_trigram_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts_trigram(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_trigram_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts_trigram WHERE rowid = old.id;
END""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_trigram_update AFTER UPDATE ON messages BEGIN
    DELETE FROM messages_fts_trigram WHERE rowid = old.id;
    INSERT INTO messages_fts_trigram(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END""",
)


def create_schema(conn: sqlite3.Connection) -> None:
    """Create the exact Hermes v11 schema on ``conn`` and switch it to WAL.

    Writes the single ``schema_version`` row (11) if the table is empty.  ``state_meta`` is
    created empty (Hermes' CLI adds ``ghost_session_prune_v1`` later; :func:`generate` does too).
    """
    if conn.in_transaction:
        conn.commit()
    conn.execute("PRAGMA journal_mode=WAL")
    for stmt in _SCHEMA_STATEMENTS:
        conn.execute(stmt)
    if conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == 0:
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
    if conn.in_transaction:
        conn.commit()


@dataclasses.dataclass
class GeneratedInfo:
    path: str
    sessions: int
    messages: int
    long_session_id: str | None
    seconds: float


# --------------------------------------------------------------------------------------------
# Vocabulary pools
# --------------------------------------------------------------------------------------------

_PROJECTS = ("ledger", "quill", "orbit", "atlas", "kestrel", "nightwatch", "pixel-forge", "sparrow-bot",
             "saturn-web", "moonbase", "billing-api", "hermes-dashboard")
_HOSTS = ("prod-web-01", "staging-db", "gpu-box", "nas.home.arpa", "raspberrypi.local", "vps-fra-1",
          "build-runner-3", "edge-proxy-2")
_CITIES = ("Berlin", "Oslo", "Lisbon", "Taipei", "Nairobi", "Kyoto", "Seoul", "Montreal", "Buenos Aires",
           "Austin")
_LIBS = ("httpx", "pytest", "vite", "serde", "numpy", "playwright", "tokio", "pandas", "fastapi", "sqlalchemy")
_FILES = ("src/main.py", "app/server.ts", "docker-compose.yml", "Cargo.toml", "README.md", "scripts/deploy.sh",
          "nginx/site.conf", ".github/workflows/ci.yml", "tests/test_api.py", "lib/utils.go",
          "my-app.config.ts", "config.yaml", "notebooks/analysis.ipynb", "src/lib.rs", "Dockerfile")
_ERRORS = (
    "ECONNREFUSED 127.0.0.1:5432",
    "KeyError: 'session_id'",
    "ModuleNotFoundError: No module named 'yaml'",
    "sqlite3.OperationalError: database is locked",
    "CUDA out of memory. Tried to allocate 2.00 GiB",
    "error[E0502]: cannot borrow `state` as mutable because it is also borrowed as immutable",
    "TypeError: Cannot read properties of undefined (reading 'map')",
    "permission denied while trying to connect to the Docker daemon socket",
    "x509: certificate has expired or is not yet valid",
    "OOMKilled (exit code 137)",
)
_HYPHEN_TERMS = ("chat-send", "P2.2", "sp_new", "docker-compose-up", "my-app.config.ts", "e-mail", "gpt-5",
                 "claude-sonnet-4.6", "snake_case_name", "pre-commit", "utf-8", "my.app_config.ts")
_SKILLS = ("github-pr-workflow", "plan", "docker-management", "obsidian", "excalidraw", "himalaya",
           "google-workspace", "test-driven-development", "systematic-debugging", "arxiv")
_MEMORY_LINES = (
    "User prefers concise answers with code first.",
    "User lives near {city}; timezone changes when travelling.",
    "Do not run destructive commands without confirmation.",
    "User's main project is {project}; deploys to {host}.",
    "Prefers pnpm over npm; uses neovim.",
    "用户喜欢中文回答技术问题。",
    "Runs docker on {host}; compose files live in ~/stacks.",
    "Calls the deploy script `docker-compose-up`; the chat-send webhook posts to #ops.",
)
_SYSTEM_HEAD = ("You are Hermes, an AI assistant made by Nous Research. You are helpful, knowledgeable, and "
                "direct. You have access to tools for the terminal, files, the web and a browser. When a task "
                "needs several steps, plan briefly, act, and verify.")

_CJK_SENTENCES = (
    "记忆断裂的问题又出现了，能帮我查一下吗？",
    "我们需要讨论Agent通信协议的设计。",
    "大别山项目的进展怎么样？",
    "服务器的内存占用太高了，能帮我看看吗？",
    "这个接口返回了五百错误，日志在下面。",
    "把这段代码翻译成中文注释，谢谢！",
    "请检查一下定时任务有没有正常运行。",
    "用户反馈说登录页面加载很慢。",
    "昨晚的部署失败了，docker 容器一直重启。",
    "通信模块需要重构。",
    "记忆断裂",
    "日本語でプルリクエストの説明を書いてください。",
    "データベースのバックアップは毎晩実行されます。",
    "会話の履歴を検索できるようにしたいです。",
    "このエラーの原因を調べてもらえますか？",
    "ラーメンの美味しい店を探しています。東京で。",
    "안녕하세요, 서버 상태를 확인해 주세요.",
    "이 코드의 버그를 찾아줄 수 있나요?",
    "배포 스크립트를 다시 실행해 주세요.",
    "안녕 세계",
)
_EMOJI = ("🚀", "✅", "🔥", "💡", "⚠️", "🎉", "👀", "🐛", "📦", "🤖", "❤️", "👍", "😅", "📈", "🇯🇵", "👨‍💻", "🙏", "🧪")
XSS_CORPUS = (
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    '<a href="javascript:alert(1)">x</a>',
    '"><svg onload=alert(1)>',
    "<iframe src=javascript:alert(1)>",
    "![img](http://example.invalid/x.png)",
)
_XSS_EXTRA = ("</textarea><script>fetch('/api/sessions')</script>", "<style>body{display:none}</style>",
              "<b onmouseover=alert(1)>hover</b>")
_PNG_1PX = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

_REPL_BLOCKS = (
    "```pycon\n>>> import sqlite3\n>>> conn = sqlite3.connect(\"state.db\")\n"
    ">>> conn.execute(\"select count(*) from sessions\").fetchone()\n(159,)\n>>> conn.close()\n```",
    "```pycon\n>>> from pathlib import Path\n>>> Path(\"docker-compose.yml\").exists()\nTrue\n"
    ">>> len(Path(\"README.md\").read_text().splitlines())\n42\n```",
    "```text\n<<<<<<< HEAD\ntimeout = 1.0\n=======\ntimeout = 30.0\n>>>>>>> feature/sp_new\n```",
)
_HEREDOC_BLOCKS = (
    "```bash\ncat <<<EOF\nhello from the heredoc\nEOF\ngrep -c docker <<< \"$LOGS\"\n```",
    "```bash\ncat <<'EOF' > docker-compose.override.yml\nservices:\n  web:\n    restart: unless-stopped\nEOF\n"
    "docker compose up -d   # aka docker-compose-up\n```",
)

_CODE = {
    "python": (
        "import asyncio\n\nasync def main() -> None:\n    async with asyncio.timeout(5):\n        result = await fetch_sessions(limit=50)\n    print(len(result))\n\nasyncio.run(main())",
        "import pandas as pd\nimport matplotlib.pyplot as plt\ndf = pd.read_csv('export.csv')\ndf.resample('W', on='ts')['tokens'].sum().plot()\nplt.savefig('usage.png')",
        "import sqlite3\n\nconn = sqlite3.connect('state.db', timeout=30)\nconn.execute('PRAGMA journal_mode=WAL')\nrows = conn.execute(\n    'SELECT id, title FROM sessions ORDER BY started_at DESC LIMIT 20'\n).fetchall()\nfor sid, title in rows:\n    print(sid, title or '(untitled)')",
        "import pytest\n\n@pytest.fixture\ndef client(tmp_path):\n    app = create_app(db_path=tmp_path / 'state.db')\n    return app.test_client()\n\ndef test_index(client):\n    assert client.get('/').status_code == 200",
        "import httpx\n\nasync def chat_send(text: str) -> None:\n    async with httpx.AsyncClient(timeout=10) as client:\n        r = await client.post(WEBHOOK_URL, json={'text': text})\n        r.raise_for_status()",
    ),
    "bash": (
        "docker compose pull\ndocker compose up -d --remove-orphans\ndocker compose logs -f --tail=100 web",
        "set -euo pipefail\nrsync -a --delete ~/stacks/ backup@nas.home.arpa:/volume1/stacks/\necho \"backup done: $(date -Iseconds)\"",
        "sudo certbot renew --dry-run\nsudo nginx -t && sudo systemctl reload nginx",
        "kubectl -n prod rollout status deploy/web --timeout=120s\nkubectl -n prod describe pod -l app=web | tail -n 20",
        "git fetch origin\ngit rebase origin/main\ngit push --force-with-lease",
    ),
    "yaml": (
        "services:\n  web:\n    image: ghcr.io/acme/web:latest\n    ports:\n      - \"8080:8080\"\n    depends_on:\n      - db\n  db:\n    image: postgres:16\n    volumes:\n      - pgdata:/var/lib/postgresql/data\nvolumes:\n  pgdata: {}",
        "automation:\n  - alias: Lights off when away\n    trigger:\n      - platform: state\n        entity_id: group.family\n        to: not_home\n    action:\n      - service: light.turn_off\n        target: {entity_id: all}",
        "name: ci\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: pip install -e .[dev]\n      - run: pytest -q",
        "model:\n  default: anthropic/claude-sonnet-4.6\n  provider: openrouter\nmemory:\n  provider: honcho\nsessions:\n  auto_prune: false",
    ),
    "json": (
        "{\n  \"name\": \"my-app\",\n  \"scripts\": {\n    \"dev\": \"vite\",\n    \"build\": \"vite build\",\n    \"test\": \"vitest run\"\n  }\n}",
        "{\n  \"session_id\": \"20260101_120000_ab12cd\",\n  \"source\": \"telegram\",\n  \"message_count\": 42,\n  \"tool_call_count\": 7\n}",
        "{\n  \"compilerOptions\": {\n    \"strict\": true,\n    \"target\": \"ES2022\",\n    \"moduleResolution\": \"bundler\"\n  }\n}",
    ),
    "rust": (
        "use std::collections::HashMap;\n\nfn count_words(text: &str) -> HashMap<&str, usize> {\n    let mut counts = HashMap::new();\n    for word in text.split_whitespace() {\n        *counts.entry(word).or_insert(0) += 1;\n    }\n    counts\n}",
        "let mut state = state.lock().await;\nlet pending = std::mem::take(&mut state.pending);\ndrop(state);\nfor job in pending {\n    tokio::spawn(run(job));\n}",
        "[workspace]\nmembers = [\"core\", \"cli\", \"server\"]\nresolver = \"2\"\n\n[workspace.dependencies]\nserde = { version = \"1\", features = [\"derive\"] }",
    ),
    "typescript": (
        "export default defineConfig({\n  server: { port: 5173, proxy: { '/api': 'http://localhost:8080' } },\n  build: { sourcemap: true },\n});",
        "const rows = data?.sessions ?? [];\nreturn rows.map((s) => ({ id: s.id, title: s.title ?? 'Untitled' }));",
    ),
    "sql": (
        "EXPLAIN ANALYZE\nSELECT * FROM orders WHERE customer_id = 42 ORDER BY created_at DESC LIMIT 20;\nCREATE INDEX CONCURRENTLY idx_orders_customer_created ON orders(customer_id, created_at DESC);",
        "SELECT source, COUNT(*) AS n, SUM(estimated_cost_usd) AS usd\nFROM sessions\nGROUP BY source\nORDER BY usd DESC;",
    ),
    "go": (
        "func handler(w http.ResponseWriter, r *http.Request) {\n\tctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)\n\tdefer cancel()\n\tif err := svc.Do(ctx); err != nil {\n\t\thttp.Error(w, err.Error(), http.StatusBadGateway)\n\t}\n}",
    ),
    "nginx": (
        "server {\n    listen 443 ssl http2;\n    server_name example.com;\n    location / {\n        proxy_pass http://127.0.0.1:8080;\n        limit_req zone=api burst=20 nodelay;\n    }\n}",
    ),
}
_LANG_ALIASES = {"python": "python", "bash": "bash", "yaml": "yaml", "json": "json", "rust": "rust",
                 "typescript": "ts", "sql": "sql", "go": "go", "nginx": "nginx"}

# (titles, openers, words, code language or None, tech?)
_TOPICS = (
    (("Fix docker compose networking", "Docker deployment", "Container build cache", "docker-compose-up fails"),
     ("How do I deploy {project} with docker compose on {host}?",
      "My docker build for {project} fails with `{error}`.",
      "The docker container for {project} keeps restarting on {host}. Can you check the logs?"),
     ("docker", "compose", "container", "image", "volume", "network", "healthcheck"), "yaml", True),
    (("Kubernetes ingress setup", "k8s rollout stuck", "Helm chart values"),
     ("The kubernetes rollout for {project} is stuck at 1/3 pods.", "Write a helm values file for {project}."),
     ("pod", "rollout", "ingress", "helm", "kubectl", "node"), "yaml", True),
    (("Nginx reverse proxy", "SSL certificate renewal", "Rate limiting nginx"),
     ("Set up nginx as a reverse proxy for {project} on {host}.", "certbot says `{error}` on {host}."),
     ("nginx", "certbot", "tls", "proxy", "upstream", "certificate"), "nginx", True),
    (("Migrate SQLite to Postgres", "Slow query on orders table", "Postgres vacuum tuning"),
     ("Plan a migration from SQLite (state.db) to Postgres for {project}.",
      "This query on {project} takes 9 seconds. Can you suggest an index?"),
     ("postgres", "index", "migration", "vacuum", "query", "schema"), "sql", True),
    (("Python asyncio deadlock", "httpx timeout handling", "Refactor data layer"),
     ("Refactor the {project} data layer to use {lib} properly.", "My asyncio code hangs: `{error}`."),
     ("asyncio", "coroutine", "event loop", "timeout", "httpx", "task"), "python", True),
    (("Rust borrow checker help", "Cargo workspace layout", "tokio task leak"),
     ("The borrow checker rejects this: `{error}`. How do I restructure it?",
      "Set up a cargo workspace for {project} with a shared core crate."),
     ("rust", "cargo", "borrow", "lifetime", "tokio", "crate"), "rust", True),
    (("pytest fixtures cleanup", "Flaky test in CI", "GitHub Actions CI"),
     ("The tests for {project} are flaky in CI. Here is the failure: `{error}`",
      "Add a GitHub Actions workflow that runs pytest for {project}."),
     ("pytest", "fixture", "flaky", "workflow", "coverage", "ci"), "python", True),
    (("pre-commit hooks", "Monorepo split", "Vite build config"),
     ("Add pre-commit hooks with ruff and mypy to {project}.", "Split {project} into a monorepo with vite."),
     ("pre-commit", "ruff", "mypy", "monorepo", "vite", "lint"), "typescript", True),
    (("Pandas groupby help", "Plot session analytics", "CSV cleanup"),
     ("Group this CSV by week and plot the token usage trend.", "Clean up the messy date column in export.csv."),
     ("pandas", "groupby", "csv", "dataframe", "plot", "resample"), "python", True),
    (("Help with Home Assistant automation", "Lights automation"),
     ("Write a Home Assistant automation that turns the lights off when everyone leaves.",),
     ("automation", "trigger", "entity", "lights", "zigbee", "sensor"), "yaml", True),
    (("NAS backup schedule", "Nightly backup check", "rsync vs restic"),
     ("Check that last night's backup to {host} finished and report sizes.", "Should I use rsync or restic for the NAS?"),
     ("backup", "rsync", "restic", "snapshot", "nas", "retention"), "bash", True),
    (("Memory provider setup", "Hermes config tweaks", "Skills cleanup"),
     ("Set up the honcho memory provider for hermes-agent.", "Why doesn't session_search find my chat about {project}?"),
     ("memory", "session_search", "skills", "toolset", "config", "provider"), "yaml", True),
    (("Telegram bot stops replying", "Gateway reconnect loop", "Discord slash commands"),
     ("The telegram bot stops replying after a few hours. Logs: `{error}`",
      "How do I register discord slash commands for the hermes-agent gateway?"),
     ("gateway", "telegram", "discord", "webhook", "bot", "reconnect"), "python", True),
    (("Help with chat-send webhook", "Slack alert routing"),
     ("Wire up the chat-send webhook so {project} posts alerts to our channel.",),
     ("chat-send", "webhook", "alert", "channel", "payload", "retry"), "json", True),
    (("Browser automation login", "Monitor page changes", "Scrape product prices"),
     ("Log into the vendor portal with the browser and download the latest invoice.",
      "Scrape the prices from this product page every morning."),
     ("browser", "page", "selector", "login", "invoice", "screenshot"), None, False),
    (("Stock research NVDA", "Quarterly earnings summary"),
     ("Research the latest earnings for NVDA and summarize the guidance.",),
     ("earnings", "guidance", "revenue", "margin", "forecast", "portfolio"), None, False),
    (("Paper summary: mixture of experts", "Literature review RAG", "Benchmark comparison"),
     ("Summarize recent papers on mixture-of-experts routing.", "Compare RAG approaches for long-context question answering."),
     ("arxiv", "experts", "routing", "retrieval", "benchmark", "summary"), None, False),
    (("Kyoto itinerary", "Cheap flights to Taipei", "Weekend trip plan"),
     ("Plan a 3-day itinerary in {city} with good food and not too much walking.",),
     ("itinerary", "flight", "hotel", "museum", "train", "budget"), None, False),
    (("Sourdough starter help", "Ramen broth recipe", "Weeknight dinner ideas"),
     ("My sourdough starter smells like acetone. Is it dead?",
      "Give me three weeknight dinner ideas with what's in my fridge: eggs, spinach, feta."),
     ("recipe", "starter", "broth", "oven", "ingredients", "dinner"), None, False),
    (("Inbox triage", "Apology email to customer", "Meeting notes summary"),
     ("Triage my inbox and flag anything urgent.", "Draft an apology e-mail to a customer about yesterday's outage."),
     ("inbox", "email", "meeting", "reply", "newsletter", "urgent"), None, False),
    (("Expense report", "Quarterly budget review"),
     ("Summarize my spending for last quarter from the attached CSV.",),
     ("expense", "budget", "invoice", "revenue", "category", "receipt"), "sql", False),
    (("Logo concept", "Describe screenshot", "Voice note reply"),
     ("Generate a logo concept for {project}: minimal, geometric.", "Reply to this voice note with a short audio message."),
     ("logo", "image", "screenshot", "audio", "voice", "palette"), None, False),
    (("GPU out of memory", "Fine-tune on gpu-box"),
     ("Training on {host} fails with `{error}`.",),
     ("gpu", "cuda", "batch size", "checkpoint", "vram", "training"), "python", True),
    (("Release notes", "Blog post draft", "Changelog for P2.2"),
     ("Write release notes for {project} P2.2 from the merged PRs.",),
     ("release", "changelog", "notes", "feature", "fix", "draft"), None, False),
    (("Quick question", "Random chat"),
     ("hey, are you there?", "what's a good name for a cat?"),
     ("question", "idea", "name", "fact", "thanks", "weekend"), None, False),
)
_TITLE_DECOR = ("", "", " for {project}", " on {host}", " in {city}", " ({lib})", "{project}: ", " – {word}",
                " and {word}", " ({word})")
_CJK_TITLES = ("项目复盘：大别山项目", "记忆断裂问题排查", "Agent通信协议设计", "データベースのバックアップ", "会話履歴の検索",
               "서버 모니터링 설정", "部署失败排查", "東京ラーメン巡り", "배포 자동화")
_EMOJI_TITLES = ("🚀 Launch checklist", "emoji only 🚀🚀🚀", "Deploy fix ✅", "🐛 Bug bash notes", "🎉 Party planning",
                 "📦 Package cleanup", "🤖 Bot ideas")
_BRANCH_NAMES = ("try-sqlite-fts", "experiment: httpx client", "plan-b", "sp_new approach", "alt fix with docker",
                 "what-if rewrite", "keep-old-api")

_FOLLOWUPS = (
    "what about {file}?", "that didn't work: `{error}`", "can you compare {w} with {w2} in a table?",
    "ok. next: the {w}", "continue", "perfect 👍", "is there a simpler way to handle the {w}?",
    "why {w} and not {w2}?", "can you write that to {file}?", "summarize what we did so far",
    "does this also apply to {host}?", "how would you test the {w} change?", "wait, which {w} did you mean?",
    "ok, now do the same for {project}", "Looks good. Ship it 🚀", "undo that last change",
    "I got a different error now: `{error}`", "great, thanks! one more thing about {w}",
    "can you check the docker logs on {host} too?", "what's the risk if we skip the {w} step?",
    "please keep chat-send and sp_new as they are", "run docker-compose-up again and tell me what changed",
)
_CRON_PROMPTS = (
    ("Nightly backup check", "[cron] Check that last night's backup finished and report sizes."),
    ("Weekly metrics report", "[cron] Compile the weekly metrics report for {project}."),
    ("Daily standup digest", "[cron] Run the daily standup digest and post it to #team."),
    ("Docker image updates", "[cron] Check for new docker image versions of the stacks on {host}."),
    ("Inbox summary", "[cron] Summarize unread e-mail and flag anything urgent."),
    ("Certificate expiry check", "[cron] Check TLS certificate expiry for all hosts."),
)
_INTROS = (
    "Done — the {w} is now configured.", "Here's what I found about {w}.",
    "Short answer: yes, but watch out for the {w}.", "The root cause is `{error}`; here's the fix.",
    "I checked {file} and the {w} looks fine.", "Sure! Here's a plan for the {w}.",
    "Good news: the {w} works now.", "I looked into the {w} on {host}.",
)
_CJK_TOOLCALL_TEXT = ("我先看一下日志。", "先检查一下 docker 容器的状态。", "ログを確認します。", "로그를 먼저 확인할게요.",
                      "我查一下通信模块的配置。")
_TOOLCALL_TEXT = ("Let me check that.", "I'll look at {file} first.", "Running a quick command to inspect the {w}.",
                  "On it.", "Searching for {w} info.", "Let me look at the docker setup first.")
_SENTENCES = (
    "The {w} depends on the {w2}, so change them together.",
    "This keeps the {w} backwards compatible with what {project} already does.",
    "If the {w} fails again, the logs on {host} will show `{error}` first.",
    "I'd keep the change small and verify it with the existing tests.",
    "Docker caches the layers, so only the last step is rebuilt.",
    "Note that {file} is also read by the CI job.",
    "The same approach works for {project}, only the paths differ.",
    "You can undo this at any time by reverting {file}.",
)
_LIST_ITEMS = (
    "Restart the {w} service on {host}", "Pin the {lib} version in {file}", "Run the tests again with `pytest -q`",
    "Check `docker compose ps` for unhealthy containers", "Document the {w} in the README",
    "Keep an eye on the {w} metrics", "Rotate the credentials used by chat-send", "Remove the unused {w2} config",
    "Add a retry with backoff around the {w} call", "Open a PR titled \"Fix {w} for P2.2\"",
)
_REASONING = (
    "The user wants {w}; I should first check the current state before changing anything.",
    "Plan: 1) inspect, 2) propose a minimal fix, 3) verify with tests. Keep the answer short.",
    "The previous tool output already contains the {w} details, no need for another call.",
    "I need more context about {w}. A web search will be faster than guessing.",
    "Two options: patch {file} directly or run the existing script. Running the script is less risky.",
    "The error `{error}` usually means a stale lock or a missing dependency; verify with a quick command.",
    "Docker is involved, so check `docker compose ps` before touching the config.",
)
_TERMINAL_CMDS = (
    "docker compose ps", "docker logs --tail 50 {project}-web-1", "git status --short", "pytest -q",
    "kubectl get pods -n prod", "journalctl -u nginx --since '1 hour ago' | tail -n 20", "df -h /",
    "grep -rn \"chat-send\" src/", "docker compose up -d", "ls -la ~/stacks/{project}",
    "sqlite3 ~/.hermes/state.db 'select count(*) from sessions'", "nvidia-smi", "cat <<<EOF > notes.md",
)
_TECH_TOOLS = (("terminal", 30), ("read_file", 16), ("write_file", 6), ("patch", 8), ("search_files", 8),
               ("execute_code", 8), ("web_search", 8), ("session_search", 3), ("delegate_task", 3), ("todo", 3),
               ("memory", 2), ("skill_view", 2), ("web_extract", 3))
_OTHER_TOOLS = (("web_search", 25), ("web_extract", 12), ("browser_navigate", 8), ("browser_snapshot", 6),
                ("browser_click", 5), ("browser_type", 3), ("vision_analyze", 5), ("image_generate", 4),
                ("text_to_speech", 3), ("send_message", 5), ("cronjob", 3), ("clarify", 3), ("memory", 3),
                ("terminal", 6), ("execute_code", 5), ("todo", 2), ("session_search", 3))

_LOG_LINES = (
    "{ts} web-1  | INFO  GET /api/sessions 200 {ms}ms",
    "{ts} web-1  | WARN  slow query ({ms}ms): SELECT * FROM messages WHERE session_id = ?",
    "{ts} db-1   | LOG:  checkpoint complete: wrote {ms} buffers",
    "{ts} web-1  | ERROR {error}",
    "{ts} worker-1 | INFO  job chat-send finished in {ms}ms",
    "{ts} proxy-1 | 172.18.0.1 - - \"POST /hooks/chat-send HTTP/1.1\" 204 0",
    "{ts} web-1  | DEBUG cache hit ratio 0.{ms}",
    "{ts} docker | Container {project}-web-1  Started",
)

_MORE_SENTENCES = (
    "The {w} on {host} was configured for the old layout, which is why it only fails after a restart.",
    "I kept the diff minimal: one change in {file} and a note in the README.",
    "Running it twice is safe, because the script checks whether the {w} already exists.",
    "If you prefer {lib}, the same idea works, but you need to pin the version in CI as well.",
    "The container exits with code 137 when the memory limit is hit, so raise it in docker-compose.yml.",
    "Most of the time goes into the {w2} step; caching it cuts the run from minutes to seconds.",
    "Nothing in the logs points at the network, so the {w} itself is the likely culprit.",
    "This matches what the upstream docs recommend for {project}-style deployments.",
    "Keep the old {w} around for a week so you can roll back without a migration.",
    "The warning about `{error}` is harmless here, it comes from a dependency.",
    "You can verify the result with `docker compose ps` and the health endpoint.",
    "For {project}, the simplest path is to move the {w} behind a feature flag first.",
)
_STEP_TITLES = ("Check the current state", "Apply the fix", "Verify", "Clean up", "Roll out", "Back up first",
                "Update the config", "Restart the service", "Write a test", "Document it")
_TERMINAL_OUTPUTS = (
    "NAME                IMAGE                       STATUS                    PORTS\n{project}-web-1     ghcr.io/acme/web:latest     Up 3 hours (healthy)      0.0.0.0:8080->8080/tcp\n{project}-db-1      postgres:16                 Up 3 hours (healthy)      5432/tcp\n{project}-worker-1  ghcr.io/acme/worker:latest  Restarting (137) 5 seconds ago",
    "============================= test session starts ==============================\nplatform linux -- Python 3.11.7, pytest-8.3.2\ncollected 142 items\n\ntests/test_api.py ........................F.....                           [ 21%]\ntests/test_db.py ..........................................................  [ 62%]\ntests/test_views.py .....................................................   [100%]\n\n=================================== FAILURES ===================================\n___________________________ test_session_search ___________________________\nE       {error}\n=========================== 1 failed, 141 passed in 12.31s ===========================",
    "NAME                         READY   STATUS             RESTARTS   AGE\nweb-6d9f7c8b5-2xkqp          1/1     Running            0          3h\nweb-6d9f7c8b5-8zr4t          0/1     CrashLoopBackOff   7          14m\nworker-5b7c9d6f4-lm2vn       1/1     Running            1          3h",
    "Filesystem      Size  Used Avail Use% Mounted on\n/dev/sda1       468G  401G   44G  91% /\ntmpfs            16G  1.2M   16G   1% /run\n/dev/sdb1       3.6T  2.1T  1.4T  61% /volume1",
    " M src/main.py\n M docker-compose.yml\n?? notes.md\n?? scripts/backup.sh",
    "Sending build context to Docker daemon  48.1MB\nStep 1/9 : FROM python:3.11-slim\n ---> 2b5a8f1c3d4e\nStep 2/9 : WORKDIR /app\n ---> Using cache\nStep 3/9 : COPY requirements.txt .\n ---> Using cache\nStep 4/9 : RUN pip install -r requirements.txt\n ---> Running in 7c1e2d3f4a5b\nSuccessfully built 9f8e7d6c5b4a\nSuccessfully tagged {project}:latest",
)


def _make_pools():
    """Pre-formatted lines (fixed seed: the pools are the same for every database)."""
    r = random.Random(20261101)
    words = sorted({w for t in _TOPICS for w in t[2]})

    def fill(t):
        return t.format(project=r.choice(_PROJECTS), host=r.choice(_HOSTS), city=r.choice(_CITIES),
                        lib=r.choice(_LIBS), w=r.choice(words), w2=r.choice(words), word=r.choice(words),
                        file=r.choice(_FILES), error=r.choice(_ERRORS))

    logs = []
    for _ in range(3000):
        ts = (f"2026-{r.randint(1, 10):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:"
              f"{r.randint(0, 59):02d}:{r.randint(0, 59):02d}.{r.randint(0, 999):03d}Z")
        logs.append(r.choice(_LOG_LINES).format(ts=ts, ms=r.randint(3, 4000), error=r.choice(_ERRORS),
                                                project=r.choice(_PROJECTS)))
    sentences = [fill(r.choice(_SENTENCES + _MORE_SENTENCES)) for _ in range(3000)]
    return tuple(logs), tuple(sentences)


# --------------------------------------------------------------------------------------------
# Models, prices, billing
# --------------------------------------------------------------------------------------------

# model -> (weight, usd per 1M tokens: input, output, cache_read, cache_write, reasoning family)
_MODELS = {
    "anthropic/claude-sonnet-4.6": (24, (3.0, 15.0, 0.30, 3.75), "anthropic"),
    "anthropic/claude-opus-4.6": (5, (15.0, 75.0, 1.50, 18.75), "anthropic"),
    "openai/gpt-5": (9, (1.25, 10.0, 0.125, 0.0), "openai"),
    "openai/gpt-5-mini": (12, (0.25, 2.0, 0.025, 0.0), "openai"),
    "google/gemini-2.5-pro": (5, (1.25, 10.0, 0.125, 0.0), "plain"),
    "google/gemini-3-pro": (4, (2.0, 12.0, 0.20, 0.0), "plain"),
    "deepseek/deepseek-chat": (4, (0.28, 0.42, 0.028, 0.0), "content"),
    "deepseek/deepseek-v3.2": (3, (0.28, 0.42, 0.028, 0.0), "content"),
    "qwen/qwen3-coder": (5, (0.22, 0.95, 0.022, 0.0), "none"),
    "nousresearch/hermes-4-405b": (5, (1.0, 3.0, 0.0, 0.0), "plain"),
    "nousresearch/hermes-4-70b": (4, (0.13, 0.40, 0.0, 0.0), "plain"),
    "x-ai/grok-4": (4, (3.0, 15.0, 0.75, 0.0), "none"),
    "moonshotai/kimi-k2": (2, (0.60, 2.50, 0.15, 0.0), "content"),
    None: (4, (0.0, 0.0, 0.0, 0.0), "none"),
}
_MODEL_NAMES = tuple(_MODELS)
_MODEL_WEIGHTS = tuple(v[0] for v in _MODELS.values())

_OPENROUTER = ("openrouter", "https://openrouter.ai/api/v1", None, "provider_models_api", "openrouter-models-api")
_DIRECT = {
    "anthropic": ("anthropic", "https://api.anthropic.com", None, "official_docs_snapshot",
                  "anthropic-prompt-caching-2026-03-16"),
    "openai": ("openai-codex", "https://chatgpt.com/backend-api/codex", None, "official_docs_snapshot",
               "openai-pricing-2026-03-16"),
    "google": ("gemini", "https://generativelanguage.googleapis.com/v1beta", None, "official_docs_snapshot",
               "google-pricing-2026-03-16"),
}
_NOUS = ("nous", "https://inference-api.nousresearch.com/v1", "subscription_included", "none", None)
_LOCAL = (("custom", "http://127.0.0.1:11434/v1", None, "none", None),
          ("custom", "http://localhost:8080/v1", None, "none", None))

_SOURCES = (("cli", 26), ("telegram", 15), ("acp", 9), ("discord", 8), ("cron", 7), ("signal", 6), ("tui", 6),
            ("whatsapp", 5), ("api-server", 4), ("matrix", 4), ("slack", 4), ("batch", 3), ("webhook", 2),
            ("email", 2))
_SOURCE_NAMES = tuple(s for s, _ in _SOURCES)
_SOURCE_WEIGHTS = tuple(w for _, w in _SOURCES)
_GATEWAYS = frozenset(("telegram", "discord", "signal", "whatsapp", "matrix", "slack", "email"))
_MARKDOWN_OK = frozenset(("cli", "tui", "acp", "discord", "matrix", "slack"))
_END_REASONS = {
    "cli": (("cli_close", 70), ("new_session", 22), ("resumed_other", 6), ("session_reset", 2)),
    "tui": (("tui_close", 65), ("tui_shutdown", 25), ("new_session", 10)),
    "acp": (("cli_close", 45), ("session_reset", 35), ("new_session", 20)),
    "cron": (("cron_complete", 1),),
    "batch": (("new_session", 40), ("cli_close", 35), ("session_reset", 25)),
    "api-server": (("session_reset", 45), ("cli_close", 30), ("new_session", 25)),
    "webhook": (("session_reset", 45), ("new_session", 55)),
}
_GATEWAY_END = (("session_reset", 42), ("new_session", 33), ("session_switch", 25))

_SYSTEM_NOTES = ("[System note: The user switched model mid-session.]",)
_CRON_SYSTEM = "You are running as a scheduled cron job. Deliver the result to the home channel."

# showcase tags: forced into a few designated sessions so small databases always contain them
_MUST_ALL = frozenset(("xss_user", "xss_assistant", "xss_args", "xss_result", "xss_reasoning", "multimodal",
                       "cjk", "emoji", "repl", "heredoc", "hyphen", "docker", "long_tool", "table",
                       "code_python", "code_bash", "code_yaml", "code_json", "code_rust"))

# message-shape knobs (sizes tuned for ~1 KB per message on average, see the module's report)
_P_LONG_TOOL = 0.2       # eligible tool results (terminal, read_file, ...) of 5-20 KB
_P_CJK = 0.12            # user and final assistant messages (tool results are ASCII-escaped JSON),
_P_EMOJI = 0.12          # which gives about 6% of all messages, like the fixture
_P_XSS = 0.008
_P_MULTIMODAL = 0.006    # share of user messages

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_LOG_POOL, _SENTENCE_POOL = _make_pools()


def _utc(ts: float) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(seconds=ts)


def _wchoice(rng: random.Random, pairs):
    total = 0
    for _, w in pairs:
        total += w
    x = rng.random() * total
    for item, w in pairs:
        x -= w
        if x < 0:
            return item
    return pairs[-1][0]


def _hex(rng: random.Random, n: int) -> str:
    return "%0*x" % (n, rng.getrandbits(4 * n))


def _tok(s: str | None) -> int:
    return (len(s) // 4 + 1) if s else 0


# --------------------------------------------------------------------------------------------
# Session specs and skeletons
# --------------------------------------------------------------------------------------------

class _Spec:
    __slots__ = ("idx", "id", "source", "user_id", "model", "model_config", "system_prompt", "parent", "start",
                 "end", "end_reason", "title", "seed", "n_own", "copy_from", "copy_n", "first", "scale",
                 "billing", "topic", "must", "goal", "end_gap", "lead_gap", "duration", "reasoning_on",
                 "cost_mode", "cron_prompt", "kind", "force_tools", "gap_profile", "text_scale")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def n_total(self) -> int:
        return self.n_own + (self.copy_n or 0)


# step codes
_S, _U, _A, _T = 0, 1, 2, 3


def _skeleton(seed: int, n: int, first: str | None, profile: str, lead_gap: bool, force_tools: bool):
    """Exact-length turn structure: list of (code, k, gap_before) with n entries.

    code _S system, _U user, _A assistant with k tool calls (0 = final answer), _T k-th tool result.
    """
    rng = random.Random(seed * 2 + 1)
    steps: list[tuple[int, int, float]] = []
    rem = n
    if rem <= 0:
        return steps
    lp = rng.lognormvariate
    if profile == "gateway":
        mu_user, p_pause, pause = math.log(80), 0.12, (1200.0, 28000.0)
    elif profile == "auto":
        mu_user, p_pause, pause = math.log(8), 0.0, (0.0, 0.0)
    elif profile == "email":
        mu_user, p_pause, pause = math.log(900), 0.3, (1800.0, 20000.0)
    else:
        mu_user, p_pause, pause = math.log(45), 0.05, (600.0, 5400.0)

    def user_gap():
        if p_pause and rng.random() < p_pause:
            return rng.uniform(*pause)
        return min(3 + lp(mu_user, 0.9), 3600.0)

    first_gap = user_gap() if lead_gap else 0.0
    if first is not None:
        steps.append((_S, 0, first_gap))
        first_gap = rng.uniform(0.001, 0.05)
        rem -= 1
    turn = 0
    while rem > 0:
        gap = first_gap if turn == 0 else user_gap()
        steps.append((_U, 0, gap))
        rem -= 1
        turn += 1
        if rem == 0:
            break
        x = rng.random()
        rounds = 0 if x < 0.38 else 1 if x < 0.62 else 2 if x < 0.78 else 3 if x < 0.88 else rng.randint(4, 8)
        if force_tools and turn == 1:
            rounds = max(rounds, 3)
        after_user = True
        for _ in range(rounds):
            if rem - 1 < 2:
                break
            y = rng.random()
            k = 1 if y < 0.6 else 2 if y < 0.9 else 3
            k = min(k, rem - 2)
            steps.append((_A, k, (2 + lp(1.8, 0.6)) if after_user else (1.5 + lp(1.6, 0.6))))
            after_user = False
            for i in range(k):
                steps.append((_T, i, rng.uniform(20, 120) if rng.random() < 0.04 else 0.3 + rng.expovariate(0.5)))
            rem -= 1 + k
        steps.append((_A, 0, min((2 + lp(2.0, 0.7)) if after_user else (1.5 + lp(1.7, 0.6)), 180.0)))
        rem -= 1
    return steps


def _span(steps, scale: float) -> float:
    """Seconds from the first message (or session start) to the last message."""
    total = 0.0
    for i, st in enumerate(steps):
        g = st[2] * scale
        total += g if (i == 0 and st[2] == 0.0) else max(g, 0.001)
    return total


def _sample_count(rng: random.Random, mean: float, cap: int, lo: int = 2) -> int:
    sigma = 0.85
    mu = math.log(max(mean, 1.0)) - sigma * sigma / 2
    return max(lo, min(cap, int(round(rng.lognormvariate(mu, sigma)))))


# --------------------------------------------------------------------------------------------
# Planner: decides every session row except the counters
# --------------------------------------------------------------------------------------------

_HOUR_WEIGHTS = tuple((h, (1 if h < 6 else 4 if h < 8 else 7 if h < 18 else 6 if h < 23 else 3)) for h in range(24))


class _Planner:
    def __init__(self, rng: random.Random, sessions: int, now: float, mean: float, long_n: int,
                 text_scale: float = 1.0):
        self.rng = rng
        self.text_scale = text_scale
        self.n = sessions
        self.now = now
        self.mean = mean
        self.cap = max(40, int(mean * 8))
        self.long_n = long_n
        self.used_ids: set[str] = set()
        self.used_titles: set[str] = set()      # lower-cased: SQLite LIKE in Hermes' lineage lookup ignores case
        self.lineage: dict[str, int] = {}        # lower-cased base title -> highest " #N" handed out
        self.n_specs = 0
        r = rng
        self.users = {
            "telegram": [str(r.randint(100_000_000, 7_999_999_999)) for _ in range(7)],
            "discord": [str(r.randint(10**17, 10**18 - 1)) for _ in range(8)],
            "signal": ["+" + str(r.randint(10**10, 10**12 - 1)) for _ in range(5)],
            "whatsapp": [str(r.randint(10**10, 10**12 - 1)) + "@s.whatsapp.net" for _ in range(5)],
            "matrix": ["@kim:matrix.org", "@li.wei:matrix.org", "@yuki:matrix.org", "@sam:matrix.org"],
            "slack": ["U0" + "".join(r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(9))
                      for _ in range(5)],
            "email": ["ops@example.com", "alex@example.com", "billing@example.org"],
        }
        # cron jobs: (job id, prompt index, hour of day)
        self.cron_jobs = [(_hex(r, 12), i % len(_CRON_PROMPTS), r.randint(0, 23)) for i in range(6)]
        self.batch_runs = [[_hex(r, 6), 0] for _ in range(4)]

    # ---- small helpers -------------------------------------------------------------------
    def _fill(self, tmpl: str, topic) -> str:
        r = self.rng
        words = topic[2]
        return tmpl.format(project=r.choice(_PROJECTS), host=r.choice(_HOSTS), city=r.choice(_CITIES),
                           lib=r.choice(_LIBS), word=r.choice(words), w=r.choice(words),
                           w2=r.choice(words), file=r.choice(_FILES), error=r.choice(_ERRORS))

    def _claim(self, t: str) -> bool:
        k = t.lower()
        if k in self.used_titles:
            return False
        self.used_titles.add(k)
        return True

    def _unique(self, cand: str, when: float) -> str:
        """cand, else cand + " (YYYYmmdd)", else cand + " (YYYYmmdd-k)"."""
        cand = cand[:80].rstrip()
        if self._claim(cand):
            return cand
        day = _utc(when).strftime("%Y%m%d")
        alt = f"{cand} ({day})"
        k = 2
        while not self._claim(alt):
            alt = f"{cand} ({day}-{k})"
            k += 1
        return alt

    def _title(self, topic, when: float) -> str:
        r = self.rng
        x = r.random()
        if x < 0.03:
            base = r.choice(_CJK_TITLES)
        elif x < 0.06:
            base = r.choice(_EMOJI_TITLES)
        else:
            base = r.choice(topic[0])
        for attempt in range(5):
            decor = r.choice(_TITLE_DECOR) if (attempt or r.random() < 0.6) else ""
            cand = (self._fill(decor, topic) + base) if decor.endswith(": ") else (base + self._fill(decor, topic))
            if len(cand) <= 100 and self._claim(cand):
                return cand
        return self._unique(base, when)

    def _lineage_next(self, title: str | None) -> str | None:
        """Hermes' get_next_title_in_lineage() over the titles handed out so far (None where Hermes'
        set_session_title would refuse the result as too long: the callers swallow that error)."""
        base = title if title is not None else "branch"
        head, sep, num = base.rpartition(" #")
        if sep and num.isdigit():
            base = head
        low = base.lower()
        best = self.lineage.get(low, 0)
        if low in self.used_titles:
            best = max(best, 1)
        if best == 0:
            if self._claim(base):
                return base
            best = 1
        nxt = best + 1
        if len(f"{base} #{nxt}") > 100:
            return None
        while not self._claim(f"{base} #{nxt}"):
            nxt += 1
        self.lineage[low] = nxt
        return f"{base} #{nxt}"

    def _model_and_billing(self):
        r = self.rng
        model = r.choices(_MODEL_NAMES, _MODEL_WEIGHTS)[0]
        if model is None:
            return None, None, "null"
        vendor = model.split("/")[0]
        x = r.random()
        if vendor in _DIRECT:
            share = {"anthropic": 0.6, "openai": 0.5, "google": 0.7}[vendor]
            if x < share:
                return model, _DIRECT[vendor], "estimated"
            return model, _OPENROUTER, ("actual" if r.random() < 0.4 else "estimated")
        if vendor == "nousresearch":
            if x < 0.65:
                return model, _NOUS, "included"
            if x < 0.8:
                return model, _LOCAL[1], "unknown"
            return model, _OPENROUTER, ("actual" if r.random() < 0.4 else "estimated")
        if model == "qwen/qwen3-coder" and x < 0.5:
            return model, _LOCAL[0], "unknown"
        return model, _OPENROUTER, ("actual" if r.random() < 0.4 else "estimated")

    def _model_config(self) -> str:
        r = self.rng
        rc = None if r.random() < 0.45 else {"enabled": True, "effort": r.choice(("low", "medium", "high"))}
        return json.dumps({"max_iterations": r.choice((60, 90, 90, 120)), "reasoning_config": rc})

    def _system_prompt(self, source: str) -> str:
        r = self.rng
        lines = r.sample(_MEMORY_LINES, r.randint(1, 4))
        mem = "\n".join("- " + ln.format(city=r.choice(_CITIES), project=r.choice(_PROJECTS), host=r.choice(_HOSTS))
                        for ln in lines)
        md = "supported" if source in _MARKDOWN_OK else "limited"
        skills = ", ".join(r.sample(_SKILLS, r.randint(3, 7)))
        return (f"{_SYSTEM_HEAD}\n\n## Memory\n{mem}\n\n## Platform\nYou are talking to the user via {source}. "
                f"Format replies for that surface (markdown is {md}).\n\n## Skills\n{skills}")

    def _user_id(self, source: str):
        pool = self.users.get(source)
        if pool is None or self.rng.random() < 0.04:
            return None
        return self.rng.choice(pool)

    def _end_reason(self, source: str) -> str:
        if source in _GATEWAYS:
            return _wchoice(self.rng, _GATEWAY_END)
        return _wchoice(self.rng, _END_REASONS[source])

    @staticmethod
    def _profile(source: str) -> str:
        if source == "email":
            return "email"
        if source in _GATEWAYS:
            return "gateway"
        if source in ("cron", "batch", "webhook", "api-server"):
            return "auto"
        return "local"

    def _new(self, source: str, *, n: int, first=None, kind="normal", topic=None, lead_gap=False,
             force_tools=False, model_from: _Spec | None = None) -> _Spec:
        r = self.rng
        if topic is None:
            topic = r.randrange(len(_TOPICS))
        if model_from is not None:
            model, billing, cost_mode = model_from.model, model_from.billing, model_from.cost_mode
        else:
            model, billing, cost_mode = self._model_and_billing()
        sp = _Spec(idx=self.n_specs, source=source, seed=r.getrandbits(62), n_own=n, copy_n=0, first=first,
                   kind=kind, topic=topic, model=model, billing=billing, cost_mode=cost_mode, scale=1.0,
                   lead_gap=lead_gap, force_tools=force_tools, must=frozenset(), gap_profile=self._profile(source),
                   user_id=self._user_id(source), start=0.0, reasoning_on=False, text_scale=self.text_scale)
        self.n_specs += 1
        sp.model_config = self._model_config()
        sp.system_prompt = self._system_prompt(source)
        sp.reasoning_on = '"enabled": true' in sp.model_config
        sp.end_gap = r.uniform(3, 600)
        return sp

    def _duration(self, sp: _Spec) -> float:
        """Seconds from started_at to the last message (0 for empty sessions)."""
        d = (sp.copy_n - 1) * 0.0015 if sp.copy_n else 0.0
        if sp.n_own:
            steps = _skeleton(sp.seed, sp.n_own, sp.first, sp.gap_profile, sp.lead_gap, sp.force_tools)
            d += _span(steps, sp.scale)
        sp.duration = d
        return d

    def _fit(self, sp: _Spec, limit: float) -> float:
        """Scale a session's gaps so that its span is at most ``limit`` seconds."""
        d = self._duration(sp)
        fixed = (sp.copy_n - 1) * 0.0015 if sp.copy_n else 0.0
        if d > limit > fixed and sp.n_own:
            own = d - fixed
            sp.scale = max(1e-5, sp.scale * (limit - fixed) / own * 0.97)
            d = self._duration(sp)
        return d

    def _count(self, factor: float = 1.0) -> int:
        return _sample_count(self.rng, self.mean * factor, self.cap)

    # ---- groups: sessions whose times depend on each other, laid out relative to 0 ------------
    def _single(self, source=None, n=None, must=frozenset(), title=True, active=False) -> list[_Spec]:
        r = self.rng
        if source is None:
            source = r.choices(_SOURCE_NAMES, _SOURCE_WEIGHTS)[0]
            if source == "cron" and not active and n is None and not must:
                return self._cron()
            if source == "cron":
                source = "cli"
        if n is None:
            n = self._count()
        first = "note" if n >= 3 and r.random() < 0.03 else None
        sp = self._new(source, n=n, first=first, force_tools=bool(must))
        sp.must = must
        self._duration(sp)
        sp.title = title  # resolved once the start time is known
        sp.end_reason = None if active else self._end_reason(source)
        return [sp]

    def _cron(self) -> list[_Spec]:
        r = self.rng
        job = r.choice(self.cron_jobs)
        sp = self._new("cron", n=max(2, min(self.cap, int(r.uniform(0.2, 0.8) * self.mean) + 2)), first="cron")
        sp.user_id = None
        sp.cron_prompt = job[1]
        sp.goal = job
        self._duration(sp)
        sp.title = "cron"
        sp.end_reason = "cron_complete"
        return [sp]

    def _chain(self, length: int) -> list[_Spec]:
        """Compression lineage: each parent ends with 'compression', the child starts right after."""
        r = self.rng
        source = r.choices(_SOURCE_NAMES[:12], _SOURCE_WEIGHTS[:12])[0]
        if source == "cron":
            source = "cli"
        topic = r.randrange(len(_TOPICS))
        members: list[_Spec] = []
        t = 0.0
        for i in range(length):
            last = i == length - 1
            n = self._count() if last else max(self._count(1.4), 6)
            first = None if i == 0 else ("compaction" if r.random() < 0.7 else None)
            sp = self._new(source, n=n, first=first, topic=topic, kind="normal" if i == 0 else "compress_child",
                           model_from=members[0] if members and r.random() < 0.93 else None)
            if members:
                sp.parent = members[-1]
                sp.user_id = members[0].user_id
                sp.system_prompt = members[-1].system_prompt
            sp.start = t
            d = self._duration(sp)
            sp.end_gap = r.uniform(3, 600) if last else r.uniform(0.5, 3.0)
            sp.end_reason = self._end_reason(source) if last else "compression"
            sp.title = "chain" if i == 0 else "lineage"
            t = sp.start + d + sp.end_gap + r.uniform(0.01, 0.05)
            members.append(sp)
        return members

    def _branch(self, parents: list[_Spec] | None = None, max_children: int = 2,
                source: str | None = None) -> list[_Spec]:
        """/branch: the parent ends ('branched', or 'session_switch' on gateways) and 1-2 children copy its
        history; the child title follows get_next_title_in_lineage(parent title or "branch") unless named."""
        r = self.rng
        if parents is None:
            parents = self._single(source=source or r.choice(("cli", "cli", "tui", "acp", "telegram", "discord")),
                                   n=max(self._count(), 4))
        parent = parents[-1]
        parent.end_reason = "session_switch" if parent.source in _GATEWAYS else "branched"
        parent.end_gap = r.uniform(5, 120)
        members = list(parents)
        end = parent.start + parent.duration + parent.end_gap
        k = 1 if (max_children < 2 or r.random() < 0.75) else 2
        for j in range(k):
            child = self._new(parent.source, n=self._count(0.8), topic=parent.topic, kind="branch_child",
                              lead_gap=True, model_from=parent)
            child.parent = parent
            child.user_id = parent.user_id
            child.copy_from = parent
            child.copy_n = parent.n_total
            child.start = end + r.uniform(0.01, 0.05) + (0 if j == 0 else r.uniform(60, 1800))
            self._duration(child)
            child.end_reason = self._end_reason(child.source)
            child.title = "branch_name" if r.random() < 0.25 else "lineage"
            members.append(child)
        return members

    def _subagents(self, k: int, parent_n=None) -> list[_Spec]:
        """delegate_task children: same source, started while the parent runs, untitled, no user id."""
        r = self.rng
        source = r.choice(("cli", "cli", "acp", "tui", "telegram", "discord", "api-server", "signal", "whatsapp"))
        parent = self._single(source=source, n=parent_n or max(self._count(1.3), 8))[0]
        members = [parent]
        pd = parent.duration
        for f in sorted(r.uniform(0.05, 0.85) for _ in range(k)):
            child = self._new(source, n=r.randint(3, 15), kind="subagent", model_from=parent)
            child.parent = parent
            child.user_id = None
            child.title = None
            child.start = parent.start + f * pd + r.uniform(0.5, 3)
            self._fit(child, max(5.0, (parent.start + pd) - child.start - 1.0))
            child.end_gap = r.uniform(0.3, 2.0)
            child.end_reason = None  # Hermes never records a reason for subagent sessions
            members.append(child)
        return members

    # ---- main -----------------------------------------------------------------------------
    def plan(self) -> tuple[list[_Spec], _Spec | None]:
        r = self.rng
        n = self.n
        groups: list[list[_Spec]] = []
        active: list[_Spec] = []
        remaining = n

        def take(g):
            nonlocal remaining
            groups.append(g)
            remaining -= len(g)

        # showcase sessions: every special content kind is forced into them, so that even tiny
        # databases contain the XSS corpus, multimodal content, CJK, emoji, REPL prompts, ...
        show = (("cli", "anthropic/claude-sonnet-4.6", "xss"), ("telegram", "openai/gpt-5", "cjk"),
                ("discord", "deepseek/deepseek-chat", "emoji"))
        n_show = 0 if n < 4 else 1 if n < 8 else 2 if n < 12 else 3
        for source, model, title in show[:n_show]:
            sp = self._single(source=source, n=max(40, min(self.cap, int(self.mean * 3))), must=_MUST_ALL)[0]
            vendor = model.split("/")[0]
            sp.model = model
            sp.billing, sp.cost_mode = (_DIRECT[vendor], "estimated") if vendor in _DIRECT else (_OPENROUTER, "actual")
            cfg = {"max_iterations": 90, "reasoning_config": {"enabled": True, "effort": "medium"}}
            if title == "xss":
                cfg["personality"] = '<script>alert(1)</script>"><svg onload=alert(1)>'
                sp.system_prompt = sp.system_prompt.replace(
                    "\n\n## Platform",
                    "\n- Note from user: <img src=x onerror=alert(1)> <script>alert(1)</script>\n\n## Platform")
            sp.model_config = json.dumps(cfg)
            sp.reasoning_on = True
            sp.title = title
            take([sp])
        if n >= 200:
            take(self._chain(9))
            take(self._subagents(14, parent_n=max(60, min(self.cap, int(self.mean * 4)))))
        if remaining >= 3:
            take(self._chain(3))
        if remaining >= 2:
            take(self._branch(max_children=min(2, remaining - 1), source="cli"))
        if remaining >= 2:
            take(self._subagents(1))
        n_active = 0 if n < 4 else min(12, max(2, n // 50))
        for _ in range(min(n_active, remaining)):
            g = self._single(active=True)
            active.append(g[0])
            take(g)
        n_empty = 0 if n < 10 else max(2, n // 60)
        for _ in range(min(n_empty, remaining)):
            take(self._single(n=0, title=r.random() < 0.5))
        while remaining > 0:
            x = r.random()
            if x < 0.075 and remaining >= 2:
                length = min(remaining, _wchoice(r, ((2, 40), (3, 30), (4, 15), (5, 9), (6, 6))))
                g = self._chain(length)
                if remaining - length >= 1 and r.random() < 0.1:
                    g = self._branch(parents=g, max_children=min(2, remaining - length))
                take(g)
            elif x < 0.105 and remaining >= 2:
                take(self._branch(max_children=min(2, remaining - 1)))
            elif x < 0.155 and remaining >= 2:
                take(self._subagents(min(remaining - 1, _wchoice(r, ((1, 60), (2, 25), (3, 15))))))
            else:
                take(self._single())
        assert remaining == 0
        self._place(groups, {id(s) for s in active})
        specs = [s for g in groups for s in g]
        long_spec = self._long() if self.long_n > 0 else None
        if long_spec is not None:
            specs.append(long_spec)
        specs.sort(key=lambda s: (s.start, s.idx))
        for sp in specs:  # in time order, so lineage numbers grow with time
            self._finish(sp)
        return specs, long_spec

    def _start_time(self) -> float:
        r = self.rng
        age_days = 365.0 * (r.random() ** 1.35)
        day0 = math.floor((self.now - age_days * 86400) / 86400) * 86400
        return day0 + _wchoice(r, _HOUR_WEIGHTS) * 3600 + r.uniform(0, 3600)

    def _place(self, groups, active_ids) -> None:
        r = self.rng
        now = self.now
        for g in groups:
            head = g[0]
            if id(head) in active_ids:
                start = now - r.uniform(0.2, 44) * 3600
                self._fit(head, max(60.0, (now - 30.0) - start))
                head.start = start
                head.end = None
                head.end_reason = None
                continue
            if head.kind == "normal" and head.source == "cron":
                job_hex, _, hour = head.goal
                first_start = math.floor(self._start_time() / 86400) * 86400 + hour * 3600 + r.uniform(0, 4.99)
                start, tries = first_start, 0
                while True:
                    cid = f"cron_{job_hex}_{_utc(start).strftime('%Y%m%d_%H%M%S')}"
                    if start + head.duration + head.end_gap < now - 60 and cid not in self.used_ids:
                        break
                    start -= 86400
                    tries += 1
                    if tries > 366:  # this job already ran every day: it is another job
                        job_hex, start, tries = _hex(r, 12), first_start, 0
                self.used_ids.add(cid)
                head.id = cid
                head.start = start
            else:
                base = self._start_time()
                last = max(s.start + s.duration + (s.end_gap or 0.0) for s in g)
                if base + last > now - 120:
                    base = now - 120 - last
                for s in g:
                    s.start = base + s.start
            for s in g:
                s.end = s.start + s.duration + s.end_gap

    def _long(self) -> _Spec:
        r = self.rng
        sp = self._new("cli", n=self.long_n, topic=0, force_tools=True)
        sp.model = "anthropic/claude-sonnet-4.6"
        sp.billing, sp.cost_mode = _DIRECT["anthropic"], "estimated"
        sp.kind = "long"
        sp.user_id = None
        d = self._fit(sp, 200 * 86400.0)
        sp.start = self.now - 3 * 86400 - d
        sp.end_gap = r.uniform(30, 300)
        sp.end = sp.start + d + sp.end_gap
        sp.end_reason = "cli_close"
        sp.title = "long"
        return sp

    def _new_id(self, sp: _Spec) -> str:
        r = self.rng
        stamp = _utc(sp.start).strftime("%Y%m%d_%H%M%S")
        while True:
            if sp.source == "cron":
                cid = f"cron_{_hex(r, 12)}_{stamp}"
            elif sp.source in ("cli", "tui"):
                cid = f"{stamp}_{_hex(r, 6)}"
            elif sp.source == "acp":
                h = _hex(r, 32)
                cid = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"
            elif sp.source == "batch":
                run = self.batch_runs[r.randrange(len(self.batch_runs))]
                cid = f"batch_{run[0]}_{run[1]:04d}"
                run[1] += 1
            else:
                cid = f"{stamp}_{_hex(r, 8)}"
            if cid not in self.used_ids:
                self.used_ids.add(cid)
                return cid

    def _finish(self, sp: _Spec) -> None:
        r = self.rng
        if sp.id is None:
            sp.id = self._new_id(sp)
        topic = _TOPICS[sp.topic]
        t = sp.title
        if t is True or t == "chain":
            sp.title = self._title(topic, sp.start) if r.random() < 0.8 else None
        elif t is False or t is None:
            sp.title = None
        elif t == "cron":
            cand = _CRON_PROMPTS[sp.cron_prompt][0] + self._fill(
                r.choice(("", " for {project}", " on {host}", " ({lib})")), topic)
            sp.title = self._unique(cand, sp.start) if r.random() < 0.85 else None
        elif t == "lineage":  # compression child: only when the parent had a title; /branch: always
            if sp.kind == "compress_child":
                sp.title = self._lineage_next(sp.parent.title) if sp.parent.title else None
            else:
                sp.title = self._lineage_next(sp.parent.title)
        elif t == "branch_name":
            sp.title = self._unique(r.choice(_BRANCH_NAMES), sp.start)
        else:
            sp.title = self._unique({"xss": "<script>alert(1)</script> title test",
                                     "cjk": "项目复盘：大别山项目",
                                     "emoji": "🚀 Launch checklist ✅",
                                     "long": "Marathon refactor of the hermes-dashboard viewer"}[t], sp.start)
        if sp.n_total == 0:  # Hermes fills these on the first API call
            sp.model_config = None
            sp.system_prompt = None


# --------------------------------------------------------------------------------------------
# Text: one generator object per session, all randomness from the session's own RNG
# --------------------------------------------------------------------------------------------

class _Filler(dict):
    """str.format_map mapping that draws only the placeholders a template uses."""

    __slots__ = ("text",)

    def __init__(self, text):
        super().__init__()
        self.text = text

    def __missing__(self, key):
        return self.text._value(key)


class _Text:
    def __init__(self, sp: _Spec):
        self.r = random.Random(sp.seed * 2)
        self.sp = sp
        self.topic = _TOPICS[sp.topic]
        self.words = self.topic[2]
        self.lang = self.topic[3]
        self.tech = self.topic[4]
        self.must = set(sp.must)
        self.project = self.r.choice(_PROJECTS)
        self.host = self.r.choice(_HOSTS)
        model = sp.model
        self.family = _MODELS[model][2] if model in _MODELS else "none"
        self.p_reason = (0.6 if sp.reasoning_on else 0.25) if self.family != "none" else 0.0
        self.filler = _Filler(self)
        # text_scale (see generate()): 1.0 takes exactly the historical code path, draw for draw
        ts = sp.text_scale if sp.text_scale is not None else 1.0
        self.ts = ts
        self.p_long = _P_LONG_TOOL if ts == 1.0 else min(1.0, _P_LONG_TOOL * ts)

    def n(self, k: int) -> int:
        """A count (sentences, lines, items) scaled by text_scale: at least 1, unchanged at 1.0."""
        if self.ts == 1.0:
            return k
        return max(1, int(round(k * self.ts)))

    def p(self, prob: float) -> float:
        """A probability of optional bulk (code blocks, pastes) scaled by text_scale."""
        if self.ts == 1.0:
            return prob
        return min(1.0, prob * self.ts)

    def has(self, tag: str) -> bool:
        if tag in self.must:
            self.must.discard(tag)
            return True
        return False

    def fill(self, tmpl: str) -> str:
        return tmpl.format_map(self.filler)

    def _value(self, key: str) -> str:
        r = self.r
        if key == "project":
            return self.project if r.random() < 0.8 else r.choice(_PROJECTS)
        if key == "host":
            return self.host if r.random() < 0.7 else r.choice(_HOSTS)
        if key in ("w", "w2", "word"):
            return r.choice(self.words)
        if key == "file":
            return r.choice(_FILES)
        if key == "error":
            return r.choice(_ERRORS)
        if key == "lib":
            return r.choice(_LIBS)
        if key == "city":
            return r.choice(_CITIES)
        raise KeyError(key)

    def para(self, k: int) -> str:
        """A paragraph: one topic sentence plus k-1 pooled ones."""
        r = self.r
        return " ".join([self.fill(r.choice(_SENTENCES))] + r.choices(_SENTENCE_POOL, k=self.n(k) - 1))

    def _extras(self, parts: list, *, allow_xss=True, xss_tag="") -> None:
        r = self.r
        if self.has("cjk"):
            parts.append("记忆断裂和Agent通信的问题，在大别山项目里也出现了。東京のサーバーです。안녕 세계")
        elif r.random() < _P_CJK:
            parts.append(r.choice(_CJK_SENTENCES))
        if self.has("emoji") or r.random() < _P_EMOJI:
            parts[-1] = parts[-1] + " " + "".join(r.choice(_EMOJI) for _ in range(r.randint(1, 3)))
        if allow_xss and (self.has(xss_tag) or r.random() < _P_XSS):
            if xss_tag and self.sp.must:
                parts.append("\n".join(XSS_CORPUS))
            else:
                parts.append(r.choice(XSS_CORPUS + _XSS_EXTRA))

    def code_block(self, lang: str | None = None) -> str:
        r = self.r
        for tag in ("code_python", "code_bash", "code_yaml", "code_json", "code_rust"):
            if tag in self.must:
                self.must.discard(tag)
                lang = tag[5:]
                break
        if lang is None:
            lang = self.lang if self.lang and r.random() < 0.75 else r.choice(("bash", "python", "json", "yaml"))
        return f"```{_LANG_ALIASES[lang]}\n{r.choice(_CODE[lang])}\n```"

    # ---- messages --------------------------------------------------------------------------
    def system(self, kind: str | None) -> str:
        if kind == "cron":
            return _CRON_SYSTEM
        if kind == "compaction":
            return (f"[CONTEXT COMPACTION] Earlier turns were summarized: the user is working on {self.project}; "
                    f"{self.r.choice(self.words)} was fixed.")
        return _SYSTEM_NOTES[0]

    def user(self, first: bool) -> str:
        r = self.r
        sp = self.sp
        if self.has("multimodal") or (not first and r.random() < _P_MULTIMODAL):
            text = r.choice(("What's in this screenshot?", "Can you read the error in this image?",
                             "Describe this docker dashboard screenshot.", "这张截图里的错误是什么？"))
            return "\x00json:" + json.dumps([{"type": "text", "text": text},
                                             {"type": "image_url",
                                              "image_url": {"url": "data:image/png;base64," + _PNG_1PX}}])
        if first and sp.kind == "subagent":
            parts = [self.fill(r.choice(("Investigate the {w} issue in {project} and report back.",
                                         "Find out why {file} breaks the {w} and summarize the fix.",
                                         "Research {w} options for {project}; return a short comparison.")))]
        elif first and sp.first == "cron" and sp.cron_prompt is not None:
            parts = [self.fill(_CRON_PROMPTS[sp.cron_prompt][1])]
        elif first:
            parts = [self.fill(r.choice(self.topic[1]))]
            if r.random() < 0.35:
                parts.append(self.para(r.randint(1, 3)))
            if r.random() < self.p(0.25):
                parts.append(self.paste())
        else:
            if r.random() < 0.06:
                return r.choice(_CJK_SENTENCES)
            parts = [self.fill(r.choice(_FOLLOWUPS))]
            if r.random() < 0.12:
                parts.append(self.para(r.randint(1, 2)))
            if r.random() < self.p(0.08):
                parts.append(self.paste())
        if self.has("hyphen") or r.random() < 0.03:
            parts.append(f"(see {r.choice(_HYPHEN_TERMS)} and {r.choice(_HYPHEN_TERMS)})")
        if self.has("docker") or r.random() < 0.04:
            parts.append("It runs in docker, if that matters.")
        self._extras(parts, xss_tag="xss_user")
        return "\n\n".join(parts)

    def paste(self) -> str:
        r = self.r
        x = r.random()
        if x < 0.4:
            return ("```\nTraceback (most recent call last):\n  File \"" + r.choice(_FILES) + "\", line "
                    + str(r.randint(2, 400)) + ", in <module>\n" + r.choice(_ERRORS) + "\n```")
        if x < 0.75:
            return "```\n" + "\n".join(r.choices(_LOG_POOL, k=self.n(r.randint(4, 20)))) + "\n```"
        return self.code_block()

    def assistant_final(self) -> str:
        r = self.r
        fill = self.fill
        parts = [fill(r.choice(_INTROS))]
        forced = bool(self.must)
        x = 0.5 if forced else r.random()
        if x < 0.18:  # short answer
            if r.random() < 0.6:
                parts.append(self.para(r.randint(1, 3)))
        elif x < 0.55:  # step by step
            parts.append(self.para(r.randint(2, 5)))
            parts.append("## " + fill(r.choice(("Plan", "What changed", "Steps", "Fix for the {w}",
                                                 "Why the {w} broke", "Next steps"))))
            for i, title in enumerate(r.sample(_STEP_TITLES, self.n(r.randint(2, 4)))):
                parts.append(f"### {i + 1}. {title}\n\n" + self.para(r.randint(1, 3)))
                if r.random() < self.p(0.5) or forced:
                    parts.append(self.code_block())
            parts.append("\n".join("- " + fill(r.choice(_LIST_ITEMS)) for _ in range(self.n(r.randint(2, 5)))))
        elif x < 0.75:  # comparison
            parts.append(self.para(r.randint(1, 3)))
            w = self.words
            rows = "\n".join(f"| {r.choice(w)} | {r.choice(('fast', 'safe', 'cheap', 'simple', 'well documented'))} | "
                             f"{r.choice(('risky', 'slower', 'more setup', 'costly', 'needs docker'))} |"
                             for _ in range(self.n(r.randint(3, 6))))
            parts.append("| option | pros | cons |\n|---|---|---|\n" + rows)
            parts.append("**Recommendation:** " + self.para(r.randint(2, 4)))
            parts.append("\n".join(f"{i + 1}. " + fill(r.choice(_LIST_ITEMS)) for i in range(self.n(r.randint(2, 5)))))
        else:  # explanation with code
            parts.append(self.para(r.randint(3, 6)))
            parts.append(self.code_block())
            if r.random() < 0.5:
                parts.append("\n".join("- " + fill(r.choice(_LIST_ITEMS)) for _ in range(self.n(r.randint(3, 6)))))
            parts.append(self.para(r.randint(1, 3)))
            if r.random() < 0.3:
                parts.append("> **Note:** " + self.para(1))
        if self.has("table"):
            parts.append("| step | status |\n|---|---|\n| build | ok |\n| deploy | pending |")
        if self.has("repl") or r.random() < 0.03:
            parts.append(r.choice(_REPL_BLOCKS))
        if self.has("heredoc") or r.random() < 0.02:
            parts.append(r.choice(_HEREDOC_BLOCKS))
        if r.random() < 0.05:
            parts.append(f"Related: `{r.choice(_HYPHEN_TERMS)}`, `{r.choice(_HYPHEN_TERMS)}`.")
        if r.random() < 0.12:
            parts.append(r.choice(("_Tip:_ you can re-run this any time with `/retry`.",
                                   "Want me to schedule this as a cron job?",
                                   "See [the docs](https://hermes-agent.nousresearch.com/docs) for details.")))
        self._extras(parts, xss_tag="xss_assistant")
        return "\n\n".join(parts)

    def toolcall_text(self):
        r = self.r
        x = r.random()
        if x < 0.4:
            return None
        if x < 0.44:
            return r.choice(_CJK_TOOLCALL_TEXT)
        text = self.fill(r.choice(_TOOLCALL_TEXT))
        return text + " " + r.choice(_EMOJI) if x > 0.96 else text

    def pick_tool(self) -> str:
        return _wchoice(self.r, _TECH_TOOLS if self.tech else _OTHER_TOOLS)

    def tool_args(self, name: str) -> dict:
        r = self.r
        xss = self.has("xss_args") or r.random() < _P_XSS
        w = r.choice(self.words)
        f = r.choice(_FILES)
        if name == "terminal":
            cmd = self.fill(r.choice(_TERMINAL_CMDS))
            if xss:
                cmd = f"echo '{r.choice(XSS_CORPUS)}' > /tmp/x.html"
            return {"command": cmd}
        if name == "read_file":
            return {"path": f}
        if name == "write_file":
            content = r.choice(_CODE[self.lang or "python"]) if not xss else "<html>" + "".join(XSS_CORPUS) + "</html>"
            return {"path": f, "content": content}
        if name == "patch":
            return {"path": f, "old_string": "timeout=1.0", "new_string": "timeout=30.0"}
        if name == "search_files":
            return {"pattern": w if not xss else XSS_CORPUS[0], "path": "src/"}
        if name == "execute_code":
            return {"code": r.choice(_CODE["python"])}
        if name == "web_search":
            return {"query": f"{w} {r.choice(self.words)} {self.project}" if not xss else XSS_CORPUS[1]}
        if name == "web_extract":
            return {"urls": [f"https://docs.example.com/{w.replace(' ', '-')}"]}
        if name == "browser_navigate":
            return {"url": f"https://en.wikipedia.org/wiki/{r.choice(_CITIES).replace(' ', '_')}"
                    if not xss else "javascript:alert(1)"}
        if name == "browser_click":
            return {"ref": f"e{r.randint(1, 40)}"}
        if name == "browser_type":
            return {"ref": f"e{r.randint(1, 40)}", "text": w if not xss else XSS_CORPUS[4]}
        if name == "browser_snapshot":
            return {}
        if name == "vision_analyze":
            return {"image_url": "/tmp/screenshot.png", "question": "What does this show?"}
        if name == "image_generate":
            return {"prompt": f"minimal geometric logo for {self.project}, {w}"}
        if name == "text_to_speech":
            return {"text": self.fill(r.choice(_SENTENCES))}
        if name == "delegate_task":
            return {"goal": self.fill("Investigate the {w} issue in {project} and report back"),
                    "toolsets": ["terminal", "file"]}
        if name == "session_search":
            return {"query": w, "limit": 3}
        if name == "send_message":
            return {"platform": r.choice(("slack", "telegram", "discord")), "message": self.fill(r.choice(_SENTENCES))}
        if name == "cronjob":
            return {"action": "create", "schedule": f"0 {r.randint(5, 9)} * * *",
                    "prompt": self.fill(r.choice(_CRON_PROMPTS)[1])}
        if name == "todo":
            return {"todos": [{"id": "1", "content": f"Fix {w}", "status": "in_progress"}]}
        if name == "memory":
            return {"action": "add", "content": self.fill("User's main project is {project}; deploys to {host}.")}
        if name == "clarify":
            return {"question": f"Which {w} do you mean?", "choices": ["first", "second"]}
        if name == "skill_view":
            return {"name": r.choice(_SKILLS)}
        return {}

    def long_lines(self, kind: str) -> str:
        r = self.r
        target = self.n(r.randint(5000, 20000))
        if kind == "read_file":
            src = r.choice(_CODE[self.lang or "python"]).split("\n")
            out, size, i = [], 0, 0
            while size < target:
                ln = f"{i + 1:6d}|{src[i % len(src)]}"
                out.append(ln)
                size += len(ln) + 1
                i += 1
            return "\n".join(out)
        if kind == "prose":
            return " ".join(r.choices(_SENTENCE_POOL, k=target // 90))
        return "\n".join(r.choices(_LOG_POOL, k=target // 75))

    def tool_result(self, name: str, args: dict) -> str:
        r = self.r
        long_ = self.has("long_tool") or r.random() < self.p_long
        xss = self.has("xss_result") or r.random() < _P_XSS
        w = r.choice(self.words)
        if name == "terminal":
            if long_:
                out = self.long_lines("log")
            elif r.random() < self.p(0.45):
                out = self.fill(r.choice(_TERMINAL_OUTPUTS))
            else:
                out = "\n".join(r.choices(_LOG_POOL, k=self.n(r.randint(2, 30))))
            if xss:
                out += "\n" + "\n".join(XSS_CORPUS)
            return json.dumps({"output": out, "exit_code": 0 if r.random() < 0.85 else 1, "error": None})
        if name == "read_file":
            if long_:
                content = self.long_lines("read_file")
            else:
                src = "\n".join(r.sample(_CODE[self.lang or "python"], min(self.n(2), len(_CODE[self.lang or "python"]))))
                content = "\n".join(f"{i + 1:6d}|{ln}" for i, ln in enumerate(src.split("\n")))
            if xss:
                content += "\n<!-- " + XSS_CORPUS[0] + " -->"
            return json.dumps({"content": content, "total_lines": content.count("\n") + 1, "path": args.get("path")})
        if name == "write_file":
            return json.dumps({"bytes_written": r.randint(120, 6000), "path": args.get("path")})
        if name == "patch":
            return json.dumps({"success": True, "diff": f"--- a/{args.get('path')}\n+++ b/{args.get('path')}\n@@\n-timeout=1.0\n+timeout=30.0\n"})
        if name == "search_files":
            k = self.n(r.randint(60, 200) if long_ else r.randint(1, 12))
            return json.dumps({"total_count": k, "matches": [
                {"path": r.choice(_FILES), "line": r.randint(1, 500), "content": self.fill("# TODO: {w} (chat-send)")}
                for _ in range(k)]})
        if name == "execute_code":
            out = (self.long_lines("log") if long_ else
                   "\n".join(r.choices(_LOG_POOL, k=self.n(r.randint(1, 12)))) if r.random() < 0.5 else f"{r.randint(1, 99999)}\n")
            return json.dumps({"status": "success", "output": out, "duration_seconds": round(r.uniform(0.2, 9), 2)})
        if name == "web_search":
            res = [{"title": f"{r.choice(self.words)} guide", "url": f"https://blog.example.com/{r.randint(1, 999)}",
                    "description": f"A practical look at {r.choice(self.words)} and {r.choice(self.words)}."}
                   for _ in range(self.n(r.randint(3, 5)))]
            if xss:
                res[0]["description"] = XSS_CORPUS[r.randrange(len(XSS_CORPUS))]
            return json.dumps({"success": True, "data": {"web": res}})
        if name == "web_extract":
            body = self.long_lines("prose") if long_ else " ".join(r.choices(_SENTENCE_POOL, k=self.n(r.randint(4, 24))))
            if xss:
                body += " " + " ".join(XSS_CORPUS)
            return json.dumps({"results": [{"url": f"https://docs.example.com/{w.replace(' ', '-')}",
                                            "title": f"{w} docs", "content": f"# {w}\n\n{body}"}]})
        if name == "browser_navigate":
            return json.dumps({"success": True, "url": args.get("url"), "title": f"{w} \u2014 Example"})
        if name in ("browser_click", "browser_type"):
            return json.dumps({"success": True})
        if name == "browser_snapshot":
            snap = f"- heading \"{w}\" [ref=e1]\n- button \"Sign in\" [ref=e2]\n- link \"Pricing\" [ref=e3]"
            if xss:
                snap += "\n- iframe \"<iframe src=javascript:alert(1)>\" [ref=e4]"
            return json.dumps({"success": True, "snapshot": snap})
        if name == "vision_analyze":
            return json.dumps({"success": True, "analysis": f"The screenshot shows an error dialog: {r.choice(_ERRORS)}"})
        if name == "image_generate":
            return json.dumps({"success": True, "image": f"https://fal.media/files/{_hex(r, 8)}.png"})
        if name == "text_to_speech":
            return json.dumps({"success": True, "file_path": f"/tmp/tts_{_hex(r, 8)}.ogg"})
        if name == "delegate_task":
            return json.dumps({"results": [{"status": "completed",
                                            "summary": f"Checked the {w}; root cause was {r.choice(_ERRORS)}."}]})
        if name == "session_search":
            return json.dumps({"success": True, "results": [{"session_id": "20260101_120000_ab12cd",
                                                             "summary": f"Earlier chat about {w}"}]})
        if name == "send_message":
            return json.dumps({"success": True, "platform": args.get("platform")})
        if name == "cronjob":
            return json.dumps({"success": True, "job_id": _hex(r, 12)})
        if name == "todo":
            return json.dumps({"todos": args.get("todos"), "summary": {"in_progress": 1}})
        if name == "memory":
            return json.dumps({"success": True, "message": "Entry added."})
        if name == "clarify":
            return json.dumps({"answer": "first"})
        if name == "skill_view":
            return json.dumps({"name": args.get("name"), "content": f"# {args.get('name')}\n\nStep-by-step instructions..."})
        return json.dumps({"success": True})

    def reasoning(self):
        """(reasoning, reasoning_content, reasoning_details, codex_reasoning_items) or None."""
        r = self.r
        forced = self.has("xss_reasoning")
        if not forced and (self.family == "none" or r.random() >= self.p_reason):
            return None
        text = " ".join(self.fill(r.choice(_REASONING)) for _ in range(self.n(r.randint(1, 4))))
        if forced or r.random() < _P_XSS:
            text += ' Careful: the page contains <a href="javascript:alert(1)">x</a> and <script>alert(1)</script>.'
        fam = self.family
        if fam == "anthropic":
            det = json.dumps([{"type": "reasoning.text", "text": text, "signature": "EuYB" + _hex(r, 40),
                               "format": "anthropic-claude-v1", "index": 0}])
            return text, None, det, None
        if fam == "openai":
            if r.random() < 0.55:
                items = json.dumps([{"type": "reasoning", "id": "rs_" + _hex(r, 32),
                                     "encrypted_content": "gAAAAB" + _hex(r, 48),
                                     "summary": [{"type": "summary_text", "text": text}]}])
                return text, None, None, items
            return text, None, None, None
        if fam == "content":
            return text, text, None, None
        return text, None, None, None


# --------------------------------------------------------------------------------------------
# Streaming one session's rows
# --------------------------------------------------------------------------------------------

class _Stream:
    """Yields (timestamp, message_row) for one session, keeping the session counters."""

    __slots__ = ("sp", "msgs", "tools", "inp", "out", "cr", "cw", "rsn", "calls")

    def __init__(self, sp: _Spec):
        self.sp = sp
        self.msgs = self.tools = self.inp = self.out = self.cr = self.cw = self.rsn = self.calls = 0

    def rows(self) -> Iterator[tuple]:
        sp = self.sp
        sid = sp.id
        ts = sp.start
        if sp.copy_from is not None:
            # /branch copies the parent's whole history within a few milliseconds (same tool call ids)
            k = 0
            copied_ctx = 0
            for _, row in _Stream(sp.copy_from).rows():
                copied_ctx += _tok(row[2]) + _tok(row[4])
                ts = round(sp.start + k * 0.0015, 6)
                k += 1
                self.msgs += 1
                if row[4]:
                    self.tools += len(json.loads(row[4]))
                yield ts, (sid,) + row[1:6] + (ts,) + row[7:]
        if sp.n_own <= 0:
            return
        text = _Text(sp)
        r = text.r
        steps = _skeleton(sp.seed, sp.n_own, sp.first, sp.gap_profile, sp.lead_gap, sp.force_tools)
        scale = sp.scale
        prices = _MODELS.get(sp.model, _MODELS[None])[1]
        caching = sp.billing is not None and prices[2] > 0
        writes_cache = sp.billing is not None and sp.billing[0] == "anthropic"
        base_prompt = 1900 + _tok(sp.system_prompt)
        ctx = copied_ctx if sp.copy_from is not None else 0
        prev_prompt = 0
        pending: list[tuple[str, str, dict]] = []
        first_user = True
        for i, (code, k, gap) in enumerate(steps):
            if i == 0 and gap == 0.0 and sp.copy_from is None:
                ts = sp.start
            else:
                ts += max(gap * scale, 0.001)
            t = round(ts, 6)
            if code == _U:
                content = text.user(first_user)
                first_user = False
                ctx += _tok(content)
                row = (sid, "user", content, None, None, None, t, None, None, None, None, None, None, None)
            elif code == _A:
                rz = text.reasoning()
                if k:
                    content = text.toolcall_text()
                    calls = []
                    for _ in range(k):
                        name = text.pick_tool()
                        args = text.tool_args(name)
                        cid = "call_" + _hex(r, 24)
                        calls.append({"id": cid, "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(args)}})
                        pending.append((cid, name, args))
                    tool_calls = json.dumps(calls)
                    finish = "tool_calls"
                else:
                    content = text.assistant_final()
                    tool_calls = None
                    finish = "length" if r.random() < 0.01 else "stop"
                tc = _tok(content) + _tok(tool_calls) + (_tok(rz[0]) if rz else 0)
                prompt = base_prompt + ctx
                self.calls += 1
                self.out += tc
                if rz:
                    self.rsn += _tok(rz[0])
                elif self.sp.reasoning_on and text.family == "openai":
                    self.rsn += r.randint(0, 400)
                if caching and prev_prompt and r.random() < 0.9:
                    cached = min(prev_prompt, prompt)
                else:
                    cached = 0
                self.cr += cached
                self.inp += prompt - cached
                if writes_cache and prompt - cached >= 1024:
                    self.cw += prompt - cached - (r.randint(0, 400) if cached else 0)
                prev_prompt = prompt
                ctx += tc
                self.tools += k
                row = (sid, "assistant", content, None, tool_calls, None, t, tc, finish,
                       rz[0] if rz else None, rz[1] if rz else None, rz[2] if rz else None,
                       rz[3] if rz else None, None)
            elif code == _T:
                cid, name, args = pending.pop(0)
                content = text.tool_result(name, args)
                ctx += min(_tok(content), 6000)
                row = (sid, "tool", content, cid, None, name, t, None, None, None, None, None, None, None)
            else:
                content = text.system(sp.first)
                ctx += _tok(content)
                row = (sid, "system", content, None, None, None, t, None, None, None, None, None, None, None)
            self.msgs += 1
            yield t, row

    def session_row(self) -> tuple:
        sp = self.sp
        has_calls = self.calls > 0
        billing = sp.billing if has_calls else None
        est = act = None
        status = source = pricing = None
        provider = base_url = mode = None
        if has_calls:
            if billing is None:  # NULL model: Hermes still records an unknown, zero estimate
                est, status, source = 0.0, "unknown", "none"
            else:
                provider, base_url, mode, source, pricing = billing
                status = sp.cost_mode
                p_in, p_out, p_cr, p_cw = _MODELS[sp.model][1]
                cost = round((self.inp * p_in + self.out * p_out + self.cr * p_cr + self.cw * p_cw) / 1e6, 6)
                rr = random.Random(sp.seed * 2 + 7)
                if status == "included":
                    est = 0.0
                elif status == "unknown":
                    est = None
                elif status == "actual":
                    est = cost
                    act = round(cost * rr.uniform(0.55, 1.1), 6)
                else:
                    est = cost
                    if provider == "openrouter" and rr.random() < 0.4:
                        act = round(cost * rr.uniform(0.4, 1.05), 6)
        model_config = sp.model_config if (self.msgs or sp.n_own) else None
        return (sp.id, sp.source, sp.user_id, sp.model, model_config, sp.system_prompt,
                sp.parent.id if sp.parent is not None else None, round(sp.start, 6),
                round(sp.end, 6) if sp.end is not None else None, sp.end_reason, self.msgs, self.tools,
                self.inp, self.out, self.cr, self.cw, self.rsn, provider, base_url, mode, est, act, status,
                source, pricing, sp.title, self.calls)


# --------------------------------------------------------------------------------------------
# generate()
# --------------------------------------------------------------------------------------------

_INSERT_SESSION = "INSERT INTO sessions VALUES (" + ",".join("?" * 27) + ")"
_INSERT_MESSAGE = ("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, "
                   "token_count, finish_reason, reasoning, reasoning_content, reasoning_details, "
                   "codex_reasoning_items, codex_message_items) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
# Batches go in as one JSON array per statement: SQLite then runs the whole batch (and both FTS
# indexes) in a single step with the GIL released, so text generation overlaps with it.  SQLite's
# JSON functions cut strings at a NUL, so multimodal rows ("\x00json:...") are bound directly.
_MESSAGE_COLS = ("session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
                 "token_count", "finish_reason", "reasoning", "reasoning_content", "reasoning_details",
                 "codex_reasoning_items", "codex_message_items")
_INSERT_MESSAGES_JSON = ("INSERT INTO messages (" + ", ".join(_MESSAGE_COLS) + ") SELECT "
                         + ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(_MESSAGE_COLS)))
                         + " FROM json_each(?)")
_BATCH = 2000
_COMMIT_EVERY = 50_000


def _remove_quietly(p: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(p + suffix)
        except FileNotFoundError:
            pass


def generate(path: str | os.PathLike, *, sessions: int = 300, seed: int = 7, now: float | None = None,
             long_session_messages: int = 0, messages_per_session: float = 14.0,
             progress: Callable[[int, int], None] | None = None, text_scale: float = 1.0) -> GeneratedInfo:
    """Build a realistic Hermes v11 ``state.db`` at ``path`` (which must not exist yet).

    ``sessions`` session rows are generated (plus one extra when ``long_session_messages`` > 0),
    with history spread over the 365 days before ``now`` (default :data:`DEFAULT_NOW`).  The result
    is identical for identical arguments.  ``progress(done, total)`` is called with message counts.

    ``text_scale`` scales message lengths: paragraph, reasoning and tool-output line counts, and
    both the share and the size of long (5-20 KB) tool outputs.  1.0 (the default) gives exactly
    the historical output; about 0.3 gives ~1.5 KB per message on disk (FTS tables included),
    like real Hermes databases (a 1,000,000-message database of ~1.5 GB), against ~5.5 KB at 1.0.
    The number of messages, sessions, timestamps and lineages does not depend on it.
    """
    t0 = time.perf_counter()
    path = os.fspath(path)
    if os.path.lexists(path):
        raise ValueError(f"refusing to overwrite existing file: {path}")
    try:
        if os.path.getsize(path + "-wal") > 0:  # a stale WAL would be replayed into the new file
            raise ValueError(f"refusing to write beside a leftover write-ahead log: {path}-wal")
    except OSError:
        pass
    if isinstance(sessions, bool) or int(sessions) != sessions or sessions < 0:
        raise ValueError("sessions must be a non-negative integer")
    if isinstance(long_session_messages, bool) or int(long_session_messages) != long_session_messages \
            or long_session_messages < 0:
        raise ValueError("long_session_messages must be a non-negative integer")
    if not (messages_per_session > 0) or math.isinf(messages_per_session):
        raise ValueError("messages_per_session must be a positive number")
    if isinstance(text_scale, bool) or not isinstance(text_scale, (int, float)) or not (text_scale > 0) \
            or math.isinf(text_scale):
        raise ValueError("text_scale must be a positive number")
    anchor = DEFAULT_NOW if now is None else float(now)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ValueError(f"directory does not exist: {directory}")

    rng = random.Random(seed)
    planner = _Planner(rng, int(sessions), anchor, float(messages_per_session), int(long_session_messages),
                       float(text_scale))
    specs, long_spec = planner.plan()
    total_msgs = sum(s.n_total for s in specs)

    # built beside the target under a unique name, so a half-built database never has the final name
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}-{threading.get_ident()}-"
                                  f"{os.urandom(4).hex()}.building")
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        create_schema(conn)
        conn.execute("INSERT INTO state_meta (key, value) VALUES ('ghost_session_prune_v1', '1')")
        # build-time only settings (not persistent); the file is a temp file until it is complete
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-262144")
        conn.execute("PRAGMA temp_store=MEMORY")
        done = _write_all(conn, specs, total_msgs, progress)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        conn = None
        for suffix in ("-wal", "-shm"):
            if os.path.exists(tmp + suffix):
                os.remove(tmp + suffix)
        try:
            os.link(tmp, path)  # atomic and never overwrites
            os.remove(tmp)
        except FileExistsError:
            raise ValueError(f"refusing to overwrite existing file: {path}") from None
        except OSError:
            if os.path.lexists(path):
                raise ValueError(f"refusing to overwrite existing file: {path}") from None
            os.replace(tmp, path)
    except BaseException:
        if conn is not None:
            conn.close()
        _remove_quietly(tmp)
        raise
    return GeneratedInfo(path=path, sessions=len(specs), messages=done,
                         long_session_id=long_spec.id if long_spec is not None else None,
                         seconds=round(time.perf_counter() - t0, 3))


def _batches(specs: list[_Spec]) -> Iterator[tuple[list, list]]:
    """Sweep over all sessions in time order; yield (session_rows, message_rows) batches with the
    messages of concurrent sessions interleaved in global timestamp order, like a live Hermes."""
    heap: list = []
    msgs: list = []
    sess: list = []
    i = 0
    n = len(specs)
    inf = float("inf")
    while i < n or heap:
        next_start = specs[i].start if i < n else inf
        if heap and heap[0][0] <= next_start:
            _, seq, st, it, row = heap[0]
            msgs.append(row)
            nxt = next(it, None)
            if nxt is None:
                heapq.heappop(heap)
                sess.append(st.session_row())
            else:
                heapq.heapreplace(heap, (nxt[0], seq, st, it, nxt[1]))
            if len(msgs) >= _BATCH:
                yield sess, msgs
                sess, msgs = [], []
        else:
            st = _Stream(specs[i])
            it = st.rows()
            first = next(it, None)
            if first is None:
                sess.append(st.session_row())
            else:
                heapq.heappush(heap, (first[0], i, st, it, first[1]))
            i += 1
    if sess or msgs:
        yield sess, msgs


def _insert_messages(conn: sqlite3.Connection, rows: list) -> None:
    start = 0
    for i, row in enumerate(rows):
        if row[2] is not None and "\x00" in row[2]:
            if i > start:
                conn.execute(_INSERT_MESSAGES_JSON, (json.dumps(rows[start:i], ensure_ascii=False),))
            conn.execute(_INSERT_MESSAGE, row)
            start = i + 1
    if start < len(rows):
        conn.execute(_INSERT_MESSAGES_JSON, (json.dumps(rows[start:], ensure_ascii=False),))


def _write_all(conn: sqlite3.Connection, specs: list[_Spec], total: int,
               progress: Callable[[int, int], None] | None) -> int:
    """Insert everything.  Text is generated in a producer thread while SQLite (which releases the
    GIL while it works, mostly on the two FTS indexes) inserts the previous batch."""
    q: queue.Queue = queue.Queue(maxsize=6)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in _batches(specs):
                if not put(item):
                    return
            put(None)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            put(exc)

    worker = threading.Thread(target=produce, name="hermes-generator", daemon=True)
    worker.start()
    done = since_commit = 0
    try:
        conn.execute("BEGIN")
        while True:
            item = q.get()
            if item is None:
                break
            if isinstance(item, BaseException):
                raise item
            sess, msgs = item
            if sess:
                conn.executemany(_INSERT_SESSION, sess)
            if msgs:
                _insert_messages(conn, msgs)
                done += len(msgs)
                since_commit += len(msgs)
            if since_commit >= _COMMIT_EVERY:
                conn.execute("COMMIT")
                conn.execute("BEGIN")
                since_commit = 0
            if progress is not None and done < total:
                progress(done, total)
        conn.execute("COMMIT")
    finally:
        stop.set()
        worker.join()
    if progress is not None:
        progress(done, total)
    return done


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m webui.generator",
                                 description="Generate a realistic, deterministic Hermes v11 state.db.")
    ap.add_argument("out", help="output path (must not exist)")
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--messages-per-session", type=float, default=14.0)
    ap.add_argument("--long-session", type=int, default=0, metavar="K",
                    help="add one extra session with exactly K messages")
    ap.add_argument("--text-scale", type=float, default=1.0, metavar="X",
                    help="scale message lengths (1.0: ~5.5 KB/message on disk; ~0.3: ~1.5 KB, like real Hermes)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--now", type=float, default=None, help=f"anchor epoch seconds (default {DEFAULT_NOW:.0f})")
    ap.add_argument("--quiet", action="store_true", help="no progress output")
    args = ap.parse_args(argv)

    last = [0.0]

    def report(done: int, total: int) -> None:
        t = time.perf_counter()
        if t - last[0] >= 2 or done == total:
            last[0] = t
            pct = 100.0 * done / total if total else 100.0
            print(f"\r{done:,}/{total:,} messages ({pct:5.1f}%)", end="", file=sys.stderr, flush=True)

    try:
        info = generate(args.out, sessions=args.sessions, seed=args.seed, now=args.now,
                        long_session_messages=args.long_session, messages_per_session=args.messages_per_session,
                        progress=None if args.quiet else report, text_scale=args.text_scale)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(file=sys.stderr)
    size = os.path.getsize(info.path)
    print(f"wrote {info.path}: {info.sessions:,} sessions, {info.messages:,} messages, "
          f"{size / 1e6:,.1f} MB in {info.seconds:.1f}s"
          + (f"; long session {info.long_session_id}" if info.long_session_id else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
