"""Moving in a long conversation, in Chromium at desktop and phone sizes (issue 36, point 1):
next and previous question from any position (the very top included, across pages not yet
loaded), go to message N or a time, first and last, and the keys for them (j/k a message,
n/p a question, g g / G first and last, : the number box). On a copy of the schema-22 database
Hermes 0.19 wrote with gateway origins, one of its conversations grown to 5,000 messages."""

from __future__ import annotations

import re
import sqlite3

import pytest

from support import copy_fixture, make_app
from support.browser import LiveServer, axe_problems

pytestmark = pytest.mark.browser

LONG = 5000
EVERY = 4  # a user's question every fourth message


@pytest.fixture(scope="module")
def long_chat(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("moving")
    db = copy_fixture("hermes-v22-origins.db", tmp)
    conn = sqlite3.connect(db)
    with conn:
        sid, start = conn.execute(
            "SELECT id, started_at FROM sessions WHERE ended_at IS NOT NULL ORDER BY started_at LIMIT 1"
        ).fetchone()
        conn.execute("DELETE FROM messages WHERE session_id = ?", (sid,))
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
            [
                (
                    sid,
                    "user" if i % EVERY == 0 else "assistant",
                    f"question {i // EVERY + 1}: how do I move?"
                    if i % EVERY == 0
                    else f"answer part {i}: " + "words " * 30,
                    start + i,
                )
                for i in range(LONG)
            ],
        )
        conn.execute("UPDATE sessions SET message_count = ? WHERE id = ?", (LONG, sid))
    conn.close()
    srv = LiveServer(make_app(db, tmp / "inst"))
    yield srv, sid
    srv.close()


def _position(page) -> int:
    text = page.locator(".viewer-nav .pos").inner_text()
    m = re.match(r"message ([\d,]+) of ([\d,]+)", text)
    assert m, text
    return int(m.group(1).replace(",", ""))


def _current(page) -> tuple[str, int]:
    """The role and number of the message now at the top (marked as the current one)."""
    el = page.locator("article.msg.kbd-current")
    return (el.get_attribute("class") or ""), int(el.get_attribute("data-n"))


@pytest.fixture(params=[(1280, 800), (390, 844)], ids=["desktop", "phone"])
def viewport(request, page):
    page.set_viewport_size({"width": request.param[0], "height": request.param[1]})
    return page


def test_next_question_from_the_very_top_moves_question_by_question(long_chat, viewport):
    page = viewport
    live, sid = long_chat
    page.goto(f"{live.url}/sessions/{sid}")
    assert _position(page) == 1
    seen = []
    for _ in range(4):
        page.locator('.viewer-nav a[data-turn="next"]').click()
        role, n = _current(page)
        assert "role-user" in role
        seen.append(n)
        assert _position(page) == n
    # From the top the first question (message 1) is the one in view: "next" goes to the
    # question after it at once (issue 47, point 3: it used to stay on message 1, so the first
    # press did not move: 1, 1, 5, 9), then one question after another.
    assert seen == [1 + EVERY * k for k in range(1, 5)], seen
    page.locator('.viewer-nav a[data-turn="prev"]').click()
    assert _current(page)[1] == seen[-2]
    page.locator('.viewer-nav a[data-turn="prev"]').click()
    assert _current(page)[1] == seen[-3]


