"""Changes in a real browser (rename, delete, prune, export), and the XSS corpus opened
everywhere with the real Content-Security-Policy on: no dialog, no injected script."""

from __future__ import annotations

import re

import pytest

from support import sql
from support.browser import screenshot, settled

pytestmark = pytest.mark.browser


def test_rename_inline_enter_saves_escape_cancels(fresh, page):
    db, srv, _ = fresh
    sid, old = sql(
        db,
        "SELECT id, title FROM sessions WHERE title IS NOT NULL AND "
        "title NOT LIKE '%<%' ORDER BY started_at DESC LIMIT 1",
    )[0]
    page.goto(f"{srv.url}/sessions/{sid}")
    page.evaluate("window.__notReloaded = true")
    page.locator("h1 .title-edit").click()
    box = page.locator("h1 input.title-input")
    box.wait_for()
    box.fill("Renamed in the browser")
    box.press("Escape")
    page.locator("h1 .title-text").wait_for()
    assert page.locator("h1 .title-text").inner_text() == old
    settled(page)
    page.locator("h1 .title-edit").click()
    box = page.locator("h1 input.title-input")
    box.wait_for()
    settled(page)
    box.fill("Renamed in the browser")
    box.press("Enter")
    page.locator("h1 .title-text", has_text="Renamed in the browser").wait_for()
    assert (
        sql(db, "SELECT title FROM sessions WHERE id = ?", (sid,))[0][0] == "Renamed in the browser"
    )
    page.locator("#toasts .toast", has_text="Renamed").wait_for()
    # a duplicate title is refused inline, with a link to the session that has it
    other = sql(
        db, "SELECT title FROM sessions WHERE title IS NOT NULL AND id != ? LIMIT 1", (sid,)
    )[0][0]
    settled(page)
    page.locator("h1 .title-edit").click()
    page.locator("h1 input.title-input").wait_for()
    settled(page)
    page.locator("h1 input.title-input").fill(other)
    page.locator("h1 input.title-input").press("Enter")
    page.locator(".field-error", has_text="already in use by").wait_for()
    assert (
        sql(db, "SELECT title FROM sessions WHERE id = ?", (sid,))[0][0] == "Renamed in the browser"
    )
    assert page.evaluate("window.__notReloaded") is True


def test_bulk_delete_rows_leave_with_a_toast(fresh, page):
    db, srv, _ = fresh
    page.goto(f"{srv.url}/sessions")
    boxes = page.locator("table.sessions td.sel input[type=checkbox]")
    ids = [boxes.nth(i).get_attribute("value") for i in range(3)]
    boxes.nth(0).click()
    boxes.nth(2).click(modifiers=["Shift"])  # shift-click selects the range
    assert all(boxes.nth(i).is_checked() for i in range(3))
    page.locator("button", has_text="Delete selected").click()
    page.locator("#bulk-panel button", has_text="Delete them").click()
    page.locator("#toasts .toast", has_text="Deleted 3 sessions").wait_for()
    for sid in ids:
        assert page.locator(f"input[value='{sid}']").count() == 0
    assert (
        sql(db, f"SELECT COUNT(*) FROM sessions WHERE id IN ({','.join('?' * 3)})", tuple(ids))[0][
            0
        ]
        == 0
    )


def test_prune_preview_then_run_with_progress(fresh, page):
    db, srv, _ = fresh
    page.goto(f"{srv.url}/prune?older_than=300")
    count = int(
        re.search(r"([\d,]+) session", page.locator("#prune-preview .summary").inner_text())
        .group(1)
        .replace(",", "")
    )
    assert (
        count
        == sql(
            db,
            "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND "
            "started_at < strftime('%s','now') - 300 * 86400",
        )[0][0]
    )
    page.locator("#days, #p-days").fill("200")
    page.wait_for_url(re.compile(r"older_than=200"))
    expected = sql(
        db,
        "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND "
        "started_at < strftime('%s','now') - 200 * 86400",
    )[0][0]
    page.locator("#prune-preview .summary", has_text=f"{expected:,} session").wait_for()
    box = page.locator("form.prune-run input[name=confirm][type=checkbox]")
    if expected > 10:
        box.check()  # a big prune asks "yes, delete these" first
    page.locator("#prune-preview button.danger").click()
    # The address is the job's at once, so a reload finds the work where it is.
    page.wait_for_url(re.compile(r"/prune/jobs/[0-9a-f]+$"))
    page.locator(".prune-job", has_text="Deleted").wait_for(timeout=60_000)
    assert f"Deleted {expected:,} session" in page.locator(".prune-job").inner_text()
    # It ends with a toast that says what was done and links to the result.
    toast = page.locator("#toasts .toast", has_text=f"Pruned {expected:,} session")
    toast.wait_for()
    assert toast.locator("a").get_attribute("href") == "/sessions"
    page.reload()
    assert f"Deleted {expected:,} session" in page.locator(".prune-job").inner_text()
    assert (
        sql(
            db,
            "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND "
            "started_at < strftime('%s','now') - 200 * 86400",
        )[0][0]
        == 0
    )


