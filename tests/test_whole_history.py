"""One honest history across many stores (issue 45), over real files through the app: every
page and export sees every store exactly once, whole; a broken file costs only itself; a
search ranks as one file would; one statistics report covers everything."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sqlite3
import time
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import FIXTURES, copy_fixture, make_app, sql
from support.stores import blank, damage_overflow, ids, put_sessions, split

NOW = 1_790_000_000.0  # a fixed clock for the generated sessions (2026-09)


def _jsonl(text: str) -> tuple[list[dict], dict | None]:
    records = [json.loads(line) for line in text.splitlines() if line]
    note = None
    if records and "logbook_export_incomplete" in records[-1]:
        note = records.pop()["logbook_export_incomplete"]
    return records, note


def _pages(client, url: str, key: str = "sessions") -> list[dict]:
    rows, seen = [], 0
    while url:
        body = client.get(url).get_json()
        rows += body[key]
        url = body["next"]
        seen += 1
        assert seen < 500, "the pages never end"
    return rows


# -- exactly once, whole: the list over random layouts ----------------------------------------


@st.composite
def layouts(draw):
    """Conversations (compression chains of 1-3 segments) spread over the live file and
    1-3 archives: each segment in one store, some also copied into others."""
    archives = draw(st.integers(1, 3))
    stores = archives + 1
    chains = draw(st.lists(st.integers(1, 3), min_size=1, max_size=8))
    placed = []
    for c, length in enumerate(chains):
        for k in range(length):
            home = draw(st.integers(0, archives))
            copies = draw(st.sets(st.integers(0, archives), max_size=2)) - {home}
            placed.append((c, k, length, home, sorted(copies)))
    limit = draw(st.integers(1, 6))
    mode = draw(st.sampled_from(["conversations", "all"]))
    sort = draw(st.sampled_from(["-started", "started", "-last_active", "messages"]))
    return stores, placed, limit, mode, sort


@settings(
    max_examples=30 if os.environ.get("CI") else 8,  # the fast tier samples; CI runs them all
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(layout=layouts())
def test_next_returns_every_session_and_conversation_exactly_once(tmp_path_factory, layout):
    stores, placed, limit, mode, sort = layout
    root = tmp_path_factory.mktemp("layout")
    files = [blank(root / "live.db", root / "blank")] + [
        blank(root / "archives" / f"a{i}.db", root / "blank") for i in range(1, stores)
    ]
    per_store: dict[int, list[dict]] = {i: [] for i in range(stores)}
    chains: dict[int, list[str]] = {}
    for c, k, length, home, copies in placed:
        sid = f"c{c:02d}s{k}"
        chains.setdefault(c, []).append(sid)
        row = {
            "id": sid,
            "source": "cli",
            "started_at": NOW + c * 1000 + k * 10,
            "parent_session_id": f"c{c:02d}s{k - 1}" if k else None,
            "end_reason": "compression" if k < length - 1 else "user_exit",
            "ended_at": NOW + c * 1000 + k * 10 + 5,
            "title": f"chain {c} part {k}",
        }
        for store in (home, *copies):
            per_store[store].append(row)
    for i, rows in per_store.items():
        put_sessions(files[i], rows, messages=2)
    client = make_app(
        files[0], root / "inst", LOGBOOK_ARCHIVES=[str(root / "archives")]
    ).test_client()
    url = f"/sessions?format=json&limit={limit}&sort={sort}" + (
        "&rows=all" if mode == "all" else ""
    )
    rows = _pages(client, url)
    shown = [r["id"] for r in rows]
    assert len(shown) == len(set(shown)), "a row was listed twice"
    if mode == "all":
        assert set(shown) == {sid for chain in chains.values() for sid in chain}
    else:
        # One row per conversation, showing its newest part, wherever it is kept.
        assert sorted(shown) == sorted(chain[-1] for chain in chains.values())
        for r in rows:
            c = int(r["id"][1:3])
            assert (r.get("lineage_root_id") or r["id"]) == chains[c][0]
    page = client.get(url.replace("format=json&", "")).get_data(as_text=True)
    word = "session row" if mode == "all" else "conversation"
    total = int(re.search(rf"([\d,]+)\+? {word}", page).group(1).replace(",", ""))
    assert total == len(shown)


def test_a_conversation_split_across_three_stores_is_one_row_and_one_lineage(tmp_path):
    """Its first segment in one archive, the second in another, the newest in the live file:
    one row (the newest part, the whole chain's totals), one lineage, one export."""
    live = blank(tmp_path / "live.db", tmp_path / "blank")
    a = blank(tmp_path / "archives" / "hermes-archive-2026-01.db", tmp_path / "blank")
    b = blank(tmp_path / "archives" / "hermes-archive-2026-02.db", tmp_path / "blank")
    segment = {
        "source": "telegram",
        "end_reason": "compression",
        "input_tokens": 100,
        "output_tokens": 10,
    }
    put_sessions(
        a, [{"id": "s1", "started_at": NOW, "ended_at": NOW + 5, "title": "Trip", **segment}], 4
    )
    put_sessions(
        b,
        [
            {
                "id": "s2",
                "started_at": NOW + 10,
                "ended_at": NOW + 15,
                "parent_session_id": "s1",
                "title": "Trip #2",
                **segment,
            }
        ],
        6,
    )
    put_sessions(
        live,
        [
            {
                "id": "s3",
                "source": "telegram",
                "started_at": NOW + 20,
                "parent_session_id": "s2",
                "title": "Trip #3",
                "input_tokens": 7,
            }
        ],
        8,
    )
    client = make_app(
        live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(tmp_path / "archives")]
    ).test_client()
    rows = client.get("/sessions?format=json").get_json()["sessions"]
    assert [(r["id"], r["store"], r.get("lineage_root_id")) for r in rows] == [("s3", "live", "s1")]
    assert rows[0]["title"] == "Trip #3"
    page = client.get("/sessions").get_data(as_text=True)
    assert "continued 2 times" in page and "18 msgs" in page
    lineage = client.get("/sessions/s3/lineage?format=json").get_json()
    assert {(n["id"], n["store"]) for n in lineage["nodes"]} == {
        ("s1", "archive 2026-01"),
        ("s2", "archive 2026-02"),
        ("s3", "live"),
    }
    # Opened by an id kept in an archive, from anywhere, without store=.
    r = client.get("/sessions/s1/lineage")
    assert r.status_code == 302 and "store=archive+2026-01" in r.headers["Location"]
    records, note = _jsonl(client.get("/export.jsonl?lineage=s1").get_data(as_text=True))
    assert [x["id"] for x in records] == ["s1", "s2", "s3"] and note is None
    records, _ = _jsonl(client.get("/export.jsonl?session=s2&session=s3").get_data(as_text=True))
    assert [x["id"] for x in records] == ["s2", "s3"]


