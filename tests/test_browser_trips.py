"""What a new user tripped over (issue 36), where a person sees it: in Chromium at 390×844 and
1280×800, on a copy of the schema-22 database Hermes 0.19 wrote with gateway origins. (The
HTTP half is test_user_trips.py; moving in a long conversation is test_browser_moving.py.)"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest

from support import copy_fixture, make_app, sql
from support.browser import AXE, LiveServer, screenshot, settled

pytestmark = pytest.mark.browser
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trips-browser")
    db = copy_fixture("hermes-v22-origins.db", tmp)
    srv = LiveServer(make_app(db, tmp / "inst"))
    yield db, srv
    srv.close()


def _phone(chromium):
    return chromium.new_context(viewport=PHONE, is_mobile=True, has_touch=True)


def test_a_phone_shows_several_sessions_a_screen(site, chromium):
    db, live = site
    ctx = _phone(chromium)
    page = ctx.new_page()
    page.goto(f"{live.url}/sessions")
    rows = page.locator("table.sessions tbody tr")
    heights = [r.bounding_box()["height"] for r in rows.all()[:6]]
    assert max(heights) < 200, heights  # was ~430: about 1.5 sessions a screen
    title = page.locator("table.sessions tbody td.title").first.bounding_box()
    assert title["width"] > 250, title  # was a 60 px column
    # Every place in the main menu is in sight (a scrolled strip hid Archive and Prune).
    for link in page.locator("header.top nav > a, header.top nav summary").all():
        box = link.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (
            link.inner_text()
        )
    screenshot(page, "sessions-phone.png")
    ctx.close()


def test_a_phone_session_page_starts_its_conversation_on_the_first_screen(site, chromium):
    db, live = site
    sid = sql(db, "SELECT session_id FROM messages GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1")[0][0]
    ctx = _phone(chromium)
    page = ctx.new_page()
    page.goto(f"{live.url}/sessions/{sid}")
    first = page.locator("article.msg").first.bounding_box()
    assert first["y"] < PHONE["height"] * 0.65, first  # was a full screen below the header
    ctx.close()


def test_chart_axis_text_is_readable_on_a_phone(site, chromium):
    db, live = site
    ctx = _phone(chromium)
    page = ctx.new_page()
    page.goto(f"{live.url}/stats?period=all")
    ticks = page.locator("figure.chart svg.chart-svg text.tick")
    ticks.first.wait_for()
    sizes = [t.bounding_box()["height"] for t in ticks.all()[:12] if t.bounding_box()]
    assert sizes and min(sizes) >= 9, sizes  # was ~5 px: the whole chart scaled to the phone
    screenshot(page, "stats-phone.png")
    ctx.close()


def _landmark_problems(page) -> list:
    page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate(
        "axe.run(document, {runOnly: ['landmark-unique', 'landmark-no-duplicate-main']})"
    )
    return [(v["id"], [n["target"] for n in v["nodes"]]) for v in result["violations"]]


def test_each_search_landmark_has_a_name_of_its_own(site, page):
    db, live = site
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    key = sql(db, "SELECT session_key FROM sessions WHERE session_key IS NOT NULL LIMIT 1")[0][0]
    for url in (f"/sessions/{sid}", f"/chats/{key}"):
        page.goto(
            live.url + url.replace(":", "%3A") if url.startswith("/chats") else live.url + url
        )
        assert _landmark_problems(page) == [], url


def test_a_hits_title_opens_the_conversation_at_the_hit(site, page):
    db, live = site
    page.goto(f"{live.url}/search?q=backup")
    title = page.locator("#search-results a.hit-session").first
    title.wait_for()
    title.click()
    target = page.locator("article.msg:target")
    target.wait_for()
    assert re.search(r"#m-\d+$", page.url)
    assert "backup" in target.inner_text().lower()


def test_lineage_titles_stay_inside_their_boxes(tmp_path, page):
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    conn = sqlite3.connect(db)
    with conn:  # long and wide titles, CJK included
        ids = [r[0] for r in conn.execute("SELECT id FROM sessions WHERE id LIKE 'x_chain%'")]
        for n, sid in enumerate(ids):
            conn.execute(
                "UPDATE sessions SET title = ? WHERE id = ?",
                (
                    [
                        "大别山项目的进展和记忆断裂问题的讨论会议",
                        "WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW",
                        "Mmmmm " * 12,
                    ][n % 3]
                    + f" #{n + 2}",
                    sid,
                ),
            )
    conn.close()
    live = LiveServer(make_app(db, tmp_path / "inst"))
    try:
        page.goto(f"{live.url}/sessions/{ids[0]}/lineage")
        for node in page.locator("svg.lineage a.node").all():
            box = node.locator("rect").bounding_box()
            text = node.locator("text.t1").bounding_box()
            assert text["x"] + text["width"] <= box["x"] + box["width"] + 1, (text, box)
    finally:
        live.close()


def test_the_footer_size_follows_a_prune(tmp_path, page):
    db = copy_fixture("hermes-v22.db", tmp_path)
    live = LiveServer(make_app(db, tmp_path / "inst"))
    try:
        page.goto(f"{live.url}/prune?source=cron")
        settled(page)
        box = page.locator("form.prune-run input[name=confirm][type=checkbox]")
        if box.count():
            box.check()  # a big prune asks "yes, delete these" first
        # Whatever the footer said before, only the job's answer may replace it.
        page.evaluate("document.getElementById('db-size').textContent = 'stale'")
        page.locator("#prune-preview button.danger").click()
        page.locator(".prune-job p strong", has_text="Deleted").wait_for(timeout=30_000)
        result = re.search(r"The database is ([\d.]+ \w+)", page.locator(".prune-job").inner_text())
        assert result and page.locator("#db-size").inner_text() == result.group(1)
    finally:
        live.close()


def test_archive_from_the_session_page_and_see_it_marked(tmp_path, page):
    """Point 6: Archive is a button on the session page; the page then wears an "archived"
    badge, the list hides the session unless asked, and marks it when it shows it."""
    db = copy_fixture("hermes-v22-origins.db", tmp_path)
    sid = sql(
        db, "SELECT id FROM sessions WHERE ended_at IS NOT NULL ORDER BY started_at DESC LIMIT 1"
    )[0][0]
    live = LiveServer(make_app(db, tmp_path / "inst"))
    try:
        page.goto(f"{live.url}/sessions/{sid}")
        assert page.locator(".session-head .badge.archived").count() == 0
        page.get_by_role("button", name="Archive", exact=True).click()
        page.locator(".badge.archived").first.wait_for()
        screenshot(page, "archived-session.png")
        assert page.get_by_role("button", name="Unarchive").count() == 1
        assert sql(db, "SELECT archived FROM sessions WHERE id = ?", [sid])[0][0] == 1
        page.goto(f"{live.url}/sessions")
        assert page.locator(f'tr:has(a[href$="/sessions/{sid}"])').count() == 0
        page.goto(f"{live.url}/sessions?archived=include")
        row = page.locator(f'tr:has(a[href$="/sessions/{sid}"])').first
        assert row.locator(".badge", has_text="archived").count() == 1
        # The nav leads to the archive page from anywhere.
        main_nav = page.get_by_role("navigation", name="Main")
        main_nav.locator("details.nav-menu > summary").click()  # the History menu
        main_nav.get_by_role("link", name=re.compile(r"^Archive\b")).click()
        page.wait_for_url(re.compile(r"/archive"))
    finally:
        live.close()


def test_the_delete_buttons_are_large_and_the_backup_comes_first(site, page):
    """Point 10: the single-delete buttons were tiny and the un-backed-up one came first."""
    db, live = site
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    page.goto(f"{live.url}/sessions/{sid}/delete")
    buttons = page.locator("form.delete-choices button")
    assert buttons.count() >= 2
    first, second = buttons.nth(0).bounding_box(), buttons.nth(1).bounding_box()
    assert buttons.nth(0).inner_text().startswith("Back up")
    assert first["y"] < second["y"] or first["x"] < second["x"]
    for box in (first, second):
        assert box["height"] >= 40 and box["width"] >= 120, box  # WCAG's 24 px, well past


def _summary(page) -> str:
    return page.locator("#export-summary p[role=status]").inner_text()


def test_the_export_form_counts_as_the_filters_change(site, page):
    """Point 7: the form says how many sessions and messages a download will hold, and about
    how big, as each filter changes; nothing matching says so and the buttons wait."""
    db, live = site
    page.goto(f"{live.url}/export")
    every = sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
    telegram = sql(db, "SELECT COUNT(*) FROM sessions WHERE source = 'telegram'")[0][0]
    assert 0 < telegram < every

    def count() -> int:
        m = re.match(r"([\d,]+) sessions?, [\d,]+ messages?, about [\d.]+ [KMG]?B", _summary(page))
        assert m, _summary(page)
        return int(m.group(1).replace(",", ""))

    page.select_option("#e-source", "telegram")
    page.wait_for_function(
        "n => document.querySelector('#export-summary p').innerText.startsWith(n + ' session')",
        arg=f"{telegram:,}",
    )
    assert count() == telegram
    page.fill("#e-q", "no title is like this zzqx")
    page.locator("#export-summary p.nothing").wait_for()
    assert "Nothing matches these filters" in _summary(page)
    assert page.locator("#export-summary button[disabled]").count() >= 5
    page.fill("#e-q", "")
    page.wait_for_function("() => !document.querySelector('#export-summary p.nothing')")
    settled(page)
    assert count() == telegram and page.locator("#export-summary button[disabled]").count() == 0


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_changed_pages_in_both_themes(site, chromium, scheme):
    """The pages this issue changed, drawn for the README (LOGBOOK_SCREENSHOTS)."""
    db, live = site
    ctx = chromium.new_context(viewport=DESKTOP, color_scheme=scheme)
    page = ctx.new_page()
    page.goto(f"{live.url}/export?source=telegram")
    assert re.search(r"\d+ sessions?, [\d,]+ messages?, about", _summary(page)), _summary(page)
    screenshot(page, f"export-{scheme}.png")
    page.goto(f"{live.url}/people")
    screenshot(page, f"people-{scheme}.png")
    if scheme == "light":
        page.goto(f"{live.url}/search?q=" + quote("deploy NEAR("))
        assert "You typed" in page.locator("p.notice").first.inner_text()
        screenshot(page, "search-notice.png")
    ctx.close()
    assert Path(AXE).exists()
