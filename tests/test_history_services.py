"""The whole history's services (webui/db/history/) called directly, with their inputs given:
the stores of a real schema-22 file split between the live file and an archive (which also
holds copies of three live sessions), the list of stores not read, the page's budget
(``short_of_time``) and, for exports, whether the reader has gone. No request, no flask.g: what
a view gives them is all they read."""

from __future__ import annotations

import pytest
from werkzeug.datastructures import MultiDict

from support import FIXTURES, make_app
from support.stores import ids, split
from webui.db import LogbookDBError, SessionQuery
from webui.db.deadline import OUT_OF_TIME
from webui.db.history import export as history_export
from webui.db.history.chats import Groups
from webui.db.history.list_page import store_page


def never() -> bool:
    return False


def always() -> bool:
    return True


@pytest.fixture()
def history(tmp_path):
    """(live ids, archive ids, the copies, the app, the stores: live first, then the archive)."""
    src = FIXTURES / "hermes-v22.db"
    everything = ids(src)
    discord = ids(src, "source = 'discord'")
    copies = set(sorted(ids(src, "parent_session_id IS NULL AND source != 'discord'"))[:3])
    live = tmp_path / "state.db"
    archive = tmp_path / "archives" / "hermes-archive-2026-11.db"
    split(src, {live: everything - discord, archive: discord | copies})
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(archive.parent)])
    with app.app_context():
        book = app.extensions["logbook"]
        stores = app.extensions["stores"].for_request(book)
        assert [s.kind for s in stores] == ["live", "archive"]
        assert all(s.logbook is not None for s in stores)
        yield everything - discord, discord | copies, copies, app, stores


def _query(**args: str) -> SessionQuery:
    return SessionQuery.from_args(MultiDict({"limit": "200", **args}))


def test_the_list_counts_a_copy_once_and_asks_no_archive_without_time(history):
    live_ids, archive_ids, copies, _app, stores = history
    archive = stores[1]
    q = _query()
    whole = store_page(q, stores, [], never)
    assert whole.missing == []
    assert whole.answered == ["live", archive.name]
    assert whole.copies == len(copies)
    assert whole.total == sum(whole.counts.values()) - whole.copies
    shown = [r["id"] for r in whole.rows]
    assert len(shown) == len(set(shown))  # a copy is shown once
    assert {r["store"] for r in whole.rows} == {"live", archive.name}
    assert not [r for r in whole.rows if r["store"] == archive.name and r["id"] in copies]
    # No time left: the archive is not asked, and says so; the live file still answers.
    missing: list[str] = []
    short = store_page(q, stores, missing, always)
    assert short.missing == [f"{archive.name}: {OUT_OF_TIME}"]
    assert {r["store"] for r in short.rows} == {"live"}
    assert {r["id"] for r in short.rows} <= live_ids


def test_people_across_stores_name_the_archive_or_say_it_was_not_asked(history):
    _live_ids, _archive_ids, _copies, _app, stores = history
    archive = stores[1]
    missing: list[str] = []
    rows = Groups(stores, missing, never).people()
    assert missing == []
    assert any(archive.name in r["stores"] for r in rows)  # Discord's people are archived
    missing = []
    rows = Groups(stores, missing, always).people()
    assert missing == [f"{archive.name}: {OUT_OF_TIME}"]
    assert rows and all(r["stores"] == ["live"] for r in rows)


def test_an_export_leaves_copies_out_stops_when_the_reader_goes_and_names_a_failed_store(
    history,
):
    live_ids, archive_ids, copies, _app, stores = history
    archive = stores[1]

    def ids_of(store):
        return sorted(live_ids if store.kind == "live" else archive_ids)

    def produce(part):
        yield part.store.name, list(part.ids)

    missing = history_export.Missing()
    parts = history_export.each_store(stores, ids_of, missing)
    got = dict(history_export.streamed(parts, produce, missing, None, never))
    assert got == {"live": sorted(live_ids), archive.name: sorted(archive_ids - copies)}
    assert missing.lines == []
    # The reader has gone: nothing more is read.
    parts = history_export.each_store(stores, ids_of, missing)
    assert list(history_export.streamed(parts, produce, missing, None, always)) == []

    # A store that fails under the export ends its own part; the note ends the stream.
    def failing(store):
        if store.kind != "live":
            raise LogbookDBError("the file went away")
        return ids_of(store)

    missing = history_export.Missing()
    parts = history_export.each_store(stores, failing, missing)
    out = list(history_export.streamed(parts, produce, missing, lambda m: m.lines, never))
    assert out[0] == ("live", sorted(live_ids))
    assert out[-1] == [f"{archive.name}: the file went away"]
