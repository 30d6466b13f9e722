"""The conversation viewer: ids and prefixes, paging, anchors, tool links, rewound messages."""

from __future__ import annotations

import re

import pytest

from support import copy_fixture, make_app, sql
from support.http import follow


@pytest.fixture(scope="module")
def v11(tmp_path_factory):
    d = tmp_path_factory.mktemp("v11")
    db = copy_fixture("hermes-v11.db", d)
    return db, make_app(db, d / "inst").test_client()


@pytest.fixture(scope="module")
def v22(tmp_path_factory):
    d = tmp_path_factory.mktemp("v22")
    db = copy_fixture("hermes-v22.db", d)
    return db, make_app(db, d / "inst").test_client()


def test_unique_prefix_redirects_to_full_id(v11):
    db, client = v11
    checked = 0
    for (sid,) in sql(db, "SELECT id FROM sessions LIMIT 30"):
        for n in range(6, len(sid)):
            prefix = sid[:n]
            if (
                sql(db, "SELECT COUNT(*) FROM sessions WHERE substr(id, 1, ?) = ?", (n, prefix))[0][
                    0
                ]
                == 1
            ):
                r = client.get(f"/sessions/{prefix}?rewound=1")
                assert r.status_code == 302
                assert r.headers["Location"] == f"/sessions/{sid}?rewound=1"
                checked += 1
                break
    assert checked >= 20, "the fixture has unique prefixes to test"


def test_ambiguous_prefix_lists_candidates(v11):
    db, client = v11
    prefix = "2026"
    expected = {r[0] for r in sql(db, "SELECT id FROM sessions WHERE id LIKE '2026%'")}
    assert len(expected) > 1
    r = client.get(f"/sessions/{prefix}")
    assert r.status_code == 300
    html = r.get_data(as_text=True)
    shown = set(re.findall(r'href="/sessions/([^"?]+)"', html))
    assert shown <= expected and len(shown) == min(len(expected), 20)
    j = client.get(f"/sessions/{prefix}?format=json").get_json()
    assert set(j["candidates"]) <= expected


def test_unknown_id_is_a_404_page(v11):
    _, client = v11
    r = client.get("/sessions/definitely-not-a-session")
    assert r.status_code == 404
    assert "No session has the id" in r.get_data(as_text=True)
    assert client.get("/sessions/nope%25_?format=json").status_code == 404


def test_like_wildcards_in_prefix_are_literal(v11):
    _, client = v11
    assert client.get("/sessions/%25").status_code == 404
    assert client.get("/sessions/_").status_code == 404


def test_tool_calls_and_results_link_both_ways(v11):
    db, client = v11
    rows = sql(
        db,
        "SELECT r.session_id, r.id, a.id FROM messages r JOIN messages a ON "
        "a.session_id = r.session_id AND a.tool_calls LIKE '%' || r.tool_call_id || '%' "
        "WHERE r.tool_call_id IS NOT NULL LIMIT 25",
    )
    assert rows
    for sid, result_id, call_id in rows:
        html = client.get(f"/sessions/{sid}?at={result_id}").get_data(as_text=True)
        assert re.search(rf'href="[^"]*#m-{result_id}">result of', html), (sid, result_id)
        assert re.search(rf'href="[^"]*#m-{call_id}">↑ the call', html), (sid, call_id)


def test_at_parameter_opens_the_page_holding_the_message(client, generated_db):
    db, long_id = generated_db
    ids = [
        r[0]
        for r in sql(
            db, "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id", (long_id,)
        )
    ]
    target = ids[450]
    html = client.get(f"/sessions/{long_id}?at={target}").get_data(as_text=True)
    assert f'id="m-{target}"' in html
    assert f'id="m-{ids[0]}"' not in html
    assert "Load earlier messages" in html
    r = client.get(f"/sessions/{long_id}?at=notanumber")
    assert r.status_code == 400
    other = sql(db, "SELECT id FROM messages WHERE session_id != ? LIMIT 1", (long_id,))[0][0]
    assert client.get(f"/sessions/{long_id}?at={other}").status_code == 400


def test_paging_backwards_and_forwards_covers_the_session(client, generated_db):
    db, long_id = generated_db
    expected = [
        r[0]
        for r in sql(
            db, "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id", (long_id,)
        )
    ]
    assert [
        m["id"] for m in follow(client, f"/sessions/{long_id}?format=json", "messages")
    ] == expected
    # from the middle, walk back to the start through the "earlier" links (htmx fragments)
    html = client.get(f"/sessions/{long_id}?at={expected[-1]}").get_data(as_text=True)
    seen = [int(x) for x in re.findall(r'<article class="msg[^"]*" id="m-(\d+)"', html)]
    while True:
        m = re.search(r'<div id="earlier-messages".*?href="([^"]+)"', html, re.S)
        if not m:
            break
        html = client.get(
            m.group(1).replace("&amp;", "&"),
            headers={"HX-Request": "true", "HX-Target": "earlier-messages"},
        ).get_data(as_text=True)
        assert "<html" not in html  # a fragment, not a page
        assert 'id="more-messages"' not in html
        seen = [int(x) for x in re.findall(r'<article class="msg[^"]*" id="m-(\d+)"', html)] + seen
    assert seen == expected


