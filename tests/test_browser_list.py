"""The session list at 1280 px reads as a table, not a log (issue 47, point 5): it fits the
screen (no side-scrolling Id column), each row is its title and one line of detail, column
headers sort (the address says the sort; keyboard and no-JavaScript alike), and why a session
ended is said in Hermes's own words in the list, the viewer, a chat and the filters. On a
generated schema-22 history (Hermes 0.19's columns, gateway origins, every end reason the
generator writes), in Chromium."""

from __future__ import annotations

import re

import pytest

from support import sql
from support.browser import LiveServer, screenshot, settled
from webui.hermes.origin import END_REASONS

pytestmark = pytest.mark.browser

ENGINE_WORDS = re.compile(r"\b[a-z]+_[a-z_]+\b")  # session_reset, cli_close, resumed_other …


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    from support import make_app
    from webui.demo import generate

    tmp = tmp_path_factory.mktemp("list-1280")
    db = tmp / "state.db"
    generate(db, sessions=160, seed=47, schema=22)
    srv = LiveServer(make_app(db, tmp / "inst"))
    yield db, srv
    srv.close()


def test_the_list_fits_1280_px_two_lines_a_row(history, page):
    db, live = history
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live.url}/sessions?rows=all&archived=include")
    wrap = page.evaluate(
        "(() => { const w = document.querySelector('.table-wrap');"
        " return [w.scrollWidth, w.clientWidth, document.documentElement.scrollWidth]; })()"
    )
    assert wrap[0] <= wrap[1] and wrap[2] <= 1280, wrap  # nothing scrolls sideways
    headers = [h.strip() for h in page.locator("table.sessions thead th").all_inner_texts()]
    assert "Id" not in headers and "Lineage" not in headers, headers
    # Each row: the title line and one line of detail, however long its title or origin.
    rows = page.locator("table.sessions tbody tr:not(.more)")
    assert rows.count() == 50
    line = page.evaluate(
        "parseFloat(getComputedStyle(document.querySelector('table.sessions td.title')).lineHeight)"
    )
    heights = [box["height"] for box in (r.bounding_box() for r in rows.all())]
    assert max(heights) <= 2 * line + 24, (max(heights), line)
    # What the row no longer spells out is in reach: the detail line's tooltip names the id,
    # the title's the whole title.
    first = rows.first
    sid = first.locator("input[name=session]").get_attribute("value")
    assert first.locator(".line2").get_attribute("title").endswith(f"id {sid}")
    title = sql(db, "SELECT title FROM sessions WHERE id = ?", (sid,))[0][0]
    if title:
        assert first.locator(".line1").get_attribute("title") == title
    screenshot(page, "sessions-1280.png")


def _column(page, label: str) -> list[float]:
    texts = page.locator(f"table.sessions tbody td[data-label='{label}']").all_inner_texts()
    return [float(t.replace(",", "")) for t in texts]


def test_headers_sort_by_click_and_by_keyboard_and_the_address_says_so(history, page):
    db, live = history
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live.url}/sessions?rows=all")
    header = page.locator("th.sortable", has=page.locator("#sort-by-messages"))
    assert header.get_attribute("aria-sort") is None
    page.locator("#sort-by-messages").click()
    page.wait_for_url(re.compile(r"sort=-messages"))
    settled(page)
    assert header.get_attribute("aria-sort") == "descending"
    counts = _column(page, "Messages")
    assert (
        counts == sorted(counts, reverse=True)
        and counts[0] == sql(db, "SELECT MAX(message_count) FROM sessions")[0][0]
    )
    # The form's Sort menu says the same, so the next filter keeps this order.
    assert page.locator("#f-sort").input_value() == "-messages"
    # By keyboard: the header is a link in the tab order; Enter reverses the order and the
    # focus stays on it.
    link = page.locator("#sort-by-messages")
    assert link.evaluate("a => a.tabIndex") == 0
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"sort=messages(&|$)"))
    settled(page)
    assert header.get_attribute("aria-sort") == "ascending"
    counts = _column(page, "Messages")
    assert counts == sorted(counts)
    assert page.evaluate("document.activeElement.id") == "sort-by-messages"
    # Another column, then a reload: the address alone brings the same order back.
    page.locator("#sort-by-cost").click()
    page.wait_for_url(re.compile(r"sort=-cost"))
    page.reload()
    assert page.locator("th[aria-sort]").all_inner_texts()[0].startswith("Cost")


def test_sorting_by_a_header_works_without_javascript(history, chromium):
    _, live = history
    context = chromium.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 800}
    )
    page = context.new_page()
    try:
        page.goto(f"{live.url}/sessions?rows=all")
        page.locator("#sort-by-tokens").click()
        page.wait_for_url(re.compile(r"sort=-tokens"))
        assert page.locator("th[aria-sort=descending] #sort-by-tokens").count() == 1
    finally:
        context.close()


def test_end_reasons_in_hermes_words_in_the_list_viewer_chat_and_filters(history, page):
    db, live = history
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live.url}/sessions?rows=all&archived=include&limit=500")
    states = page.locator("table.sessions tbody td[data-label='State']").all_inner_texts()
    assert len(states) == sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
    assert not [s for s in states if ENGINE_WORDS.search(s)], states[:10]
    shown = {" ".join(s.split()) for s in states}
    reasons = {r for (r,) in sql(db, "SELECT DISTINCT end_reason FROM sessions") if r}
    assert {"cli_close", "resumed_other", "session_reset", "compression"} <= reasons
    for r in reasons:
        assert f"ended {END_REASONS[r][0]}" in shown, r
    # The viewer: the state and the details say it in words (the stored value in small).
    sid = sql(db, "SELECT id FROM sessions WHERE end_reason = 'resumed_other' LIMIT 1")[0][0]
    page.goto(f"{live.url}/sessions/{sid}")
    assert END_REASONS["resumed_other"][1] in page.locator(".session-head .sub").inner_text()
    # A chat's timeline: each boundary says why the session before it ended.
    key = sql(
        db,
        "SELECT session_key FROM sessions WHERE end_reason IN ('daily', 'session_reset') "
        "AND session_key IS NOT NULL GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1",
    )[0][0]
    page.goto(f"{live.url}/chats/{key}")
    lines = page.locator(".reset-line").all_inner_texts()
    assert lines and not [t for t in lines if ENGINE_WORDS.search(t)], lines
    # The filters: the prune form offers Hermes's reasons by name.
    page.goto(f"{live.url}/prune?end_reason=cli_close")
    chosen = page.locator("select[name=end_reason] option:checked")
    assert chosen.inner_text() == END_REASONS["cli_close"][1]
    options = page.locator("select[name=end_reason] option").all_inner_texts()
    assert not [o for o in options if ENGINE_WORDS.search(o)], options
