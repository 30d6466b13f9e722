"""Retry loops, unattended work and cron jobs (webui.hermes.tool_runs)."""

from __future__ import annotations

import json

from webui.hermes import tool_runs as tr


def sig(**kw) -> str:
    return tr.signature(json.dumps(kw))


def test_signatures_and_key_order():
    assert tr.signature('{"b": 1}') == '{"b": 1}' and tr.signature(None) == ""
    assert len(tr.signature("x" * 5000)) == tr.SIGNATURE_CHARS
    assert tr.signature_of("abc", 3) == "abc" and tr.signature_of(None, 0) == ""
    # the same call whatever the order of its keys and its spacing: as Hermes's guardrail sees it
    assert tr.near_same('{"b": 1, "a": "x"}', '{ "a":"x",\n"b":1 }')
    assert not tr.near_same('{"b": 1, "a": "x"}', '{"a": "x", "b": 1, "c": 2}')


def test_near_same():
    same = sig(command="pytest -q", timeout=120)
    assert tr.near_same(same, same)
    assert tr.near_same(
        sig(command="pytest -q", timeout=120), sig(command="pytest -q", timeout=300)
    )
    assert tr.near_same(sig(path="a.py", offset=1), sig(path="a.py", offset=400))
    assert tr.near_same(sig(command="sleep 5 && curl x"), sig(command="sleep 10 && curl x"))
    # another file, another command, another query, more than one change: not near-same
    assert not tr.near_same(sig(path="a.py", content="X"), sig(path="b.py", content="X"))
    assert not tr.near_same(sig(command="git status"), sig(command="git diff --stat"))
    assert not tr.near_same(sig(query="foo bar baz"), sig(query="foo bar qux"))
    assert not tr.near_same(sig(path="a", offset=1, limit=5), sig(path="a", offset=2, limit=9))
    assert not tr.near_same(sig(a=1), sig(b=1))
    assert not tr.near_same(sig(flag=True), sig(flag=False))
    assert tr.near_same("some long text that was cut", "some long text that was cut off")  # 6 of 7
    assert tr.near_same("a b c d e f g h i j", "a b c d e f g h i k")  # 9 of 11 words
    assert not tr.near_same("a b c d e", "a b c d f")  # 4 of 6
    assert tr.near_same("a b c d e f g h i j 1", "a b c d e f g h i j 2")  # digits read as 0
    assert not tr.near_same("", " ")


def test_loops():
    a, b = sig(command="x"), sig(command="y")
    calls = [("terminal", a)] * 4 + [("read_file", b)] * 2 + [("terminal", a), ("web", b)] * 2
    assert tr.loops(calls) == [(0, 4)]
    assert tr.loops([("t", a)] * 3) == [(0, 3)] and tr.loops([("t", a)] * 2) == []
    assert tr.loops([]) == [] and tr.loops([("t", a), ("u", a), ("t", a)]) == []
    assert tr.loops([("t", a)] * 3 + [("t", b)] * 3) == [(0, 3), (3, 3)]


def test_unattended_and_cron_jobs():
    assert tr.unattended("cron") and tr.unattended("webhook") and tr.unattended("msgraph_webhook")
    assert tr.unattended("WEBHOOK") and not tr.unattended("cli") and not tr.unattended(None)
    assert tr.cron_job_id("cron_a1b2c3d4e5f6_20261005_090845") == "a1b2c3d4e5f6"
    assert tr.cron_job_id("cron_job_with_underscores_20261005_090845") == "job_with_underscores"
    assert tr.cron_job_id("20261005_090845_abc") is None and tr.cron_job_id(None) is None
    assert tr.cron_job_name("Nightly backup check · Oct 05 09:09", "j") == "Nightly backup check"
    assert tr.cron_job_name("Nightly backup check · Oct 05 09:09 #2", "j") == "Nightly backup check"
    assert tr.cron_job_name("Plain title", "j") == "Plain title"
    assert tr.cron_job_name(None, "j1") == "cron j1" and tr.cron_job_name("  ", "j1") == "cron j1"
