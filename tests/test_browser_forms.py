"""Every plain (non-htmx) form, submitted in Chromium as a user would, with its effect checked
in the database; and the browser-only paths of issue 20 (failures shown in the page, the
stats period, an unarmed prune, focus after a search, moving through a long conversation)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from support import make_app, sql
from support.browser import LiveServer, require_chromium, until

pytestmark = pytest.mark.browser


@pytest.fixture
def nojs(chromium):
    """A page with JavaScript switched off: only plain HTML forms and links work."""
    context = chromium.new_context(
        java_script_enabled=False, accept_downloads=True, viewport={"width": 1280, "height": 900}
    )
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    yield pg
    context.close()


def _count(db, sid):
    return sql(db, "SELECT COUNT(*) FROM sessions WHERE id = ?", (sid,))[0][0]


def test_delete_from_the_conversation_page_as_a_user_clicks_it(fresh, page):
    db, srv, _ = fresh
    sid = sql(
        db,
        "SELECT id FROM sessions WHERE title IS NOT NULL AND title NOT LIKE '%<%' "
        "ORDER BY started_at DESC LIMIT 1",
    )[0][0]
    page.goto(f"{srv.url}/sessions/{sid}")
    page.locator("a.danger-link", has_text="Delete").click()
    page.locator("button", has_text="Delete without a backup").click()
    page.wait_for_url(re.compile(r"/sessions$"))
    page.locator("#toasts .toast", has_text="Deleted").wait_for()
    assert _count(db, sid) == 0


def test_every_plain_form_works_without_javascript(fresh, nojs):
    db, srv, _ = fresh
    pg = nojs
    ids = [
        r[0]
        for r in sql(
            db,
            "SELECT id FROM sessions WHERE title IS NOT NULL AND "
            "title NOT LIKE '%<%' ORDER BY started_at DESC LIMIT 6",
        )
    ]

    # rename: ✎ opens the rename page, Save submits it
    pg.goto(f"{srv.url}/sessions/{ids[0]}")
    pg.locator("h1 .title-edit").click()
    pg.locator("input.title-input").fill("Renamed without JavaScript")
    pg.locator("form.title-slot button", has_text="Save").click()
    pg.wait_for_url(re.compile(rf"/sessions/{ids[0]}$"))
    assert (
        sql(db, "SELECT title FROM sessions WHERE id = ?", (ids[0],))[0][0]
        == "Renamed without JavaScript"
    )

    # delete one: the confirmation page's form
    pg.goto(f"{srv.url}/sessions/{ids[1]}")
    pg.locator("a.danger-link", has_text="Delete").click()
    pg.locator("button", has_text="Delete without a backup").click()
    pg.wait_for_url(re.compile(r"/sessions$"))
    assert _count(db, ids[1]) == 0

    # bulk delete: tick, preview page, confirm
    pg.goto(f"{srv.url}/sessions")
    for sid in ids[2:4]:
        pg.locator(f"input[name=session][value='{sid}']").check()
    pg.locator("button", has_text="Delete selected").click()
    pg.locator("h1", has_text="Delete 2 sessions").wait_for()
    pg.locator("button", has_text="Delete them").click()
    pg.wait_for_url(re.compile(r"/sessions$"))
    assert _count(db, ids[2]) == 0 and _count(db, ids[3]) == 0

    # bulk export: a download of the ticked sessions
    pg.goto(f"{srv.url}/sessions")
    pg.locator(f"input[name=session][value='{ids[4]}']").check()
    with pg.expect_download() as dl:
        pg.locator("button", has_text="Export selected").click()
    text = Path(dl.value.path()).read_text(encoding="utf-8")
    assert ids[4] in text and len(text.splitlines()) == 1

    # theme: a plain link sets the cookie
    pg.goto(f"{srv.url}/sessions")
    pg.locator("a.theme-toggle").click()
    assert pg.locator("html").get_attribute("data-theme") in ("dark", "light")

    # prune: the preview, the confirmation box, the button that names the count
    (n,) = sql(
        db,
        "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND "
        "started_at < strftime('%s', 'now') - 200 * 86400",
    )[0]
    assert n > 0
    pg.goto(f"{srv.url}/prune?older_than=200")
    box = pg.locator("form.prune-run input[name=confirm][type=checkbox]")
    if box.count():
        box.check()
    pg.locator("form.prune-run button", has_text=f"Delete {n:,} session").click()
    pg.locator(".prune-job", has_text=f"Deleted {n:,} session").wait_for()
    assert (
        sql(
            db,
            "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND "
            "started_at < strftime('%s', 'now') - 200 * 86400",
        )[0][0]
        == 0
    )


def test_login_and_logout_forms_in_remote_mode(generated_db, tmp_path, chromium):
    require_chromium()
    src, _ = generated_db
    db = tmp_path / "state.db"
    shutil.copyfile(src, db)
    token = "a-long-enough-admin-token-1234"
    srv = LiveServer(make_app(db, tmp_path / "inst", LOGBOOK_REMOTE=True, LOGBOOK_TOKEN=token))
    context = chromium.new_context(java_script_enabled=False)
    pg = context.new_page()
    try:
        sid = sql(db, "SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1")[0][0]
        pg.goto(f"{srv.url}/sessions/{sid}")
        assert pg.locator("a.danger-link").count() == 0  # viewers cannot change
        pg.goto(f"{srv.url}/login?next=/sessions/{sid}")
        pg.locator("#token").fill(token)
        pg.locator("button", has_text="Log in").click()
        pg.wait_for_url(re.compile(rf"/sessions/{sid}$"))
        assert pg.locator("a.danger-link").count() == 1  # the admin can
        pg.locator("button", has_text="Log out").click()
        pg.goto(f"{srv.url}/sessions/{sid}")
        assert pg.locator("a.danger-link").count() == 0
    finally:
        context.close()
        srv.close()


def test_a_failed_htmx_request_says_why_in_the_page(fresh, page):
    db, srv, _ = fresh
    page.goto(f"{srv.url}/sessions")
    banner = page.locator("#request-error")
    assert banner.is_hidden()
    page.evaluate("""() => { const i = document.querySelector('input[name=since]');
        i.type = 'text'; i.value = 'not-a-date';
        i.dispatchEvent(new Event('change', {bubbles: true})); }""")
    banner.wait_for(state="visible")
    assert "not a usable date" in banner.inner_text()
    page.dialogs.clear()
    page.js_errors.clear()


def test_switching_between_hermes_rows_and_every_row_with_any_sort(fresh, page):
    db, srv, _ = fresh
    page.goto(f"{srv.url}/sessions?sort=-cost")
    summary = page.locator("#results .summary")
    assert "as hermes sessions list shows them" in summary.inner_text()
    page.locator("input[name=rows]").check()
    page.wait_for_url(re.compile(r"rows=all"))
    page.locator("table.sessions tbody tr").first.wait_for()
    assert "session row" in summary.inner_text()
    (every,) = sql(db, "SELECT COUNT(*) FROM sessions")[0]  # a v11 database: no archive
    assert f"{every:,} session rows" in summary.inner_text()
    page.locator("input[name=rows]").uncheck()
    page.wait_for_url(re.compile(r"^(?!.*rows=all)"))
    assert "conversations" in summary.inner_text()
    assert page.locator("#request-error").is_hidden()


def test_stats_period_is_named_and_dates_fire_only_when_complete(fresh, page):
    db, srv, _ = fresh
    page.goto(f"{srv.url}/stats?period=30")
    assert "last 30 days" in page.locator(".period-heading").inner_text()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "/stats" in r.url else None)
    page.locator("#st-since").focus()
    page.keyboard.type("01022026")  # month, day, year typed digit by digit: Chromium
    # fires "change" at 0002-01-02, 0020-01-02, 0202-01-02 and 2026-01-02
    page.wait_for_timeout(600)
    assert requests == [], "no request while the date is being typed"
    page.locator("#st-until").click()  # leaving the field applies it
    page.locator(".period-heading", has_text="2 Jan 2026").wait_for()
    assert page.locator("input[name=period]:checked").count() == 0
    assert len(requests) == 1, requests


def test_prune_opens_unarmed_and_asks_before_a_big_delete(fresh, page):
    db, srv, _ = fresh
    page.goto(f"{srv.url}/prune")
    assert page.locator("#prune-preview button.danger").count() == 0
    page.locator("#p-days").fill("30")
    page.locator("#prune-form button", has_text="Preview").click()
    button = page.locator("form.prune-run button.danger")
    button.wait_for()
    before = sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
    n = int(re.search(r"Delete ([\d,]+)", button.inner_text()).group(1).replace(",", ""))
    assert n > 10
    assert page.locator("a", has_text=f"Export these {n:,} sessions first").count() == 1
    button.click()  # the "yes" box is not ticked: nothing happens
    page.wait_for_timeout(500)
    assert sql(db, "SELECT COUNT(*) FROM sessions")[0][0] == before
    page.locator("form.prune-run input[name=confirm]").check()
    button.click()
    page.locator("#toasts .toast", has_text="Pruned").wait_for(timeout=30_000)
    assert sql(db, "SELECT COUNT(*) FROM sessions")[0][0] == before - n


def test_after_a_search_focus_is_on_the_results(fresh, page):
    db, srv, _ = fresh
    page.goto(f"{srv.url}/search?q=docker")
    assert page.evaluate("document.activeElement.id") == "search-results"
    page.keyboard.press("j")
    assert page.evaluate("document.activeElement.classList.contains('snippet')")
    assert page.locator("#s-q").input_value() == "docker"  # j did not type into the box


def test_moving_through_a_long_conversation(fresh, page):
    db, srv, long_id = fresh
    total = sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = ?", (long_id,))[0][0]
    page.goto(f"{srv.url}/sessions/{long_id}")
    pos = page.locator(".viewer-nav .pos")
    assert pos.inner_text().endswith(f"of {total:,}")
    page.locator(".viewer-nav a[data-turn=next]").click()
    until(
        page,
        lambda: "role-user" in page.evaluate("document.activeElement.className"),
        "the next question has the focus",
    )
    page.locator(".viewer-nav a[data-go=last]").click()
    page.wait_for_url(re.compile(r"end=1"))
    (last_id,) = sql(
        db,
        "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp DESC, id DESC LIMIT 1",
        (long_id,),
    )[0]
    page.locator(f"#m-{last_id}").wait_for()
    until(
        page,
        lambda: re.search(rf"message [\d,]+ of {total:,}", pos.inner_text()),
        "the position says which message is at the top",
    )
    # a message's raw text sits in its menu, not in a row of its own
    first_md = page.locator("article.msg .msg-menu").first
    assert first_md.locator("pre.plain").is_hidden()
    first_md.locator("summary").click()
    assert first_md.locator("pre.plain").is_visible()


def test_id_column_stays_on_screen_while_renaming_at_1280(fresh, chromium):
    db, srv, _ = fresh
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    try:
        pg.goto(f"{srv.url}/sessions")
        pg.locator("table.sessions .title-edit").first.click()
        pg.locator("table.sessions input.title-input").wait_for()
        right = pg.evaluate("""() => Math.max(...[...document.querySelectorAll(
            'table.sessions td[data-label=Id]')].map(td => td.getBoundingClientRect().right))""")
        assert right <= 1280, right
    finally:
        context.close()
