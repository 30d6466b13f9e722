"""The Storage and Files pages and the Reliability section through real HTTP (issue 48): what
each shows, across stores and profiles, its JSON twin, what the prune and cold-storage previews
say a selection would free, bad input refused with a reason, untrusted text escaped."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from support import FIXTURES, copy_fixture, make_app, sql
from webui.web.logbooks import get_logbook

REPO = "/home/ana/src/atlas"


@pytest.fixture()
def tools(tmp_path):
    db = copy_fixture("hermes-v22-tools.db", tmp_path)
    # every answer afresh once the digest moved (the lag the pages allow is for a live gateway)
    app = make_app(db, tmp_path / "inst", LOGBOOK_STATS_REUSE_S=0)
    return db, app, app.test_client()


def every_change(client, url: str) -> list[dict]:
    out, seen_urls = [], set()
    while url:
        assert url not in seen_urls
        seen_urls.add(url)
        body = client.get(url).get_json()
        out += body["changes"]
        url = body["next"]
    return out


# -- Files ---------------------------------------------------------------------------------------


def test_changes_page_through_every_change_once(tools):
    db, app, c = tools
    rows = every_change(c, "/files?format=json&limit=4&workspace=")
    with app.app_context():
        d = get_logbook().digest
        conn = d.connect()
        total = conn.execute("SELECT COUNT(*) FROM changes").fetchone()[0]
        conn.close()
    assert total > 20
    assert (
        len(rows)
        == total
        == len(
            {(r["session_id"], r["message_id"], r["call_index"], r["change_index"]) for r in rows}
        )
    )
    keys = [(r["timestamp"], r["id"]) for r in rows]
    assert keys == sorted(keys, reverse=True)


def test_grouped_by_workspace_newest_first(tools):
    _db, _app, c = tools
    body = c.get("/files?format=json").get_json()
    assert [g["last"] for g in body["groups"]] == sorted(
        (g["last"] for g in body["groups"]), reverse=True
    )
    atlas = next(g for g in body["groups"] if g["workspace"] == REPO)
    assert atlas["files"] == len(
        {r["path"] for r in every_change(c, f"/files?format=json&workspace={REPO}")}
    )
    assert all(r["workspace"] == REPO for r in atlas["recent"])
    assert {r["rel"] for r in atlas["recent"]} <= {
        r["rel"] for r in every_change(c, f"/files?format=json&workspace={REPO}")
    }
    none = every_change(c, "/files?format=json&workspace=(none)")
    assert {r["path"] for r in none} == {"/tmp/hello.txt"}
    assert body["forms"] and any(">>" in f["form"] for f in body["forms"])


def test_each_change_links_to_its_message(tools):
    db, _app, c = tools
    for r in every_change(c, "/files?format=json&workspace="):
        assert (
            r["message_url"]
            == f"/sessions/{r['session_id']}?at={r['message_id']}#m-{r['message_id']}"
        )
        (role, calls) = sql(
            db, "SELECT role, tool_calls FROM messages WHERE id = ?", [r["message_id"]]
        )[0]
        assert (
            role == "assistant"
            and json.loads(calls)[r["call_index"]]["function"]["name"] == r["tool"]
        )
        page = c.get(r["message_url"].split("#")[0])
        assert page.status_code == 200 and f'id="m-{r["message_id"]}"' in page.get_data(
            as_text=True
        )


def test_paths_relative_to_their_workspace_and_filters(tools):
    _db, _app, c = tools
    rows = every_change(c, "/files?format=json&q=config&workspace=")
    assert rows and all("config" in r["path"].lower() for r in rows)
    assert {(r["path"], r["rel"]) for r in rows if r["workspace"] == REPO} >= {
        (f"{REPO}/src/config.py", "src/config.py")
    }
    by_session = every_change(c, "/files?format=json&session=tools_notes")
    assert {r["rel"] for r in by_session} == {"todo.md"}
    vias = every_change(c, "/files?format=json&via=sed -i")
    assert {r["via"] for r in vias} == {"sed -i"}


def test_a_paths_history_across_sessions_and_its_versions(tools):
    db, _app, c = tools
    path = f"{REPO}/src/config.py"
    hist = c.get(f"/files/history?format=json&path={path}").get_json()["changes"][
        ::-1
    ]  # oldest first
    assert [(r["session_id"], r["via"]) for r in hist] == [
        ("tools_atlas_1", "write_file"), ("tools_atlas_1", "patch"), ("tools_atlas_1", "sed -i"),
        ("tools_atlas_2", "write_file"),
    ]  # fmt: skip
    full = [r for r in hist if r["full"]]
    contents = []
    for r in full:
        ch = c.get(f"/files/change/{r['ref']}?format=json").get_json()["change"]
        args = sql(
            db,
            "SELECT json_extract(json_extract(tool_calls, '$[' || ? || '].function.arguments'), '$.content') "
            "FROM messages WHERE id = ?",
            [r["call_index"], r["message_id"]],
        )[0][0]
        assert ch["content"] == args
        contents.append(args)
        raw = c.get(f"/files/change/{r['ref']}?raw=1")
        assert raw.status_code == 200 and raw.get_data(as_text=True) == args
        assert "attachment" in raw.headers["Content-Disposition"] and raw.mimetype == "text/plain"
    diff = c.get(f"/files/diff?format=json&a={full[0]['ref']}&b={full[1]['ref']}").get_json()[
        "diff"
    ]
    import difflib

    expected = "".join(difflib.unified_diff(contents[0].splitlines(True), contents[1].splitlines(True),
                                           f"src/config.py ({full[0]['ref']})", f"src/config.py ({full[1]['ref']})"))  # fmt: skip
    assert diff == expected and "+BACKOFF = 2.0" in diff
    html = c.get(f"/files/history?path={path}").get_data(as_text=True)
    assert "Show the difference" in html and "src/config.py" in html
    patch = next(r for r in hist if r["via"] == "patch")
    body = c.get(f"/files/change/{patch['ref']}?format=json").get_json()["change"]
    assert body["content"] is None and "+TIMEOUT = 30.0" in body["patch"]
    moved = c.get(f"/files/history?format=json&path={REPO}/docs/notes.txt").get_json()["changes"][
        ::-1
    ]
    assert [(r["path"], r["action"], r["other"]) for r in moved] == [
        (f"{REPO}/docs/notes.txt", "move_in", f"{REPO}/notes.txt"),
        ("/tmp/notes.bak", "copy_in", f"{REPO}/docs/notes.txt"),
    ]


def test_a_history_pages_newest_first(tools, monkeypatch):
    _db, _app, c = tools
    from webui.web.views import files as files_view

    monkeypatch.setattr(files_view, "HISTORY_PAGE", 2)
    path = f"{REPO}/src/config.py"
    seen, url = [], f"/files/history?format=json&path={path}"
    while url:
        body = c.get(url).get_json()
        assert len(body["changes"]) <= 2
        seen += body["changes"]
        url = body["next"]
    assert len(seen) == 4 and [r["timestamp"] for r in seen] == sorted(
        (r["timestamp"] for r in seen), reverse=True
    )
    html = c.get(f"/files/history?path={path}").get_data(as_text=True)
    assert "Older changes" in html


def test_a_conversations_files_panel(tools):
    _db, _app, c = tools
    body = c.get("/sessions/tools_atlas_1/files?format=json").get_json()
    rows = body["changes"]
    assert rows and all(r["session_id"] == "tools_atlas_1" for r in rows)
    assert [(r["message_id"], r["call_index"], r["change_index"]) for r in rows] == sorted(
        (r["message_id"], r["call_index"], r["change_index"]) for r in rows
    )
    assert 'id="files-panel"' in c.get("/sessions/tools_atlas_1").get_data(as_text=True)
    html = c.get("/sessions/tools_atlas_1/files").get_data(as_text=True)
    assert "src/config.py" in html and "?at=" in html
    assert "No tool call" in c.get("/sessions/tools_webhook/files").get_data(as_text=True)


@pytest.mark.parametrize(
    "url, status",
    [
        ("/files?before=nonsense", 400),
        ("/files?limit=0", 400),
        ("/files?limit=x", 400),
        ("/files?colour=red", 400),
        ("/files?since=yesterday", 400),
        ("/files/history", 400),
        ("/files/history?path=/no/such/file", 404),
        ("/files/change/999999", 404),
        ("/files/change/abc", 400),
        ("/files/change/1@no such store", 400),
        ("/files/diff?a=1", 400),
        ("/storage?colour=red", 400),
    ],
)
def test_bad_input_is_refused_with_a_reason(tools, url, status):
    _db, _app, c = tools
    r = c.get(url)
    assert r.status_code == status
    assert b"Traceback" not in r.data
    j = c.get(url + ("&" if "?" in url else "?") + "format=json")
    assert j.status_code == status and j.get_json()["message"]


def test_a_diff_needs_two_full_versions(tools):
    _db, _app, c = tools
    hist = c.get(f"/files/history?format=json&path={REPO}/src/config.py").get_json()["changes"]
    full = next(r for r in hist if r["full"])
    patch = next(r for r in hist if not r["full"])
    r = c.get(f"/files/diff?a={full['ref']}&b={patch['ref']}&format=json")
    assert r.status_code == 400 and "full versions" in r.get_json()["message"]


def test_untrusted_paths_and_content_are_escaped(tmp_path):
    db = copy_fixture("hermes-v22-tools.db", tmp_path)
    evil = "<script>alert(1)</script>"
    conn = sqlite3.connect(db)
    with conn:
        calls = [{"id": "x1", "type": "function", "function": {"name": "write_file",
                  "arguments": json.dumps({"path": f"/tmp/{evil}.html", "content": evil})}}]  # fmt: skip
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES ('tools_notes', 'assistant', 'x', ?, 1.9e9)",
            (json.dumps(calls),),
        )
    conn.close()
    c = make_app(db, tmp_path / "inst").test_client()
    for url in ("/files", f"/files/history?path=/tmp/{evil}.html", "/sessions/tools_notes/files"):
        html = c.get(url).get_data(as_text=True)
        assert evil not in html and "&lt;script&gt;" in html, url
    ref = c.get(f"/files/history?format=json&path=/tmp/{evil}.html").get_json()["changes"][0]["ref"]
    html = c.get(f"/files/change/{ref}").get_data(as_text=True)
    assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    raw = c.get(f"/files/change/{ref}?raw=1")
    assert raw.mimetype == "text/plain" and raw.get_data(as_text=True) == evil
    assert "<" not in raw.headers["Content-Disposition"]


def test_files_across_stores_each_change_once(tmp_path):
    """The same sessions in the live file and an archive (schema 31 beside schema 22): every
    change once, from the live store; an archive's own sessions from the archive."""
    live = copy_fixture("hermes-v22-tools.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    shutil.copy(FIXTURES / "hermes-v31-tools.db", folder / "old.db")
    conn = sqlite3.connect(folder / "old.db")
    with conn:  # one session only the archive has
        conn.execute("UPDATE sessions SET id = 'only_archived' WHERE id = 'tools_notes'")
        conn.execute(
            "UPDATE messages SET session_id = 'only_archived' WHERE session_id = 'tools_notes'"
        )
    conn.close()
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)])
    c = app.test_client()
    rows = every_change(c, "/files?format=json&limit=3&workspace=")
    keys = [(r["session_id"], r["message_id"], r["call_index"], r["change_index"]) for r in rows]
    assert len(keys) == len(set(keys))
    by_store = {}
    for r in rows:
        by_store.setdefault(r["store"], set()).add(r["session_id"])
    assert by_store["archive old"] == {"only_archived"}
    assert "only_archived" not in by_store["live"] and "tools_notes" in by_store["live"]
    archived = next(r for r in rows if r["store"] == "archive old")
    assert "store=archive" in archived["message_url"] and archived["ref"].endswith("@archive old")
    assert (
        c.get(f"/files/change/{archived['ref']}?format=json").get_json()["change"]["session_id"]
        == "only_archived"
    )
    storage = c.get("/storage?format=json").get_json()
    assert [a["store"] for a in storage["archives"]] == ["archive old"]
    assert storage["archives"][0]["bytes"] == (folder / "old.db").stat().st_size
    pinned = c.get("/storage?format=json&store=archive old").get_json()
    assert pinned["messages"]["n"] == sql(folder / "old.db", "SELECT COUNT(*) FROM messages")[0][0]
    stats = c.get("/stats?format=json&period=all").get_json()
    assert (
        stats["reliability"]["totals"]["results"]
        == sql(live, "SELECT COUNT(*) FROM messages WHERE role = 'tool'")[0][0]
    )
    html = c.get("/stats?period=all").get_data(as_text=True)
    assert "archive old" in html and 'id="reliability"' in html