def test_go_to_a_number_then_move_by_keys_across_unloaded_pages(long_chat, viewport):
    page = viewport
    live, sid = long_chat
    page.goto(f"{live.url}/sessions/{sid}")
    page.keyboard.press(":")
    page.keyboard.type("2500")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"at=\d+#m-\d+"))
    target = page.locator("article.msg:target")
    assert int(target.get_attribute("data-n")) == 2500
    # Keys: j/k a message, n/p a question.
    page.evaluate("document.activeElement.blur()")  # out of the number box, as Escape would
    page.keyboard.press("j")
    assert _current(page)[1] == 2501
    page.keyboard.press("k")
    page.keyboard.press("k")
    assert _current(page)[1] == 2499
    page.keyboard.press("n")
    role, n = _current(page)
    assert "role-user" in role and n == 2501  # (2500 - 1) // 4 * 4 + 1 + 4
    # Beyond the loaded pages: the server opens the page holding the next question.
    last_loaded = page.locator("article.msg[data-n]").last
    far = int(last_loaded.get_attribute("data-n"))
    for _ in range(60):
        if _current(page)[1] > far:
            break
        before = page.url
        page.keyboard.press("n")
        if page.url != before:
            page.wait_for_load_state()
    assert (
        _current(page)[1] > far
        or int(page.locator("article.msg:target").get_attribute("data-n")) > far
    )
    page.keyboard.press("G")
    page.wait_for_url(re.compile(r"end=1"))
    assert page.locator("#conversation-end").count() == 1
    page.keyboard.press("g")
    page.keyboard.press("g")
    page.wait_for_url(re.compile(rf"/sessions/{sid}$"))
    assert _position(page) == 1


def test_go_to_a_time_then_back_question_by_question_across_unloaded_pages(long_chat, viewport):
    """The time box opens the conversation at the first message of that minute; "p" then
    walks back a question at a time, past the first message the page holds."""
    from datetime import datetime, timedelta

    page = viewport
    live, sid = long_chat
    page.goto(f"{live.url}/sessions/{sid}")
    box = page.locator(".viewer-nav input[name=date]")
    first = datetime.fromisoformat(box.get_attribute("min"))
    # Messages are a second apart: 50 minutes after the first minute is message ~3,000.
    when = (first + timedelta(minutes=50)).strftime("%Y-%m-%dT%H:%M")
    if box.is_visible():
        box.fill(when)
        box.press("Enter")
    else:  # a phone hides the time box (room for the number); the address takes it
        page.goto(f"{live.url}/sessions/{sid}?date={when}")
    page.wait_for_url(re.compile(r"at=\d+#m-\d+"))
    n = int(page.locator("article.msg:target").get_attribute("data-n"))
    assert 2940 <= n <= 3001, n
    earliest = int(page.locator("article.msg[data-n]").first.get_attribute("data-n"))
    page.evaluate("document.activeElement && document.activeElement.blur()")
    questions = []
    for _ in range(80):
        before = page.url
        page.keyboard.press("p")
        if page.url != before:
            page.wait_for_load_state()
        role, at = _current(page)
        assert "role-user" in role, role
        questions.append(at)
        if at < earliest - 8:
            break
    assert questions[-1] < earliest, (earliest, questions[-5:])
    # One question back each time: every fourth message, in order.
    steps = {b - a for a, b in zip(questions[1:], questions[:-1], strict=True)}
    assert steps <= {EVERY}, steps


def test_moving_works_without_javascript_too(long_chat, chromium):
    live, sid = long_chat
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live.url}/sessions/{sid}")
    page.locator('.viewer-nav a[data-turn="next"]').click()
    page.wait_for_url(re.compile(r"at=\d+#m-\d+"))
    assert "question 2:" in page.locator("article.msg:target").inner_text()
    page.fill(".viewer-nav input[name=n]", "4000")
    page.locator(".viewer-nav button[type=submit]").click()
    page.wait_for_url(re.compile(r"at=\d+#m-\d+"))
    assert page.locator("article.msg:target").get_attribute("data-n") == "4000"
    context.close()


def test_the_viewer_nav_is_accessible(long_chat, page):
    live, sid = long_chat
    page.goto(f"{live.url}/sessions/{sid}")
    assert axe_problems(page, "long conversation") == []


def test_the_help_names_every_key_the_viewer_answers(long_chat, page):
    """The keys were there but nowhere written: "?" lists them, and each one listed works."""
    live, sid = long_chat
    page.goto(f"{live.url}/sessions/{sid}")
    page.keyboard.press("?")
    help_text = page.locator("dialog#shortcuts").inner_text()
    for words in (
        "next / previous message",
        "next / previous question",
        "first / last message",
        "go to message number",
    ):
        assert words in help_text
    page.keyboard.press("Escape")
    page.keyboard.press(":")
    assert page.evaluate("document.activeElement.name") == "n"
