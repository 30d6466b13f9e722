"""Every export format against `hermes sessions export` of Hermes Agent 0.19.0 itself, each on
its own copy of the same database: JSONL (one id, a filter, everything), user prompts (JSONL
and Markdown), Markdown and QMD (one session, its logical lineage, a filtered set as a zip with
Hermes's manifest), HTML, and --redact. Files must be the same bytes, but for the moment of
export (and the SHA-256 line that covers it, checked separately)."""

from __future__ import annotations

import io
import json
import re
import shutil
import sqlite3
import zipfile

import pytest

from support import copy_fixture, make_app
from support.oracle import Hermes, ensure_venv

pytestmark = pytest.mark.oracle

FIXTURES = ("hermes-v22.db", "hermes-v22-extended.db", "hermes-v11.db")
SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
GH_TOKEN = "ghp_" + "x1Y2z3W4v5U6t7S8r9Q0" * 2


def _plant_secrets(db) -> None:
    """Messages with credentials in them, written as Hermes writes (the FTS triggers index
    them): one user prompt, one tool result. The connection is closed, so the WAL is folded
    back into the file before it is copied."""
    conn = sqlite3.connect(db)
    with conn:
        sid = conn.execute(
            "SELECT session_id FROM messages GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1"
        ).fetchone()[0]
        ts = conn.execute("SELECT MAX(timestamp) FROM messages").fetchone()[0] + 1
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
            (sid, f"my key is OPENAI_API_KEY={SECRET} please keep it", ts),
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_name, timestamp) "
            "VALUES (?, 'tool', ?, 'terminal', ?)",
            (sid, f'{{"output": "export GITHUB_TOKEN={GH_TOKEN}"}}', ts + 1),
        )
    conn.close()


@pytest.fixture(scope="module", params=FIXTURES)
def pair(request, tmp_path_factory):
    venv = ensure_venv()
    name = request.param
    home = tmp_path_factory.mktemp("hermes-home")
    shutil.copyfile(copy_fixture(name, tmp_path_factory.mktemp("src")), home / "state.db")
    hermes = Hermes(venv, home)
    hermes.call("list", kwargs={})  # Hermes migrates an older file first, as for any user
    _plant_secrets(home / "state.db")
    mine = tmp_path_factory.mktemp("logbook")
    shutil.copyfile(home / "state.db", mine / "state.db")
    return name, hermes, make_app(mine / "state.db", mine / "inst").test_client()


def _ids(hermes: Hermes) -> dict[str, str]:
    """Sessions worth exporting in this database: the longest conversation, one with tool
    calls, and a compression segment in the middle of a chain when there is one."""
    with sqlite3.connect(hermes.db) as conn:
        longest = conn.execute(
            "SELECT session_id FROM messages GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1"
        ).fetchone()[0]
        tools = conn.execute(
            "SELECT session_id FROM messages WHERE tool_calls IS NOT NULL AND tool_calls != '' "
            "AND session_id != ? GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1",
            (longest,),
        ).fetchone()[0]
        chain = conn.execute(
            "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
            "WHERE p.end_reason = 'compression' ORDER BY c.started_at LIMIT 1"
        ).fetchone()
    return {"longest": longest, "tools": tools, "chain": chain[0] if chain else longest}


_MOMENT = [
    (re.compile(r'^exported_at: ".*"$', re.M), 'exported_at: "<when>"'),
    (re.compile(r"^- Exported at: `.*`$", re.M), "- Exported at: `<when>`"),
    (re.compile(r"^- SHA256 of exported body: `[0-9a-f]{64}`$", re.M), "- SHA256: <sha>"),
]


def _same_but_moment(text: str) -> str:
    for pattern, repl in _MOMENT:
        text = pattern.sub(repl, text)
    return text


def _disposition_name(response) -> str:
    return re.search(r'filename="([^"]+)"', response.headers["Content-Disposition"]).group(1)


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("which", ["longest", "tools", "chain"])
@pytest.mark.parametrize("fmt", ["md", "qmd"])
@pytest.mark.parametrize("logical", [False, True])
def test_markdown_and_qmd_files_equal_hermes(pair, tmp_path, which, fmt, logical):
    from webui.hermes import exports

    name, hermes, client = pair
    sid = _ids(hermes)[which]
    out = tmp_path / "hermes"
    args = ["sessions", "export", str(out), "--format", fmt, "--session-id", sid]
    hermes.cli(*args, *(["--lineage", "logical"] if logical else []))
    (theirs,) = [p for p in out.iterdir() if p.suffix == f".{fmt}"]
    r = client.get(f"/export.{fmt}?session={sid}" + ("&lineage_mode=logical" if logical else ""))
    assert r.status_code == 200, r.get_data(as_text=True)[:300]
    ours = r.get_data(as_text=True)
    assert _same_but_moment(ours) == _same_but_moment(theirs.read_text()), (name, sid)
    assert _disposition_name(r) == theirs.name
    # Logbook's file verifies by Hermes's own rule (its digest covers the whole body).
    record = json.loads(client.get(f"/export.jsonl?session={sid}&rewound=0").get_data(as_text=True))
    if not logical:
        assert exports.verify(ours, record) == (True, "ok")
        assert exports.verify(ours.replace("## Messages", "## Messagez"), record)[0] is False


