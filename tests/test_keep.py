"""Logbook's caches (webui/keep.py) in the house, on a copy of a real schema-22 database with
an archive beside it, through the app: a write by Hermes, a change made by Logbook and a store
that goes away each make the right values fresh and leave every other cached value as it was
(the same object, not worked out again); a rename through a running server shows in the very
next list. And the inventory of what is cached (webui/keep_inventory.py) against the README's
"What may lag" table, both ways. The caches' own rules: tests/test_keep_policies.py."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import time
from urllib.parse import quote

import pytest

from support import FIXTURES, ROOT, copy_fixture, make_app, sql
from support.server import Server
from webui import DEFAULTS
from webui.keep_inventory import INVENTORY
from webui.present import markdown


@pytest.fixture()
def house(tmp_path):
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    shutil.copy(FIXTURES / "hermes-v11.db", folder / "old-laptop.db")
    # A report is reused only while nobody commits (no lag allowed): what the test checks.
    app = make_app(
        live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)], LOGBOOK_STATS_REUSE_S=0.0
    )
    client = app.test_client()
    sid = sql(
        live,
        "SELECT session_id FROM messages GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1",
    )[0][0]
    return live, folder, app, client, sid


def _visit(client, sid: str) -> dict:
    """The pages whose answers are kept: the merged list (shared figures, the archive's
    answers), a conversation (its header figures, its Markdown) and the statistics."""
    listing = client.get("/sessions?format=json")
    assert listing.status_code == 200
    viewer = client.get(f"/sessions/{sid}")
    assert viewer.status_code == 200
    stats = client.get("/stats?format=json&period=all")
    assert stats.status_code == 200
    return {"list": listing.get_json(), "stats": stats.get_json(), "viewer": viewer}


def _stores(app):
    live = app.extensions["logbook"]
    (archive,) = [s for s in app.extensions["stores"].others() if s.logbook is not None]
    return live, archive.logbook


def _held(lb) -> dict:
    return lb.sessions.cache.snapshot()


def _same(before: dict, after: dict, prefix: str) -> bool:
    slots = [k for k in before if k.startswith(prefix)]
    assert slots, f"nothing kept under {prefix!r}"
    return all(k in after and after[k] is before[k] for k in slots)


def _hermes_appends(db, sid: str) -> None:
    """One message, as Hermes's writer adds it: the row and the session's counter in one
    transaction (another connection: SQLite's data_version moves for every reader)."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) "
            "VALUES (?, 'user', 'one more question', ?)",
            (sid, time.time()),
        )
        conn.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (sid,))


def test_a_hermes_write_refreshes_what_depends_on_the_file_and_nothing_else(house):
    live_db, _folder, app, client, sid = house
    _visit(client, sid)
    live, archive = _stores(app)
    before, archive_before = _held(live), _held(archive)
    answers = archive.sessions.cache.versioned(512, name="answers")
    assert len(answers) > 0  # the archive's part of the merged list is kept
    rendered = len(markdown.markdown.cache)
    assert rendered > 0

    _hermes_appends(live_db, sid)
    seen = _visit(client, sid)
    after = _held(live)
    # Under data_version: the report is worked out again and counts the new message.
    stats_slot = next(k for k in before if k.startswith("stats:"))
    assert after[stats_slot] is not before[stats_slot]
    counted = live.messages.counts(sid)["total"]
    assert (
        counted == sql(live_db, "SELECT COUNT(*) FROM messages WHERE session_id = ?", [sid])[0][0]
    )
    # Under the sessions token (no session appeared or went): the same figures, not
    # rescanned; under their own files: the archive's answers; under their text: renderings.
    assert _same(before, after, "shared:")
    assert _same(archive_before, _held(archive), "")
    assert len(answers) > 0 and len(markdown.markdown.cache) >= rendered

    # A session that appears moves the sessions token: the shared figures are counted anew.
    with sqlite3.connect(live_db) as conn:
        conn.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES ('keep-new', 'cli', ?)",
            (time.time(),),
        )
    total = sum(seen["list"]["facets"]["source"].values())
    again = client.get("/sessions?format=json").get_json()
    assert sum(again["facets"]["source"].values()) == total + 1
    later = _held(live)
    assert not _same(after, later, "shared:SELECT COUNT")


def test_a_logbook_change_drops_that_store_s_values_and_no_other_store_s(house):
    _live_db, _folder, app, client, sid = house
    _visit(client, sid)
    live, archive = _stores(app)
    orders = live.sessions.orders._order_cache
    client.get("/sessions?format=json&sort=-last_active")
    assert len(orders) > 0 and _held(live)
    # The conversation's header figures: in a cache attached to the same store's cache.
    figures = live.messages._counts_kept
    assert len(figures) > 0
    archive_before = _held(archive)
    answers = archive.sessions.cache.versioned(512, name="answers")
    kept_answers = len(answers)
    rendered = len(markdown.markdown.cache)

    with app.app_context():
        live.actions.rename(sid, "Renamed by Logbook")
    # Every value of the live store is gone, its shelves too ...
    assert _held(live) == {} and len(orders) == 0 and len(figures) == 0
    # ... the archive's and the renderings stay as they were.
    assert _same(archive_before, _held(archive), "")
    assert len(answers) == kept_answers and len(markdown.markdown.cache) == rendered
    body = client.get("/sessions?format=json&q=Renamed+by+Logbook").get_json()
    assert [r["id"] for r in body["sessions"]] == [sid]