def test_bad_cursor_is_a_clear_400(client, generated_db):
    _, long_id = generated_db
    for url in (
        f"/sessions/{long_id}?after=garbage",
        "/sessions?after=!!!",
        "/sessions?sort=bogus",
        "/sessions?since=yesterday",
        "/sessions?state=zombie",
    ):
        r = client.get(url)
        assert r.status_code == 400, url
        assert "Traceback" not in r.get_data(as_text=True)


def test_rewound_messages_hidden_behind_a_toggle(v22):
    db, client = v22
    sid, n = sql(
        db,
        "SELECT session_id, COUNT(*) FROM messages WHERE active = 0 "
        "GROUP BY session_id ORDER BY 2 DESC LIMIT 1",
    )[0]
    rewound = [
        r[0] for r in sql(db, "SELECT id FROM messages WHERE session_id = ? AND active = 0", (sid,))
    ]
    html = client.get(f"/sessions/{sid}").get_data(as_text=True)
    assert not any(f'id="m-{i}"' in html for i in rewound)
    assert f"{len(rewound)} undone by /rewind) are hidden" in html
    html = client.get(f"/sessions/{sid}?rewound=1").get_data(as_text=True)
    assert all(f'id="m-{i}"' in html for i in rewound)
    # the JSON twin carries them all, flagged by `active`
    msgs = follow(client, f"/sessions/{sid}?format=json", "messages")
    assert sorted(m["id"] for m in msgs if m["active"] == 0) == sorted(rewound)


def test_compacted_and_rewound_messages_are_named_apart(tmp_path):
    """Hermes 0.19 marks both with active = 0; compacted = 1 says /compact summarised the
    message away, otherwise /rewind undid it. The viewer says which."""
    import sqlite3

    from support import copy_fixture, make_app

    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    ids = [
        r[0] for r in sql(db, "SELECT id FROM messages WHERE session_id = 'x_rewound' ORDER BY id")
    ]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE messages SET compacted = 1, active = 0 WHERE id = ?", (ids[0],))
    client = make_app(db, tmp_path / "inst").test_client()
    rewound = sql(
        db,
        "SELECT COUNT(*) FROM messages WHERE session_id = 'x_rewound' AND active = 0 AND compacted = 0",
    )[0][0]
    html = client.get("/sessions/x_rewound").get_data(as_text=True)
    assert f"({rewound} undone by /rewind and 1 summarised away by /compact)" in html
    html = client.get("/sessions/x_rewound?rewound=1").get_data(as_text=True)
    first = html[
        html.index(f'id="m-{ids[0]}"') : html.index("</header>", html.index(f'id="m-{ids[0]}"'))
    ]
    assert ">compacted</span>" in first and ">rewound</span>" not in first
    msgs = client.get("/sessions/x_rewound?format=json").get_json()["messages"]
    assert all(m["tool_calls"] is None for m in msgs)  # null stays null in the JSON twin


def test_multimodal_content_shows_text_and_placeholder(client, generated_db):
    db, _ = generated_db
    # (LIKE, not substr: SQLite's text functions stop at the NUL of Hermes's prefix)
    rows = sql(
        db, "SELECT session_id, id FROM messages WHERE content LIKE char(0) || 'json:%' LIMIT 3"
    )
    assert rows
    for sid, mid in rows:
        html = client.get(f"/sessions/{sid}?at={mid}").get_data(as_text=True)
        block = html[html.index(f'id="m-{mid}"') :]
        block = block[: block.index("</article>")]
        assert "json:" not in block
        assert 'class="placeholder"' in block


def test_viewer_header_shows_tokens_costs_and_lineage(v11):
    db, client = v11
    sid, parent = sql(
        db,
        "SELECT id, parent_session_id FROM sessions WHERE parent_session_id "
        "IS NOT NULL AND parent_session_id IN (SELECT id FROM sessions) LIMIT 1",
    )[0]
    (row,) = sql(
        db,
        "SELECT input_tokens, output_tokens, cache_read_tokens FROM sessions WHERE id = ?",
        (sid,),
    )
    html = client.get(f"/sessions/{sid}").get_data(as_text=True)
    for value in row:
        assert f"{value:,}" in html
    assert f'href="/sessions/{parent}"' in html
    assert "Continued from" in html or "Child of" in html
    html = client.get(f"/sessions/{parent}").get_data(as_text=True)
    assert f'href="/sessions/{sid}"' in html