def test_export_downloads_jsonl(fresh, page, tmp_path):
    db, srv, _ = fresh
    page.goto(f"{srv.url}/export")
    src = sql(db, "SELECT source FROM sessions GROUP BY 1 ORDER BY COUNT(*) DESC")[0][0]
    page.select_option("#e-source", src)
    with page.expect_download() as dl:
        page.locator("button", has_text="Download JSONL").click()
    path = tmp_path / "export.jsonl"
    dl.value.save_as(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == sql(db, "SELECT COUNT(*) FROM sessions WHERE source = ?", (src,))[0][0]


def test_xss_corpus_never_runs_anywhere(fresh, page):
    """The generated database carries script payloads in messages, tool calls and results,
    reasoning, titles, system prompts and model config. The page fixture fails the test if
    any dialog opens or any script error happens."""
    db, srv, _ = fresh
    page.add_init_script("window.__xss = 0")
    sids = [
        r[0]
        for r in sql(
            db,
            "SELECT DISTINCT session_id FROM messages WHERE content LIKE "
            "'%<script%' OR content LIKE '%onerror%' OR tool_calls LIKE '%<%' "
            "OR reasoning LIKE '%<%' LIMIT 12",
        )
    ]
    sids += [
        r[0]
        for r in sql(
            db,
            "SELECT id FROM sessions WHERE title LIKE '%<%' OR "
            "system_prompt LIKE '%<%' OR model_config LIKE '%<%' LIMIT 4",
        )
    ]
    assert sids
    urls = [
        "/sessions",
        "/sessions?q=%3Cscript",
        "/search?q=script",
        "/search?q=onerror",
        "/search?q=%3Cimg+src%3Dx",
        "/stats?period=all",
        "/export",
        "/prune?older_than=1",
    ]
    urls += [f"/sessions/{s}" for s in sids] + [f"/sessions/{s}/lineage" for s in sids[:4]]
    for url in urls:
        page.goto(srv.url + url)
        for d in page.locator("details").all()[:60]:
            d.evaluate("el => el.open = true")
        for a in page.locator("a.md-image").all()[:3]:
            assert a.get_attribute("href").startswith(("http://", "https://"))
        page.wait_for_timeout(50)
    assert page.evaluate("window.__xss") == 0


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """A live server over a generated database with a few hundred prunable sessions."""
    from support import make_app
    from support.browser import LiveServer
    from webui.demo import generate

    root = tmp_path_factory.mktemp("many")
    generate(root / "state.db", sessions=260, seed=19)
    srv = LiveServer(make_app(root / "state.db", root / "inst"))
    yield srv
    srv.close()


def test_a_big_prune_preview_reaches_every_session_with_totals_and_a_download(many, page):
    expected = page.request.get(f"{many.url}/prune?older_than=1&format=json").json()
    assert expected["count"] >= 198 and len(expected["sessions"]) == expected["count"]
    page.goto(f"{many.url}/prune?older_than=1")
    rows = page.locator("#preview-table tbody tr:not(#preview-more)")
    assert rows.count() == 50  # one page at first: the page stays light
    more = page.locator("#preview-more a")
    while more.count():
        before = rows.count()
        more.click()
        page.wait_for_function(
            "n => document.querySelectorAll('#preview-table tbody tr:not(#preview-more)').length > n",
            arg=before,
        )
    hrefs = rows.evaluate_all("rs => rs.map(r => r.querySelector('a').getAttribute('href'))")
    # Every session the prune would delete, in --dry-run's order, each exactly once.
    assert [h.rsplit("/", 1)[1] for h in hrefs] == expected["sessions"]
    # The totals count every session, by source, by model and by month.
    for caption in ("By source", "By model", "By month started"):
        table = page.locator("table.totals", has=page.locator("caption", has_text=caption))
        cells = table.locator("tbody tr td:nth-child(2)").all_inner_texts()
        assert sum(int(c.replace(",", "")) for c in cells) == expected["count"]
    # The list downloads whole, one row a session, the same sessions.
    href = page.locator("p.downloads a").get_attribute("href")
    body = page.request.get(f"{many.url}{href}").text()
    ids = [line.split(",", 1)[0] for line in body.splitlines()[1:]]
    assert ids == expected["sessions"]


def test_cold_storage_preview_move_and_read_back_from_the_archive(fresh, page):
    """In the browser: the preview names the conversations, the move runs with its own
    address, its result says where they went and how much of the live file is free pages; the
    list still shows them, from the archive, and /stores names the new file; both pages pass
    axe's serious checks."""
    from support.browser import axe_problems

    db, srv, _ = fresh
    before = sql(
        db,
        "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND "
        "started_at < strftime('%s','now') - 300 * 86400",
    )[0][0]
    assert before
    page.goto(f"{srv.url}/coldstore?older_than=300")
    summary = page.locator("#coldstore-preview .summary")
    assert f"{before:,} session" in summary.inner_text() and "would move" in summary.inner_text()
    assert axe_problems(page, "coldstore") == []
    screenshot(page, "coldstore.png")
    page.locator("form.coldstore-run button").click()
    page.wait_for_url(re.compile(r"/coldstore/jobs/[0-9a-f]+$"))
    job = page.locator(".prune-job", has_text="Moved")
    job.wait_for(timeout=60_000)
    text = job.inner_text()
    screenshot(page, "coldstore-job.png")
    assert "hermes-archive-" in text and "free pages" in text and "optimize" in text
    left = sql(
        db,
        "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND "
        "started_at < strftime('%s','now') - 300 * 86400",
    )[0][0]
    assert left < before
    page.goto(f"{srv.url}/stores")
    month = page.locator("table.stores td a", has_text="archive 20")
    month.first.wait_for()
    assert axe_problems(page, "stores") == []
    screenshot(page, "stores.png")
    page.goto(f"{srv.url}/sessions?sort=started&archived=include")
    page.locator("#results .badge.store").first.wait_for()
    screenshot(page, "sessions-stores.png")
