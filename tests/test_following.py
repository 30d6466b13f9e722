"""The following engine (webui/db/following.py) that the stats rollup and the digest compose:
a page's share of the work that runs out of time leaves the page partial, never failed; the
background pass and a caller that waits still hear of it. Reads given no time at all run out
at once, so no clock decides these tests."""

from __future__ import annotations

import pytest

from support import copy_fixture, make_app, sql
from webui.db.digest import Digest
from webui.db.errors import QueryTimeout
from webui.db.stats.rollup import Rollup
from webui.web.logbooks import get_logbook


@pytest.mark.parametrize("kind", [Rollup, Digest])
def test_a_page_whose_reads_run_out_of_time_answers_with_what_is_read(tmp_path, kind):
    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    with app.app_context():
        reader = get_logbook().reader
        starved = kind(reader, tmp_path / "starved.sqlite", read_limit_s=0.0)
        cov = starved.refresh(5.0, wait=False)  # a page's call
        assert not cov.complete and cov.seen_max_id == 0
        assert cov.db_max_id == sql(db, "SELECT MAX(id) FROM messages")[0][0]
        with pytest.raises(QueryTimeout):  # a caller that waits hears of it
            starved.refresh(5.0)
        # The ledger's file took nothing half-read: a pass with time reads it all.
        fed = kind(reader, tmp_path / "starved.sqlite", read_limit_s=5.0)
        for _ in range(200):
            if fed.refresh(5.0).complete:
                break
        assert fed.coverage().complete