# -- Storage -------------------------------------------------------------------------------------


def test_the_storage_page_says_what_is_measured(tools):
    _db, _app, c = tools
    html = c.get("/storage").get_data(as_text=True)
    for words in ("Where the bytes go", "free pages", "write-ahead log", "By table and index",
                  "By source", "By month", "largest sessions", "estimate"):  # fmt: skip
        assert words in html
    assert "dbstat" in html


def test_estimates_when_dbstat_is_missing_or_too_slow(tools, monkeypatch):
    db, app, c = tools
    from webui.db.digest.objects import Objects

    monkeypatch.setattr(Objects, "has_dbstat", lambda self: False)
    r = c.get("/storage?format=json").get_json()
    assert r["dbstat"] is False and {o["method"] for o in r["objects"]} == {"estimate"}
    used = r["file"]["used_bytes"]
    assert used - len(r["objects"]) <= sum(o["bytes"] for o in r["objects"]) <= used
    assert "no <code>dbstat</code>" in c.get("/storage").get_data(as_text=True)
    monkeypatch.undo()
    with app.app_context():
        d = get_logbook().digest
        d.objects.read_limit_s = 0.0  # every walk runs out of time
        d.objects.measure_all()
    r = c.get("/storage?format=json").get_json()
    assert {o["method"] for o in r["objects"]} == {"estimate"}
    assert all(o["timed_out"] for o in r["objects"])
    assert "ran past its time limit" in c.get("/storage").get_data(as_text=True)


