"""Hermes's export formats through Logbook's HTTP routes, and "export, then delete what was
verifiably exported", on real copies of the Hermes databases. (The comparison with Hermes
itself, byte for byte, is tests/test_oracle_exports.py.)"""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile

import pytest

from support import copy_fixture, make_app, sql
from support.http import fts_consistent, post
from webui.hermes import export_markdown, export_prompts, exports


@pytest.fixture
def v22(tmp_path):
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    return db, app, app.test_client()


def _name(r) -> str:
    return r.headers["Content-Disposition"].split('filename="')[1].rstrip('"')


# -- formats ------------------------------------------------------------------------------------


def test_markdown_file_is_hermes_layout_and_verifies(v22):
    db, _, client = v22
    r = client.get("/export.md?session=x_rewound")
    assert r.status_code == 200 and r.mimetype == "text/markdown"
    text = r.get_data(as_text=True)
    assert text.startswith('---\nsession_id: "x_rewound"\n')
    assert _name(r).startswith("x_rewound-") and _name(r).endswith(".md")
    record = json.loads(client.get("/export.jsonl?session=x_rewound").get_data(as_text=True))
    assert export_markdown.verify(text, record) == (True, "ok")
    active = sql(db, "SELECT COUNT(*) FROM messages WHERE session_id='x_rewound' AND active=1")
    assert f"- Exported messages: `{active[0][0]}`" in text  # rewound ones left out, as Hermes
    with_rewound = client.get("/export.md?session=x_rewound&rewound=1").get_data(as_text=True)
    total = sql(db, "SELECT COUNT(*) FROM messages WHERE session_id='x_rewound'")[0][0]
    assert total > active[0][0] and f"- Exported messages: `{total}`" in with_rewound
    # Tampering is caught by Hermes's own check.
    assert export_markdown.verify(text.replace("### User", "### Usr", 1), record)[0] is False


def test_logical_lineage_is_the_whole_compression_chain(v22):
    _, _, client = v22
    text = client.get("/export.qmd?session=x_chain_mid&lineage_mode=logical").get_data(as_text=True)
    assert 'lineage_session_ids: ["x_chain_root", "x_chain_mid", "x_chain_tip"]' in text
    assert text.count("## Compression segment: ") == 3
    assert 'format: "qmd"' in text and "x_chain_stale" not in text


def test_several_sessions_download_as_a_zip_with_a_manifest(v22):
    db, _, client = v22
    r = client.get("/export.md?session=x_chain_root&session=x_chain_tip&session=x_rewound")
    assert r.status_code == 200 and r.mimetype == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(r.get_data()))
    assert archive.testzip() is None
    names = archive.namelist()
    assert names[-1] == "manifest.jsonl" and len(names) == 4
    manifest = [json.loads(x) for x in archive.read("manifest.jsonl").decode().splitlines()]
    assert {m["session_id"] for m in manifest} == {"x_chain_root", "x_chain_tip", "x_rewound"}
    for m in manifest:
        import hashlib

        assert hashlib.sha256(archive.read(m["path"])).hexdigest() == m["sha256"]


@pytest.mark.parametrize(
    "url,words",
    [
        ("/export.md", "at least one filter"),
        ("/export.qmd", "at least one filter"),
        ("/export.qmd?session=x_rewound&only=user-prompts", "not QMD"),
        ("/export.jsonl?only=assistant", "only=user-prompts"),
        ("/export.md?session=x_rewound&lineage_mode=everything", "logical"),
        ("/export.md?selection=export", "at least one filter"),
    ],
)
def test_export_options_hermes_refuses_get_a_clear_message(v22, url, words):
    _, _, client = v22
    r = client.get(url)
    assert r.status_code == 400
    assert words in r.get_data(as_text=True)


