"""Reading in a real browser, on a copy of the schema-22 database Hermes 0.19 wrote: a search
hit inside a tool call reads as the call (tool, argument, mark), never as raw JSON, and the
viewer names a session's relatives by kind, in rows, with the conversation summed up."""

from __future__ import annotations

import re

import pytest

from support import copy_fixture, make_app, plant_tool_call_hit, sql
from support.browser import LiveServer, axe_problems, screenshot, settled

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def v22(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reading")
    db = copy_fixture("hermes-v22.db", tmp)
    sid = plant_tool_call_hit(db)
    srv = LiveServer(make_app(db, tmp / "inst"))
    yield db, srv, sid
    srv.close()


def test_a_hit_in_a_tool_call_shows_the_tool_and_no_raw_json(v22, page):
    db, live, sid = v22
    page.goto(f"{live.url}/search")
    page.fill("#s-q", "zebrafish")
    hits = page.locator("#search-results .hit")
    hits.first.wait_for()
    texts = hits.all_inner_texts()
    assert len(texts) == 2, texts
    call = next(t for t in texts if "web_search · query:" in t)
    assert "zebrafish migration patterns" in call.lower()
    assert any("web_search result · results[0].snippet:" in t for t in texts)
    for t in texts:
        for raw in ("call_1556abc", '"function"', '{"', "[{", '"type"'):
            assert raw not in t, (raw, t)
    marks = page.locator("#search-results .hit mark").all_inner_texts()
    assert marks and all(m.lower() == "zebrafish" for m in marks)
    screenshot(page, "search-tool-hit.png")
    # Following the call's hit opens the conversation at that message, shown as a call.
    hits.filter(has_text="web_search · query:").locator("a.snippet").click()
    target = page.locator(".msg:target")
    target.wait_for()
    assert "web_search" in target.inner_text()
    assert page.url.split("#")[0].split("?")[0].endswith(f"/sessions/{sid}")


def test_leaving_the_query_box_does_not_search_again(v22, page):
    """A click on a hit takes the focus from the query box, which fires its `change`: a search
    then would push its URL and cancel the click's navigation (seen under load). The query box
    searches as one types; only the filters' changes search on `change`."""
    db, live, _ = v22
    searches: list[str] = []
    page.on("request", lambda r: searches.append(r.url) if "/search?" in r.url else None)
    page.goto(f"{live.url}/search")
    page.fill("#s-q", "zebrafish")
    page.locator("#search-results .hit").first.wait_for()
    settled(page)
    typed = len(searches)
    assert typed >= 1
    page.locator("#s-q").dispatch_event("change")
    page.locator("h1").click()  # the box loses the focus
    settled(page)
    assert len(searches) == typed, searches[typed:]
    page.select_option("#s-role", "tool")  # a filter's change still searches
    settled(page)
    assert len(searches) == typed + 1 and "role=tool" in searches[-1]


def test_relatives_are_named_by_kind_with_the_conversation_in_words(v22, page):
    db, live, _ = v22
    parent = sql(
        db,
        "SELECT parent_session_id FROM sessions WHERE parent_session_id IN "
        "(SELECT id FROM sessions) GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1",
    )[0][0]
    children = sql(db, "SELECT id FROM sessions WHERE parent_session_id = ?", (parent,))
    page.goto(f"{live.url}/sessions/{parent}")
    box = page.locator("details.relatives")
    assert box.get_attribute("open") is not None
    tables = box.locator("table.relatives-table")
    kinds = {t.get_attribute("data-kind") for t in tables.all()}
    assert kinds and kinds <= {"continuation", "branch", "subagent"}, kinds
    rows = box.locator("tbody tr")
    assert rows.count() == min(len(children), 50 * len(kinds))
    for table in tables.all():
        caption = table.locator("caption").inner_text()
        n = table.locator("tbody tr").count()
        assert re.match(rf"{n:,} \w", caption), caption
        for kind in table.locator("tbody tr td:nth-child(2)").all_inner_texts():
            assert caption.split(" ", 1)[1].startswith(kind.split(" ")[0]), (caption, kind)
    # No line of raw ids; the summary is in words.
    assert "Children:" not in page.locator("main").inner_text()
    summary = page.locator("strong.chain-summary").inner_text()
    assert re.search(r"(?i)continued|spawned|branch", summary), summary
    # A row opens that relative.
    first = rows.first.locator("a")
    href = first.get_attribute("href")
    first.click()
    page.wait_for_url(re.compile(re.escape(href) + "$"))
    assert axe_problems(page, "relative") == []
