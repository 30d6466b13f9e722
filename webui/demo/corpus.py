"""The demo generator's vocabulary: projects, hosts, topics, code, tool names, models and
prices, sources and end reasons — fixed data, no randomness."""

from __future__ import annotations

import random

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

_LOG_POOL, _SENTENCE_POOL = _make_pools()
