"""Real-browser tests: what a person does, in Chromium."""

from __future__ import annotations

import re

import pytest

from support import sql
from support.browser import LiveServer, screenshot, until

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def live(gen_app):
    srv = LiveServer(gen_app)
    yield srv
    srv.close()


def test_filter_by_source_open_session_expand_tool_call(live, page, generated_db):
    db, _ = generated_db
    source, count = sql(
        db, "SELECT source, COUNT(*) FROM sessions GROUP BY source ORDER BY 2 DESC LIMIT 1 OFFSET 1"
    )[0]
    page.goto(f"{live.url}/sessions?rows=all")  # every session row: the count is SQL's
    screenshot(page, "sessions.png")
    page.evaluate("window.__notReloaded = true")
    page.locator(f".facet:has(input[value='{source}'])").click()
    page.wait_for_url(re.compile(rf"source={source}"))
    # (a locator, not wait_for_function: the page's CSP forbids evaluating strings)
    page.locator("#results .summary", has_text=f"{count:,} session row").wait_for()
    # htmx swapped the table in place: no page load happened
    assert page.evaluate("window.__notReloaded") is True
    badges = page.locator("table.sessions tbody td[data-label='Source'] .badge").all_inner_texts()
    assert badges and set(badges) == {source}

    # open a session of that source that has tool calls
    sid = sql(
        db,
        "SELECT s.id FROM sessions s WHERE s.source = ? AND EXISTS (SELECT 1 FROM "
        "messages m WHERE m.session_id = s.id AND m.tool_calls IS NOT NULL) "
        "ORDER BY s.started_at DESC LIMIT 1",
        (source,),
    )[0][0]
    page.goto(f"{live.url}/sessions/{sid}")
    call = page.locator("details.tool-call").first
    assert call.get_attribute("open") is None
    call.locator("summary").click()
    assert call.get_attribute("open") is not None
    assert call.locator("pre").is_visible()
    screenshot(page, "viewer.png")
    # the call links to its result, and following it lands on the result message
    link = call.locator("xpath=following-sibling::a[contains(@class, 'result-link')][1]")
    if link.count():
        href = link.get_attribute("href")
        link.click()
        mid = href.split("#m-")[1]
        page.wait_for_function(f"location.hash === '#m-{mid}'")
        assert page.locator(f"#m-{mid}").is_visible()


def test_long_session_loads_more_as_you_scroll(live, page, generated_db):
    db, long_id = generated_db
    total = sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = ?", (long_id,))[0][0]
    page.goto(f"{live.url}/sessions/{long_id}")
    assert page.locator("article.msg").count() == 100

    def three_pages() -> bool:
        # The pager replaces itself (outerHTML) as each page lands: scroll to whichever one
        # is there now, never to a handle that a swap may have detached.
        page.evaluate("document.getElementById('more-messages')?.scrollIntoView()")
        return page.locator("article.msg").count() >= 300

    until(page, three_pages, "scrolling loads 300 messages")
    ids = [
        int(x.split("-")[1])
        for x in page.locator("article.msg").evaluate_all("els => els.map(e => e.id)")
    ]
    expected = [
        r[0]
        for r in sql(
            db, "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id", (long_id,)
        )
    ][: len(ids)]
    assert ids == expected and total > len(ids)


def test_anchor_to_a_deep_message_loads_its_page(live, page, generated_db):
    db, long_id = generated_db
    mid = sql(
        db,
        "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id LIMIT 1 OFFSET 520",
        (long_id,),
    )[0][0]
    page.goto(f"{live.url}/sessions/{long_id}#m-{mid}")
    page.wait_for_url(re.compile(rf"at={mid}"))
    target = page.locator(f"#m-{mid}")
    target.wait_for()
    assert target.is_visible()
    assert page.locator("#earlier-messages").count() == 1


def test_search_as_you_type_and_click_through_to_the_highlighted_message(live, page, generated_db):
    db, long_id = generated_db
    page.goto(f"{live.url}/search")
    page.evaluate("window.__notReloaded = true")
    page.locator("#s-q").press_sequentially("docker", delay=40)
    page.wait_for_url(re.compile(r"q=docker"))
    first = page.locator("ol.hits li.hit").first
    first.wait_for()
    assert page.evaluate("window.__notReloaded") is True
    assert "docker" in first.locator("mark").first.inner_text().lower()
    screenshot(page, "search.png")

    # a hit deep inside the long session opens the page that holds it, highlighted
    first_page = {
        r[0]
        for r in sql(
            db,
            "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id LIMIT 100",
            (long_id,),
        )
    }
    page.goto(f"{live.url}/search?q=docker&session={long_id}")
    hrefs = page.locator("a.snippet").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    deep = [h for h in hrefs if int(h.split("#m-")[1]) not in first_page]
    assert deep, "the long session should mention docker beyond its first page"
    mid = int(deep[0].split("#m-")[1])
    page.locator(f"a.snippet[href$='#m-{mid}']").click()
    page.wait_for_url(re.compile(rf"at={mid}"))
    target = page.locator(f"#m-{mid}")
    target.wait_for()
    assert target.is_visible()
    assert "docker" in target.locator("mark").first.inner_text().lower()