# -- exports span every store -----------------------------------------------------------------


@pytest.fixture()
def moved(tmp_path):
    """The live file after its Discord conversations went to cold storage: they are only in
    this month's archive now."""
    src = FIXTURES / "hermes-v22.db"
    everything = ids(src)
    discord = ids(src, "source = 'discord'")
    live = tmp_path / "state.db"
    archive = tmp_path / "archives" / "hermes-archive-2026-11.db"
    split(src, {live: everything - discord, archive: discord})
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(archive.parent)])
    return src, live, archive, app.test_client()


def test_exports_span_every_store_with_hermes_export_selection_too(moved):
    src, live, archive, client = moved
    # `hermes sessions export --source discord`'s selection: ended sessions, archived too.
    want = ids(src, "source = 'discord' AND ended_at IS NOT NULL")
    assert want and not (want & ids(live))
    records, note = _jsonl(
        client.get("/export.jsonl?source=discord&selection=export").get_data(as_text=True)
    )
    assert {r["id"] for r in records} == want and note is None
    assert len(records) == len(want)
    for fmt in ("md", "qmd"):
        r = client.get(f"/export.{fmt}?source=discord&selection=export")
        assert r.status_code == 200, r.get_data(as_text=True)[:300]
        with zipfile.ZipFile(io.BytesIO(r.get_data())) as z:
            manifest = [json.loads(x) for x in z.read("manifest.jsonl").decode().splitlines()]
        assert len(manifest) == len(want)
    # The Export page's form: its empty session= field selects nothing by itself, and its
    # count says what each store will write.
    body = client.get("/export/summary?source=discord&session=&format=json").get_json()
    every_discord = ids(src, "source = 'discord'")
    assert body["sessions"] == len(every_discord)
    assert {s["store"]: s["sessions"] for s in body["stores"]} == {
        "archive 2026-11": len(every_discord)
    }
    records, _ = _jsonl(
        client.get("/export.jsonl?source=discord&session=&from=form").get_data(as_text=True)
    )
    assert {r["id"] for r in records} == every_discord
    page = client.get("/export?source=discord&session=").get_data(as_text=True)
    assert "By store: archive 2026-11" in page


