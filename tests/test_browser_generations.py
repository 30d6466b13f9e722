"""The conversation viewer in a real browser on files Hermes 0.22 and 0.19 wrote (issue 44): the
compacted history Hermes shows, the toggle that adds what it does not (each row labelled), hidden
rows never painted, the system prompt and an imported session's origin; axe in both themes."""

from __future__ import annotations

import pytest

from support import copy_fixture, make_app, sql
from support.browser import LiveServer, axe_problems

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def v31(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("generations-browser")
    db = copy_fixture("hermes-v31-fresh.db", tmp)
    srv = LiveServer(make_app(db, tmp / "inst"))
    yield db, srv
    srv.close()


def test_the_toggle_adds_what_hermes_does_not_show_each_labelled(v31, page):
    db, live = v31
    page.goto(f"{live.url}/sessions/g_compact")
    shown = page.locator("article.msg")
    assert shown.count() == 22
    assert page.locator("article.msg .badge.not-shown").count() == 0
    page.get_by_role("link", name="Show them").click()
    page.wait_for_url("**rewound=1**")
    assert page.locator("article.msg").count() == 29
    labelled = page.locator("article.msg .badge.not-shown")
    assert labelled.count() == 7
    carried = page.locator("#m-28 .why-words").inner_text()
    assert carried == "carried into message 32 by a compaction"
    assert "model only" in page.locator("#m-31 .badge.not-shown").inner_text()
    page.get_by_role("link", name="Hide them").click()
    page.wait_for_url(f"{live.url}/sessions/g_compact")
    assert page.locator("article.msg").count() == 22


def test_hidden_rows_are_counted_never_painted(v31, page):
    db, live = v31
    hidden = [r[0] for r in sql(db, "SELECT id FROM messages WHERE display_kind = 'hidden'")]
    page.goto(f"{live.url}/sessions/g_hidden_rows")
    assert hidden and all(page.locator(f"#m-{i}").count() == 0 for i in hidden)
    details = page.locator(".hidden-rows").inner_text()
    assert "2 hidden rows" in details


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_viewer_passes_axe_with_every_row_shown(v31, chromium, scheme):
    _db, live = v31
    imported = sql(_db, "SELECT id FROM sessions WHERE source = 'claude-code' LIMIT 1")[0][0]
    context = chromium.new_context(
        viewport={"width": 1280, "height": 900}, color_scheme=scheme, bypass_csp=True
    )
    pg = context.new_page()
    problems = []
    try:
        for name, path in {
            "compacted": "/sessions/g_compact",
            "every row": "/sessions/g_compact?rewound=1",
            "hidden rows": "/sessions/g_hidden_rows?rewound=1",
            "imported": f"/sessions/{imported}",
        }.items():
            pg.goto(live.url + path)
            pg.wait_for_load_state("networkidle")
            problems += axe_problems(pg, name)
        assert "imported from Claude Code" in pg.locator(".badge.imported").inner_text()
    finally:
        context.close()
    assert not problems, problems