def test_filtered_markdown_zip_equals_hermes_directory(pair, tmp_path):
    name, hermes, client = pair
    out = tmp_path / "hermes"
    hermes.cli("sessions", "export", str(out), "--format", "md", "--source", "telegram")
    theirs = {p.name: p.read_text() for p in out.iterdir() if p.suffix == ".md"}
    r = client.get("/export.md?selection=export&source=telegram")
    if not theirs:
        assert r.status_code == 404
        return
    assert r.status_code == 200 and r.mimetype in ("application/zip", "text/markdown")
    if len(theirs) == 1:
        assert _same_but_moment(r.get_data(as_text=True)) == _same_but_moment(
            next(iter(theirs.values()))
        )
        return
    archive = zipfile.ZipFile(io.BytesIO(r.get_data()))
    ours = {n: archive.read(n).decode() for n in archive.namelist() if n.endswith(".md")}
    assert sorted(ours) == sorted(theirs), name
    for file_name, text in theirs.items():
        assert _same_but_moment(ours[file_name]) == _same_but_moment(text), file_name
    manifest = _jsonl(archive.read("manifest.jsonl").decode())
    their_manifest = _jsonl((out / "manifest.jsonl").read_text())
    key = lambda e: e["session_id"]  # noqa: E731
    assert [(e["session_id"], e["message_count"]) for e in sorted(manifest, key=key)] == [
        (e["session_id"], e["message_count"]) for e in sorted(their_manifest, key=key)
    ]


@pytest.mark.parametrize(
    "cli,query",
    [
        (("--source", "telegram"), "selection=export&source=telegram"),
        (("--older-than", "1d"), "selection=export&older_than=1d"),
        (("--min-messages", "4", "--source", "cli"), "selection=export&min_messages=4&source=cli"),
    ],
)
def test_filtered_jsonl_equals_hermes(pair, tmp_path, cli, query):
    name, hermes, client = pair
    out = tmp_path / "out.jsonl"
    hermes.cli("sessions", "export", str(out), *cli)
    theirs = _jsonl(out.read_text())
    r = client.get(f"/export.jsonl?{query}")
    ours = _jsonl(r.get_data(as_text=True)) if r.status_code == 200 else []
    assert r.status_code == (200 if theirs else 404)
    assert ours == theirs, (name, query)


def test_one_session_jsonl_equals_hermes(pair, tmp_path):
    name, hermes, client = pair
    for sid in _ids(hermes).values():
        out = tmp_path / f"{sid}.jsonl"
        hermes.cli("sessions", "export", str(out), "--session-id", sid)
        ours = client.get(f"/export.jsonl?session={sid}").get_data(as_text=True)
        assert _jsonl(ours) == _jsonl(out.read_text()), (name, sid)


@pytest.mark.parametrize("fmt", ["jsonl", "md"])
@pytest.mark.parametrize("scope", ["one", "filter"])
def test_user_prompts_equal_hermes_byte_for_byte(pair, tmp_path, fmt, scope):
    name, hermes, client = pair
    sid = _ids(hermes)["longest"]
    out = tmp_path / f"prompts.{fmt}"
    cli = ("--session-id", sid) if scope == "one" else ("--source", "cli")
    hermes.cli("sessions", "export", str(out), "--format", fmt, "--only", "user-prompts", *cli)
    query = f"session={sid}" if scope == "one" else "selection=export&source=cli"
    r = client.get(f"/export.{fmt}?only=user-prompts&{query}")
    assert r.status_code == 200
    assert r.get_data(as_text=True) == out.read_text(), (name, fmt, scope)


@pytest.mark.parametrize("fmt", ["jsonl", "md"])
def test_redacted_exports_equal_hermes_and_hold_no_secret(pair, tmp_path, fmt):
    name, hermes, client = pair
    sid = _ids(hermes)["longest"]
    out = tmp_path / ("out.jsonl" if fmt == "jsonl" else "dir")
    hermes.cli("sessions", "export", str(out), "--format", fmt, "--session-id", sid, "--redact")
    r = client.get(f"/export.{fmt}?session={sid}&redact=1")
    ours = r.get_data(as_text=True)
    if fmt == "jsonl":
        assert _jsonl(ours) == _jsonl(out.read_text())
    else:
        (theirs,) = [p for p in out.iterdir() if p.suffix == ".md"]
        assert _same_but_moment(ours) == _same_but_moment(theirs.read_text())
    assert SECRET not in ours and GH_TOKEN not in ours
    plain = client.get(f"/export.{fmt}?session={sid}").get_data(as_text=True)
    assert SECRET in plain, "without redact=1 the export is the data as stored"


def test_html_export_equals_hermes(pair, tmp_path):
    name, hermes, client = pair
    sid = _ids(hermes)["tools"]
    out = tmp_path / "one.html"
    hermes.cli("sessions", "export", str(out), "--format", "html", "--session-id", sid)
    ours = client.get(f"/export.html?session={sid}").get_data(as_text=True)

    def steady(text: str) -> str:
        # The page's generation time and its script nonce differ from run to run.
        text = re.sub(r"Generated on [0-9: -]+", "Generated on <when>", text)
        return re.sub(r'nonce-[A-Za-z0-9_-]+|nonce="[A-Za-z0-9_-]+"', "<nonce>", text)

    assert steady(ours) == steady(out.read_text()), name