def test_a_session_kept_in_an_archive_opens_from_any_page_without_store(moved):
    src, live, archive, client = moved
    sid = sorted(ids(archive))[0]
    assert client.get(f"/sessions/{sid}").status_code == 302
    records, _ = _jsonl(client.get(f"/export.jsonl?session={sid}").get_data(as_text=True))
    assert [r["id"] for r in records] == [sid]
    r = client.get(f"/export.md?session={sid}&style=transcript")
    assert r.status_code == 200 and sid in r.get_data(as_text=True)
    r = client.get(f"/search?q=the&session={sid}")
    assert r.status_code == 302 and "store=archive+2026-11" in r.headers["Location"]
    # A change aimed at it, in bulk too, is refused before anything changes.
    page = client.get("/sessions").get_data(as_text=True)
    token = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)
    r = client.post(
        "/sessions/bulk",
        data={"session": [sid], "action": "delete", "confirm": "yes"},
        headers={"X-CSRFToken": token},
    )
    assert r.status_code == 403 and "only reads" in r.get_data(as_text=True)
    assert sid in ids(archive)


def test_statistics_cover_the_whole_history_when_conversations_move(moved, tmp_path):
    """The headline before and after the move is the same: the archive's sessions count."""
    src, live, archive, client = moved
    alone = make_app(copy_fixture("hermes-v22.db", tmp_path / "before"), tmp_path / "i2")
    before = alone.test_client().get("/stats?period=all&format=json").get_json()["totals"]
    after = client.get("/stats?period=all&format=json").get_json()
    for key in ("sessions", "messages", "total_tokens", "api_calls", "tool_calls"):
        assert after["totals"][key] == before[key], key
    assert after["totals"]["cost_usd"] == pytest.approx(before["cost_usd"])
    assert sorted(after["covers"]["stores"]) == ["archive 2026-11", "live"]
    shares = {r["store"]: r["totals"]["sessions"] for r in after["stores"]}
    assert shares == {"live": len(ids(live)), "archive 2026-11": len(ids(archive))}


# -- a broken store costs only itself ----------------------------------------------------------


@pytest.fixture()
def damaged(tmp_path):
    """Archives: a healthy one, a copy of it whose long messages are unreadable (its name
    sorts first), an empty file, a text file named .db, and a file of SQLite's header and
    nothing after it."""
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    healthy = folder / "b-healthy.db"
    shutil.copy(FIXTURES / "hermes-v11.db", healthy)
    bad = folder / "a-damaged.db"
    shutil.copy(FIXTURES / "hermes-v11.db", bad)
    assert damage_overflow(bad) > 0
    (folder / "empty.db").write_bytes(b"")
    (folder / "notes.db").write_text("not a database at all")
    (folder / "header-only.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x00" * 84)
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)])
    return live, folder, app.test_client()


def test_every_broken_file_is_listed_with_its_reason(damaged):
    live, folder, client = damaged
    stores = {s["name"]: s for s in client.get("/stores?format=json").get_json()["stores"]}
    assert stores["archive empty"]["status"] == "error"
    assert "empty" in stores["archive empty"]["message"]
    assert "not an SQLite database" in stores["archive notes"]["message"]
    assert stores["archive header-only"]["status"] == "error"
    assert stores["archive b-healthy"]["status"] == "ok"
    page = client.get("/stores").get_data(as_text=True)
    for name in ("archive empty", "archive notes", "archive header-only"):
        assert name in page


