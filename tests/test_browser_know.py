"""Storage, Files and Reliability in a real browser (issue 48): each page opens and passes axe
in both themes; a file's history is followed to a version, a difference and the message that
wrote it; a conversation's Files panel loads when opened; a retry loop's link opens the
conversation at its first call; the pages fit a phone. Screenshots (LOGBOOK_SCREENSHOTS) are
taken on a generated schema-22 history, the functional steps on the tool-work fixture that
Hermes 0.19's own SessionDB wrote."""

from __future__ import annotations

import json
import re
from collections import Counter
from urllib.parse import urlencode

import pytest

from support import copy_fixture, make_app, sql
from support.browser import LiveServer, axe_problems, screenshot, settled

pytestmark = pytest.mark.browser
CONFIG = "/home/ana/src/atlas/src/config.py"


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("know-browser")
    db = copy_fixture("hermes-v22-tools.db", tmp)
    srv = LiveServer(make_app(db, tmp / "inst"))
    yield db, srv
    srv.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from webui.demo import generate

    tmp = tmp_path_factory.mktemp("know-demo")
    db = tmp / "state.db"
    generate(db, sessions=300, schema=22)
    app = make_app(db, tmp / "inst", LOGBOOK_STATS_REUSE_S=0)
    client = app.test_client()
    for _ in range(100):  # the digest complete and every table measured: whole pictures
        r = client.get("/storage?format=json").get_json()
        if r["coverage"]["complete"] and r["measured"]["objects"] == r["measured"]["of"]:
            break
    srv = LiveServer(app)
    yield db, srv
    srv.close()


def test_follow_a_files_history_to_its_message(tools, page):
    db, live = tools
    page.goto(f"{live.url}/files")
    page.locator("section.file-group", has_text="/home/ana/src/atlas").first.get_by_role(
        "link", name="src/config.py"
    ).first.click()
    page.wait_for_url(re.compile(r"/files/history\?path="))
    items = page.locator("ol.file-history > li")
    assert items.count() == 4
    # the newest full version, loaded into the page when opened
    newest = items.first
    newest.locator("summary").click()
    page.wait_for_selector("ol.file-history > li:first-child pre.file-content")
    assert "BACKOFF = 2.0" in newest.locator("pre.file-content").inner_text()
    # the difference between the two full versions
    page.get_by_role("button", name="Show the difference").click()
    page.wait_for_url(re.compile(r"/files/diff\?"))
    diff = page.locator("pre.diff").inner_text()
    assert "-TIMEOUT = 1.0" in diff and "+BACKOFF = 2.0" in diff
    page.go_back()
    page.wait_for_url(re.compile(r"/files/history"))
    # the oldest change: the message that wrote the first version
    oldest = page.locator("ol.file-history > li").last
    href = oldest.locator("a.to-message").get_attribute("href")
    message_id = int(re.search(r"#m-(\d+)$", href).group(1))
    oldest.locator("a.to-message").click()
    page.wait_for_url(re.compile(r"/sessions/tools_atlas_1"))
    target = page.locator(f"#m-{message_id}")
    target.wait_for()
    assert target.is_visible()
    calls = sql(db, "SELECT tool_calls FROM messages WHERE id = ?", [message_id])[0][0]
    assert CONFIG in calls and "write_file" in calls


def test_a_conversations_files_panel(tools, page):
    _db, live = tools
    import urllib.request

    with urllib.request.urlopen(f"{live.url}/sessions/tools_atlas_1/files?format=json") as r:
        expected = len(json.load(r)["changes"])
    page.goto(f"{live.url}/sessions/tools_atlas_1")
    panel = page.locator("#files-panel")
    panel.locator("summary").click()
    page.wait_for_selector("#files-panel ul.files-panel li")
    settled(page)
    rows = panel.locator("ul.files-panel li")
    assert rows.count() == expected > 10
    panel.get_by_role("link", name="Makefile").click()
    page.wait_for_url(
        re.compile(
            r"/files/history\?path=%2Fhome%2Fana%2Fsrc%2Fatlas%2FMakefile|/files/history\?path=/home/ana/src/atlas/Makefile"
        )
    )
    assert "written whole" in page.locator("ol.file-history").inner_text()


def test_a_retry_loops_link_opens_at_its_first_call(tools, page):
    db, live = tools
    page.goto(f"{live.url}/stats?period=all")
    section = page.locator("#reliability")
    assert "Nightly backup check" in section.inner_text()
    link = section.locator("table.retry-loops a.loop-link").first
    first = int(re.search(r"at=(\d+)", link.get_attribute("href")).group(1))
    link.click()
    page.wait_for_url(re.compile(r"/sessions/tools_atlas_2"))
    page.locator(f"#m-{first}").wait_for()
    assert (
        "pytest -q tests/test_config.py"
        in sql(db, "SELECT tool_calls FROM messages WHERE id = ?", [first])[0][0]
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_pages_pass_axe_in_both_themes(demo, chromium, scheme):
    _db, live = demo
    context = chromium.new_context(
        viewport={"width": 1280, "height": 900}, color_scheme=scheme, bypass_csp=True
    )
    pg = context.new_page()
    problems = []
    try:
        pg.goto(live.url + "/storage")
        pg.wait_for_load_state("networkidle")
        screenshot(pg, f"storage-{scheme}.png")
        problems += axe_problems(pg, "storage")
        pg.goto(live.url + "/files")
        pg.wait_for_load_state("networkidle")
        screenshot(pg, f"files-{scheme}.png")
        problems += axe_problems(pg, "files")
        # the path with the most full versions, its newest one opened
        changes = json.loads(pg.evaluate(
            "fetch('/files?format=json&limit=500&workspace=').then(r => r.text())"
        ))["changes"]  # fmt: skip
        full = Counter(c["path"] for c in changes if c["full"])
        pg.goto(f"{live.url}/files/history?{urlencode({'path': full.most_common(1)[0][0]})}")
        pg.wait_for_load_state("networkidle")
        pg.locator("ol.file-history > li details").first.locator("summary").click()
        pg.wait_for_selector("ol.file-history pre")
        settled(pg)
        screenshot(pg, f"file-history-{scheme}.png")
        problems += axe_problems(pg, "file history")
        pg.goto(live.url + "/stats?period=all#reliability")
        pg.wait_for_load_state("networkidle")
        pg.locator("#reliability").scroll_into_view_if_needed()
        screenshot(pg, f"reliability-{scheme}.png")
        problems += axe_problems(pg, "reliability")
    finally:
        context.close()
    assert not problems, problems


def test_the_pages_fit_a_phone(tools, chromium):
    _db, live = tools
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    pg = context.new_page()
    try:
        for path in ("/files", f"/files/history?path={CONFIG}", "/storage"):
            pg.goto(live.url + path)
            assert pg.evaluate("document.documentElement.scrollWidth") <= 400, path
    finally:
        context.close()
