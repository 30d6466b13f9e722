"""Rendered rows kept between requests (webui/present/fragments.py): a cached page is
byte-for-byte the page rendered afresh, and a row is rendered again as soon as anything it
shows changes: its data (a rename, a rewind written by Hermes), or the clock (live → idle,
"just now" → "2 h ago"). The cache is bounded and keeps escaping intact."""

from __future__ import annotations

import re
import sqlite3
import time

import pytest
from flask import Flask
from jinja2 import Environment

from support import WAIT_BOUND_S, copy_fixture, make_app, sql
from webui.keep import SizedCache
from webui.present.fragments import FragmentCache

TOKEN = re.compile(rb"[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{20,}")


def _norm(body: bytes) -> bytes:
    return TOKEN.sub(b"CSRF", body)  # each app signs its own CSRF token


def _write(db, query: str, params=()) -> None:
    """A change made by someone else (Hermes): a separate connection to the file."""
    conn = sqlite3.connect(db, timeout=5)
    try:
        conn.execute(query, params)
        conn.commit()
    finally:
        conn.close()


@pytest.fixture
def v22(tmp_path):
    db = copy_fixture("hermes-v22-extended.db", tmp_path / "db")
    app = make_app(db, tmp_path / "inst")
    return db, app, app.test_client()


def _longest(db) -> str:
    return sql(
        db, "SELECT session_id FROM messages GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1"
    )[0][0]


def test_cached_pages_equal_pages_rendered_afresh(v22, tmp_path):
    db, app, cached = v22
    fresh_app = make_app(db, tmp_path / "inst2")
    # The same app with no keys: every row rendered as if the tag were not there.
    fresh_app.jinja_env.globals["list_row_key"] = lambda *a: None
    fresh_app.jinja_env.globals["message_key"] = lambda *a: None
    fresh_app.jinja_env.globals["hit_key"] = lambda *a: None
    fresh = fresh_app.test_client()
    long_id = _longest(db)
    word = "the"
    urls = [
        f"/search?q={word}",
        f"/search?q={word}&group=session",
        "/sessions",
        "/sessions?sort=-cost",
        "/sessions?rows=all",
        f"/sessions/{long_id}",
        f"/sessions/{long_id}?rewound=1",
    ]
    kept = app.jinja_env.fragment_cache.kept
    for url in urls:
        first = cached.get(url)
        assert first.status_code == 200, url
        if url.startswith("/search"):
            assert b'class="hit"' in first.data, url
        again = cached.get(url)  # now from the cache
        assert _norm(first.data) == _norm(again.data) == _norm(fresh.get(url).data), url
    assert len(kept) > 0  # the rows were kept, so the second requests were served from it


def test_a_cached_chat_timeline_equals_one_rendered_afresh(tmp_path):
    db = copy_fixture("hermes-v22-origins.db", tmp_path / "db")
    key = sql(
        db,
        "SELECT session_key FROM sessions WHERE session_key IS NOT NULL GROUP BY session_key "
        "ORDER BY COUNT(*) DESC LIMIT 1",
    )[0][0]
    cached = make_app(db, tmp_path / "a").test_client()
    fresh_app = make_app(db, tmp_path / "b")
    fresh_app.jinja_env.globals["message_key"] = lambda *a: None
    url = f"/chats/{key}"
    first = cached.get(url)
    assert first.status_code == 200 and 'class="msg role-' in first.get_data(as_text=True)
    again = cached.get(url)
    assert _norm(first.data) == _norm(again.data) == _norm(fresh_app.test_client().get(url).data)


def test_a_renamed_session_shows_its_new_title(v22):
    db, _, client = v22
    client.get("/sessions")
    sid = sql(db, "SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1")[0][0]
    _write(db, "UPDATE sessions SET title = ? WHERE id = ?", ["Renamed <b>by Hermes</b>", sid])
    body = client.get("/sessions?rows=all").get_data(as_text=True)
    assert "Renamed &lt;b&gt;by Hermes&lt;/b&gt;" in body
    assert "<b>by Hermes</b>" not in body


def test_a_row_follows_the_clock(v22, monkeypatch):
    db, _, client = v22
    sid = sql(db, "SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1")[0][0]
    now = time.time()
    # Live: no end and a message a minute ago (Hermes 0.19: active in the last five minutes).
    _write(db, "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", [sid])
    _write(
        db,
        "UPDATE messages SET timestamp = ? WHERE id = (SELECT MAX(id) FROM messages "
        "WHERE session_id = ?)",
        [now - 60, sid],
    )

    def row(body: str) -> str:
        start = body.index(f'data-session="{sid}"')
        return body[start : body.index("</tr>", start)]

    first = row(client.get("/sessions?rows=all&sort=-last_active").get_data(as_text=True))
    assert "● live" in first
    assert "1 min ago" in first
    monkeypatch.setattr(time, "time", lambda: now + 2 * 3600)
    later = row(client.get("/sessions?rows=all&sort=-last_active").get_data(as_text=True))
    assert "● live" not in later and "not closed" in later
    assert "2 h ago" in later and "1 min ago" not in later


