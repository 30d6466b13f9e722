"""Everyday use in a real browser: live updates, keyboard, themes, a phone's layout, CJK.
(axe on every page type, in both themes and at both sizes, with the light and dark
screenshots, is tests/test_browser_axe.py.)"""

from __future__ import annotations

import re
import sqlite3
import time

import pytest

from support import sql
from support.browser import LiveServer, screenshot, until

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def live(gen_app):
    srv = LiveServer(gen_app)
    yield srv
    srv.close()


def test_live_update_appends_new_message_without_reload(live, page, generated_db):
    db, _ = generated_db
    sid = sql(
        db,
        "SELECT id FROM sessions WHERE ended_at IS NULL AND message_count BETWEEN 1 AND 90 LIMIT 1",
    )[0][0]
    page.goto(f"{live.url}/sessions/{sid}")
    page.evaluate("window.__notReloaded = true")
    assert page.locator("#live-tail").count() == 1
    before = page.locator("article.msg").count()
    conn = sqlite3.connect(db, timeout=1.0)
    with conn:
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES "
            "(?, 'assistant', 'Live from the gateway: **hello**', ?)",
            (sid, time.time()),
        )
    conn.close()
    until(page, lambda: page.locator("article.msg").count() > before, "the live tail shows it")
    assert page.locator("article.msg").count() == before + 1
    assert "Live from the gateway" in page.locator("article.msg").last.inner_text()
    assert page.evaluate("window.__notReloaded") is True


def test_keyboard_shortcuts(live, page):
    page.goto(f"{live.url}/sessions")
    page.keyboard.press("j")
    first = page.evaluate("document.activeElement.getAttribute('href')")
    page.keyboard.press("j")
    second = page.evaluate("document.activeElement.getAttribute('href')")
    assert first != second and first.startswith("/sessions/") and second.startswith("/sessions/")
    page.keyboard.press("k")
    assert page.evaluate("document.activeElement.getAttribute('href')") == first
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(re.escape(first) + "$"))
    page.keyboard.press("g")
    page.keyboard.press("t")
    page.wait_for_url(re.compile(r"/stats"))
    page.keyboard.press("g")
    page.keyboard.press("s")
    page.wait_for_url(re.compile(r"/sessions$"))
    page.keyboard.press("?")
    assert page.locator("dialog#shortcuts").is_visible()
    page.keyboard.press("Escape")
    assert not page.locator("dialog#shortcuts").is_visible()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "header-q"


def test_theme_toggle_is_remembered(live, page):
    page.goto(f"{live.url}/sessions")
    page.locator("[data-theme-toggle]").click()
    theme = page.evaluate("document.documentElement.getAttribute('data-theme')")
    assert theme in ("dark", "light")
    page.reload()
    assert page.evaluate("document.documentElement.getAttribute('data-theme')") == theme
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.locator("[data-theme-toggle]").click()
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != bg


def test_phone_layout_cards_and_folded_metadata(live, chromium, generated_db):
    db, long_id = generated_db
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    pg = context.new_page()
    try:
        pg.goto(f"{live.url}/sessions")
        assert pg.locator("table.sessions thead").is_hidden()
        width = pg.evaluate("document.documentElement.scrollWidth")
        assert width <= 400
        pg.goto(f"{live.url}/sessions/{long_id}")
        assert pg.locator("details.meta").get_attribute("open") is None
    finally:
        context.close()


def test_phone_list_starts_with_the_sessions_and_filters_fold(live, chromium):
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    pg = context.new_page()
    try:
        pg.goto(f"{live.url}/sessions?sort=-cost&archived=include&rows=all")
        folded = pg.locator("details.filter-more")
        assert folded.get_attribute("open") is None
        assert (
            "2 active" in pg.locator("details.filter-more > summary").inner_text()
        )  # sort is no filter
        assert pg.locator("#f-q").is_visible()  # the search box stays reachable
        first = pg.locator("table.sessions tbody tr").first.bounding_box()
        assert first and first["y"] < 844, first
        pg.locator("details.filter-more > summary").click()
        assert pg.locator("#f-model").is_visible()
    finally:
        context.close()
    # on a wide screen the filters are simply there
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    try:
        pg.goto(f"{live.url}/sessions")
        assert pg.locator("#f-model").is_visible()
        assert pg.locator("details.filter-more > summary").is_hidden()
    finally:
        context.close()


# Draws two different characters in the font the page uses for ``sel`` and compares them:
# with no font for the script both come out as the same empty box ("tofu").
DRAW_TWO = """([sel, a, b]) => {
  const el = document.querySelector(sel);
  const font = getComputedStyle(el).font;
  const ink = (ch) => {
    const c = document.createElement('canvas'); c.width = 64; c.height = 64;
    const g = c.getContext('2d'); g.font = font.replace(/\\d+(\\.\\d+)?px/, '40px');
    g.fillStyle = '#000'; g.textBaseline = 'top'; g.fillText(ch, 4, 4);
    return Array.from(g.getImageData(0, 0, 64, 64).data.filter((_, i) => i % 4 === 3));
  };
  const [x, y] = [ink(a), ink(b)];
  return {differ: x.some((v, i) => v !== y[i]), inkA: x.filter(Boolean).length,
          inkB: y.filter(Boolean).length, font};
}"""


def test_cjk_text_is_readable_and_found(live, page, generated_db):
    """A CJK search in the browser: the hits show the characters as glyphs (a CJK font is
    installed where the browser runs, as CI does) and mark what matched."""
    page.goto(f"{live.url}/search?q=通信")
    mark = page.locator(".hit mark", has_text="通信").first
    mark.wait_for()
    assert mark.inner_text() == "通信"
    drawn = page.evaluate(DRAW_TWO, [".hit mark", "通", "信"])
    assert drawn["inkA"] > 20 and drawn["inkB"] > 20, drawn
    assert drawn["differ"], f"通 and 信 draw the same box: no CJK font for {drawn['font']}"
    screenshot(page, "search-cjk.png")
    # Following the hit opens the conversation with the message in view, characters intact.
    page.locator(".hit a.snippet").first.click()
    target = page.locator(".msg:target").first
    target.wait_for()
    assert "通信" in target.inner_text()
