"""A search across stores is the database layer's (webui.db.search.stores): called with the
stores as plain objects (each one's SearchStore, whether it is live, its copies of sessions
that an earlier store holds), outside any request, it pages as one file holding the whole
history would, leaves a store out when the request is short of time and says so, folds
copies, and sets separate histories (profiles) side by side."""

from __future__ import annotations

import shutil

import pytest

from support import FIXTURES, copy_fixture, make_app, sql
from support.stores import ids, split
from webui.db import SearchFilters
from webui.db.search.limits import PAGE_SIZE
from webui.db.search.stores import Budget, Searched, search_profiles, search_stores


def _stores(app) -> list[Searched]:
    """The app's readable stores, live first, as plain objects (no copies given)."""
    live = app.extensions["logbook"]
    every = app.extensions["stores"].for_request(live)
    assert all(s.logbook is not None for s in every), [s.status for s in every]
    return [Searched(s.name, s.logbook.search, live=s.kind == "live") for s in every]


@pytest.fixture(scope="module")
def whole_and_split(tmp_path_factory):
    """The extended fixture whole, and the same history split between the live file and two
    archives (by session, message ids kept)."""
    root = tmp_path_factory.mktemp("stores")
    src = FIXTURES / "hermes-v22-extended.db"
    every = sorted(ids(src))
    whole = root / "whole" / "state.db"
    split(src, {whole: set(every)})
    split(
        src,
        {
            root / "live" / "state.db": set(every[0::3]),
            root / "archives" / "a.db": set(every[1::3]),
            root / "archives" / "b.db": set(every[2::3]),
        },
    )
    one = make_app(whole, root / "i1")
    three = make_app(
        root / "live" / "state.db", root / "i3", LOGBOOK_ARCHIVES=[str(root / "archives")]
    )
    assert three.test_client().get("/stores?format=json").status_code == 200  # stores read
    return one, three


@pytest.mark.parametrize("query", ["docker", "the", "deploy*", "python OR rust"])
def test_one_call_pages_the_stores_as_one_file_would(whole_and_split, query):
    one, three = whole_and_split
    f = SearchFilters()
    with one.app_context():
        alone, _searched, _plan = one.extensions["logbook"].search.search(query, f, 1)
    with three.app_context():
        stores = _stores(three)
        assert len(stores) == 3
        result, searched, plan = search_stores(query, f, 1, stores, [])
    assert plan is not None and searched
    assert [r["message_id"] for r in result.rows] == [r["message_id"] for r in alone.rows]
    assert (result.total, result.ranked) == (alone.total, alone.ranked)
    assert {r["store"] for r in result.rows} <= {s.name for s in stores}
    if len(result.rows) >= 3:
        assert len({r["store"] for r in result.rows}) > 1


def test_short_of_time_the_other_stores_are_named_and_live_answers(whole_and_split):
    _one, three = whole_and_split
    missing: list[str] = []
    with three.app_context():
        stores = _stores(three)
        live_only, _s, _p = search_stores("the", SearchFilters(), 1, stores[:1], [])
        result, _s, _p = search_stores(
            "the", SearchFilters(), 1, stores, missing, Budget(lambda: True, "not asked: late")
        )
    assert missing == [f"{s.name} was not searched: not asked: late" for s in stores[1:]]
    assert result.notices[-2:] == missing
    assert [r["message_id"] for r in result.rows] == [r["message_id"] for r in live_only.rows]
    assert {r["store"] for r in result.rows} == {"live"}


def test_copies_are_folded_and_home_plans_when_no_store_answers(tmp_path):
    live = copy_fixture("hermes-v22.db", tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    shutil.copy(FIXTURES / "hermes-v22.db", folder / "backup.db")
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(folder)])
    assert app.test_client().get("/stores?format=json").status_code == 200
    held = tuple(r[0] for r in sql(live, "SELECT id FROM sessions"))
    with app.app_context():
        first, backup = _stores(app)
        folded, _s, _p = search_stores(
            "the",
            SearchFilters(),
            1,
            [first, Searched(backup.name, backup.search, False, held)],
            [],
        )
        doubled, _s, _p = search_stores("the", SearchFilters(), 1, [first, backup], [])
        alone, _s, _p = search_stores("the", SearchFilters(), 1, [first], [])
        _r, _s, home_plan = search_stores(
            "the", SearchFilters(), 1, [], [], home=app.extensions["logbook"].search
        )
    assert folded.total == alone.total > 0 and doubled.total == 2 * alone.total
    assert {r["store"] for r in folded.rows} == {"live"}
    assert any("copies of sessions already shown" in n for n in folded.notices)
    assert home_plan is not None and home_plan.searched


def test_profiles_are_set_side_by_side_not_ranked_together(whole_and_split):
    one, three = whole_and_split
    f = SearchFilters()
    with one.app_context(), three.app_context():
        a = one.extensions["logbook"].search
        b = three.extensions["logbook"].search
        first, _s, _p = a.search("the", f, 1)
        second, _s, _p = b.search("the", f, 1)
        result, _s, plan = search_profiles("the", f, 1, [("one", a), ("two", b)], label="who")
    assert plan is not None
    assert result.total == first.total + second.total and not result.ranked
    expected = []
    for x, y in zip(first.rows, second.rows, strict=False):
        expected += [("one", x["message_id"]), ("two", y["message_id"])]
    got = [(r["who"], r["message_id"]) for r in result.rows]
    assert got[: len(expected)] == expected
    assert len(result.rows) == len(first.rows) + len(second.rows) <= 2 * PAGE_SIZE