@pytest.mark.parametrize("fixture,by_id", [("hermes-v22.db", True), ("hermes-v11.db", False)])
def test_message_order_follows_the_hermes_that_wrote_the_file(tmp_path, fixture, by_id):
    """Hermes 0.19 reads a conversation back by message id (a clock that jumps back must not
    reorder it); schema 11's Hermes by timestamp. A skewed clock shows the difference, and the
    pages, forwards and backwards, hold every message once in that order."""
    import sqlite3

    from support import copy_fixture, make_app, sql
    from support.http import follow

    db = copy_fixture(fixture, tmp_path)
    sid = sql(
        db,
        "SELECT session_id FROM messages GROUP BY session_id HAVING COUNT(*) > 120 LIMIT 1",
    )[0][0]
    ids = [
        r[0] for r in sql(db, "SELECT id FROM messages WHERE session_id = ? ORDER BY id", (sid,))
    ]
    conn = sqlite3.connect(db)
    with conn:  # the 60th message was written while the clock stood an hour back
        conn.execute(
            "UPDATE messages SET timestamp = (SELECT MIN(timestamp) FROM messages WHERE "
            "session_id = ?) - 3600 WHERE id = ?",
            (sid, ids[59]),
        )
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    shown = [m["id"] for m in follow(client, f"/sessions/{sid}?format=json&rewound=1", "messages")]
    expected = ids if by_id else [ids[59], *ids[:59], *ids[60:]]
    assert shown == expected
    # Backwards from the end: the last page, then the one before it.
    last = client.get(f"/sessions/{sid}?before={_end_cursor()}&format=json&rewound=1").get_json()
    assert [m["id"] for m in last["messages"]] == expected[-len(last["messages"]) :]


def _end_cursor() -> str:
    from webui.db.sessions.messages import END_CURSOR

    return END_CURSOR


def test_rendered_text_is_kept_within_its_size_and_shared_entries_stay_unchanged():
    """The rendering memo (Markdown, JSON results, tool calls) answers the same as rendering
    afresh, holds no more characters than its bound, keeps no entry over an eighth of it, and
    a viewer page adding links to a cached call does not change the cached one."""
    from webui import keep
    from webui.present.rows import message_view, tool_calls_view

    calls = []

    @keep.memoize_text(8_000)
    def shout(text: str) -> str:
        calls.append(text)
        return text.upper()

    assert shout("abc") == "ABC" and shout("abc") == "ABC" and calls == ["abc"]
    for i in range(200):
        shout(f"{i:04d}" * 50)  # 200 + 200 characters each
    assert shout.cache.currsize <= 8_000
    big = "x" * 600  # 1,200 with its result: over an eighth of 8,000
    shout(big), shout(big)
    assert calls.count(big) == 2 and big not in shout.cache

    raw = (
        '[{"id": "call_1", "function": {"name": "web_search", "arguments": "{\\"q\\": \\"a\\"}"}}]'
    )
    m = {"id": 7, "role": "assistant", "content": "", "tool_calls": raw}
    first = message_view(m, {"call_1": {"result": 8}}, lambda i: f"#m-{i}")
    again = message_view(m, {}, lambda i: f"#m-{i}")
    assert first["tool_calls"][0]["result_href"] == "#m-8"
    assert again["tool_calls"][0]["result_href"] is None
    assert "result_href" not in tool_calls_view(raw)[0]
    assert tool_calls_view(raw)[0]["name"] == 'web_search'


@pytest.mark.parametrize("look_ahead", [60, 1, 0])
def test_every_call_links_its_result_on_every_page(client, generated_db, monkeypatch, look_ahead):
    """A call's result is found by reading a few messages past the page (LOOK_AHEAD), else
    by a look through the whole session: both give the right message, page after page."""
    from webui.db.sessions import messages

    monkeypatch.setattr(messages, "LOOK_AHEAD", look_ahead)
    db, long_id = generated_db
    truth = dict(
        sql(
            db,
            "SELECT tool_call_id, MIN(id) FROM messages WHERE session_id = ? AND "
            "tool_call_id IS NOT NULL GROUP BY tool_call_id",
            (long_id,),
        )
    )
    url, checked = f"/sessions/{long_id}", 0
    crossed = 0  # calls whose result is on a later page
    while url:
        html = client.get(url).get_data(as_text=True)
        on_page = set(re.findall(r'<article class="msg[^"]*" id="m-(\d+)"', html))
        for call_id, rest in re.findall(
            r'<details class="tool-call" id="call-([^"]+)">.*?</details>\s*(<a class="result-link"'
            r' href="[^"]*#m-\d+")?',
            html,
            re.S,
        ):
            expected = truth.get(call_id)
            if expected is None:
                assert not rest, call_id
                continue
            assert rest.endswith(f'#m-{expected}"'), (call_id, rest)
            crossed += str(expected) not in on_page
            checked += 1
        nxt = re.search(r'<div id="more-messages"[^>]*hx-get="([^"]+)"', html)
        url = nxt.group(1).replace("&amp;", "&") if nxt else None
    assert checked > 20 and crossed >= 1


