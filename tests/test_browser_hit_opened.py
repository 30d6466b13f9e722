"""Opening a search hit (issue 47, point 2): the conversation opens at the message, the words
found are marked, and nothing covers them: the message's "⋯" panel (copy, raw text), which
holds the same words, stays closed. In Chromium at desktop and phone sizes, on a copy of the
schema-22 database Hermes 0.19 wrote, one assistant answer in Markdown planted in it (Hermes's
own triggers index it)."""

from __future__ import annotations

import re
import sqlite3

import pytest

from support import copy_fixture, make_app, sql
from support.browser import LiveServer, screenshot

pytestmark = pytest.mark.browser

WORD = "quokkanomics"
ANSWER = (
    "Here is the plan, step by step.\n\n"
    + "\n\n".join(f"{i}. Check the **replica {i}** lag and the queue depth." for i in range(1, 9))
    + f"\n\nThe part you asked about: {WORD} decides the batch size, so keep it small.\n\n"
    + "```bash\nkubectl rollout status deploy/api\n```\n\nThat is all."
)


@pytest.fixture(scope="module")
def hit(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hit-opened")
    db = copy_fixture("hermes-v22-origins.db", tmp)
    sid, last = sql(
        db,
        "SELECT s.id, MAX(m.timestamp) FROM sessions s JOIN messages m ON m.session_id = s.id "
        "WHERE s.source = 'telegram' GROUP BY s.id HAVING COUNT(*) >= 10 ORDER BY s.started_at "
        "LIMIT 1",
    )[0]
    conn = sqlite3.connect(db)
    with conn:
        mid = conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'assistant', "
            "?, ?)",
            (sid, ANSWER, last + 1),
        ).lastrowid
    conn.close()
    srv = LiveServer(make_app(db, tmp / "inst"))
    yield srv, sid, mid
    srv.close()


def covered(page, selector: str) -> list[str]:
    """What lies on top of the middle of each element matching ``selector`` when it is not
    that element itself (or inside it): empty when every one is in sight, uncovered."""
    return page.evaluate(
        """(sel) => Array.from(document.querySelectorAll(sel)).flatMap((el) => {
             const r = el.getBoundingClientRect();
             const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
             return top && (top === el || el.contains(top)) ? []
               : [top ? top.outerHTML.slice(0, 120) : 'nothing: off screen'];
           })""",
        selector,
    )


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_an_opened_hit_is_marked_and_nothing_covers_it(hit, chromium, size):
    live, sid, mid = hit
    w, h = size
    context = chromium.new_context(viewport={"width": w, "height": h}, is_mobile=w < 500)
    page = context.new_page()
    try:
        page.goto(f"{live.url}/search?q={WORD}")
        link = page.locator(f"ol.hits a.snippet[href$='#m-{mid}']")
        assert "quokkanomics" in link.inner_text().lower()
        link.click()
        page.wait_for_url(re.compile(rf"at={mid}.*#m-{mid}$"))
        target = page.locator(f"#m-{mid}")
        target.wait_for()
        # The words found are marked in the message itself…
        marks = target.locator(".md mark")
        assert marks.count() >= 1 and marks.first.inner_text().lower() == WORD
        # …the "⋯" panel stays closed (its raw text holds the same words)…
        menu = target.locator("details.msg-menu")
        assert menu.count() == 1 and menu.get_attribute("open") is None
        assert not target.locator(".menu-body").is_visible()
        # …and the mark is on the screen with nothing over it.
        marks.first.scroll_into_view_if_needed()
        assert covered(page, f"#m-{mid} .md mark") == []
        # The message opened where it is read: its top in sight on the first screen.
        box = target.bounding_box()
        assert box is not None and 0 <= box["y"] < h, box
        # The bar says where the reader is: at the hit (not at the message above it).
        n = int(target.get_attribute("data-n"))
        assert page.locator(".viewer-nav .pos").inner_text().startswith(f"message {n:,} of")
        screenshot(page, f"hit-opened{'-phone' if w < 500 else ''}.png")
        # The panel is still there for who wants it, and opens on demand.
        menu.locator("summary").click()
        assert target.locator(".menu-body").is_visible()
    finally:
        context.close()
