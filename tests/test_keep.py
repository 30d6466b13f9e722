"""The one way Logbook keeps computed values (webui/keep.py), rule by rule, on a copy of a
real schema-22 database with an archive beside it, through the app: a write by Hermes, a
change made by Logbook and a store that goes away each make the right values fresh and
leave every other kept value as it was (the same object, not worked out again)."""

from __future__ import annotations

import shutil
import sqlite3
import time

import pytest

from support import FIXTURES, copy_fixture, make_app, sql
from webui import keep
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
    return lb.sessions.keeper.held()


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
    answers = archive.sessions.keeper.shelf(512, name="answers")
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
    archive_before = _held(archive)
    answers = archive.sessions.keeper.shelf(512, name="answers")
    kept_answers = len(answers)
    rendered = len(markdown.markdown.cache)

    with app.app_context():
        live.actions.rename(sid, "Renamed by Logbook")
    # Every value of the live store is gone, its shelves too ...
    assert _held(live) == {} and len(orders) == 0
    # ... the archive's and the renderings stay as they were.
    assert _same(archive_before, _held(archive), "")
    assert len(answers) == kept_answers and len(markdown.markdown.cache) == rendered
    body = client.get("/sessions?format=json&q=Renamed+by+Logbook").get_json()
    assert [r["id"] for r in body["sessions"]] == [sid]


def test_a_store_that_goes_away_takes_its_values_and_leaves_the_others(house):
    _live_db, folder, app, client, sid = house
    _visit(client, sid)
    live, archive = _stores(app)
    answers = archive.sessions.keeper.shelf(512, name="answers")
    assert len(answers) > 0
    before = _held(live)

    (folder / "old-laptop.db").unlink()
    app.extensions["stores"].rescan_now()
    body = client.get("/sessions?format=json").get_json()
    assert all(r.get("store", "live") == "live" for r in body["sessions"])
    assert archive.sessions.keeper.forgotten and len(answers) == 0 and _held(archive) == {}
    assert _same(before, _held(live), "shared:")


def test_the_rules_in_isolation():
    """The Rule's three ages: fresh while the mark stands (fresh_s), served after it moved
    (lag_s), served stale while one refresh runs (stale_s); a computation that spans one
    of Logbook's own changes is not kept."""
    keeper = keep.Keeper()
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    lagging = keep.Rule(lag_s=60.0)
    assert keeper.get("a", "v1", compute, lagging) == 1
    assert keeper.get("a", "v2", compute, lagging) == 1  # moved, within its lag
    strict = keep.Rule()
    assert keeper.get("b", "v1", compute, strict) == 2
    assert keeper.get("b", "v1", compute, strict) == 2  # until the mark moves
    assert keeper.get("b", "v2", compute, strict) == 3
    clock = keep.Rule(fresh_s=0.0)
    assert keeper.get("c", None, compute, clock) == 4
    assert keeper.get("c", None, compute, clock) == 5  # no age is fresh

    def spans_a_change():
        keeper.changed()
        return "old"

    assert keeper.get("d", None, spans_a_change, strict) == "old"
    assert keeper.recall("d") is None  # not kept: it may describe the file before the change

    shelf = keeper.shelf(2)
    shelf.put("x", 1, "m")
    shelf.put("y", 2, "m")
    shelf.put("z", 3, "m")
    assert shelf.get("x", "m") is None and shelf.get("z", "m") == 3  # at most two
    assert shelf.get("z", "other") is None  # only under its mark
    keeper.changed(soft=True)
    assert shelf.get("z", "m") == 3  # a prune's batch leaves plain shelves ...
    keeper.changed()
    assert len(shelf) == 0  # ... a change clears them

    every = keep.Every(3600)
    assert every.due() and not every.due()
    every.now()
    assert every.due()
