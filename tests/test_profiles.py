"""Profiles: every Hermes agent on the machine in one Logbook."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3

import pytest

from support import FIXTURES, make_app, sql
from support.http import follow, post


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "hermes"
    (r / "profiles").mkdir(parents=True)
    shutil.copyfile(FIXTURES / "hermes-v11.db", r / "state.db")
    (r / "config.yaml").write_text("model: x\n")
    for name, fixture in (("old", "hermes-v8.db"), ("new", "hermes-v22.db")):
        (r / "profiles" / name).mkdir()
        shutil.copyfile(FIXTURES / fixture, r / "profiles" / name / "state.db")
    (r / "profiles" / "new" / "SOUL.md").write_text("soul")
    (r / "profiles" / "broken").mkdir()
    (r / "profiles" / "broken" / "state.db").write_text("not a database at all")
    (r / "profiles" / "nodb").mkdir()
    (r / "profiles" / "nodb" / "config.yaml").write_text("x: 1\n")
    # Hermes 0.19 counts a folder with a name it accepts, marker files or not ...
    (r / "profiles" / "emptyone").mkdir()
    # ... but not names it rejects, nor profiles/default (the root is the default)
    for bad in ("Work2", "my.prof", "default", "-dash"):
        (r / "profiles" / bad).mkdir()
        (r / "profiles" / bad / "config.yaml").write_text("x: 1\n")
    return r


@pytest.fixture
def client(root, tmp_path):
    app = make_app(
        root / "state.db",
        tmp_path / "inst",
        LOGBOOK_HERMES_ROOT=str(root),
        LOGBOOK_PROFILE_NAME="default",
    )
    return app.test_client()


DBS = {"default": "state.db", "old": "profiles/old/state.db", "new": "profiles/new/state.db"}


def test_switcher_lists_profiles_with_their_state(client):
    html = client.get("/sessions").get_data(as_text=True)
    select = html[html.index('<select id="profile-select"') :]
    select = select[: select.index("</select>")]
    options = re.findall(r'<option value="([^"]+)"', select)
    assert options == ["default", "broken", "emptyone", "new", "nodb", "old", "all"]
    assert re.search(r'value="broken"[^>]*disabled', select)
    assert re.search(r'value="nodb"[^>]*disabled', select) and "no state.db" in select


@pytest.mark.parametrize("name", ["default", "old", "new"])
def test_each_profile_equals_its_own_sql(client, root, name):
    db = root / DBS[name]
    cols = {r[1] for r in sql(db, "PRAGMA table_info(sessions)")}
    where = "COALESCE(archived, 0) = 0" if "archived" in cols else "1"
    got = [
        s["id"]
        for s in follow(client, f"/sessions?rows=all&profile={name}&format=json", "sessions")
    ]
    assert got == [
        r[0]
        for r in sql(db, f"SELECT id FROM sessions WHERE {where} ORDER BY started_at DESC, id DESC")
    ]
    sid = sql(db, "SELECT session_id FROM messages GROUP BY 1 ORDER BY COUNT(*) DESC")[0][0]
    msgs = follow(client, f"/sessions/{sid}?profile={name}&format=json", "messages")
    assert [m["id"] for m in msgs] == [
        r[0]
        for r in sql(
            db, "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id", (sid,)
        )
    ]
    html = client.get(f"/sessions/{sid}?profile={name}").get_data(as_text=True)
    if name != "default":
        assert f"profile={name}" in html  # every link keeps the profile
    totals = client.get(f"/stats?period=all&profile={name}&format=json").get_json()["totals"]
    assert totals["sessions"] == sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
    hits = follow(client, f"/search?q=docker&profile={name}&format=json", "results")
    ids = {
        r[0] for r in sql(db, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'docker'")
    }
    assert {h["message_id"] for h in hits} <= ids and hits
    lines = client.get(f"/export.jsonl?profile={name}").get_data(as_text=True).splitlines()
    assert len(lines) == sql(db, "SELECT COUNT(*) FROM sessions")[0][0]


def test_merged_list_holds_every_session_once_in_order(client, root):
    rows = follow(client, "/sessions?rows=all&profile=all&format=json&archived=1", "sessions")
    expected = []
    for name, rel in DBS.items():
        expected += [
            (started, name, sid)
            for sid, started in sql(root / rel, "SELECT id, started_at FROM sessions")
        ]
    expected.sort(reverse=True)
    assert [(r["started_at"], r["profile"], r["id"]) for r in rows] == expected
    # other sort orders merge too
    rows = follow(
        client, "/sessions?rows=all&profile=all&format=json&archived=1&sort=messages", "sessions"
    )
    assert len(rows) == len(expected)
    keys = [r["message_count"] or 0 for r in rows]
    assert keys == sorted(keys)
    facets = client.get("/sessions?rows=all&profile=all&format=json&archived=1").get_json()[
        "facets"
    ]["source"]
    assert sum(facets.values()) == len(expected)


def test_merged_search_and_stats(client, root):
    body = client.get("/search?q=docker&profile=all&format=json").get_json()
    assert {r["profile"] for r in body["results"]} == {"default", "old", "new"}
    stats = client.get("/stats?period=all&profile=all&format=json").get_json()
    per = {p["profile"]: p["totals"]["sessions"] for p in stats["profiles"]}
    assert per == {
        n: sql(root / rel, "SELECT COUNT(*) FROM sessions")[0][0] for n, rel in DBS.items()
    }
    assert client.get("/stats?period=all&profile=all").status_code == 200
    assert client.get("/search?q=docker&profile=all").status_code == 200


def test_broken_profile_is_reported_and_others_keep_working(client):
    r = client.get("/sessions?rows=all&profile=broken")
    assert r.status_code == 503 and "broken" in r.get_data(as_text=True)
    assert client.get("/sessions?rows=all&profile=nope").status_code == 404
    assert client.get("/sessions?rows=all&profile=old").status_code == 200
    assert client.get("/sessions").status_code == 200


def test_new_profile_appears_without_restart(client, root, monkeypatch):
    from webui.db.stores import profiles

    monkeypatch.setattr(profiles, "RESCAN_S", 0.0)
    (root / "profiles" / "later").mkdir()
    shutil.copyfile(FIXTURES / "hermes-v11.db", root / "profiles" / "later" / "state.db")
    assert 'value="later"' in client.get("/sessions").get_data(as_text=True)
    assert client.get("/sessions?rows=all&profile=later&format=json").status_code == 200


def test_actions_touch_one_profile_only(client, root):
    new_db = root / DBS["new"]
    sid = sql(new_db, "SELECT id FROM sessions WHERE title IS NOT NULL LIMIT 1")[0][0]
    before = {n: sql(root / rel, "SELECT id, title FROM sessions") for n, rel in DBS.items()}
    r = post(client, f"/sessions/{sid}/title?profile=new", {"title": "only in new"}, htmx=True)
    assert r.status_code == 200 and "new" in json.loads(r.headers["HX-Trigger"])["toast"]
    assert sql(new_db, "SELECT title FROM sessions WHERE id = ?", (sid,))[0][0] == "only in new"
    for n in ("default", "old"):
        assert sql(root / DBS[n], "SELECT id, title FROM sessions") == before[n]
    assert (
        post(client, "/prune?profile=all", {"older_than": 1, "confirm": "yes"}).status_code == 400
    )


def test_merged_pages_link_to_each_rows_own_profile(client, root):
    html = client.get("/sessions?rows=all&profile=all&archived=1").get_data(as_text=True)
    for name in ("old", "new"):
        sid = sql(root / DBS[name], "SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1")[0][
            0
        ]
        if f"/sessions/{sid}" in html:
            assert f'href="/sessions/{sid}?profile={name}"' in html
    html = client.get("/search?q=docker&profile=all").get_data(as_text=True)
    assert "?profile=old" in html or "&amp;profile=old" in html


@pytest.mark.browser
def test_switch_profile_in_the_browser(root, tmp_path):
    from playwright.sync_api import sync_playwright

    from support.browser import CHROMIUM_ARGS, LiveServer, require_chromium

    path = require_chromium()
    app = make_app(
        root / "state.db",
        tmp_path / "inst2",
        LOGBOOK_HERMES_ROOT=str(root),
        LOGBOOK_PROFILE_NAME="default",
    )
    srv = LiveServer(app)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"{srv.url}/sessions?rows=all")
            page.select_option("#profile-select", "old")
            page.wait_for_url(re.compile(r"profile=old"))
            expected = sql(root / DBS["old"], "SELECT COUNT(*) FROM sessions")[0][0]
            summary = page.locator("#results .summary").inner_text()
            # switching opens the profile's list afresh: Hermes's rows, the rest one click away
            assert "conversations" in summary or f"{expected} session" in summary
            (listed,) = [
                int(x.replace(",", "")) for x in re.findall(r"([\d,]+) conversations", summary)
            ] or [expected]
            (more,) = [
                int(x.replace(",", "")) for x in re.findall(r"([\d,]+) more session rows", summary)
            ] or [0]
            assert listed + more == expected
            first = page.locator("table.sessions tbody td.title a").first
            href = first.get_attribute("href")
            assert "profile=old" in href
            first.click()
            page.wait_for_url(re.compile(r"profile=old"))
            assert page.locator("#profile-select").input_value() == "old"
            browser.close()
    finally:
        srv.close()


def test_grouped_merged_search_and_live_checks_keep_the_profile(client, root):
    html = client.get("/search?q=docker&profile=all&group=session").get_data(as_text=True)
    heads = re.findall(r'<h2><a href="(/sessions/[^"]+)"', html)
    assert heads and all("profile=" in h for h in heads)
    body = client.get("/sessions?rows=all&profile=old").get_data(as_text=True)
    assert 'data-changes-url="/changes?profile=old"' in body
    token = client.get("/changes?profile=old").get_json()["token"]
    with sqlite3.connect(root / DBS["old"]) as conn:
        sid = conn.execute("SELECT id FROM sessions LIMIT 1").fetchone()[0]
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES "
            "(?, 'user', 'new', 2e9)",
            (sid,),
        )
    assert client.get(f"/changes?profile=old&since={token}").status_code == 200
    fresh = client.get("/changes").get_json()["token"]
    assert client.get(f"/changes?since={fresh}").status_code == 204
