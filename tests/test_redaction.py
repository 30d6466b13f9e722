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
from support.redaction_corpus import BODY, CORPUS, COVERED_BY, KEY_SAMPLES, KEYS, NEAR_MISSES
from webui.hermes import redaction
from webui.hermes.redaction import KEY_SHAPES, RULES, redact_record, redact_text, which_rules


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
