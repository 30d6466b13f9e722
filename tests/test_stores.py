"""One history across files (issue 35): archive files of schemas 8, 11 and 22 read beside the
live database, over real HTTP through the app, on copies of real Hermes databases."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from support import FIXTURES, copy_fixture, make_app, sql


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def history(tmp_path):
    """The live schema-22 file, and an archives folder holding a schema-11 file (another
    machine's history), a schema-8 one (cold storage's monthly file, by its name) and a copy
    of the live file itself (an old backup: every session of it is a copy)."""
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    shutil.copy(FIXTURES / "hermes-v11.db", folder / "old-laptop.db")
    shutil.copy(FIXTURES / "hermes-v8.db", folder / "hermes-archive-2025-01.db")
    for suffix in ("-wal", "-shm"):
        if (FIXTURES / f"hermes-v8.db{suffix}").exists():
            shutil.copy(
                FIXTURES / f"hermes-v8.db{suffix}", folder / f"hermes-archive-2025-01.db{suffix}"
            )
    shutil.copy(FIXTURES / "hermes-v22.db", folder / "backup.db")
    (folder / "notes.txt").write_text("not a database")
    (folder / "broken.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)])
    before = {p.name: _digest(p) for p in folder.iterdir()}
    yield live, folder, app, app.test_client()
    after = {p.name: _digest(p) for p in folder.iterdir() if p.name in before}
    assert after == {k: v for k, v in before.items() if k in after}, "an archive file was written"


def test_every_store_is_listed_with_what_it_holds(history):
    live, folder, _app, client = history
    body = client.get("/stores?format=json").get_json()
    by_name = {s["name"]: s for s in body["stores"]}
    assert list(by_name)[0] == "live" and by_name["live"]["writable"] is True
    assert (
        by_name["archive 2025-01"]["schema"] is None
        or by_name["archive 2025-01"]["kind"] == "archive"
    )
    assert by_name["archive old-laptop"]["schema"] == 11
    assert by_name["archive backup"]["schema"] == 22
    for name, db in (
        ("archive old-laptop", folder / "old-laptop.db"),
        ("archive 2025-01", folder / "hermes-archive-2025-01.db"),
        ("live", live),
    ):
        s = by_name[name]
        assert s["sessions"] == sql(db, "SELECT COUNT(*) FROM sessions")[0][0], name
        assert s["writable"] is (name == "live")
    assert by_name["archive broken"]["status"] == "error" and by_name["archive broken"]["message"]
    assert "archive notes" not in by_name
    page = client.get("/stores").get_data(as_text=True)
    assert "archive old-laptop" in page and "read-only" in page


def _all_rows(client, url):
    rows, seen_urls = [], 0
    while url:
        body = client.get(url).get_json()
        rows += body["sessions"]
        url = body["next"]
        seen_urls += 1
        assert seen_urls < 200
    return rows, body


def test_the_list_spans_every_store_and_shows_a_copy_once(history):
    live, folder, _app, client = history
    rows, body = _all_rows(client, "/sessions?format=json&rows=all&limit=37")
    ids = [(r["id"]) for r in rows]
    assert len(ids) == len(set(ids)), "a session listed twice"
    expected = set()
    for db in (live, folder / "old-laptop.db", folder / "hermes-archive-2025-01.db"):
        expected |= {r[0] for r in sql(db, "SELECT id FROM sessions")}
    # archived sessions are hidden by default, as Hermes lists them
    hidden = {r[0] for r in sql(live, "SELECT id FROM sessions WHERE archived = 1")}
    assert set(ids) == expected - hidden
    # the backup's sessions all come from the live store
    live_ids = {r[0] for r in sql(live, "SELECT id FROM sessions")}
    assert all(r["store"] == "live" for r in rows if r["id"] in live_ids)
    assert {r["store"] for r in rows} == {"live", "archive old-laptop", "archive 2025-01"}
    first = client.get("/sessions?format=json&rows=all").get_json()
    assert first["facets"]["store"]["archive backup"] == first["facets"]["store"]["live"]
    page = client.get("/sessions?rows=all").get_data(as_text=True)
    total = int(re.search(r"([\d,]+)\+? session row", page).group(1).replace(",", ""))
    assert total == len(ids)
    assert "also kept in an earlier store and listed once" in page


def test_store_narrows_and_an_unknown_store_is_refused(history):
    live, folder, _app, client = history
    only = client.get(
        "/sessions?format=json&rows=all&store=archive+old-laptop&limit=500"
    ).get_json()
    assert {r["store"] for r in only["sessions"]} == {"archive old-laptop"}
    assert (
        len(only["sessions"])
        == sql(folder / "old-laptop.db", "SELECT COUNT(*) FROM sessions")[0][0]
    )
    two = client.get("/sessions?format=json&rows=all&store=live&store=archive+2025-01").get_json()
    assert set(two["facets"]["store"]) == {"live", "archive 2025-01"}
    r = client.get("/sessions?store=nowhere")
    assert r.status_code == 400 and "no store named" in r.get_data(as_text=True)


def test_a_session_in_an_archive_opens_read_only_and_refuses_changes(history):
    live, folder, app, client = history
    sid, title = sql(
        folder / "old-laptop.db", "SELECT id, title FROM sessions WHERE title IS NOT NULL LIMIT 1"
    )[0]
    r = client.get(f"/sessions/{sid}")
    assert r.status_code == 302 and "store=archive+old-laptop" in r.headers["Location"]
    page = client.get(r.headers["Location"]).get_data(as_text=True)
    assert 'class="title-edit"' not in page and "/delete" not in page
    assert "archive old-laptop" in page
    # a change aimed at it anyway: refused, saying why, and nothing changes anywhere
    token = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)
    r = client.post(
        f"/sessions/{sid}/title", data={"title": "renamed"}, headers={"X-CSRFToken": token}
    )
    assert r.status_code == 403 and "only reads" in r.get_data(as_text=True)
    r = client.post(f"/sessions/{sid}/delete", headers={"X-CSRFToken": token})
    assert r.status_code == 403
    assert (
        sql(folder / "old-laptop.db", "SELECT title FROM sessions WHERE id = ?", (sid,))[0][0]
        == title
    )
    assert not sql(live, "SELECT 1 FROM sessions WHERE id = ?", (sid,))


def _jsonl_ids(text: str) -> list[str]:
    """The session ids of a JSONL export; its last line, when the export could not read every
    store, is the note saying so (here: the broken file among the archives)."""
    records = [json.loads(line) for line in text.splitlines() if line]
    if records and "logbook_export_incomplete" in records[-1]:
        note = records.pop()["logbook_export_incomplete"]
        assert any(m.startswith("archive broken:") for m in note["missing"]), note
    return [r["id"] for r in records]


def _fts_hits(db: Path, word: str) -> set[int]:
    return {
        r[0] for r in sql(db, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (word,))
    }


def test_search_spans_stores_and_leaves_out_hits_in_copies(history):
    """A word found in the live file and in another machine's archive: hits of both, each
    labelled with its store; the backup (a copy of the live file) adds no hit."""
    live, folder, _app, client = history
    word = "the"
    live_hits = _fts_hits(live, word)
    laptop_hits = _fts_hits(folder / "old-laptop.db", word)
    assert live_hits and laptop_hits
    body = client.get(f"/search?q={word}&format=json").get_json()
    stores = {h["store"] for h in body["results"]}
    assert stores >= {"live", "archive old-laptop"}
    assert "archive backup" not in stores
    assert body["notice"] and "copies of sessions already shown" in body["notice"]
    for h in body["results"]:
        if h["store"] == "archive old-laptop":
            assert h["message_id"] in laptop_hits
    page = client.get(f"/search?q={word}").get_data(as_text=True)
    assert "store=archive+old-laptop" in page
    # One store named: only its hits.
    only = client.get(f"/search?q={word}&store=live&format=json").get_json()
    assert {h.get("store", "live") for h in only["results"]} == {"live"}


def test_stats_are_one_report_for_the_whole_history_with_each_store_below(history):
    """The headline covers every store (the backup, a copy of the live file, adds nothing);
    each store's share is listed below; one store opens on its own."""
    live, folder, _app, client = history
    body = client.get("/stats?period=all&format=json").get_json()
    rows = {r["store"]: r for r in body["stores"]}
    laptop = sql(folder / "old-laptop.db", "SELECT COUNT(*) FROM sessions")[0][0]
    monthly = sql(folder / "hermes-archive-2025-01.db", "SELECT COUNT(*) FROM sessions")[0][0]
    mine = sql(live, "SELECT COUNT(*) FROM sessions")[0][0]
    assert rows["live"]["totals"]["sessions"] == mine
    assert rows["archive old-laptop"]["totals"]["sessions"] == laptop
    assert rows["archive backup"]["totals"]["sessions"] == 0  # every session a copy
    assert body["totals"]["sessions"] == mine + laptop + monthly
    assert body["totals"]["sessions"] == sum(
        (r["totals"] or {}).get("sessions", 0) for r in body["stores"]
    )
    messages = sum(
        sql(db, "SELECT COALESCE(SUM(message_count), 0) FROM sessions")[0][0]
        for db in (live, folder / "old-laptop.db", folder / "hermes-archive-2025-01.db")
    )
    assert body["totals"]["messages"] == messages
    assert "archive broken" in " ".join(body["covers"]["missing"])
    pinned = client.get("/stats?period=all&store=archive+old-laptop&format=json").get_json()
    assert pinned["totals"]["sessions"] == laptop
    assert "stores" not in pinned
    page = client.get("/stats?period=all").get_data(as_text=True)
    assert "Every store, this period" in page and "archive old-laptop" in page
    assert "the whole history" in page