def test_redact_hides_credentials_in_every_format(v22):
    db, _, client = v22
    secret = "sk-ant-api03-" + "Zx9" * 12
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE messages SET content = ? WHERE id = (SELECT MIN(id) FROM messages WHERE "
            "session_id = 'x_rewound' AND role = 'user')",
            (f"ANTHROPIC_API_KEY={secret}",),
        )
    for fmt in ("jsonl", "md", "qmd", "html"):
        plain = client.get(f"/export.{fmt}?session=x_rewound").get_data(as_text=True)
        hidden = client.get(f"/export.{fmt}?session=x_rewound&redact=1").get_data(as_text=True)
        assert secret in plain, fmt
        assert secret not in hidden and "ANTHROPIC_API_KEY=" in hidden, fmt
    prompts = client.get("/export.jsonl?session=x_rewound&only=user-prompts&redact=1")
    assert secret not in prompts.get_data(as_text=True)


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_user_prompts_markdown_layout(v22, n):
    """One session gets its own title and second-level headings; none or several get the
    export title and a section each; blank lines never trail. (Byte for byte against Hermes:
    test_oracle_exports.py.)"""
    _, _, client = v22
    ids = [r[0] for r in sql(v22[0], "SELECT id FROM sessions ORDER BY id LIMIT ?", (n,))]
    records = [
        json.loads(client.get(f"/export.jsonl?session={i}").get_data(as_text=True)) for i in ids
    ]
    text = "".join(export_prompts.markdown_chunks(records))
    assert text.endswith("\n") and not text.endswith("\n\n")
    if n == 1:
        assert text.startswith(f"# User prompts for session {ids[0]}\n- Session ID: `{ids[0]}`")
        prompts = sum(1 for m in records[0]["messages"] if m["role"] == "user")
        assert text.count("\n## ") == prompts
    else:
        assert text.startswith("# User prompts export\n\n")
        assert text.count("\n## Session ") == n
        if n == 0:
            assert text == "# User prompts export\n\n_No user prompts found._\n"


def test_compression_lineage_rules():
    rows = {
        "a": {"id": "a", "end_reason": "compression"},
        "b": {"id": "b", "parent_session_id": "a", "end_reason": "compression", "started_at": 2},
        "br": {
            "id": "br",
            "parent_session_id": "a",
            "started_at": 1,
            "model_config": '{"_branched_from": "a"}',
        },
        "c": {"id": "c", "parent_session_id": "b", "started_at": 3},
        "loop1": {"id": "loop1", "parent_session_id": "loop2", "end_reason": "compression"},
        "loop2": {"id": "loop2", "parent_session_id": "loop1", "end_reason": "compression"},
    }
    kids = {}
    for r in rows.values():
        kids.setdefault(r.get("parent_session_id"), []).append(r)
    children = lambda i: sorted(kids.get(i, []), key=lambda r: r.get("started_at", 0))  # noqa: E731
    walk = lambda i: exports.compression_lineage(i, rows.get, children)  # noqa: E731
    assert walk("b") == ["a", "b", "c"] == walk("c") == walk("a")
    assert walk("br") == ["br"], "a branch stands alone"
    assert walk("nope") == []
    assert set(walk("loop1")) <= {"loop1", "loop2"}, "a cycle ends"


# -- export, then delete what was verifiably exported --------------------------------------------


def test_backed_up_delete_writes_verified_files_then_deletes(v22, tmp_path):
    db, app, client = v22
    ids = {r[0] for r in sql(db, "SELECT id FROM messages WHERE session_id = 'x_rewound'")}
    r = post(client, "/sessions/x_rewound/delete", {"backup": "verified"}, htmx=True)
    assert r.status_code == 200, r.get_data(as_text=True)
    toast = json.loads(r.headers["HX-Trigger"])["toast"]
    assert "after backing up 4 messages" in toast and "(verified)" in toast
    assert sql(db, "SELECT COUNT(*) FROM sessions WHERE id = 'x_rewound'")[0][0] == 0
    (folder,) = (tmp_path / "inst" / "session-exports").iterdir()
    md = next(folder.glob("x_rewound-*.md")).read_text()
    (record,) = [json.loads(x) for x in (folder / "sessions.jsonl").read_text().splitlines()]
    assert {m["id"] for m in record["messages"]} == ids, "every row, rewound ones too"
    assert export_markdown.verify(md, exports.without_rewound(record)) == (True, "ok")
    assert json.loads((folder / "manifest.jsonl").read_text())["session_id"] == "x_rewound"
    fts_consistent(db)


def test_backed_up_delete_takes_the_subagent_runs_it_backs_up(v22, tmp_path):
    db, _, client = v22
    r = post(client, "/sessions/x_deleg_parent/delete", {"backup": "verified"}, htmx=True)
    assert r.status_code == 200
    (folder,) = (tmp_path / "inst" / "session-exports").iterdir()
    backed = [json.loads(x)["id"] for x in (folder / "sessions.jsonl").read_text().splitlines()]
    assert backed[0] == "x_deleg_parent" and len(backed) > 1
    left = sql(
        db, f"SELECT COUNT(*) FROM sessions WHERE id IN ({','.join('?' * len(backed))})", backed
    )
    assert left[0][0] == 0