def test_lineage_graph_and_follow_a_node(live, page, generated_db):
    db, _ = generated_db
    sid, n = sql(
        db,
        "WITH RECURSIVE d(id, root) AS (SELECT id, id FROM sessions WHERE "
        "parent_session_id IS NULL UNION SELECT s.id, d.root FROM sessions s JOIN d "
        "ON s.parent_session_id = d.id) SELECT root, COUNT(*) FROM d GROUP BY root "
        "ORDER BY 2 DESC LIMIT 1",
    )[0]
    assert n >= 4
    page.goto(f"{live.url}/sessions/{sid}/lineage")
    svg = page.locator("svg.lineage")
    assert svg.is_visible()
    assert page.locator("svg.lineage a.node").count() >= min(n, 13)
    assert page.locator("svg.lineage a.node.current").count() == 1
    screenshot(page, "lineage.png")
    node = page.locator("svg.lineage a.node:not(.current):not(.more)").first
    href = node.get_attribute("href")
    node.click()
    page.wait_for_url(re.compile(re.escape(href) + "$"))
    assert page.locator("h1").is_visible()
    assert page.locator("a", has_text="lineage graph").count() == 1


def test_stats_period_change_updates_charts_in_place(live, page):
    page.goto(f"{live.url}/stats?period=30")
    page.evaluate("window.__notReloaded = true")
    before = page.locator("#chart-sessions svg rect.bar").count()
    page.locator("label.facet", has_text="all time").click()
    page.wait_for_url(re.compile(r"period=all"))
    page.wait_for_function(
        f"document.querySelectorAll('#chart-sessions svg rect.bar').length !== {before}"
    )
    assert page.evaluate("window.__notReloaded") is True
    assert page.locator("#chart-tokens svg rect.bar").count() > 0
    tip = page.locator("#chart-sessions svg rect.bar title").first.text_content()
    assert ":" in tip
    screenshot(page, "stats.png")


def test_a_corrected_search_names_its_correction_and_the_next_steps(live, page):
    page.goto(f"{live.url}/search")
    page.fill("#s-q", '"zzqx')
    page.wait_for_selector("#search-results .notice")
    notice = page.locator("#search-results .notice").inner_text()
    assert "quotation mark without a partner" in notice and "zzqx" in notice
    steps = page.locator("#search-results ul.next-steps")
    assert steps.get_by_role("link", name="zzqx*").count() == 1
    steps.get_by_role("link", name="search titles and ids").click()
    page.wait_for_url(re.compile(r"/sessions\?"))


@pytest.mark.parametrize("viewport", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_stats_lead_with_the_answer(live, chromium, viewport):
    """The headline (figures with their change against the period before) is on the first
    screen; the most expensive sessions, models and tools come next; tables are folded and
    the section index stays in view while the reader scrolls."""
    w, h = viewport
    context = chromium.new_context(viewport={"width": w, "height": h}, is_mobile=w < 500)
    pg = context.new_page()
    try:
        data = pg.request.get(f"{live.url}/stats?period=90&format=json").json()
        pg.goto(f"{live.url}/stats?period=90")
        cards = pg.locator("#headline .kpi")
        assert cards.count() == 4
        for card in cards.all():
            box = card.locator(".delta").bounding_box()
            assert box is not None and box["y"] + box["height"] <= h, "a change below the fold"
        before = data["previous"]["totals"]
        assert before is not None and data["totals"]["sessions"] and before["sessions"]
        sessions = cards.first.locator(".delta").inner_text()
        pct = round((data["totals"]["sessions"] - before["sessions"]) / before["sessions"] * 100)
        assert f"{pct:+d}%".replace("-", "−") in sessions and "90 days before" in sessions
        assert f"({before['sessions']:,})" in sessions
        # Leaders: the most expensive session is the top of the cost ranking.
        first = pg.locator("#leaders ol").first.locator("li a").first
        assert first.get_attribute("href").endswith(data["top_sessions"]["cost"][0]["id"])
        # Charts first, their tables folded (one click away).
        tables = pg.locator("#breakdowns details.data-table")
        assert tables.count() == 3 and all(t.get_attribute("open") is None for t in tables.all())
        tables.first.locator("summary").click()
        assert tables.first.locator("table").is_visible()
        # An unfolded table scrolls inside its box; the page never scrolls sideways.
        assert pg.evaluate("document.documentElement.scrollWidth") <= w
        # The index stays in view at the bottom of the page and takes the reader back.
        pg.locator("#database").scroll_into_view_if_needed()
        index = pg.locator("nav.stats-index")
        top = index.bounding_box()["y"]
        assert 0 <= top < h / 4, top
        index.get_by_role("link", name="Tools").click()
        pg.wait_for_url(re.compile(r"#tools$"))
        assert pg.locator("#tools h2").bounding_box()["y"] >= 0
        screenshot(pg, f"stats-{'phone' if w < 500 else 'headline'}.png")
    finally:
        context.close()
