"""Every export format against `hermes sessions export` of Hermes Agent 0.19.0 itself, each on
its own copy of the same database (schemas 11 and 22): JSONL, Markdown, QMD, HTML and user
prompts (JSONL and Markdown), each for one session and for a filtered set, plain and with
--redact; also Markdown of a logical lineage, and filtered JSONL under other filters.

Logbook's renderers are its own code. The files a script reads (JSONL, Markdown, QMD, user
prompts) must be Hermes's bytes, but for what changes on every Hermes run: the moment of
export (and the SHA-256 line that covers it, which is checked by Hermes's own
verify_export_file instead). The HTML page is Logbook's own page, made for a person to read:
it must hold what Hermes's page holds, in the same order (read back from both pages by
tests/support/export_pages.py), not look like it."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import sqlite3
import zipfile

import pytest

from support import copy_fixture, make_app
from support.export_pages import hermes_page, logbook_page
from support.oracle import Hermes, ensure_venv
from support.redaction_corpus import CORPUS, NEAR_MISSES

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
        longest = conn.execute(
            "SELECT session_id FROM messages GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1"
        ).fetchone()[0]
        # The sessions the format tests export: the one with most tool calls besides the
        # longest (see _ids) and the filtered set's (telegram, at least two messages).
        tools = conn.execute(
            "SELECT session_id FROM messages WHERE tool_calls IS NOT NULL AND tool_calls != '' "
            "AND session_id != ? GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1",
            (longest,),
        ).fetchone()[0]
        telegram = conn.execute(
            "SELECT s.id FROM sessions s JOIN messages m ON m.session_id = s.id "
            "WHERE s.source = 'telegram' AND s.ended_at IS NOT NULL GROUP BY s.id "
            "HAVING COUNT(*) >= 2 ORDER BY COUNT(*) DESC LIMIT 1"
        ).fetchone()
        ts = conn.execute("SELECT MAX(timestamp) FROM messages").fetchone()[0] + 1
        for n, sid in enumerate(dict.fromkeys([longest, tools, *(telegram or ())])):
            conn.execute(
                "INSERT INTO messages (session_id, role, content, timestamp) "
                "VALUES (?, 'user', ?, ?)",
                (sid, f"my key is OPENAI_API_KEY={SECRET} please keep it", ts + 2 * n),
            )
            conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_name, timestamp) "
                "VALUES (?, 'tool', ?, 'terminal', ?)",
                (sid, f'{{"output": "export GITHUB_TOKEN={GH_TOKEN}"}}', ts + 2 * n + 1),
            )
            conn.execute(
                "UPDATE sessions SET message_count = message_count + 2 WHERE id = ?", (sid,)
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


def _steady(text: str) -> str:
    for pattern, repl in _MOMENT:
        text = pattern.sub(repl, text)
    return text


# format -> (Hermes's options, Logbook's route and query); the HTML page is compared by what
# it holds (test_html_page_holds_what_hermes_page_holds)
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
FILTER = (
    ("--source", "telegram", "--min-messages", "2"),
    "selection=export&source=telegram&min_messages=2",
)


def _hermes_files(hermes: Hermes, out, fmt: str, scope: tuple[str, ...]) -> dict[str, bytes]:
    """What `hermes sessions export` wrote: one file, or a folder of files (md, qmd)."""
    hermes.cli("sessions", "export", str(out), *FORMATS[fmt][0], *scope)
    if out.is_dir():
        return {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    return {out.name: out.read_bytes()}


def _logbook_files(response, name: str) -> dict[str, bytes]:
    if response.mimetype == "application/zip":
        archive = zipfile.ZipFile(io.BytesIO(response.get_data()))
        return {n: archive.read(n) for n in archive.namelist()}
    return {name: response.get_data()}


@pytest.mark.parametrize("redact", [False, True], ids=["plain", "redacted"])
@pytest.mark.parametrize("scope", ["one", "filtered"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_equals_hermes(pair, tmp_path, fmt, scope, redact):
    name, hermes, client = pair
    sid = _ids(hermes)["tools"]
    cli = ("--session-id", sid) if scope == "one" else FILTER[0]
    query = f"session={sid}" if scope == "one" else FILTER[1]
    folder = fmt in ("md", "qmd")
    out = tmp_path / ("out" if folder else f"out.{fmt.split('-')[-1]}")
    theirs = _hermes_files(hermes, out, fmt, (*cli, *(["--redact"] if redact else [])))
    r = client.get(FORMATS[fmt][1] + query + ("&redact=1" if redact else ""))
    assert r.status_code == 200, r.get_data(as_text=True)[:300]
    ours = _logbook_files(r, out.name)
    if folder:
        their_manifest = _jsonl(theirs.pop("manifest.jsonl").decode())
        if len(theirs) == 1:
            assert _disposition_name(r) == next(iter(theirs))
            ours = {_disposition_name(r): r.get_data()}
        else:
            manifest = _jsonl(ours.pop("manifest.jsonl").decode())
            mine = {e["session_id"]: (e["message_count"], e["path"]) for e in manifest}
            assert {e["session_id"]: e["message_count"] for e in their_manifest} == {
                k: v[0] for k, v in mine.items()
            }
            for entry in manifest:  # the manifest's digest is over the file as written
                assert entry["sha256"] == hashlib.sha256(ours[entry["path"]]).hexdigest()
    assert sorted(ours) == sorted(theirs), (name, fmt, scope)
    for file_name, data in theirs.items():
        exact = fmt in ("jsonl", "prompts-jsonl", "prompts-md")
        if exact:  # nothing in these changes from run to run: the very same bytes
            assert ours[file_name] == data, (name, fmt, scope, file_name)
        else:
            assert _steady(ours[file_name].decode()) == _steady(data.decode()), (name, file_name)
    if folder:
        # Hermes's own verify_export_file accepts Logbook's files.
        for file_name, data in ours.items():
            path = tmp_path / f"ours-{file_name}"
            path.write_bytes(data)
            session = re.search(r'^session_id: "(.*)"$', data.decode(), re.M).group(1)
            assert hermes.call("verify_export", path=str(path), session_id=session) == [True, "ok"]
    joined = b"".join(ours.values())
    if redact:
        assert SECRET.encode() not in joined and GH_TOKEN.encode() not in joined
    else:
        # The planted secrets are in what was exported: the redacted cell proves something.
        assert SECRET.encode() in joined, (name, fmt, scope)


HTML_SCOPES = {
    "one": None,  # the session with most tool calls (see _ids)
    "filtered": FILTER,
    "every": (("--min-messages", "1"), "selection=export&min_messages=1"),
}


@pytest.mark.parametrize("redact", [False, True], ids=["plain", "redacted"])
@pytest.mark.parametrize("scope", list(HTML_SCOPES))
def test_html_page_holds_what_hermes_page_holds(pair, tmp_path, scope, redact):
    """Content parity: the same sessions in the same order, each with the same id, title,
    model, start and system prompt, and the same messages in the same order, each with the
    same role, time, text, tool calls (name and arguments) and reasoning."""
    name, hermes, client = pair
    sid = _ids(hermes)["tools"]
    cli, query = HTML_SCOPES[scope] or (("--session-id", sid), f"session={sid}")
    out = tmp_path / "out.html"
    hermes.cli("sessions", "export", str(out), "--format", "html", *cli, *(["--redact"] * redact))
    r = client.get("/export.html?" + query + ("&redact=1" if redact else ""))
    assert r.status_code == 200, r.get_data(as_text=True)[:300]
    theirs, ours = hermes_page(out.read_text()), logbook_page(r.get_data(as_text=True))
    held = [m for s in theirs.sessions for m in s.messages]
    # What the comparison stands on: sessions, messages, tool calls, results, reasoning.
    assert theirs.sessions and held, (name, scope)
    assert any(m.calls for m in held) and any(m.role == "tool" and m.text for m in held)
    if scope != "one":
        assert len(theirs.sessions) > 1 and theirs.contents == [s.id for s in theirs.sessions]
    assert ours.contents == theirs.contents, (name, scope)
    assert [s.id for s in ours.sessions] == [s.id for s in theirs.sessions], (name, scope)
    for mine, their in zip(ours.sessions, theirs.sessions, strict=True):
        assert (mine.title, mine.model, mine.started, mine.system_prompt) == (
            their.title,
            their.model,
            their.started,
            their.system_prompt,
        ), (name, mine.id)
        assert len(mine.messages) == len(their.messages), (name, mine.id)
        for n, (a, b) in enumerate(zip(mine.messages, their.messages, strict=True)):
            assert a == b, (name, mine.id, n)
    page = r.get_data(as_text=True)
    if redact:
        assert SECRET not in page and GH_TOKEN not in page
    else:
        assert SECRET in page, (name, scope)


@pytest.mark.parametrize("which", ["longest", "chain"])
@pytest.mark.parametrize("fmt", ["md", "qmd"])
def test_logical_lineage_markdown_equals_hermes(pair, tmp_path, which, fmt):
    name, hermes, client = pair
    sid = _ids(hermes)[which]
    out = tmp_path / "hermes"
    hermes.cli(
        "sessions", "export", str(out), "--format", fmt, "--session-id", sid, "--lineage", "logical"
    )
    (theirs,) = [p for p in out.iterdir() if p.suffix == f".{fmt}"]
    r = client.get(f"/export.{fmt}?session={sid}&lineage_mode=logical")
    assert r.status_code == 200, r.get_data(as_text=True)[:300]
    assert _steady(r.get_data(as_text=True)) == _steady(theirs.read_text()), (name, sid)
    assert _disposition_name(r) == theirs.name
    mine = tmp_path / theirs.name
    mine.write_bytes(r.get_data())
    assert hermes.call("verify_export", path=str(mine), session_id=sid, logical=True) == [
        True,
        "ok",
    ]
    broken = tmp_path / "broken.md"
    broken.write_text(r.get_data(as_text=True).replace("## Messages", "## Messagez"))
    assert hermes.call("verify_export", path=str(broken), session_id=sid, logical=True)[0] is False


@pytest.mark.parametrize(
    "cli,query",
    [
        (("--source", "telegram"), "selection=export&source=telegram"),
        (("--older-than", "1d"), "selection=export&older_than=1d"),
        (("--min-messages", "4", "--source", "cli"), "selection=export&min_messages=4&source=cli"),
        (("--model", "sonnet"), "selection=export&model=sonnet"),
        (("--title", "the"), "selection=export&title=the"),
        (("--end-reason", "compression"), "selection=export&end_reason=compression"),
    ],
)
def test_filtered_jsonl_bytes_equal_hermes(pair, tmp_path, cli, query):
    name, hermes, client = pair
    out = tmp_path / "out.jsonl"
    hermes.cli("sessions", "export", str(out), *cli)
    theirs = out.read_bytes()
    r = client.get(f"/export.jsonl?{query}")
    assert r.status_code == (200 if theirs else 404)
    assert (r.get_data() if r.status_code == 200 else b"") == theirs, (name, query)


def test_whole_database_jsonl_bytes_equal_hermes(pair, tmp_path):
    name, hermes, client = pair
    out = tmp_path / "all.jsonl"
    hermes.cli("sessions", "export", str(out))
    r = client.get("/export.jsonl")
    assert r.status_code == 200
    assert r.get_data() == out.read_bytes(), name


def test_redaction_corpus_against_hermes(tmp_path):
    """The corpus of credentials (tests/support/redaction_corpus.py) through Hermes's own
    redaction: nothing Hermes masks survives Logbook's, and the text comes out the same but
    where Logbook masks more (webui.hermes.redaction.STRONGER)."""
    from webui.hermes.redaction import redact_text

    venv = ensure_venv()
    texts = [text for text, _, _ in CORPUS] + NEAR_MISSES
    theirs = Hermes(venv, tmp_path).call("redact", texts=texts)
    for (text, secret, rule), hermes_out in zip(CORPUS, theirs, strict=False):
        ours = redact_text(text)
        if secret not in hermes_out:
            assert secret not in ours, (rule, text)
        if not rule.startswith("Authorization"):
            assert redact_text(text) == hermes_out, (rule, text)
    for text, hermes_out in zip(NEAR_MISSES, theirs[len(CORPUS) :], strict=True):
        assert redact_text(text) == hermes_out == text
