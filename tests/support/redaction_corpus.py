"""A corpus of secrets in every shape Hermes 0.19 masks, placed where they turn up in
sessions (message text, tool-call arguments, URLs, JSON bodies, environment lines), each with
the rule that must catch it, and near-misses that must stay as they are. Used by
tests/test_redaction.py (Logbook's redaction) and the oracle tier's
test_oracle_exports.py (Hermes's own redaction)."""

from __future__ import annotations

import json

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
