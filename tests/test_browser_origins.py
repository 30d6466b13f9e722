"""Where conversations come from, in a real browser, on the schema-22 database whose origins
Hermes 0.19's gateway code wrote: a chat read as one timeline across its resets, searched and
paged; the list's origin facets; workspaces and people; axe in both themes and a phone."""

from __future__ import annotations

import re

import pytest

from support import copy_fixture, make_app, sql
from support.browser import LiveServer, axe_problems, screenshot

pytestmark = pytest.mark.browser
ALICE = "agent:main:telegram:dm:1001"


@pytest.fixture(scope="module")
def origins(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("origins-browser")
    db = copy_fixture("hermes-v22-origins.db", tmp)
    srv = LiveServer(make_app(db, tmp / "inst"))
    yield db, srv
    srv.close()


def test_read_a_chat_across_its_resets_search_it_and_page_on(origins, page):
    db, live = origins
    page.goto(f"{live.url}/chats")
    page.get_by_role("link", name="Alice", exact=True).click()
    page.wait_for_url(re.compile(r"/chats/agent"))
    first_sessions = sql(
        db, "SELECT id FROM sessions WHERE session_key = ? ORDER BY started_at, id", (ALICE,)
    )
    timeline = page.locator("#timeline")
    # the first page starts with the chat's first session and marks each boundary with why
    first_link = timeline.locator("h2.boundary a").first.get_attribute("href")
    assert first_link.endswith(first_sessions[0][0])
    lines = timeline.locator(".reset-line").all_inner_texts()
    assert lines and all("ended" in t or "not ended" in t for t in lines)
    assert any("automatically reset (daily schedule)" in t for t in lines)
    shown = timeline.locator("article.msg").count()
    assert shown == 100
    page.get_by_role("link", name="Later messages").click()
    page.wait_for_load_state("networkidle")
    assert "from=" in page.url
    assert page.locator("#timeline article.msg").count() > 0
    # search within the whole chat
    page.fill("#c-q", "kubernetes")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url(re.compile(r"/search\?"))
    page.wait_for_selector("ol.hits li.hit")
    expected = sql(
        db,
        "SELECT COUNT(*) FROM messages_fts f JOIN messages m ON m.id = f.rowid JOIN sessions s "
        "ON s.id = m.session_id WHERE messages_fts MATCH 'kubernetes' AND s.session_key = ? "
        "AND m.active = 1",
        (ALICE,),
    )[0][0]
    assert page.locator("ol.hits li.hit").count() == min(expected, 20)
    assert set(page.locator("ol.hits .origin").all_inner_texts()) == {"telegram · DM · Alice"}
    assert "in the chat" in page.locator("h1").inner_text()


def test_origin_facets_filter_the_list(origins, page):
    db, live = origins
    page.goto(f"{live.url}/sessions?rows=all")
    page.select_option("#f-chat_type", "thread")
    page.wait_for_url(re.compile(r"chat_type=thread"))
    page.wait_for_load_state("networkidle")
    expected = sql(db, "SELECT COUNT(*) FROM sessions WHERE chat_type = 'thread'")[0][0]
    assert page.locator("table.sessions tbody tr").count() == expected
    origins_shown = page.locator("table.sessions .origin").all_inner_texts()
    assert origins_shown and all(" · thread · " in t for t in origins_shown)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_origin_pages_pass_axe_in_both_themes(origins, chromium, scheme):
    db, live = origins
    context = chromium.new_context(
        viewport={"width": 1280, "height": 900}, color_scheme=scheme, bypass_csp=True
    )
    pg = context.new_page()
    problems = []
    try:
        for name, path in {
            "chats": "/chats",
            "chat": f"/chats/{ALICE}",
            "workspaces": "/workspaces",
            "people": "/people",
            "list": "/sessions?chat_type=dm",
            "chat-search": f"/search?q=kubernetes&session_key={ALICE}",
        }.items():
            pg.goto(live.url + path)
            pg.wait_for_load_state("networkidle")
            if name in ("chat", "workspaces"):
                screenshot(pg, f"{name}-{scheme}.png")
            problems += axe_problems(pg, name)
    finally:
        context.close()
    assert not problems, problems


def test_a_chat_on_a_phone_fits_the_screen(origins, chromium):
    _, live = origins
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    pg = context.new_page()
    try:
        for path in (f"/chats/{ALICE}", "/chats", "/workspaces"):
            pg.goto(live.url + path)
            assert pg.evaluate("document.documentElement.scrollWidth") <= 400, path
        pg.goto(f"{live.url}/chats/{ALICE}")
        screenshot(pg, "chat-phone.png")
    finally:
        context.close()
