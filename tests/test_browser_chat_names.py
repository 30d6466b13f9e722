"""Chats named as a person would name them (issue 47, point 4): a thread by its chat's name
and the thread (everyone in it shares one session, so no member names it), a direct chat by
the person, a group keyed per person by the group and that person; the list's Chat menu keeps
"thread", so no two entries read the same. In Chromium, on a copy of the schema-22 database
Hermes 0.19's gateway wrote, where two forum topics of one group carry the group's name (as a
Telegram forum's topics do), the topics' members overlap, and one topic is one member's."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from support import copy_fixture, make_app, sql
from support.browser import LiveServer, screenshot

pytestmark = pytest.mark.browser

GROUP = "Family group"  # (a forum: its topics carry the group's name)
THREADS = (
    "agent:main:discord:thread:7700:7701",
    "agent:main:discord:thread:7700:7702",
    "agent:main:discord:thread:7700:7703",
)
MEMBERS = ("carol", "dmitri", "erin")


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("chat-names")
    db = copy_fixture("hermes-v22-origins.db", tmp)
    conn = sqlite3.connect(db)
    with conn:
        for sid, origin in conn.execute(
            "SELECT id, origin_json FROM sessions WHERE session_key IN (?, ?)", THREADS[:2]
        ).fetchall():
            o = json.loads(origin)
            o["chat_name"] = GROUP
            conn.execute(
                "UPDATE sessions SET display_name = ?, origin_json = ? WHERE id = ?",
                (GROUP, json.dumps(o, ensure_ascii=False), sid),
            )
        # A third topic, carol's alone: the group's topics have different "newest members".
        conn.execute(
            "CREATE TEMP TABLE topic AS SELECT * FROM sessions WHERE session_key = ? AND "
            "user_id = 'd-501'",
            (THREADS[0],),
        )
        conn.execute(
            "UPDATE topic SET id = '20260926_090000_7703aa', session_key = ?, thread_id = "
            "'7703', started_at = started_at + 5 * 86400, ended_at = ended_at + 5 * 86400",
            (THREADS[2],),
        )
        conn.execute("INSERT INTO sessions SELECT * FROM topic")
    conn.close()
    srv = LiveServer(make_app(db, tmp / "inst"))
    yield db, srv
    srv.close()


def test_threads_direct_chats_and_groups_are_named_by_what_tells_them_apart(named, page):
    db, live = named
    page.goto(f"{live.url}/chats")
    names = {
        a.get_attribute("href").split("/chats/", 1)[1]: a.inner_text()
        for a in page.locator("table.sessions td[data-label='Chat'] a").all()
    }
    for key in THREADS:
        thread = key.rsplit(":", 1)[1]
        assert names[key] == f"{GROUP} (thread {thread})", names[key]
        assert not any(m in names[key] for m in MEMBERS), names[key]
    # A direct chat is the person; a group keyed per person is the group and the person.
    assert names["agent:main:telegram:dm:1001"] == "Alice"
    assert names["agent:main:discord:group:7700:d-501"] == "ops (carol)"
    # The chat's own page says the same.
    page.goto(f"{live.url}/chats/{THREADS[0]}")
    assert page.locator("h1").inner_text() == f"{GROUP} (thread 7701)"
    screenshot(page, "chat-thread.png")


def test_the_list_chat_menu_keeps_thread_and_no_two_entries_read_the_same(named, page):
    db, live = named
    page.goto(f"{live.url}/sessions")
    options = page.locator("#f-session_key option").all()
    labels = {o.get_attribute("value"): re.sub(r" \(\d+\)$", "", o.inner_text()) for o in options}
    labels.pop("")
    assert len(set(labels.values())) == len(labels), sorted(labels.values())
    for key in THREADS:
        thread = key.rsplit(":", 1)[1]
        assert labels[key] == f"{GROUP} (thread {thread}) · discord", labels[key]
    # Choosing one lists exactly its sessions.
    page.select_option("#f-session_key", THREADS[1])
    page.wait_for_url(re.compile(r"session_key="))
    page.wait_for_load_state("networkidle")
    expected = sql(db, "SELECT COUNT(*) FROM sessions WHERE session_key = ?", (THREADS[1],))[0][0]
    assert page.locator("table.sessions tbody tr").count() == expected
