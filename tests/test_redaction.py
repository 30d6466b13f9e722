"""Export redaction (``redact=1``): a corpus of secrets in every shape Hermes 0.19 masks, placed
where they turn up in sessions (message text, tool-call arguments, URLs, JSON bodies,
environment lines), and near-misses that must stay as they are. Each case names the rule that
must catch it; every rule of the table is needed by some case. The oracle tier
(test_oracle_exports.py) holds the same corpus against Hermes's own redaction."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from support import copy_fixture, make_app
from webui.hermes import redaction
from webui.hermes.redaction import KEY_SHAPES, RULES, redact_record, redact_text, which_rules

BODY = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def sample_key(literal: str, shape: str) -> str:
    start = {"xapp-": "xapp-42-", "xox": "xoxb-", "SG": "SG."}.get(literal, literal)
    body = "ABCDEFGHIJ0123456789" if literal == "AKIA" else BODY
    key = start + body[: 16 if literal == "AKIA" else len(body)]
    assert re.fullmatch(shape, key), (literal, key)
    return key


KEYS = [(literal, sample_key(literal, shape)) for literal, shape in KEY_SHAPES]
VENDOR = "vendor key prefix"

# (text, the secret that must not survive, the rule that catches it)
CORPUS: list[tuple[str, str, str]] = []
for _literal, key in KEYS:
    CORPUS += [
        (f"here is my key {key} keep it safe", key, VENDOR),
        (json.dumps({"command": f"curl -H 'X: {key}' https://api.example.com"}), key, VENDOR),
        (f"https://api.example.com/v1?q=1&k={key}", key, VENDOR),
    ]
CORPUS += [
    (
        "OPENAI_API_KEY=plainopaquevalue123456",
        "plainopaquevalue123456",
        "environment assignment (NAME_TOKEN=value)",
    ),
    (
        'export MY_SERVICE_TOKEN="opaque-token-value-999"',
        "opaque-token-value-999",
        "environment assignment (NAME_TOKEN=value)",
    ),
    ("DB_PASSWORD = hunter2hunter2", "hunter2hunter2", "environment assignment (NAME_TOKEN=value)"),
    (
        "spring.datasource.password=s3cr3tvalue",
        "s3cr3tvalue",
        "dotted config key (app.db.password=value)",
    ),
    ("app.api.key=zz9plural", "zz9plural", "dotted config key (app.db.password=value)"),
    (
        "password=letmein42\nuser=bob",
        "letmein42",
        "config line (password=value at the start of a line)",
    ),
    (
        "  export api_key=abc123xyz",
        "abc123xyz",
        "config line (password=value at the start of a line)",
    ),
    (
        '{"apiKey": "k-live-000111222333", "n": 1}',
        "k-live-000111222333",
        'JSON field ("api_key": "value")',
    ),
    ('{"refresh_token": "rt-9988776655"}', "rt-9988776655", 'JSON field ("api_key": "value")'),
    ('{"secret_value":"inner-secret-77"}', "inner-secret-77", 'JSON field ("api_key": "value")'),
    ("password: correcthorse", "correcthorse", "YAML key (password: value)"),
    ("  db_token: tok-555-666", "tok-555-666", "YAML key (password: value)"),
    ("Authorization: Bearer abc.def.ghijklmnop", "abc.def.ghijklmnop", "Authorization header"),
    (
        "Proxy-Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "dXNlcjpwYXNzd29yZA==",
        "Authorization header",
    ),
    ('curl -H "authorization: token opaque123456789"', "opaque123456789", "Authorization header"),
    (
        "x-api-key: opaque-anthropic-style-key",
        "opaque-anthropic-style-key",
        "API key header (x-api-key: value)",
    ),
    (
        "curl -H X-Auth-Token: zzzzzzzzzzzz -d x",
        "zzzzzzzzzzzz",
        "API key header (x-api-key: value)",
    ),
    (
        "bot123456789:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0",
        "AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0",
        "Telegram bot token",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEA",
        "private key block",
    ),
    ("postgres://admin:pa55w0rd@db.internal/app", "pa55w0rd", "database URL password"),
    ("mongodb+srv://u:mongopass@cluster0/x", "mongopass", "database URL password"),
    (
        "git remote set-url origin https://deploytoken123@github.com/o/r",
        "deploytoken123",
        "token as a URL's user (https://TOKEN@host)",
    ),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "JWT",
    ),
    ("client_id=app&client_secret=formsecret&grant_type=x", "formsecret", "form body (k=v&k=v)"),
    ("call me on +14155552671 tomorrow", "4155552", "phone number (E.164)"),
]

# Text that looks close to a secret but is not one: it must come out unchanged.
NEAR_MISSES = [
    "sk-short",  # too short for a key
    "task-1234567890 is done",  # 'sk-' inside a word
    "the token_count column and session_id",
    "KEY=os.getenv('OPENAI_API_KEY')",
    '{"apiKey": "os.environ[\'X\']"}',
    "I have password=foo mid-sentence",
    "note: secret meeting at noon",
    "error: token expired",
    "https://user:pass@example.com/path",  # user:pass@ in a web URL passes, as in Hermes
    "https://example.com/cb?code=ABC123&state=xyz",  # web query strings pass, as in Hermes
    "version 1.2.3 and +44 is too short",
    "AKIA too short",
    "plain prose with no secrets at all",
]


@pytest.mark.parametrize(
    "text,secret,rule", CORPUS, ids=[f"{i}-{c[2][:20]}" for i, c in enumerate(CORPUS)]
)
def test_every_secret_is_masked_by_its_rule(text, secret, rule):
    out = redact_text(text)
    assert secret not in out, (rule, out)
    assert rule in which_rules(text), (which_rules(text), text)


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_stay(text):
    assert redact_text(text) == text


def test_every_rule_is_needed():
    """Remove any one rule and some secret of the corpus survives: no rule is dead weight, and
    the corpus really exercises each."""
    for rule in RULES:
        fewer = tuple(r for r in RULES if r is not rule)
        survivors = [secret for text, secret, _ in CORPUS if secret in redact_text(text, fewer)]
        assert survivors, f"no case needs the rule {rule.name!r}"


def test_masks_keep_the_shape_a_reader_needs():
    assert redact_text("then MY_TOKEN=" + BODY) == "then MY_TOKEN=A1b2C3...Q7r8"
    # A vendor key masked first is then short: the assignment rule masks what is left whole.
    assert redact_text("OPENAI_API_KEY=sk-proj-" + BODY) == "OPENAI_API_KEY=***"
    assert redact_text("token: short") == "token: ***"
    assert redaction.mask("x" * 17) == "***" and redaction.mask("x" * 18) == "xxxxxx...xxxx"


def test_records_redact_messages_segments_title_and_system_prompt_only():
    key = KEYS[0][1]
    record = {
        "id": "s1",
        "title": f"key {key}",
        "system_prompt": f"use {key}",
        "model": key,  # not prose: left as stored
        "messages": [
            {"content": key, "tool_calls": [{"function": {"arguments": json.dumps({"k": key})}}]}
        ],
        "segments": [{"messages": [{"content": [{"type": "text", "text": key}]}]}],
    }
    out = redact_record(record)
    flat = json.dumps({k: v for k, v in out.items() if k != "model"})
    assert key not in flat
    assert out["model"] == key and record["messages"][0]["content"] == key  # the input untouched


def test_redacted_export_over_http_holds_no_secret(tmp_path):
    """Secrets planted in a real Hermes database (the FTS triggers index them) are gone from
    every export format with redact=1, and present without it."""
    db = copy_fixture("hermes-v22.db", tmp_path)
    planted = [text for text, _, _ in CORPUS[::3]]
    keys = [key for _, key in KEYS]  # vendor keys: caught inside JSON-encoded arguments too
    with sqlite3.connect(db) as conn:
        sid = conn.execute("SELECT id FROM sessions ORDER BY started_at LIMIT 1").fetchone()[0]
        ts = conn.execute("SELECT MAX(timestamp) FROM messages").fetchone()[0] + 1
        for n, text in enumerate(planted):
            conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES (?, 'user', ?, ?, ?)",
                (
                    sid,
                    text,
                    json.dumps(
                        [
                            {
                                "id": "c",
                                "type": "function",
                                "function": {
                                    "name": "terminal",
                                    "arguments": json.dumps({"command": keys[n % len(keys)]}),
                                },
                            }
                        ]
                    ),
                    ts + n,
                ),
            )
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    secrets = [secret for _, secret, _ in CORPUS[::3]]
    for route in ("/export.jsonl", "/export.md", "/export.qmd", "/export.html"):
        plain = client.get(f"{route}?session={sid}").get_data(as_text=True)
        masked = client.get(f"{route}?session={sid}&redact=1").get_data(as_text=True)
        assert any(s in plain for s in secrets), route
        left = [s for s in secrets if s in masked or json.dumps(s)[1:-1] in masked]
        assert not left, (route, left)
