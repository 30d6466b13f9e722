"""A session the page's store does not hold, through the app: the same page opens in the store
that holds it (an archive), a request pinned to a store gets a 404 instead, and an id no store
holds gets the one clear 404 (webui.web.views.elsewhere_or_404, no_session)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from support import FIXTURES, make_app
from support.stores import ids, split


@pytest.fixture()
def moved(tmp_path):
    src = FIXTURES / "hermes-v22.db"
    discord = ids(src, "source = 'discord'")
    live = tmp_path / "state.db"
    archive = tmp_path / "archives" / "hermes-archive-2026-11.db"
    split(src, {live: ids(src) - discord, archive: discord})
    app = make_app(live, tmp_path / "inst", LOGBOOK_ARCHIVES=[str(archive.parent)])
    return sorted(discord)[0], sorted(ids(live))[0], app.test_client()


@pytest.mark.parametrize("page", ["", "/tail", "/lineage"])
def test_a_page_of_an_archived_session_opens_in_the_archive(moved, page):
    archived, _live, client = moved
    r = client.get(f"/sessions/{archived}{page}")
    assert r.status_code == 302
    where = urlsplit(r.headers["Location"])
    assert where.path == f"/sessions/{archived}{page}"
    assert parse_qs(where.query)["store"] == ["archive 2026-11"]
    assert client.get(r.headers["Location"]).status_code == 200


@pytest.mark.parametrize("page", ["", "/tail", "/lineage"])
def test_a_pinned_request_and_an_unknown_id_get_a_404_naming_it(moved, page):
    _archived, live_id, client = moved
    r = client.get(f"/sessions/{live_id}{page}?store=archive+2026-11")
    assert r.status_code == 404 and live_id in r.get_data(as_text=True)
    r = client.get(f"/sessions/no-such-session{page}")
    assert r.status_code == 404
    assert "No session has the id" in r.get_data(as_text=True)
    assert "no-such-session" in r.get_data(as_text=True)
