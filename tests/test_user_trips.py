"""What a new user still tripped over (issue 36), over HTTP on a copy of the schema-22 database
Hermes 0.19 wrote with gateway origins (the browser half is test_browser_trips.py): people and
chats told apart, no "$0" for unknown or included costs, tool-call hits as calls, plain search
notices, the archive where a user looks for it, hits that open at the hit, and the smaller
things seen on the way."""

from __future__ import annotations

import re
import sqlite3
from urllib.parse import quote

import pytest

from support import copy_fixture, make_app, sql
from support.http import post


@pytest.fixture(scope="module")
def origins(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trips")
    db = copy_fixture("hermes-v22-origins.db", tmp)
    conn = sqlite3.connect(db)
    with conn:  # costs nobody knows, and a subscription's: as Hermes records them
        conn.execute(
            "UPDATE sessions SET model = 'kimi-k2', cost_status = 'unknown', "
            "estimated_cost_usd = 0, actual_cost_usd = NULL WHERE id IN "
            "(SELECT id FROM sessions WHERE ended_at IS NOT NULL ORDER BY id LIMIT 13)"
        )
        conn.execute(
            "UPDATE sessions SET model = 'hermes-4-405b', cost_status = 'included', "
            "estimated_cost_usd = 0 WHERE id IN (SELECT id FROM sessions WHERE ended_at IS NOT "
            "NULL ORDER BY id DESC LIMIT 11)"
        )
    conn.close()
    return db, make_app(db, tmp / "inst").test_client()


# -- 2. people and chats told apart ------------------------------------------------------------


def test_people_are_named_by_what_the_gateway_recorded_for_them(origins):
    db, client = origins
    people = {p["user_id"]: p for p in client.get("/people?format=json").get_json()["people"]}
    # d-501 talked in the "ops" group and its threads: the person is carol, never "ops".
    assert people["d-501"]["names"] == ["carol"]
    for p in people.values():
        assert not any(n.startswith("ops") for n in p["names"]), p
    page = client.get("/sessions").get_data(as_text=True)
    user_menu = re.search(r'<select[^>]*name="user".*?</select>', page, re.S).group(0)
    labels = re.findall(r"<option value=\"[^\"]+\"[^>]*>([^<(]+)", user_menu)
    assert {"carol ", "dmitri ", "erin "} <= set(labels), labels
    assert len(labels) == len(set(labels)), "two people with the same name in the menu"


def test_chats_keyed_per_person_are_told_apart(origins):
    _, client = origins
    page = client.get("/sessions").get_data(as_text=True)
    chat_menu = re.search(r'<select[^>]*name="session_key".*?</select>', page, re.S).group(0)
    labels = [t.strip() for t in re.findall(r"<option value=\"[^\"]+\"[^>]*>([^<]+)", chat_menu)]
    names = [re.sub(r" \(\d+\)$", "", t) for t in labels]
    assert len(names) == len(set(names)), names
    assert any("ops (carol) · discord" in n for n in names), names
    chats = [c["label"] for c in client.get("/chats?format=json").get_json()["chats"]]
    assert len(chats) == len(set(chats)), chats


# -- 3. no "$0" for what nobody priced --------------------------------------------------------


def test_groups_with_unpriced_sessions_say_so_never_zero_dollars(origins):
    db, client = origins
    page = client.get("/stats?period=all").get_data(as_text=True)
    page = page.split('id="reliability"')[0]  # the cost tables (Reliability's name models too)
    rows = dict(
        re.findall(
            r'<th scope="row">([^<]+)</th>(?:<td class="n">.*?</td>){3}<td class="n">'
            r"(?:<span [^>]*>)?([^<]+)(?:</span>)?</td>",
            page,
        )
    )
    assert rows["kimi-k2"] == "unknown"
    assert rows["hermes-4-405b"] == "included"
    mixed = [v for v in rows.values() if "+" in v]
    assert mixed and all(re.match(r"^\$[\d.,]+ \+ ", v) for v in mixed), mixed
    statuses = ("none", "unknown", "included", "estimated", "actual")
    assert not any(v.strip() == "$0" for k, v in rows.items() if k not in statuses), rows
    headline = re.search(
        r'<div class="kpi"><span class="k">Cost</span>.*?</div>', page, re.S
    ).group(0)
    assert "unknown" in headline and "included" in headline
    # Cost by status: an estimated group's actual cost was never reported — not "$0".
    table = re.search(r"<caption>Cost by status.*?</table>", page, re.S).group(0)
    by_status = {
        m[0]: m[1:]
        for m in re.findall(
            r'<th scope="row">([^<]+)</th><td class="n">[^<]*</td><td class="n">'
            r"(?:<span [^>]*>)?([^<]*)(?:</span>)?</td>"
            r'<td class="n">([^<]*)</td><td class="n">([^<]*)</td>',
            table,
        )
    }
    assert by_status, table[:300]
    for status, (_cost, actual, estimated) in by_status.items():
        if status != "actual":
            assert actual.strip() != "$0", (status, actual)
        if status != "estimated":
            assert estimated.strip() != "$0", (status, estimated)
    assert by_status["estimated"][1] == "—"


def test_prune_preview_and_session_page_never_price_the_unknown(origins):
    db, client = origins
    page = client.get("/prune?older_than=0&model=kimi").get_data(as_text=True)
    summary = re.search(r'<p class="summary">.*?</p>', page, re.S).group(0)
    assert "$0" not in summary and "unknown" in summary
    table = re.search(r'<table class="preview-table".*?</table>', page, re.S).group(0)
    assert "$0<" not in table and "unknown" in table
    sid = sql(db, "SELECT id FROM sessions WHERE cost_status = 'unknown' LIMIT 1")[0][0]
    view = client.get(f"/sessions/{sid}").get_data(as_text=True)
    estimate = re.search(r"<dt>Estimated from tokens</dt><dd>(.*?)</dd>", view).group(1)
    assert "$" not in estimate and "no price" in estimate


# -- 4. a hit inside a tool call reads as the call --------------------------------------------


@pytest.mark.parametrize("fixture", ["hermes-v22.db", "hermes-v11.db"])
def test_hits_in_tool_call_arguments_never_show_raw_json(fixture, tmp_path):
    import json

    db = copy_fixture(fixture, tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    rows = sql(db, "SELECT tool_calls FROM messages WHERE tool_calls LIKE '%arguments%' LIMIT 120")
    words = set()
    for (raw,) in rows[::4]:
        for call in json.loads(raw):
            try:
                args = json.loads(call["function"]["arguments"])
            except (ValueError, TypeError):
                continue
            words |= {
                w
                for v in args.values()
                if isinstance(v, str)
                for w in re.findall(r"[A-Za-z]{6,}", v)[-1:]
            }
            words.add(call["function"]["name"].split("_")[0])
    assert len(words) > 10
    for w in sorted(words)[:40]:
        page = client.get(f"/search?q={quote(w)}").get_data(as_text=True)
        for hit in re.findall(r'<a class="snippet".*?</a>', page, re.S):
            text = re.sub("<[^>]+>", "", hit)
            for raw in (
                "&#34;function&#34;",
                "&#34;arguments&#34;",
                "[{&#34;id&#34;",
                "&#34;type&#34;: &#34;function",
            ):
                assert raw not in text, (w, text[:200])
            label = re.match(r"\s*([\w.-]+):\s+\1\b", text)
            assert not label, f"the tool's name twice: {text[:120]}"


@pytest.mark.parametrize("fixture", ["hermes-v22.db", "hermes-v11.db"])
def test_a_search_for_a_tools_name_shows_what_it_answered_in_words(fixture, tmp_path):
    """Hermes indexes a tool result's tool name beside its content: a hit on the name alone
    once read `{"success": true} browser_click`. It reads "browser_click result", and the
    answer's fields as words."""
    db = copy_fixture(fixture, tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    names = [
        r[0]
        for r in sql(
            db,
            "SELECT tool_name FROM messages WHERE role = 'tool' AND tool_name GLOB '*_*' "
            "AND content LIKE '{%' GROUP BY tool_name ORDER BY COUNT(*) DESC LIMIT 6",
        )
    ]
    assert names, "the fixture holds JSON tool results"
    for name in names:
        page = client.get(f"/search?q={quote(name)}").get_data(as_text=True)
        hits = re.findall(r'<a class="snippet".*?</a>', page, re.S)
        assert hits, name
        for hit in hits:
            text = re.sub("<[^>]+>", "", hit).strip()
            assert not text.startswith(("{", "[")) and "&#34;: " not in text, (name, text[:160])
        labels = [
            re.sub("<[^>]+>", "", lab)
            for lab in re.findall(r'class="hit-in"[^>]*>(.*?)</span>', page)
        ]
        assert any(lab.startswith(name) for lab in labels), (name, labels[:5])
        # Tool results around a hit read as words too, even where they are cut short.
        for item in re.findall(r'<li><span class="role">tool</span>(.*?)</li>', page, re.S):
            assert "&#34;: " not in item and not item.strip().startswith("{"), (name, item[:300])


# -- 8. plain search notices ------------------------------------------------------------------


@pytest.mark.parametrize(
    "q", ['"unbalanced AND OR (', "AND", "foo NEAR(", "it's", "a AND OR b", "记忆"]
)
def test_search_notices_echo_the_words_typed_in_plain_language(origins, q):
    _, client = origins
    body = client.get(f"/search?q={quote(q)}&format=json").get_json()
    notice = body["notice"] or ""
    assert notice.count(". ") <= 1, f"one sentence: {notice}"
    for jargon in ("FTS5", "trigram", "syntax error", "MATCH", '"""'):
        assert jargon not in notice, (q, notice)
    if q not in ("记忆",):
        assert f"“{q}”" in notice, notice  # the user's own text, as typed
    page = client.get(f"/search?q={quote(q)}").get_data(as_text=True)
    empty = re.search(r'<p class="empty">No message matches <strong>(.*?)</strong>', page)
    if empty:
        assert '&#34;&#34;' not in empty.group(1)


# -- 9. a hit's title opens at the hit --------------------------------------------------------


def test_a_hits_session_title_opens_the_conversation_at_the_hit(origins):
    _, client = origins
    page = client.get("/search?q=backup").get_data(as_text=True)
    hits = re.findall(r'<li class="hit">.*?</li>', page, re.S)
    assert hits
    for hit in hits:
        title = re.search(r'<a class="hit-session" href="([^"]+)"', hit)
        snippet = re.search(r'<a class="snippet" href="([^"]+)"', hit)
        if title:
            assert "at=" in title.group(1) and "#m-" in title.group(1)
            assert title.group(1) == snippet.group(1)
    grouped = client.get("/search?q=backup&group=session").get_data(as_text=True)
    for href in re.findall(r'<section class="hit-group">\s*<h2><a href="([^"]+)"', grouped):
        assert "at=" in href and "#m-" in href


# -- 6. the archive where a user looks for it ---------------------------------------------------


def test_archive_is_in_the_navigation_the_session_page_and_the_bulk_bar(origins, tmp_path):
    db = copy_fixture("hermes-v22-origins.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    page = client.get("/sessions").get_data(as_text=True)
    nav = re.search(r'<nav aria-label="Main"[^>]*>.*?</nav>', page, re.S).group(0)
    assert 'href="/archive">Archive<' in nav  # in the History menu
    assert 'value="archive"' in page  # the bulk bar
    sid = sql(
        db, "SELECT id FROM sessions WHERE ended_at IS NOT NULL ORDER BY started_at DESC LIMIT 1"
    )[0][0]
    view = client.get(f"/sessions/{sid}").get_data(as_text=True)
    assert "<button type=\"submit\"" in view and ">Archive</button>" in view
    r = post(client, "/archive", {"session": sid, "confirm": "yes", "archived": "include"})
    assert r.status_code == 200
    message = r.get_json()["message"]
    assert message.startswith("Archived 1 session") and "rows with" not in message
    again = post(client, "/archive", {"session": sid, "confirm": "yes", "archived": "include"})
    assert again.get_json()["message"].startswith("Nothing changed")
    view = client.get(f"/sessions/{sid}").get_data(as_text=True)
    assert 'class="badge archived"' in view and ">Unarchive</button>" in view
    r = post(client, "/sessions/bulk", {"session": sid, "action": "unarchive"}, htmx=True)
    assert r.status_code == 200 and "Unarchived 1 session" in r.get_data(as_text=True)


# -- 10. smaller things ---------------------------------------------------------------------------


def test_live_with_nothing_active_says_when_anything_last_happened(origins):
    _, client = origins
    page = client.get("/sessions?active=60&sort=-last_active").get_data(as_text=True)
    assert "No sessions match these filters" not in page
    assert re.search(r"Nothing active in the last hour — last activity [\d]+ \w+ ago", page)


def test_older_than_is_not_filled_in_and_says_its_unit(origins):
    _, client = origins
    page = client.get("/prune").get_data(as_text=True)
    field = re.search(r'<input id="p-days"[^>]*>', page).group(0)
    assert 'value=""' in field
    assert "(days" in page


def test_the_delete_page_offers_the_backup_first_in_large_buttons(origins):
    db, client = origins
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    page = client.get(f"/sessions/{sid}/delete").get_data(as_text=True)
    buttons = re.findall(
        r"<button[^>]*>([^<]+)</button>",
        re.search(r'<form class="delete-choices".*?</form>', page, re.S).group(0),
    )
    assert buttons[0].startswith("Back up") and "without a backup" in buttons[1]


def test_a_long_chains_breadcrumb_on_the_page_names_the_conversation_once(tmp_path):
    """Seven compression parts of one conversation were seven near-identical titles in the
    breadcrumb: the page shows the conversation once, with its number of parts."""
    import time

    db = copy_fixture("hermes-v22-origins.db", tmp_path)
    now = time.time() - 3600
    with sqlite3.connect(db) as conn:
        parent = None
        for i in range(7):
            sid = f"chain-{i}"
            conn.execute(
                "INSERT INTO sessions (id, source, started_at, ended_at, end_reason, title, "
                "parent_session_id) VALUES (?, 'cli', ?, ?, ?, ?, ?)",
                (
                    sid,
                    now + i * 60,
                    now + i * 60 + 50 if i < 6 else None,
                    "compression" if i < 6 else None,
                    "Project X" if i == 0 else f"Project X #{i + 1}",
                    parent,
                ),
            )
            conn.execute(
                "INSERT INTO messages (session_id, role, content, timestamp) "
                "VALUES (?, 'user', 'go on', ?)",
                (sid, now + i * 60 + 1),
            )
            parent = sid
    client = make_app(db, tmp_path / "inst").test_client()
    page = client.get("/sessions/chain-6").get_data(as_text=True)
    crumbs = re.search(
        r'<nav[^>]*aria-label="[^"]*(?:[Bb]readcrumb|[Ll]ineage)[^"]*".*?</nav>', page, re.S
    )
    assert crumbs, "the page has a breadcrumb"
    text = re.sub(r"\s+", " ", re.sub("<[^>]+>", " ", crumbs.group(0)))
    assert text.count("Project X") <= 2, text  # the conversation once (and this part)
    assert "(6 parts)" in text, text  # the six parts before this one


def test_lineage_parents_and_children_are_named_not_ids(tmp_path):
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    parent, child = sql(
        db,
        "SELECT p.id, c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
        "WHERE p.title IS NULL AND c.model_config NOT LIKE '%_delegate_from%' LIMIT 1",
    )[0]
    page = client.get(f"/sessions/{child}/lineage").get_data(as_text=True)
    table = re.search(r'<table class="sessions">.*?</table>', page, re.S).group(0)
    assert f"<code>{parent}</code>" not in table
    view = client.get(f"/sessions/{child}").get_data(as_text=True)
    link = re.search(r'Child of <a href="([^"]+)">([^<]+)</a>', view)
    assert link, "an untitled parent is named by its first message"
    assert link.group(1).endswith(parent)
    assert link.group(2) != parent and not link.group(2).startswith("20")


def test_lineage_titles_fit_their_boxes():
    from webui.present.lineage_layout import TITLE_CHARS, _width, clip

    for text in [
        "大别山项目的进展和记忆断裂的问题讨论会议记录",
        "WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW",
        "a" * 80 + " #12",
    ]:
        short = clip(text)
        assert sum(map(_width, short)) <= TITLE_CHARS + 0.5, short
    assert clip("x" * 80 + " #12").endswith("… #12")


def test_a_long_chains_breadcrumb_names_the_conversation_once():
    from webui.present.relatives import crumbs

    chain = [{"id": "r", "label": "Project X"}] + [
        {"id": f"p{i}", "label": f"Project X #{i}", "edge": "compression"} for i in range(2, 8)
    ]
    out = crumbs([*chain, {"id": "b", "label": "a branch", "edge": "branch"}])
    assert [c["label"] for c in out] == ["Project X (7 parts)", "a branch"]
    assert out[0]["id"] == "r"