def test_a_damaged_archive_costs_only_itself_on_every_page_and_export(damaged):
    live, folder, client = damaged
    healthy = ids(folder / "b-healthy.db")
    for url in (
        "/sessions",
        "/sessions?format=json&rows=all&limit=500",
        "/search?q=the",
        "/stats?period=all",
        "/people",
        "/workspaces",
        "/chats",
        "/stores",
        "/export?source=cli",
    ):
        r = client.get(url)
        assert r.status_code == 200, (url, r.status_code, r.get_data(as_text=True)[:300])
        assert "archive notes" in r.get_data(as_text=True), url
    # Every session of the healthy archive is listed, though the damaged copy sorts first.
    rows = _pages(client, "/sessions?format=json&rows=all&limit=200")
    assert healthy <= {r["id"] for r in rows}
    listed = [r["id"] for r in rows]
    assert len(listed) == len(set(listed))
    # Exports: whole where they can be, and say what is missing at the end.
    records, note = _jsonl(client.get("/export.jsonl?source=cli").get_data(as_text=True))
    assert note is not None and any("archive notes" in m for m in note["missing"])
    want = ids(live, "source = 'cli'") | ids(folder / "b-healthy.db", "source = 'cli'")
    assert {r["id"] for r in records} >= want - ids(folder / "a-damaged.db")
    csv_text = client.get("/export.csv?source=cli").get_data(as_text=True)
    assert csv_text.rstrip().splitlines()[-1].startswith('"# incomplete:')
    r = client.get("/export.md?source=cli")
    with zipfile.ZipFile(io.BytesIO(r.get_data())) as z:
        assert z.testzip() is None and "INCOMPLETE.txt" in z.namelist()


def test_an_archive_that_fails_under_an_export_ends_its_part_with_a_note(tmp_path):
    """Its catalogue and figures read, its long messages cannot: the export has every other
    store's sessions, then a last record naming it."""
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    bad = folder / "laptop.db"
    split(FIXTURES / "hermes-v11.db", {bad: ids(FIXTURES / "hermes-v11.db")})
    assert damage_overflow(bad) > 0
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()
    assert client.get("/stores?format=json").get_json()["stores"][1]["status"] == "ok"
    r = client.get("/export.jsonl")
    assert r.status_code == 200
    records, note = _jsonl(r.get_data(as_text=True))
    assert ids(live) <= {x["id"] for x in records}
    assert note is not None and note["missing"][0].startswith("archive laptop:")
    assert "incomplete" in note["message"]


# -- search ranks as one file would --------------------------------------------------------------


@pytest.fixture(scope="module")
def one_and_three(tmp_path_factory):
    """The extended fixture whole, and the same history split between the live file and two
    archives (by session, message ids kept)."""
    root = tmp_path_factory.mktemp("ranking")
    src = FIXTURES / "hermes-v22-extended.db"
    every = sorted(ids(src))
    whole = root / "whole" / "state.db"
    split(src, {whole: set(every)})
    parts = {
        root / "live" / "state.db": set(every[0::3]),
        root / "archives" / "a.db": set(every[1::3]),
        root / "archives" / "b.db": set(every[2::3]),
    }
    split(src, parts)
    one = make_app(whole, root / "i1").test_client()
    three = make_app(
        root / "live" / "state.db", root / "i3", LOGBOOK_ARCHIVES=[str(root / "archives")]
    ).test_client()
    return one, three


@pytest.mark.parametrize(
    "query",
    ["docker", "error", "the", "deploy*", '"docker compose"', "python OR rust", "test file"],
)
def test_a_search_across_stores_ranks_as_one_file_would(one_and_three, query):
    one, three = one_and_three
    from urllib.parse import quote

    alone = _pages(one, f"/search?q={quote(query)}&format=json", "results")
    across = _pages(three, f"/search?q={quote(query)}&format=json", "results")
    assert [h["message_id"] for h in across] == [h["message_id"] for h in alone], query
    first = three.get(f"/search?q={quote(query)}&format=json").get_json()
    lone = one.get(f"/search?q={quote(query)}&format=json").get_json()
    assert first["total"] == lone["total"] == len(across)
    assert first["ranked"] == lone["ranked"]
    assert len({h["store"] for h in across}) == min(3, len(across)) or len(across) < 3