def test_a_message_newer_than_the_backup_keeps_the_session(v22):
    """The delete transaction's own check, with a real database: the backup held every message
    but the newest (as if the gateway wrote it after the export)."""
    db, app, _ = v22
    newest = sql(db, "SELECT MAX(id) FROM messages WHERE session_id = 'x_rewound'")[0][0]
    before = sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = 'x_rewound'")[0][0]
    from webui.db.changes.backup import ChangedSinceBackup
    from webui.web.logbooks import get_logbook

    with app.app_context(), pytest.raises(ChangedSinceBackup, match="1 new message arrived in"):
        get_logbook().actions.delete("x_rewound", upto={"x_rewound": newest - 1})
    assert sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = 'x_rewound'")[0][0] == before


def test_a_long_session_that_changed_keeps_every_message_the_backup_lacks(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    sid, n = sql(
        db,
        "SELECT session_id, COUNT(*) FROM messages GROUP BY session_id ORDER BY 2 DESC LIMIT 1",
    )[0]
    assert n > 150  # long enough to be trimmed in batches before the final transaction
    newest = sql(db, "SELECT MAX(id) FROM messages WHERE session_id = ?", (sid,))[0][0]
    from webui.db.changes.backup import ChangedSinceBackup
    from webui.web.logbooks import get_logbook

    with (
        app.app_context(),
        pytest.raises(ChangedSinceBackup, match="messages were already removed"),
    ):
        get_logbook().actions.delete(sid, upto={sid: newest - 1})
    left = [r[0] for r in sql(db, "SELECT id FROM messages WHERE session_id = ?", (sid,))]
    assert newest in left, "the message the backup lacks is still there"
    assert sql(db, "SELECT COUNT(*) FROM sessions WHERE id = ?", (sid,))[0][0] == 1
    fts_consistent(db)


def test_a_backup_that_cannot_be_written_deletes_nothing(v22, tmp_path):
    db, app, client = v22
    (tmp_path / "inst").mkdir(exist_ok=True)
    (tmp_path / "inst" / "session-exports").write_text("a file where the folder should be")
    r = post(client, "/sessions/x_rewound/delete", {"backup": "verified"}, htmx=True)
    assert r.status_code == 409 and "No backup folder could be made" in r.get_data(as_text=True)
    assert sql(db, "SELECT COUNT(*) FROM sessions WHERE id = 'x_rewound'")[0][0] == 1


def test_prune_with_backup_deletes_exactly_the_preview_and_backs_each_up(v22, tmp_path):
    db, _, client = v22
    query = {"source": "telegram", "older_than": "1d"}
    preview = client.get("/prune?format=json&source=telegram&older_than=1d").get_json()
    expected = set(preview["sessions"])
    assert expected
    r = post(client, "/prune", {**query, "confirm": "yes", "backup": "verified"})
    body = r.get_json()
    assert r.status_code == 200 and body["error"] is None, body
    assert body["deleted"] >= len(expected) and body["kept"] == []
    marks = ",".join("?" * len(expected))
    assert (
        sql(db, f"SELECT COUNT(*) FROM sessions WHERE id IN ({marks})", list(expected))[0][0] == 0
    )
    folder = tmp_path / "inst" / "session-exports"
    (job_folder,) = folder.iterdir()
    backed = {json.loads(x)["id"] for x in (job_folder / "sessions.jsonl").read_text().splitlines()}
    assert expected <= backed
    assert len(list(job_folder.glob("*.md"))) == len(backed)
    fts_consistent(db)


# -- the export form: counts before the download, "nothing matches" in the form ----------------


def test_export_summary_counts_what_the_download_will_hold(v22):
    db, _, client = v22
    body = client.get("/export/summary?format=json&source=telegram&min_messages=2").get_json()
    want = sql(
        db,
        "SELECT COUNT(*), SUM(message_count) FROM sessions WHERE source = 'telegram' "
        "AND message_count >= 2",
    )[0]
    assert (body["sessions"], body["messages"]) == want
    assert body["bytes"] > 0
    lines = client.get("/export.jsonl?source=telegram&min_messages=2").get_data(as_text=True)
    assert len(lines.splitlines()) == body["sessions"]
    size = len(lines.encode())
    assert size / 3 < body["bytes"] < size * 3, (size, body["bytes"])  # "about"
    fragment = client.get("/export/summary?source=telegram", headers={"HX-Request": "true"})
    text = fragment.get_data(as_text=True)
    assert 'id="export-summary"' in text and "sessions</strong>" in text and "<html" not in text


def test_an_empty_selection_from_the_form_shows_the_form_again_saying_so(v22):
    _, _, client = v22
    url = "/export.jsonl?from=form&source=telegram&title=no+such+title+anywhere"
    r = client.get(url, headers={"Accept": "text/html"})
    assert r.status_code == 404
    page = r.get_data(as_text=True)
    assert "Nothing matches these filters" in page
    assert 'value="no such title anywhere"' in page  # the form as it was filled
    assert page.count("disabled>") >= 5 or page.count("disabled") >= 5
    # A script still gets a plain 404 with the reason.
    r = client.get(url.replace("from=form&", "") + "&format=json")
    assert r.status_code == 404 and "nothing to export" in r.get_json()["message"]
    summary = client.get(
        "/export/summary?title=no+such+title+anywhere", headers={"HX-Request": "true"}
    )
    assert "Nothing matches these filters" in summary.get_data(as_text=True)


# -- options a route does not read are refused, and redaction reaches every format -------------


@pytest.mark.parametrize(
    ("url", "option"),
    [
        ("/export.html?source=cli&only=user-prompts", "only"),
        ("/export.csv?source=cli&only=user-prompts", "only"),
        ("/export.html?source=cli&lineage_mode=logical", "lineage_mode"),
        ("/export.csv?source=cli&lineage_mode=logical", "lineage_mode"),
        ("/export.csv?source=cli&rewound=1", "rewound"),
        ("/export.md?style=transcript&session=x_rewound&only=user-prompts", "only"),
        ("/export.md?style=transcript&session=x_rewound&lineage_mode=logical", "lineage_mode"),
    ],
)
def test_an_export_option_a_format_does_not_read_is_refused_naming_it(v22, url, option):
    """Hermes refuses --only user-prompts outside jsonl and md; Logbook's own formats refuse
    what they cannot honour instead of answering as if it had not been asked."""
    _db, _app, client = v22
    r = client.get(url)
    assert r.status_code == 400, (url, r.status_code)
    assert f"“{option}=" in r.get_data(as_text=True)
    # From the export form in a browser: the form again, saying which box to clear.
    form = client.get(url + "&from=form", headers={"Accept": "text/html"})
    page = form.get_data(as_text=True)
    assert form.status_code == 400 and 'id="export-form"' in page and f"“{option}=" in page


def test_redaction_reaches_the_csv_and_the_transcript(v22):
    """redact=1 was silently dropped by the CSV (titles) and the readable transcript: a
    planted key survived both."""
    db, _app, client = v22
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET title = ? WHERE id = 'x_rewound'", (f"deploy {secret}",))
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) "
            "VALUES ('x_rewound', 'user', ?, (SELECT MAX(timestamp) + 1 FROM messages "
            "WHERE session_id = 'x_rewound'))",
            (f"my token is {secret}",),
        )
    for url in (
        "/export.csv?session=x_rewound",
        "/export.md?style=transcript&session=x_rewound",
    ):
        plain = client.get(url).get_data(as_text=True)
        assert secret in plain, url  # the test plants what it then looks for
        masked = client.get(url + "&redact=1")
        assert masked.status_code == 200
        body = masked.get_data(as_text=True)
        assert secret not in body and "ghp_" in body, url  # masked as Hermes masks: prefix kept