def test_a_message_rewound_by_hermes_is_shown_rewound(v22):
    db, _, client = v22
    sid = _longest(db)
    url = f"/sessions/{sid}?rewound=1"
    mid = sql(db, "SELECT MAX(id) FROM messages WHERE session_id = ?", [sid])[0][0]
    _write(db, "UPDATE messages SET active = 1 WHERE id = ?", [mid])

    def article(body: str) -> str:
        start = body.index(f'id="m-{mid}"')
        return body[body.rindex("<article", 0, start) : body.index("</article>", start)]

    before = client.get(url + f"&at={mid}").get_data(as_text=True)
    assert "rewound" not in article(before).split(">", 1)[0]
    _write(db, "UPDATE messages SET active = 0, compacted = 0 WHERE id = ?", [mid])
    after = client.get(url + f"&at={mid}").get_data(as_text=True)
    assert 'class="msg role-' in article(after)
    assert " rewound" in article(after).split(">", 1)[0]  # the article's class
    assert "undone by /rewind" in article(after)


def _env() -> Environment:
    return Environment(extensions=[FragmentCache], autoescape=True)


def test_the_tag_keys_on_its_expression_and_keeps_escaping():
    env = _env()
    t = env.from_string("{% cache key %}{{ text }}{% endcache %}")
    assert t.render(key=1, text="<script>") == "&lt;script&gt;"
    # Same key: the kept rendering, escaped, not re-rendered with the new text.
    assert t.render(key=1, text="<img>") == "&lt;script&gt;"
    assert t.render(key=2, text="<img>") == "&lt;img&gt;"
    # No key: rendered every time, never kept.
    assert t.render(key=None, text="a") == "a"
    assert t.render(key=None, text="b") == "b"
    assert len(env.fragment_cache.kept) == 2


def test_the_cache_is_bounded_by_characters():
    env = _env()
    env.fragment_cache.kept = SizedCache(800)
    t = env.from_string("{% cache key %}{{ text }}{% endcache %}")
    t.render(key="big", text="x" * 101)  # over an eighth of the cache: not kept
    assert "big" not in env.fragment_cache.kept
    for i in range(40):
        t.render(key=i, text="y" * 90)
    assert env.fragment_cache.kept.currsize <= 800
    assert 39 in env.fragment_cache.kept and 0 not in env.fragment_cache.kept


def test_attribute_lookup_on_rows_keeps_jinja_semantics():
    """webui/web/jinja.py looks a dict's key up first, but never hides dict's own methods
    (untrusted JSON may have an "items" key) and leaves other objects to Jinja's rule."""
    from webui.web.jinja import LogbookEnvironment

    env = LogbookEnvironment(Flask(__name__), autoescape=True)
    row = {"title": "<t>", "items": "not a method", "n": 0}
    t = env.from_string(
        "{{ r.title }}|{{ r.n }}|{{ r.missing is undefined }}|"
        "{% for k, v in r.items() %}{{ k }};{% endfor %}|{{ s.upper() }}"
    )
    assert t.render(r=row, s="ab") == "&lt;t&gt;|0|True|title;items;n;|AB"


def test_the_stats_figures_are_kept_only_while_their_report_is_shared(tmp_path):
    """The stats page's figures are kept rendered under their report (its time) and the
    page's address: the kept page equals a fresh one, and a new report after a write shows
    the new figures."""
    db = copy_fixture("hermes-v22-extended.db", tmp_path / "db")
    # Each page brings the rollup up to date before it answers (a partial report is not kept:
    # a budget a busy machine can outrun would decide what is kept).
    same = {"LOGBOOK_STATS_REUSE_S": 0, "LOGBOOK_STATS_STALE_S": 0}
    app = make_app(db, tmp_path / "a", LOGBOOK_ROLLUP_BUDGET=WAIT_BOUND_S, **same)
    fresh_app = make_app(db, tmp_path / "b", LOGBOOK_ROLLUP_BUDGET=WAIT_BOUND_S, **same)
    fresh_app.jinja_env.fragment_cache.kept = SizedCache(0)  # keeps none
    client, fresh = app.test_client(), fresh_app.test_client()
    url = "/stats?period=all"

    def sessions(body: bytes) -> int:
        found = re.search(rb"actual cost known for [\d,]+ of ([\d,]+) session", body)
        return int(found.group(1).replace(b",", b""))

    first = client.get(url)
    again = client.get(url)
    assert first.status_code == 200
    # one rendering of the figures (the Reliability section below them is kept on its own)
    figures = [v for v in app.jinja_env.fragment_cache.kept.values() if "actual cost known" in v]
    assert len(figures) == 1
    # how old a shared report is (said once it is a second old or more: speed, not content)
    strip = re.compile(rb' <small class="as-of"[^>]*>[^<]*figures of \d+ s ago</small>')

    def figures_part(body: bytes) -> bytes:
        # the report's figures; the Reliability section after them follows the digest, which
        # a background thread may still be reading between two requests
        return strip.sub(b"", _norm(body)).split(b'id="reliability"')[0]

    assert figures_part(first.data) == figures_part(again.data)
    assert figures_part(again.data) == figures_part(fresh.get(url).data)
    before = sessions(again.data)
    _write(
        db,
        "INSERT INTO sessions (id, source, started_at, input_tokens) VALUES (?, 'cli', ?, 5)",
        ["kept-figures-test", time.time() - 60],
    )
    assert sessions(client.get(url).data) == before + 1
