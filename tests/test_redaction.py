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


# One sample of every vendor key Hermes 0.19 masks, written out here rather than made from
# Logbook's own table: a prefix dropped from that table leaves its sample unmasked.
KEY_SAMPLES = [
    "sk-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_pat_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "gho_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "ghu_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "ghs_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "ghr_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "xapp-42-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "xoxb-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "AIzaA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "pplx-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "fal_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "fc-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "bb_live_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "gAAAAA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "AKIAABCDEFGHIJ012345",
    "sk_live_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "sk_test_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "rk_live_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "SG.A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "hf_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "r8_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "npm_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "pypi-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "dop_v1_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "doo_v1_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "am_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "sk_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "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",
    "exa_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "gsk_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "syt_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "retaindb_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "hsk-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "mem0_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "brv_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "xai-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "ntn_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "fw-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "fw_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "fpk_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
]
# Shapes a wider one covers as well (removing them alone changes nothing that can be seen).
COVERED_BY = {"sk_live_": "sk_", "sk_test_": "sk_"}
KEYS = [(key.split("A1b2")[0] or key[:4], key) for key in KEY_SAMPLES]
VENDOR = "vendor key prefix"

# (text, the secret that must not survive, the rule that catches it)
CORPUS: list[tuple[str, str, str]] = []
for _literal, key in KEYS:
    CORPUS += [
        (f"here is my key {key} keep it safe", key, VENDOR),
        (json.dumps({"command": f"curl -H 'X: {key}' https://api.example.com"}), key, VENDOR),
        (f"https://api.example.com/v1?q=1&k={key}", key, VENDOR),
    ]
# Every JSON field name, header name and database scheme Hermes masks, one sample each.
JSON_WORDS = (
    "apiKey api_key apikey token secret password access_token refresh_token auth_token bearer "
    "secret_value raw_secret secret_input key_material"
)
for word in JSON_WORDS.split():
    CORPUS.append(
        (
            json.dumps({word: "opaqueval-314159"}),
            "opaqueval-314159",
            'JSON field ("api_key": "value")',
        )
    )
for header in (
    "x-api-key x-goog-api-key api-key apikey x-api-token x-auth-token x-access-token".split()  # noqa: SIM905
):
    CORPUS.append(
        (
            f"curl -s -H '{header}: hdrvalue271828' https://api.example.com/v1",
            "hdrvalue271828",
            "API key header (x-api-key: value)",
        )
    )
for scheme in ("postgres", "postgresql", "mysql", "mongodb", "mongodb+srv", "redis", "amqp"):
    CORPUS.append(
        (
            f"{scheme}://admin:dbpass161803@db.internal:5432/x",
            "dbpass161803",
            "database URL password",
        )
    )
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


def test_every_key_prefix_is_needed():
    """Remove any one vendor key shape and its sample survives (the samples are written out
    above, not made from the table), unless a wider shape covers it (COVERED_BY)."""
    from webui.hermes.redaction import Rule

    for literal, shape in KEY_SHAPES:
        assert any(re.fullmatch(shape, k) for k in KEY_SAMPLES), f"no sample for {literal!r}"
    vendor = RULES[0]
    for literal, _shape in KEY_SHAPES:
        rest = "|".join(s for lit, s in KEY_SHAPES if lit != literal)
        pattern = re.compile(rf"(?<![A-Za-z0-9_-])({rest})(?![A-Za-z0-9_-])")
        fewer = (Rule(vendor.name, lambda t: True, pattern, vendor.masked), *RULES[1:])
        survivors = [k for k in KEY_SAMPLES if k in redact_text(f"my key {k} here", fewer)]
        if literal in COVERED_BY:
            assert not survivors, (literal, survivors)
        else:
            assert survivors, f"no sample needs the prefix {literal!r}"


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
