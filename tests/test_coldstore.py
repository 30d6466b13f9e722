"""Cold storage (issue 35): whole conversations moved out of a real schema-22 Hermes database
into a monthly archive file and back, over real HTTP through the app; the rows, the search
index and the transcript files checked in both files; Hermes 0.19 itself opens the archive."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from support import copy_fixture, make_app, sql
from support.coldstore import CHAIN, make_home, month_file, move_chain_back, rows_of
from support.http import fts_consistent, post
from support.oracle import Hermes, ensure_venv, start_hermes_writer

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def home(tmp_path):
    return make_home(tmp_path)


def test_a_conversation_moves_whole_and_comes_back_the_same(home):
    live, folder, _app, client = home
    before = rows_of(live, CHAIN)
    assert before["messages"]
    # Preview: one session chosen, its whole conversation (chain and branch) would move.
    body = client.get(f"/coldstore?session={CHAIN[1]}&format=json").get_json()
    assert body["conversations"] == 1 and sorted(body["sessions"]) == sorted(CHAIN)
    assert not month_file(folder / "inst").exists(), "a preview wrote nothing"

    r = post(client, "/coldstore", {"session": CHAIN[1], "confirm": "yes", "format": "json"})
    assert r.status_code == 200, r.get_data(as_text=True)
    job = r.get_json()
    assert job["error"] is None and job["conversations_moved"] == 1
    assert job["sessions_moved"] == 3 and job["messages_moved"] == len(before["messages"])
    assert job["transcript_files_moved"] == 3 and job["free_bytes"] > 0
    archive = month_file(folder / "inst")
    assert job["archive"] == str(archive)
    # Out of the live file, into the archive byte for byte, search indexes exact in both.
    assert rows_of(live, CHAIN) == {"sessions": [], "messages": []}
    assert rows_of(archive, CHAIN) == before
    fts_consistent(live)
    fts_consistent(archive)
    assert sql(archive, "SELECT version FROM schema_version") == sql(
        live, "SELECT version FROM schema_version"
    )
    # The transcripts went with the rows; another session's stayed.
    assert sorted(p.name for p in (archive.parent / "sessions").iterdir()) == sorted(
        f"{s}.jsonl" for s in CHAIN
    )
    assert [p.name for p in (folder / "sessions").iterdir()] == ["other.jsonl"]
    # Still one history: the list shows them from the archive, the viewer opens them there.
    rows = client.get("/sessions?archived=include&rows=all&format=json&limit=200").get_json()
    where = {s["id"]: s.get("store") for s in rows["sessions"]}
    month = time.strftime("archive %Y-%m")
    assert all(where.get(sid) == month for sid in CHAIN if sid in where)
    r = client.get(f"/sessions/{CHAIN[0]}")
    assert r.status_code == 302 and "store=archive" in r.headers["Location"]
    stores = {s["name"] for s in client.get("/stores?format=json").get_json()["stores"]}
    assert month in stores

    # And back: the same rows in the live file, none left in the archive.
    move_chain_back(client)
    assert rows_of(live, CHAIN) == before
    assert rows_of(archive, CHAIN) == {"sessions": [], "messages": []}
    fts_consistent(live)
    fts_consistent(archive)
    assert sorted(p.name for p in (folder / "sessions").iterdir()) == sorted(
        ["other.jsonl", *(f"{s}.jsonl" for s in CHAIN)]
    )


def test_a_conversation_with_a_running_session_stays(home):
    live, folder, _app, client = home
    running = sql(
        live,
        "SELECT id FROM sessions WHERE ended_at IS NULL AND parent_session_id IS NOT NULL LIMIT 1",
    )
    assert running
    # A running session is never chosen; its ended parent is, and brings the conversation.
    parent = sql(live, "SELECT parent_session_id FROM sessions WHERE id = ?", running[0])[0][0]
    before = sql(live, "SELECT COUNT(*) FROM messages")[0][0]
    job = post(
        client, "/coldstore", {"session": parent, "confirm": "yes", "format": "json"}
    ).get_json()
    assert job["conversations_moved"] == 0 and job["skipped_active"]
    assert sql(live, "SELECT COUNT(*) FROM messages")[0][0] == before


def test_a_move_is_refused_where_changes_are_off_and_needs_confirmation(home, tmp_path):
    live, folder, _app, client = home
    r = post(client, "/coldstore", {"session": CHAIN[0], "format": "json"})
    assert r.status_code == 400
    assert rows_of(live, CHAIN)["sessions"]
    ro = make_app(live, tmp_path / "ro", LOGBOOK_READ_ONLY=True).test_client()
    r = post(ro, "/coldstore", {"session": CHAIN[0], "confirm": "yes", "format": "json"})
    assert r.status_code in (403, 405)
    assert len(rows_of(live, CHAIN)["sessions"]) == 3


def test_the_page_previews_then_moves_in_the_background(home):
    live, folder, _app, client = home
    page = client.get(f"/coldstore?session={CHAIN[2]}").get_data(as_text=True)
    assert "1 conversation of 3 sessions would move" in page and "VACUUM" in page
    r = post(client, "/coldstore", {"session": CHAIN[2], "confirm": "yes"}, htmx=True)
    assert r.status_code == 200
    job_url = r.headers["HX-Push-Url"]
    for _ in range(200):
        body = client.get(job_url + "?format=json").get_json()
        if body["done"]:
            break
        time.sleep(0.05)
    assert body["done"] and body["conversations_moved"] == 1
    done = client.get(job_url).get_data(as_text=True)
    assert "Moved 1 of 1 conversation" in done and "hermes sessions optimize" in done


@pytest.mark.oracle
def test_hermes_itself_reads_the_archive_file(home, tmp_path):
    live, folder, _app, client = home
    job = post(
        client, "/coldstore", {"session": CHAIN[0], "confirm": "yes", "format": "json"}
    ).get_json()
    assert job["conversations_moved"] == 1
    hermes_home = tmp_path / "hermes-home"
    hermes_home.mkdir()
    shutil.copyfile(month_file(folder / "inst"), hermes_home / "state.db")
    hermes = Hermes(ensure_venv(), hermes_home)
    listed = hermes.call("list", kwargs={})
    # The archive holds that conversation alone, and Hermes lists it as it listed it in the
    # live file before the move.
    before_home = tmp_path / "hermes-before"
    before_home.mkdir()
    copy_fixture("hermes-v22.db", before_home)
    (before_home / "hermes-v22.db").rename(before_home / "state.db")
    then = Hermes(ensure_venv(), before_home).call("list", kwargs={})

    def key(rows):
        return sorted((r["id"], r["lineage_root_id"], r["message_count"], r["title"]) for r in rows)

    assert listed and key(listed) == key(r for r in then if r["id"] in CHAIN)
    # Its search index answers as the live one did for those messages.
    word = sql(
        hermes.db,
        "SELECT content FROM messages WHERE role = 'user' AND length(content) > 3 LIMIT 1",
    )[0][0].split()[0]
    word = "".join(ch for ch in word if ch.isalnum()) or "the"
    hits = hermes.call("search", query=word)
    assert hits and {h["session_id"] for h in hits} <= set(CHAIN)
    conn = sqlite3.connect(hermes_home / "state.db")
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 22
    conn.close()


def test_a_conversation_split_across_stores_is_followed_both_ways(tmp_path):
    """The first session of a conversation in an archive file, the rest in the live file:
    each viewer links to the other side, naming the store."""
    whole = copy_fixture("hermes-v22.db", tmp_path / "whole")
    before = make_app(whole, tmp_path / "inst-whole").test_client()
    family = before.get(f"/sessions/{CHAIN[1]}/lineage?format=json").get_json()
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    older = folder / "older.db"
    shutil.copyfile(live, older)
    for db, keep_only_root in ((older, True), (live, False)):
        conn = sqlite3.connect(db)
        if keep_only_root:
            conn.execute("DELETE FROM messages WHERE session_id <> ?", (CHAIN[0],))
            conn.execute("DELETE FROM sessions WHERE id <> ?", (CHAIN[0],))
        else:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (CHAIN[0],))
            conn.execute("DELETE FROM sessions WHERE id = ?", (CHAIN[0],))
        conn.commit()
        conn.close()
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()
    page = client.get(f"/sessions/{CHAIN[1]}").get_data(as_text=True)
    assert (
        f"/sessions/{CHAIN[0]}?store=archive+older" in page
        and "no longer in the database" not in page
    )
    r = client.get(f"/sessions/{CHAIN[0]}")
    assert r.status_code == 302
    page = client.get(r.headers["Location"]).get_data(as_text=True)
    assert f"/sessions/{CHAIN[1]}?store=live" in page and f"/sessions/{CHAIN[2]}?store=live" in page
    # The lineage graph and the conversation's totals are the family's, as before the split.
    split = client.get(f"/sessions/{CHAIN[1]}/lineage?format=json").get_json()
    assert split["root"] == family["root"] == CHAIN[0]
    assert {n["id"]: n["store"] for n in split["nodes"]} == {
        n["id"]: ("archive older" if n["id"] == CHAIN[0] else "live") for n in family["nodes"]
    }
    assert split["totals"] == family["totals"]
    graph = client.get(f"/sessions/{CHAIN[1]}/lineage").get_data(as_text=True)
    assert f"/sessions/{CHAIN[0]}?store=archive+older" in graph


@pytest.mark.oracle
def test_a_move_beside_hermes_writing_leaves_what_hermes_exported(tmp_path):
    """Hermes 0.19's own writer appends throughout a move of every ended conversation: it
    never fails; the live file stays sound (integrity and both search indexes); and
    `hermes sessions export` run on the archive gives, byte for byte, what it gave on the live
    file before the move."""
    venv = ensure_venv()
    home = tmp_path / "home"
    home.mkdir()
    live = home / "state.db"
    shutil.copyfile(copy_fixture("hermes-v22.db", tmp_path / "src"), live)
    hermes = Hermes(venv, home)
    before = {}
    for sid in CHAIN:
        out = tmp_path / f"before-{sid}.jsonl"
        hermes.cli("sessions", "export", str(out), "--format", "jsonl", "--session-id", sid)
        before[sid] = out.read_bytes()
    writer = start_hermes_writer(venv, live, 120, 20)
    try:
        client = make_app(live, tmp_path / "inst").test_client()
        time.sleep(0.5)
        r = post(client, "/coldstore", {"older_than": "0", "confirm": "yes", "format": "json"})
        job = r.get_json()
        time.sleep(0.5)
    finally:
        writer.send_signal(signal.SIGTERM)
        out, _ = writer.communicate(timeout=60)
    written = json.loads(out.strip().splitlines()[-1])
    assert written["failures"] == 0 and written["written"] > 10, written
    assert r.status_code == 200 and job["error"] is None, job
    assert job["conversations_moved"] > 1 and not set(CHAIN) & {
        x[0] for x in sql(live, "SELECT id FROM sessions")
    }
    assert sql(live, "PRAGMA integrity_check") == [("ok",)]
    fts_consistent(live)
    archive = month_file(tmp_path / "inst")
    fts_consistent(archive)
    ahome = tmp_path / "archive-home"
    ahome.mkdir()
    shutil.copyfile(archive, ahome / "state.db")
    there = Hermes(venv, ahome)
    for sid in CHAIN:
        out = tmp_path / f"after-{sid}.jsonl"
        there.cli("sessions", "export", str(out), "--format", "jsonl", "--session-id", sid)
        assert out.read_bytes() == before[sid], sid


@pytest.mark.parametrize("name", ["hermes-v8.db", "hermes-v11.db", "hermes-v22-extended.db"])
def test_a_move_and_back_on_every_schema(name, tmp_path):
    """The same move on the older schemas Hermes wrote: the archive file takes the live
    file's own schema, the rows come back byte for byte, both files' search indexes exact."""
    live = copy_fixture(name, tmp_path)
    client = make_app(live, tmp_path / "inst").test_client()
    candidates = sql(
        live,
        "SELECT p.id FROM sessions p JOIN sessions c ON c.parent_session_id = p.id "
        "WHERE p.ended_at IS NOT NULL AND p.parent_session_id IS NULL "
        "GROUP BY p.id ORDER BY COUNT(*) DESC",
    )
    root = members = None
    for (cand,) in candidates:  # the largest conversation with no session still running
        found = client.get(f"/coldstore?session={cand}&format=json").get_json()["sessions"]
        marks = ",".join("?" * len(found))
        running = sql(
            live, f"SELECT COUNT(*) FROM sessions WHERE ended_at IS NULL AND id IN ({marks})", found
        )
        if len(found) > 1 and not running[0][0]:
            root, members = cand, found
            break
    assert root is not None, name
    before = rows_of(live, members)
    job = post(
        client, "/coldstore", {"session": root, "confirm": "yes", "format": "json"}
    ).get_json()
    assert job["error"] is None and job["conversations_moved"] == 1, job
    archive = month_file(tmp_path / "inst")
    assert rows_of(live, members) == {"sessions": [], "messages": []}
    assert rows_of(archive, members) == before
    assert sql(archive, "SELECT sql FROM sqlite_master WHERE name = 'messages'") == sql(
        live, "SELECT sql FROM sqlite_master WHERE name = 'messages'"
    )
    fts_consistent(live)
    fts_consistent(archive)
    month = time.strftime("archive %Y-%m")
    back = post(
        client,
        "/coldstore",
        {"from": month, "back": "1", "session": root, "confirm": "yes", "format": "json"},
    ).get_json()
    assert back["error"] is None and back["sessions_moved"] == len(members), back
    assert rows_of(live, members) == before
    fts_consistent(live)