def test_header_counts_follow_changes_made_by_hermes(tmp_path):
    """The header's figures (webui.db.sessions.messages.counts) keep the tool-result count per
    session under the index's fingerprint: after every kind of change Hermes makes (a tool
    result appended, a rewind, a compaction, a message deleted) they equal a fresh count."""
    import sqlite3

    from webui.web.logbooks import get_logbook

    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    sid = sql(
        db, "SELECT session_id FROM messages GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1"
    )[0][0]

    def truth():
        (row,) = sql(
            db,
            "SELECT COUNT(*), COALESCE(SUM(role = 'tool'), 0), MIN(timestamp), MAX(timestamp), "
            "COALESCE(SUM(active = 0 AND NOT COALESCE(compacted, 0)), 0), "
            "COALESCE(SUM(active = 0 AND COALESCE(compacted, 0)), 0) FROM messages "
            "WHERE session_id = ?",
            (sid,),
        )
        return dict(
            zip(
                ("total", "tool_results", "first_at", "last_at", "rewound", "compacted"),
                row,
                strict=True,
            )
        )

    def write(query, params=()):
        conn = sqlite3.connect(db)
        conn.execute(query, params)
        conn.commit()
        conn.close()

    ids = [
        r[0] for r in sql(db, "SELECT id FROM messages WHERE session_id = ? ORDER BY id", (sid,))
    ]
    changes = [
        (
            "INSERT INTO messages (session_id, role, content, tool_call_id, timestamp) "
            "VALUES (?, 'tool', 'ok', 'call_x', 2e9)",
            (sid,),
        ),
        ("UPDATE messages SET active = 0, compacted = 0 WHERE id = ?", (ids[-1],)),
        ("UPDATE messages SET active = 0, compacted = 1 WHERE id = ?", (ids[0],)),
        ("DELETE FROM messages WHERE id = ?", (ids[1],)),
    ]

    def counts(store):
        return {k: v for k, v in store.counts(sid).items() if k in truth()}

    with app.app_context():
        store = get_logbook().messages
        assert counts(store) == truth()
        for query, params in changes:
            write(query, params)
            assert counts(store) == truth(), query
        assert truth()["tool_results"] > 0 and truth()["rewound"] == 1
        assert truth()["compacted"] == 1
        # While nobody commits, the figures last read are given again without a read.
        read = []
        count = store._count
        store._count = lambda s: read.append(s) or count(s)
        assert counts(store) == counts(store) == truth()
        assert read == []
        write("UPDATE messages SET active = 1 WHERE id = ?", (ids[-1],))
        assert counts(store) == truth() and read == [sid]


def test_messages_are_numbered_by_their_place_on_every_kind_of_page(client, generated_db):
    """Numbers come from a count of earlier messages, skipped only where the page is known
    to start the conversation: forward, backward, from the end and around ?at=."""
    db, long_id = generated_db
    order = [
        r[0]
        for r in sql(
            db, "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id", (long_id,)
        )
    ]
    place = {mid: i + 1 for i, mid in enumerate(order)}

    def check(html: str) -> list[int]:
        found = re.findall(r'<article class="msg[^"]*" id="m-(\d+)" data-n="(\d+)"', html)
        assert found
        for mid, n in found:
            assert place[int(mid)] == int(n), (mid, n)
        return [int(m) for m, _ in found]

    seen = check(client.get(f"/sessions/{long_id}").get_data(as_text=True))
    assert seen[0] == order[0]
    check(client.get(f"/sessions/{long_id}?at={order[400]}").get_data(as_text=True))
    end = client.get(f"/sessions/{long_id}?end=1").get_data(as_text=True)
    assert check(end)[-1] == order[-1]
    html = end
    while m := re.search(r'<div id="earlier-messages".*?href="([^"]+)"', html, re.S):
        html = client.get(
            m.group(1).replace("&amp;", "&"),
            headers={"HX-Request": "true", "HX-Target": "earlier-messages"},
        ).get_data(as_text=True)
        last_back = check(html)
    assert last_back[0] == order[0]
    first = client.get(f"/sessions/{long_id}").get_data(as_text=True)
    more = re.search(r'<div id="more-messages"[^>]*hx-get="([^"]+)"', first)
    nxt = client.get(
        more.group(1).replace("&amp;", "&"),
        headers={"HX-Request": "true", "HX-Target": "more-messages"},
    ).get_data(as_text=True)
    assert check(nxt)[0] == order[len(seen)]