def test_prune_and_cold_storage_previews_say_what_would_be_freed(tools):
    db, _app, c = tools
    body = c.get("/prune?format=json&source=cron").get_json()
    ids = body["sessions"]
    freed = body["freed"]
    assert freed["sessions"] == len(ids) == 6
    marks = ",".join("?" * len(ids))
    n, text = sql(
        db,
        f"SELECT COUNT(*), TOTAL(length(CAST(content AS BLOB))) FROM messages WHERE session_id IN ({marks})",
        ids,
    )[0]
    assert freed["n"] == n and freed["text_b"] + freed["tool_b"] == int(text)
    assert 0 < freed["share"]["total"] < freed["file_bytes"]
    html = c.get("/prune?source=cron").get_data(as_text=True)
    assert "of this" in html and 'id="freed"' in html
    cold = c.get("/coldstore?format=json&source=cron").get_json()
    assert cold["freed"]["sessions"] == len(cold["sessions"])
    assert 'id="freed"' in c.get("/coldstore?source=cron").get_data(as_text=True)
    assert c.get("/prune?format=json&source=nosuch").get_json()["freed"] is None


def test_every_profile_side_by_side(tmp_path):
    root = tmp_path / "hermes"
    (root / "profiles" / "work").mkdir(parents=True)
    shutil.copyfile(FIXTURES / "hermes-v22-tools.db", root / "state.db")
    shutil.copyfile(FIXTURES / "hermes-v31-tools.db", root / "profiles" / "work" / "state.db")
    c = make_app(root / "state.db", tmp_path / "inst", LOGBOOK_HERMES_ROOT=str(root),
                 LOGBOOK_PROFILE_NAME="default").test_client()  # fmt: skip
    body = c.get("/storage?format=json&profile=all").get_json()
    assert [p["profile"] for p in body["profiles"]] == ["default", "work"]
    for p, f in zip(
        body["profiles"], (root / "state.db", root / "profiles" / "work" / "state.db"), strict=True
    ):
        assert p["file"]["file_bytes"] == f.stat().st_size
    assert c.get("/storage?profile=all").status_code == 200
    work = c.get("/files?format=json&profile=work&workspace=").get_json()
    assert (
        work["changes"]
        and c.get("/stats?format=json&profile=work&period=all").get_json()["reliability"]["rule"]
        == "0.22"
    )


