"""Exports of one session against `hermes sessions export --session-id` of Hermes 0.20.1 and
0.22.2 themselves, on copies of fixtures each wrote (tests/data/fixtures/README.md): JSONL (0.22:
every stored row with its flags and `timings`, `system_prompt` and `tool_names` resolved),
Markdown, QMD and user prompts (0.22: the display projection, compacted history included, model-
only rows left out) byte for byte but for the moment of export, and the HTML page by what it
holds. The sessions are the ones whose rows each generation treats apart: an in-place
compaction, hidden rows, a rewind, a session that switched models, a reset child."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from oracle import cases as oracle_cases

from support import copy_fixture, make_app
from support.export_pages import hermes_page, logbook_page
from support.oracle import GENERATIONS, Hermes, ensure_venv

pytestmark = pytest.mark.oracle

FIXTURES = ["hermes-v26-fresh.db", "hermes-v31-fresh.db", "hermes-v31-migrated.db"]
SESSIONS = ["g_compact", "g_hidden_rows", "g_rewind", "g_multimodel", "g_tg_1"]
# format -> (Hermes's options, Logbook's route)
FORMATS = {
    "jsonl": (("--format", "jsonl"), "/export.jsonl?"),
    "md": (("--format", "md"), "/export.md?"),
    "qmd": (("--format", "qmd"), "/export.qmd?"),
    "prompts-jsonl": (
        ("--format", "jsonl", "--only", "user-prompts"),
        "/export.jsonl?only=user-prompts&",
    ),
    "prompts-md": (("--format", "md", "--only", "user-prompts"), "/export.md?only=user-prompts&"),
}
MOMENT = [
    (re.compile(r'^exported_at: ".*"$', re.M), 'exported_at: "<when>"'),
    (re.compile(r"^- Exported at: `.*`$", re.M), "- Exported at: `<when>`"),
    (re.compile(r"^- SHA256 of exported body: `[0-9a-f]{64}`$", re.M), "- SHA256: <sha>"),
]


def _steady(text: str) -> str:
    for pattern, repl in MOMENT:
        text = pattern.sub(repl, text)
    return text


@pytest.fixture(scope="module", params=FIXTURES)
def pair(request, tmp_path_factory):
    """(fixture, Hermes on one copy, Logbook's client on a twin copy)."""
    fixture = request.param
    key, cjk = oracle_cases.FIXTURES[fixture]
    gen = GENERATIONS[key]
    home = tmp_path_factory.mktemp("hermes")
    shutil.copyfile(copy_fixture(fixture, home.parent / f"src-{home.name}"), home / "state.db")
    hermes = Hermes(ensure_venv(gen), home, gen, cjk=cjk)
    mine = tmp_path_factory.mktemp("logbook")
    shutil.copyfile(hermes.db, mine / "state.db")
    return fixture, hermes, make_app(mine / "state.db", mine / "inst").test_client()


def _theirs(hermes: Hermes, out, fmt: str, sid: str) -> bytes:
    hermes.cli("sessions", "export", str(out), *FORMATS[fmt][0], "--session-id", sid)
    if out.is_dir():
        (found,) = [p for p in out.iterdir() if p.name != "manifest.jsonl"]
        return found.read_bytes()
    return out.read_bytes()


@pytest.mark.parametrize("sid", SESSIONS)
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_one_session_exports_as_hermes_exports_it(pair, tmp_path, fmt, sid):
    fixture, hermes, client = pair
    out = tmp_path / ("out" if fmt in ("md", "qmd") else f"out.{fmt.split('-')[-1]}")
    theirs = _theirs(hermes, out, fmt, sid)
    r = client.get(FORMATS[fmt][1] + f"session={sid}")
    assert r.status_code == 200, r.get_data(as_text=True)[:300]
    ours = r.get_data()
    if fmt in ("md", "qmd"):
        assert _steady(ours.decode()) == _steady(theirs.decode()), (fixture, sid)
        path = tmp_path / f"ours.{fmt}"
        path.write_bytes(ours)
        shown = GENERATIONS[oracle_cases.FIXTURES[fixture][0]].key == "0.22"
        # Hermes's own verify_export_file accepts Logbook's file.
        assert hermes.call("verify_export", path=str(path), session_id=sid, compacted=shown) == [
            True,
            "ok",
        ]
    else:
        assert ours == theirs, (fixture, fmt, sid)
    if fmt == "jsonl":
        record = json.loads(ours)
        assert record["messages"], (fixture, sid)


@pytest.mark.parametrize("sid", ["g_compact", "g_hidden_rows"])
def test_html_page_holds_what_hermes_page_holds(pair, tmp_path, sid):
    """Content parity with `--format html`: the session's title, model, start and system
    prompt, and its messages (0.22: the display projection) with their role, time, text, tool
    calls and reasoning, in order."""
    fixture, hermes, client = pair
    out = tmp_path / "out.html"
    hermes.cli("sessions", "export", str(out), "--format", "html", "--session-id", sid)
    r = client.get(f"/export.html?session={sid}")
    assert r.status_code == 200
    theirs, ours = hermes_page(out.read_text()), logbook_page(r.get_data(as_text=True))
    assert [s.id for s in ours.sessions] == [s.id for s in theirs.sessions] == [sid]
    (mine,), (their,) = ours.sessions, theirs.sessions
    assert their.messages and their.system_prompt, (fixture, sid)
    assert (mine.title, mine.model, mine.started, mine.system_prompt) == (
        their.title,
        their.model,
        their.started,
        their.system_prompt,
    ), (fixture, sid)
    assert mine.messages == their.messages, (fixture, sid)