def test_a_search_says_each_thing_once_and_counts_what_it_pages(tmp_path):
    """Hits in a backup's copies are left out (counted apart); each notice comes once."""
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    shutil.copy(FIXTURES / "hermes-v22.db", folder / "backup.db")
    shutil.copy(FIXTURES / "hermes-v22.db", folder / "backup2.db")
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()
    body = client.get("/search?q=docker:compose&format=json").get_json()
    notices = body["notice"] or ""
    single = make_app(copy_fixture("hermes-v22.db", tmp_path / "s"), tmp_path / "i2")
    theirs = single.test_client().get("/search?q=docker:compose&format=json").get_json()
    if theirs["notice"]:
        assert notices.count(theirs["notice"]) == 1
    every = _pages(client, "/search?q=the&format=json", "results")
    first = client.get("/search?q=the&format=json").get_json()
    assert first["total"] == len(every)
    assert {h["store"] for h in every} == {"live"}
    assert "copies of sessions already shown" in first["notice"]


# -- older files follow the rules of the Hermes that reads them -----------------------------


def test_a_schema_11_archive_is_listed_as_hermes_0_19_lists_it(tmp_path):
    """Beside a Hermes 0.19 live file, the v11 archive's untitled tool-using roots that 0.19's
    migration tags as orphaned subagent runs are hidden, as 0.19 hides them."""
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    v11 = folder / "old.db"
    shutil.copy(FIXTURES / "hermes-v11.db", v11)
    probable = ids(
        v11,
        "parent_session_id IS NULL AND title IS NULL AND message_count <= 25 AND "
        "EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id AND m.role = 'tool') "
        "AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = sessions.id)",
    )
    assert len(probable) == 12
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()
    rows = _pages(client, "/sessions?format=json&store=archive+old&limit=200")
    shown = {r["id"] for r in rows}
    assert shown and not (shown & probable)
    every = _pages(client, "/sessions?format=json&store=archive+old&rows=all&limit=200")
    assert probable <= {r["id"] for r in every}


@pytest.mark.oracle
def test_the_schema_11_archive_matches_hermes_0_19_s_own_list(tmp_path):
    from support.oracle import Hermes, ensure_venv, listed_ids

    venv = ensure_venv()
    home = tmp_path / "hermes"
    home.mkdir()
    shutil.copy(FIXTURES / "hermes-v11.db", home / "state.db")
    hermes = Hermes(venv, home)
    theirs = set(listed_ids(hermes.cli("sessions", "list", "--limit", "100000")))
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    shutil.copy(FIXTURES / "hermes-v11.db", folder / "old.db")
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()
    ours = {r["id"] for r in _pages(client, "/sessions?format=json&store=archive+old&limit=500")}
    assert ours == theirs


# -- files Logbook only reads stay as they were ---------------------------------------------------


def test_no_wal_or_shm_is_left_beside_archives_logbook_only_reads(tmp_path):
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    for name in ("hermes-v11.db", "hermes-v8.db", "hermes-v22-origins.db"):
        shutil.copy(FIXTURES / name, folder / name)
    before = sorted(p.name for p in folder.iterdir())
    client = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)]).test_client()
    for url in ("/sessions", "/search?q=the", "/stats?period=all", "/chats", "/people", "/stores"):
        assert client.get(url).status_code == 200
    assert client.get("/export.jsonl?source=cli").status_code == 200
    assert sorted(p.name for p in folder.iterdir()) == before
    # And an archive another program is writing (its log beside it) is read with its log.
    writer = sqlite3.connect(folder / "hermes-v8.db")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute(
        "INSERT INTO sessions (id, source, started_at) VALUES ('late-one', 'cli', ?)", (NOW,)
    )
    writer.commit()
    time.sleep(1.1)  # a file read is looked at again once a second at most
    try:
        rows = _pages(client, "/sessions?format=json&rows=all&limit=500&q=late-one")
        assert [r["id"] for r in rows] == ["late-one"]
    finally:
        writer.close()
    assert sql(folder / "hermes-v8.db", "SELECT COUNT(*) FROM sessions WHERE id = 'late-one'")