def test_the_export_form_offers_every_selection_option(v22):
    """The export page offers the list's and Hermes's filters: every selection option has a
    field of its own name (prune, archive and cold storage share the same fields)."""
    import re

    from webui.hermes.selection import PARAMS, TIME_PARAMS

    _db, _app, client = v22
    for route in ("/export", "/prune", "/coldstore"):
        page = client.get(route).get_data(as_text=True)
        names = set(re.findall(r'name="([a-z_]+)"', page))
        missing = [p for p in [*PARAMS, *TIME_PARAMS] if p not in names]
        assert not missing, (route, missing)


def test_a_streamed_export_cut_into_parts_by_size_writes_the_same_bytes(v22, monkeypatch):
    """A part of a streamed export ends after BATCH_BYTES of encoded records as well as after
    its hundredth session (a run of long sessions is not held a hundred at a time): cut after
    every record, the download is byte for byte the one cut by count alone."""
    from webui.db.sessions import export as db_export

    _db, _app, client = v22
    whole = client.get("/export.jsonl").get_data()
    opened = []
    plain = db_export.Exporter._records_batch

    def counting(self, ids, *a, **k):
        out, done = plain(self, ids, *a, **k)
        opened.append(done)
        return out, done

    monkeypatch.setattr(db_export.Exporter, "_records_batch", counting)
    monkeypatch.setattr(db_export, "BATCH_BYTES", 1)
    cut = client.get("/export.jsonl").get_data()
    records = whole.count(b"\n")
    assert records > 5 and cut == whole
    assert set(opened) == {1} and len(opened) >= records  # a part per record