def test_a_store_that_goes_away_takes_its_values_and_leaves_the_others(house):
    _live_db, folder, app, client, sid = house
    _visit(client, sid)
    live, archive = _stores(app)
    answers = archive.sessions.cache.versioned(512, name="answers")
    assert len(answers) > 0
    before = _held(live)

    (folder / "old-laptop.db").unlink()
    app.extensions["stores"].rescan_now()
    body = client.get("/sessions?format=json").get_json()
    assert all(r.get("store", "live") == "live" for r in body["sessions"])
    assert archive.sessions.cache.closed and len(answers) == 0 and _held(archive) == {}
    assert _same(before, _held(live), "shared:")


def test_a_rename_shows_in_the_very_next_list_through_a_running_server(tmp_path):
    """Logbook's own change drops the file's cached values at once. The list's counts for a
    filter are shared under the sessions token, which a rename does not move (no session
    appears or goes): only the invalidation makes the next list count the renamed session."""
    db = copy_fixture("hermes-v22.db", tmp_path)
    sid = sql(db, "SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1")[0][0]
    title = "Renamed through the server"
    server = Server("--db", str(db), "--instance", str(tmp_path / "inst"))
    try:

        def listed(q: str = "") -> dict:
            status, _, body = server.get(f"/sessions?format=json&q={quote(q)}")
            assert status == 200
            return json.loads(body)

        before = listed(title)  # counted (and cached) while no session has that title
        assert before["sessions"] == [] and not any(before["facets"]["source"].values())
        assert listed()["sessions"][0]["id"] == sid
        status, _ = server.post(f"/sessions/{quote(sid)}/title", {"title": title})
        assert status == 200
        after = listed(title)
        assert [(r["id"], r["title"]) for r in after["sessions"]] == [(sid, title)]
        assert sum(after["facets"]["source"].values()) == 1
        assert (listed()["sessions"][0]["id"], listed()["sessions"][0]["title"]) == (sid, title)
    finally:
        server.close()


# -- the inventory and the README -------------------------------------------------------------

README = ROOT / "README.md"
HEADER = "| Cached | What | How long | Dropped by |"


def _readme_table() -> list[tuple[str, ...]]:
    lines = [line.strip() for line in README.read_text(encoding="utf-8").splitlines()]
    assert lines.count(HEADER) == 1, "the README has one 'What may lag' table"
    start = lines.index(HEADER) + 2  # the header and its rule
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(tuple(cell.strip() for cell in line.strip("|").split(" | ")))
    return rows


def test_the_readme_table_mirrors_the_inventory_both_ways():
    table = _readme_table()
    ours = [(c.name, c.what, c.how_long, c.dropped_by) for c in INVENTORY]
    assert all(len(row) == 4 for row in table), [r for r in table if len(r) != 4]
    missing = [row for row in ours if row not in table]
    extra = [row for row in table if row not in ours]
    assert missing == [] and extra == [], f"README lacks {missing}; README has, code lacks {extra}"
    assert table == ours  # in the same order
    assert len({c.name for c in INVENTORY}) == len(INVENTORY)


# What puts a value in a cache of webui.keep's (or reads one held by a store's cache).
CACHING = re.compile(
    r"keep\.(StoreCache|VersionedCache|SizedCache|memoize|memoize_text|Throttle|reused)\b"
    r"|\bSizedCache\(|\bStoreCache\(|\.versioned\(|\.cached\(|\bself\.shared\(|sessions\.shared\("
)


def test_every_module_that_caches_is_in_the_inventory():
    webui = ROOT / "webui"
    owners = {owner for c in INVENTORY for owner in c.owners}
    for owner in owners:
        assert (webui / owner).is_file(), f"{owner} is named in the inventory but is gone"
    caching = {
        str(path.relative_to(webui))
        for path in webui.rglob("*.py")
        if path.name not in ("keep.py", "keep_inventory.py")
        and CACHING.search(re.sub(r"#.*", "", path.read_text(encoding="utf-8")))
    }
    assert caching - owners == set(), "cache without an inventory entry"
    # Nothing caches around webui.keep: no other LRU or TTL cache in the house.
    around = [
        str(path.relative_to(webui))
        for path in webui.rglob("*.py")
        if path.name != "keep.py"
        and re.search(r"lru_cache|functools\.cache\b|cachetools", path.read_text("utf-8"))
    ]
    assert around == ["hermes/cjk_bigram.py"]  # webui.hermes is pure: no import of webui.keep


def test_the_inventory_says_the_policies_numbers():
    """The times the inventory states are the code's own: a changed constant fails here."""
    from webui import keep
    from webui.db.digest import objects
    from webui.db.sessions import query as session_query
    from webui.db.stores import profiles
    from webui.db.stores import store_set as stores
    from webui.keep_inventory import says

    by_name = {c.name: c.how_long for c in INVENTORY}
    assert f"within {says(keep.SHARED_FIGURES.ttl)}" in by_name["Whole-table figures"]
    assert f"within {says(keep.CHAINS.ttl)}" in by_name["Compression chains"]
    assert f"within {says(keep.HIDDEN_IDS.ttl)}" in by_name["Hidden message ids"]
    assert f"Within {says(keep.EXPORT_SIZES.ttl)}" in by_name["Export estimate"]
    assert f"within {says(session_query.ORDER_MAX_AGE_S)}" in by_name["List orders"]
    assert f"every {says(stores.RESCAN_S)}" in by_name["Folder scans"]
    assert f"every {says(stores.CHECK_S)}" in by_name["Folder scans"]
    assert f"profiles every {says(profiles.RESCAN_S)}" in by_name["Folder scans"]
    assert f"At most {says(objects.RESCAN_S)} old" in by_name["Table sizes"]

    stats = by_name["Statistics"]
    assert f"reused for {says(DEFAULTS['LOGBOOK_STATS_REUSE_S'])}" in stats
    assert f"up to {says(DEFAULTS['LOGBOOK_STATS_STALE_S'])} old" in stats