def test_people_and_workspaces_add_up_across_stores(history):
    """Each store's groups, merged by their key: figures summed, the stores named."""
    live, folder, _app, client = history
    for route, key in (("/people", "user_id"), ("/workspaces", "workspace")):
        merged = client.get(f"{route}?format=json").get_json()[route[1:]]
        per = {
            name: {
                r[key]: r
                for r in client.get(f"{route}?format=json&store={name}").get_json()[route[1:]]
            }
            for name in ("live", "archive old-laptop", "archive backup", "archive 2025-01")
        }
        for row in merged:
            having = [n for n, rows in per.items() if row[key] in rows]
            # The backup (a copy of the live file) holds the same groups: counted once.
            copies = [n for n in having if n == "archive backup" and "live" in having]
            counted = [n for n in having if n not in copies]
            assert sorted(row["stores"]) == sorted(counted), row[key]
            assert row["sessions"] == sum(per[n][row[key]]["sessions"] for n in counted)
        assert {r[key] for r in merged} == set().union(*(set(rows) for rows in per.values()))
        only_live = client.get(f"{route}?format=json&store=live").get_json()[route[1:]]
        assert all("stores" not in r for r in only_live)


def test_chats_span_stores_and_leave_out_copies(tmp_path):
    """Chats of the live file and of another machine's archive, each row naming its store;
    a backup's identical chats are left out; paging reaches every chat once."""
    live = copy_fixture("hermes-v22-origins.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    shutil.copy(FIXTURES / "hermes-v22-origins.db", folder / "backup.db")
    other = folder / "phone.db"
    shutil.copy(FIXTURES / "hermes-v22-origins.db", other)
    conn = sqlite3.connect(other)
    conn.execute("UPDATE sessions SET session_key = 'phone:' || session_key, id = 'p-' || id")
    conn.commit()
    conn.close()
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()
    keys = {
        r[0]
        for r in sql(
            live, "SELECT DISTINCT session_key FROM sessions WHERE session_key IS NOT NULL"
        )
    }
    rows, url = [], "/chats?format=json"
    while url:
        body = client.get(url).get_json()
        rows += body["chats"]
        url = body["next"]
    got = {(r["store"], r["session_key"]) for r in rows}
    assert len(got) == len(rows), "a chat was listed twice"
    assert got == {("live", k) for k in keys} | {("archive phone", f"phone:{k}") for k in keys}
    page = client.get("/chats").get_data(as_text=True)
    assert "store=archive+phone" in page


def test_a_filtered_jsonl_export_spans_the_stores(history):
    """The list's filters exported as JSONL: the live file's sessions, then each archive's
    that no earlier store holds, each session once."""
    live, folder, _app, client = history
    r = client.get("/export.jsonl?source=cli")
    assert r.status_code == 200
    ids = _jsonl_ids(r.get_data(as_text=True))
    assert len(ids) == len(set(ids))
    want = {x[0] for x in sql(live, "SELECT id FROM sessions WHERE source = 'cli'")}
    for db in (folder / "old-laptop.db", folder / "hermes-archive-2025-01.db"):
        want |= {x[0] for x in sql(db, "SELECT id FROM sessions WHERE source = 'cli'")}
    assert set(ids) == want
    # One store named: only its sessions.
    r = client.get("/export.jsonl?source=cli&store=archive+old-laptop")
    only = set(_jsonl_ids(r.get_data(as_text=True)))
    assert only == {
        x[0] for x in sql(folder / "old-laptop.db", "SELECT id FROM sessions WHERE source = 'cli'")
    }


def test_a_store_that_stops_answering_is_named_and_the_rest_is_shown(history, monkeypatch):
    import webui.db.reader as reader

    # A store's file is looked at once a second at most: here at every query, so no clock
    # decides whether the deletion is seen.
    monkeypatch.setattr(reader, "IDENTITY_CHECK_S", 0.0)
    live, folder, _app, client = history
    assert client.get("/sessions?format=json").status_code == 200  # every store opened
    (folder / "old-laptop.db").unlink()
    body = client.get("/sessions?format=json&limit=500&rows=all").get_json()
    assert any("archive old-laptop" in m for m in body.get("missing_stores", [])), body.get(
        "missing_stores"
    )
    assert {s["id"] for s in body["sessions"] if s["store"] == "live"} <= {
        x[0] for x in sql(live, "SELECT id FROM sessions")
    }
    page = client.get("/sessions").get_data(as_text=True)
    assert "did not answer" in page
    found = client.get("/search?q=the&format=json").get_json()
    assert "archive old-laptop was not searched" in (found["notice"] or "")
    assert any(h["store"] == "live" for h in found["results"])


def test_a_chat_kept_in_two_stores_points_to_its_other_part(tmp_path):
    live = copy_fixture("hermes-v22-origins.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    key = sql(
        live,
        "SELECT session_key FROM sessions WHERE session_key IS NOT NULL GROUP BY 1 HAVING COUNT(*) > 1 LIMIT 1",
    )[0][0]
    first = sql(
        live, "SELECT id FROM sessions WHERE session_key = ? ORDER BY started_at LIMIT 1", (key,)
    )[0][0]
    older = folder / "older.db"
    shutil.copy(live, older)
    for db, keep in ((older, True), (live, False)):
        conn = sqlite3.connect(db)
        op = "<>" if keep else "="
        conn.execute(f"DELETE FROM messages WHERE session_id {op} ?", (first,))
        conn.execute(f"DELETE FROM sessions WHERE id {op} ?", (first,))
        conn.commit()
        conn.close()
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()
    from urllib.parse import quote

    page = client.get(f"/chats/{quote(key)}").get_data(as_text=True)
    assert "More of this chat is kept elsewhere" in page and "1 session in archive older" in page
    # A chat kept only in the archive opens there.
    conn = sqlite3.connect(older)
    conn.execute("UPDATE sessions SET session_key = 'only-here' WHERE id = ?", (first,))
    conn.commit()
    conn.close()
    r = client.get("/chats/only-here")
    assert r.status_code == 302 and "store=archive+older" in r.headers["Location"]
    assert client.get(r.headers["Location"]).status_code == 200


def test_a_filtered_markdown_export_spans_the_stores_as_the_jsonl_does(history):
    import io
    import zipfile

    live, folder, _app, client = history
    ids = set(_jsonl_ids(client.get("/export.jsonl?source=cli").get_data(as_text=True)))
    r = client.get("/export.md?source=cli")
    assert r.status_code == 200
    with zipfile.ZipFile(io.BytesIO(r.get_data())) as z:
        names = [n for n in z.namelist() if n not in ("manifest.jsonl", "INCOMPLETE.txt")]
        manifest = [json.loads(x) for x in z.read("manifest.jsonl").decode().splitlines() if x]
        # the broken file among the archives is named in the zip's last member
        assert z.namelist()[-1] == "INCOMPLETE.txt"
        assert "archive broken" in z.read("INCOMPLETE.txt").decode()
    assert len(names) == len(ids) == len(manifest)
    assert {m.get("session_id") or m.get("id") for m in manifest} == ids


def test_a_filtered_csv_spans_the_stores_under_one_header(history):
    import csv as csvmod
    import io

    live, folder, _app, client = history
    ids = set(_jsonl_ids(client.get("/export.jsonl?source=cli").get_data(as_text=True)))
    rows = list(
        csvmod.reader(io.StringIO(client.get("/export.csv?source=cli").get_data(as_text=True)))
    )
    header, body = rows[0], rows[1:]
    assert body[-1][0].startswith("# incomplete:") and "archive broken" in body[-1][0]
    body = body[:-1]
    assert header[0] == "id" and sum(1 for r in rows if r == header) == 1
    assert {r[0] for r in body} == ids and len(body) == len(ids)
    assert all(len(r) == len(header) for r in body)


def test_a_filtered_html_page_spans_the_stores(history):
    live, folder, _app, client = history
    ids = set(_jsonl_ids(client.get("/export.jsonl?source=cli").get_data(as_text=True)))
    page = client.get("/export.html?source=cli").get_data(as_text=True)
    laptop = {
        x[0] for x in sql(folder / "old-laptop.db", "SELECT id FROM sessions WHERE source = 'cli'")
    }
    assert laptop and laptop <= ids
    assert all(sid in page for sid in ids)
    assert "logbook-export-incomplete" in page and "archive broken" in page