# -- Reliability ---------------------------------------------------------------------------------


def test_loop_links_open_at_the_loops_first_call(tools):
    db, _app, c = tools
    html = c.get("/stats?period=all").get_data(as_text=True)
    rel = c.get("/stats?format=json&period=all").get_json()["reliability"]
    for loop in rel["loops"]["longest"]:
        url = f"/sessions/{loop['session_id']}?at={loop['first_message']}#m-{loop['first_message']}"
        assert url.replace("&", "&amp;") in html or url in html
        calls = json.loads(
            sql(db, "SELECT tool_calls FROM messages WHERE id = ?", [loop["first_message"]])[0][0]
        )
        assert calls[0]["function"]["name"] == loop["tool"]
    for words in (
        "Reliability",
        "Retry loops",
        "Per cron job",
        "Unattended",
        "Nightly backup check",
        "turns",
    ):
        assert words in html


def test_every_schema_answers(tmp_path):
    for name in ("hermes-v8.db", "hermes-v11.db", "hermes-v22-origins.db"):
        db = copy_fixture(name, tmp_path / name)
        c = make_app(db, tmp_path / name / "inst").test_client()
        for url in (
            "/storage",
            "/files",
            "/stats?period=all",
            "/storage?format=json",
            "/files?format=json",
        ):
            assert c.get(url).status_code == 200, (name, url)
