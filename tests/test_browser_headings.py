"""A heading inside an assistant message never breaks the page's heading order (issue 47,
point 8): the Markdown renderer puts a message's headings under the page's own (its "#" is
an h3, under the page's h1 and the h2 of the messages or of a chat's session) and never more
than one level below the heading before it; the sanitizer still runs after it. In Chromium,
on a copy of the schema-22 database Hermes 0.19 wrote, one answer full of headings planted in
a chat's session; axe's heading-order rule and the levels themselves are checked."""

from __future__ import annotations

import sqlite3

import pytest

from support import copy_fixture, make_app, sql
from support.browser import AXE, LiveServer

pytestmark = pytest.mark.browser

ALICE = "agent:main:telegram:dm:1001"
ANSWER = (
    "# The plan\n\nFirst the database.\n\n#### A detail, four levels down\n\nSome words.\n\n"
    "## Step two\n\nMore words.\n\n###### The smallest\n\nThe end. <h1>not a heading</h1>"
)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("headings")
    db = copy_fixture("hermes-v22-origins.db", tmp)
    sid, last = sql(
        db,
        "SELECT s.id, MAX(m.timestamp) FROM sessions s JOIN messages m ON m.session_id = s.id "
        "WHERE s.session_key = ? GROUP BY s.id ORDER BY s.started_at LIMIT 1",
        (ALICE,),
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


LEVELS = "Array.from(document.querySelectorAll('h1,h2,h3,h4,h5,h6')).map(h => +h.tagName[1])"


def heading_order_problems(page) -> list:
    page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate(
        "axe.run(document, {runOnly: ['heading-order', 'page-has-heading-one', 'empty-heading']})"
    )
    return [(v["id"], [n["target"] for n in v["nodes"][:3]]) for v in result["violations"]]


@pytest.mark.parametrize("where", ["viewer", "chat"])
def test_message_headings_sit_under_the_pages_own(planted, chromium, where):
    live, sid, mid = planted
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    try:
        path = f"/sessions/{sid}" if where == "viewer" else f"/chats/{ALICE}?from={sid}"
        page.goto(live.url + path)
        message = page.locator(f"#m-{mid}")
        assert message.locator("h3", has_text="The plan").count() == 1
        assert message.locator("h4", has_text="A detail").count() == 1
        assert message.locator("h4", has_text="Step two").count() == 1
        assert message.locator("h5", has_text="The smallest").count() == 1
        assert message.locator("h1, h2").count() == 0
        assert "<h1>not a heading</h1>" in message.locator(".md").inner_text()  # still text
        levels = page.evaluate(LEVELS)
        assert levels[0] == 1 and levels.count(1) == 1, levels
        jumps = [(a, b) for a, b in zip(levels, levels[1:], strict=False) if b > a + 1]
        assert not jumps, levels
        assert heading_order_problems(page) == []
    finally:
        context.close()
