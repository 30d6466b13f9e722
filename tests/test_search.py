"""Search: Hermes's syntax, its routes, and Logbook doing better where Hermes fails quietly."""

from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest

from support import (
    DATA,
    copy_fixture,
    make_app,
    minimal_db,
    patch_search_limit,
    plant_tool_call_hit,
    sql,
)
from support.htmlcheck import assert_inert_page
from support.http import follow
from support.reference import sanitizer_cases
from support.search_check import search_matches_hermes
from webui.hermes.search import contains_cjk, plan, sanitize_fts5_query

CASES = sanitizer_cases()


def test_reference_table_is_complete():
    assert [c[0] for c in CASES] == list(range(1, 58))


@pytest.mark.parametrize("row,query,v11,v8", CASES, ids=[f"row{c[0]}" for c in CASES])
def test_sanitizer_matches_hermes(row, query, v11, v8):
    assert sanitize_fts5_query(query) == v11
    assert sanitize_fts5_query(query, quote_underscores=False) == v8


# --- on every fixture ---------------------------------------------------------------------


def hermes_fts(db, match: str, where: str = "", params=()) -> list[int]:
    """Hermes's own FTS route (reference §3.2) over the same file."""
    active = ""
    cols = {r[1] for r in sql(db, "PRAGMA table_info(messages)")}
    if "active" in cols:
        active = " AND COALESCE(m.active, 1) != 0"
    return [
        r[0]
        for r in sql(
            db,
            "SELECT m.id FROM messages_fts JOIN messages m ON m.id = "
            "messages_fts.rowid JOIN sessions s ON s.id = m.session_id "
            f"WHERE messages_fts MATCH ?{where}{active} ORDER BY rank, m.id",
            (match, *params),
        )
    ]


def common_words(db, n=8):
    rows = sql(db, "SELECT content FROM messages WHERE content IS NOT NULL LIMIT 3000")
    counts: dict[str, int] = {}
    for (text,) in rows:
        for w in set(re.findall(r"[a-z]{5,}", text.lower())):
            counts[w] = counts.get(w, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    return [w for w, _ in ranked[:n]] + [w for w, c in ranked if 3 <= c <= 10][:n]


QUERIES = [
    "docker",
    "hello world",
    "deploy*",
    "chat-send",
    "docker OR kubernetes",
    "python NOT java",
    '"exact phrase"',
    "content:docker",
    "session_search",
    "pytest",
    "gpt-5",
    "e-mail",
    "café",
]


def dialect_of(db) -> str:
    """The search dialect the database's schema calls for (webui.hermes.rules)."""
    from webui.hermes.rules import rules_for

    (version,) = sql(db, "SELECT MAX(version) FROM schema_version")[0]
    return rules_for(version).search


def test_results_equal_hermes_fts_in_rank_order(fx):
    db, client = fx
    for q in QUERIES + common_words(db):
        expected = hermes_fts(db, sanitize_fts5_query(q, dialect=dialect_of(db)))
        got = follow(client, f"/search?format=json&q={q}", "results")
        assert [r["message_id"] for r in got] == expected, q


def test_filters_restrict_like_hermes(fx):
    db, client = fx
    source = sql(db, "SELECT source FROM sessions GROUP BY source ORDER BY COUNT(*) DESC")[0][0]
    q = "docker"
    got = follow(client, f"/search?format=json&q={q}&source={source}", "results")
    assert [r["message_id"] for r in got] == hermes_fts(db, q, " AND s.source IN (?)", (source,))
    assert {r["source"] for r in got} <= {source}
    got = follow(client, f"/search?format=json&q={q}&exclude_source={source}", "results")
    assert [r["message_id"] for r in got] == hermes_fts(
        db, q, " AND s.source NOT IN (?)", (source,)
    )
    got = follow(client, f"/search?format=json&q={q}&role=user", "results")
    assert [r["message_id"] for r in got] == hermes_fts(db, q, " AND m.role IN (?)", ("user",))
    sid = sql(db, "SELECT session_id FROM messages GROUP BY session_id ORDER BY COUNT(*) DESC")[0][
        0
    ]
    got = follow(client, f"/search?format=json&q=the&session={sid}", "results")
    assert {r["session_id"] for r in got} <= {sid}
    assert [r["message_id"] for r in got] == hermes_fts(db, "the", " AND m.session_id = ?", (sid,))


@pytest.mark.parametrize(
    "q",
    [
        "it's",
        "100%",
        "foo.",
        "-foo",
        "x:y",
        "a AND OR b",
        "<script>alert(1)</script>",
        "title:hello",
        "'single quoted'",
    ],
)
def test_invalid_fts_is_searched_literally_with_a_notice(fx, q):
    db, client = fx
    r = client.get("/search", query_string={"q": q, "format": "json"})
    assert r.status_code == 200
    body = r.get_json()
    if ":" in q and dialect_of(db) == "v22":
        # Hermes 0.19 strips the colon itself: a valid query, searched as Hermes searches it
        assert body["query"] == sanitize_fts5_query(q, dialect="v22")
        assert "as you typed it" not in (body["notice"] or "")
        return
    assert body["notice"] and "as you typed it" in body["notice"]
    html = assert_inert_page(client.get("/search", query_string={"q": q}))
    assert "as you typed it" in html


def test_literal_search_finds_what_is_there(fx):
    db, client = fx
    rows = sql(
        db,
        "SELECT id FROM messages WHERE content LIKE '%<script>%' OR "
        "tool_calls LIKE '%<script>%' ORDER BY id DESC",
    )
    from support.http import follow

    found = follow(client, "/search?q=%3Cscript%3E&format=json", "results")
    found_ids = {r["message_id"] for r in found}
    # every message that holds the text is found, and every hit holds the searched word
    assert rows and found_ids >= {r[0] for r in rows}
    texts = sql(
        db,
        f"SELECT lower(COALESCE(content, '') || COALESCE(tool_calls, '')) "
        f"FROM messages WHERE id IN ({','.join('?' * len(found_ids))})",
        tuple(found_ids),
    )
    assert all("script" in t for (t,) in texts)


def test_leading_not_is_said(fx):
    _, client = fx
    body = client.get("/search?q=NOT+docker&format=json").get_json()
    assert "NOT" in body["notice"] and body["query"] == "docker"
    assert client.get("/search?q=docker&format=json").get_json()["notice"] is None


def test_empty_queries_explain_themselves(fx):
    _, client = fx
    for q in ("", "   ", "***", "AND"):
        r = client.get("/search", query_string={"q": q})
        assert r.status_code == 200
        body = client.get("/search", query_string={"q": q, "format": "json"}).get_json()
        assert body["results"] == []
    assert (
        "leaves nothing to search for"
        in client.get("/search?q=***&format=json").get_json()["notice"]
    )


def test_snippets_mark_matches_and_escape_html(fx):
    db, client = fx
    body = client.get("/search?q=script&format=json").get_json()
    assert body["results"]
    for r in body["results"]:
        assert ">>>" in r["snippet"] and "<<<" in r["snippet"]
    html = assert_inert_page(client.get("/search?q=script"))
    assert "<mark>script</mark>" in html.lower() or "<mark>Script</mark>" in html


def test_context_is_the_neighbours_in_the_same_session(fx):
    db, client = fx
    body = client.get("/search?q=docker&format=json").get_json()
    from webui.hermes.content import plain_text

    assert body["results"]
    for r in body["results"]:
        msgs = sql(
            db,
            "SELECT id, role, content FROM messages WHERE session_id = ? ORDER BY timestamp, id",
            (r["session_id"],),
        )
        i = [m[0] for m in msgs].index(r["message_id"])
        expected = [
            {"role": role, "content": plain_text(content, 200) if content else ""}
            for _, role, content in msgs[max(0, i - 1) : i + 2]
        ]
        assert r["context"] == expected, r["message_id"]


def test_cjk_routes(fx):
    db, client = fx
    has_trigram = bool(sql(db, "SELECT 1 FROM sqlite_master WHERE name = 'messages_fts_trigram'"))
    for term in ("项目", "大别山项目", "検索", "안녕"):
        expected = {
            r[0]
            for r in sql(
                db,
                "SELECT m.id FROM messages m WHERE m.content LIKE ? OR m.tool_calls LIKE ?",
                (f"%{term}%", f"%{term}%"),
            )
        }
        cols = {r[1] for r in sql(db, "PRAGMA table_info(messages)")}
        if "active" in cols:
            expected -= {r[0] for r in sql(db, "SELECT id FROM messages WHERE active = 0")}
        got = {r["message_id"] for r in follow(client, f"/search?format=json&q={term}", "results")}
        assert got == expected, term
    if not has_trigram:
        assert (
            "no index for Chinese"
            in client.get("/search?q=大别山项目&format=json").get_json()["notice"]
        )


def test_search_pages_render_with_filters_and_grouping(fx):
    _, client = fx
    for qs in (
        "q=docker&group=session",
        "q=docker&role=assistant&page=2",
        "q=fix&since=2026-01-01",
        "q=docker&session=nope",
        "q=test&exclude_source=cli",
    ):
        assert_inert_page(client.get(f"/search?{qs}"))
    assert client.get("/search?q=x&page=0").status_code == 400
    assert client.get("/search?q=x&role=wizard").status_code == 400


# --- generated database: short CJK words and space-separated ones -----------------------


def test_short_and_spaced_cjk_words_are_found(client, generated_db):
    db, _ = generated_db
    joined = {
        r[0]
        for r in sql(
            db, "SELECT id FROM messages WHERE content LIKE '%记忆%' AND content LIKE '%断裂%'"
        )
    }
    assert joined, "the generator plants 记忆断裂"
    got = {r["message_id"] for r in follow(client, "/search?format=json&q=记忆 断裂", "results")}
    assert got == joined
    body = client.get("/search?format=json&q=记忆 断裂").get_json()
    assert "newest first" in body["notice"]
    two = {
        r[0]
        for r in sql(
            db,
            "SELECT id FROM messages WHERE content LIKE '%通信%' OR "
            "tool_calls LIKE '%通信%' OR tool_name LIKE '%通信%'",
        )
    }
    assert {r["message_id"] for r in follow(client, "/search?format=json&q=通信", "results")} == two
    for r in client.get("/search?format=json&q=通信").get_json()["results"]:
        assert ">>>通信<<<" in r["snippet"]


def test_text_with_literal_markers_is_not_mistaken(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    conn = sqlite3.connect(db)
    sid = conn.execute("SELECT id FROM sessions LIMIT 1").fetchone()[0]
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES "
        "(?, 'user', '>>> print(zebrafish) <<< cat <<<EOF <b>bold</b>', 1.0)",
        (sid,),
    )
    conn.commit()
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    html = client.get("/search?q=zebrafish").get_data(as_text=True)
    assert (
        "&gt;&gt;&gt; print(<mark>zebrafish</mark>) &lt;&lt;&lt; cat &lt;&lt;&lt;EOF "
        "&lt;b&gt;bold&lt;/b&gt;" in html
    )
    body = client.get("/search?q=zebrafish&format=json").get_json()
    assert body["results"][0]["snippet"].startswith(">>> print(>>>zebrafish<<<) <<<")


def test_no_fts_table_still_searches(tmp_path):
    db = minimal_db(
        tmp_path / "state.db",
        """
        INSERT INTO sessions VALUES ('s1', 'cli', 1);
        INSERT INTO messages VALUES (1, 's1', 'user', 'Docker compose is down', 2),
                                    (2, 's1', 'assistant', 'restart docker', 3),
                                    (3, 's1', 'user', 'thanks', 4);
        """,
    )
    client = make_app(db, tmp_path / "inst").test_client()
    body = client.get("/search?q=docker&format=json").get_json()
    assert [r["message_id"] for r in body["results"]] == [2, 1]
    assert "no search index" in body["notice"]
    assert ">>>Docker<<<" in body["results"][1]["snippet"]


def test_plan_routes():
    assert plan("docker", has_fts=True, has_trigram=True).route == "fts"
    assert plan("大别山项目", has_fts=True, has_trigram=True).route == "trigram"
    assert plan("通信", has_fts=True, has_trigram=True).route == "like"
    assert plan("大别山项目", has_fts=True, has_trigram=False).route == "like"
    assert plan("docker", has_fts=False, has_trigram=False).route == "like"
    assert contains_cjk("Agent通信") and not contains_cjk("docker")


# --- against Hermes itself ---------------------------------------------------------------


def _truth():
    import json
    from pathlib import Path

    return json.loads(
        (Path(__file__).parent / "data" / "hermes_search_truth.json").read_text(encoding="utf-8")
    )["cases"]


@pytest.fixture(scope="module")
def truth_clients(tmp_path_factory):
    clients = {}
    for name in ("hermes-v11.db", "hermes-v22.db"):
        d = tmp_path_factory.mktemp("t")
        clients[name] = make_app(copy_fixture(name, d), d / "inst").test_client()
    return clients


@pytest.mark.parametrize(
    "case", _truth(), ids=lambda c: f"{c['fixture']}:{c['query']}:{','.join(c['kwargs'])}"
)
def test_same_messages_as_hermes_search(truth_clients, case):
    """Recorded from hermes-agent's own SessionDB.search_messages on copies of the fixtures
    (0.13.0 for schema 11, 0.19.0 for schema 22)."""
    from urllib.parse import urlencode

    qs = {"q": case["query"], "format": "json"}
    if case["kwargs"].get("source_filter"):
        qs["source"] = case["kwargs"]["source_filter"]
    if case["kwargs"].get("role_filter"):
        qs["role"] = case["kwargs"]["role_filter"]
    got = [
        r["message_id"]
        for r in follow(
            truth_clients[case["fixture"]], "/search?" + urlencode(qs, doseq=True), "results"
        )
    ]
    assert sorted(got) == sorted(case["ids"])
    if case["route"] == "like":
        assert got == case["ids"]  # newest first, as Hermes


@pytest.mark.parametrize("q", ["\x000", "docker\x00", '"\x00', "\x00*"])
def test_nul_characters_in_a_query_are_dropped(fx, q):
    _, client = fx
    r = client.get("/search", query_string={"q": q, "format": "json"})
    assert r.status_code == 200


# -- schema 22: the same hits as Hermes 0.19.0 (recorded in tests/data/hermes/) -------------

SEARCH_TRUTH = json.loads((DATA / "hermes" / "search_truth.json").read_text())


@pytest.mark.parametrize("name", sorted(SEARCH_TRUTH))
def test_search_hits_equal_recorded_hermes_0_19(tmp_path, name):
    db = copy_fixture(name, tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    outcomes = {
        q: search_matches_hermes(client, db, q, theirs) for q, theirs in SEARCH_TRUTH[name].items()
    }
    # most queries must be equal outright; "more" only where Hermes's FTS5 call fails
    assert sum(v == "equal" for v in outcomes.values()) >= len(outcomes) - 2, outcomes


@pytest.mark.parametrize("query", ["check", "session_search", "obsidian", "model*", "default"])
def test_unfiltered_counts_leave_rewound_hits_out_without_a_join(tmp_path, query):
    """On schema 22 an unfiltered search is counted on the FTS index alone, less the hidden
    (rewound, not compacted) messages: the same total as counting with the join, and the
    pages hold exactly those messages."""
    from support import copy_fixture, make_app, sql
    from support.http import follow

    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    fts = query.replace("_", " ") if "_" in query else query
    want = sql(
        db,
        "SELECT m.id FROM messages_fts f JOIN messages m ON m.id = f.rowid WHERE "
        "messages_fts MATCH ? AND (COALESCE(m.active, 1) != 0 OR m.compacted = 1)",
        (f'"{fts}"' if " " in fts else fts,),
    )
    hidden = sql(
        db,
        "SELECT COUNT(*) FROM messages_fts f JOIN messages m ON m.id = f.rowid WHERE "
        "messages_fts MATCH ? AND m.active = 0 AND COALESCE(m.compacted, 0) = 0",
        (f'"{fts}"' if " " in fts else fts,),
    )[0][0]
    report = client.get(f"/search?q={query}&format=json").get_json()
    assert report["total"] == len(want)
    shown = {r["message_id"] for r in follow(client, f"/search?q={query}&format=json", "results")}
    assert shown == {r[0] for r in want}
    if query in ("check", "obsidian"):
        assert hidden > 0, "the fixture's rewound messages hold this word"


def test_an_unpaired_quote_is_named_and_next_steps_offered(fx):
    db, client = fx
    body = client.get("/search?q=%22zzqx&format=json").get_json()
    assert body["results"] == [] and body["query"] == "zzqx"
    assert "quotation mark without a partner" in body["notice"]
    html = client.get("/search?q=%22zzqx&source=cli").get_data(as_text=True)
    assert 'href="/search?q=zzqx*&amp;source=cli"' in html  # the prefix form, filters kept
    assert "without the filters" in html and "search titles and ids" in html
    # a balanced phrase is searched as typed: nothing to explain
    assert client.get('/search?q="zzqx yy"&format=json').get_json()["notice"] is None


@pytest.mark.parametrize("fixture", ["hermes-v22.db", "hermes-v11.db"])
def test_a_hit_in_a_tool_call_reads_as_the_call_not_raw_json(tmp_path, fixture):
    """Hermes indexes a tool call's raw JSON; a hit there is shown as the call (tool name, the
    argument that matched) and a hit in a JSON tool result as its field, never as
    `[{"id": "call_…", "type": "function", …`."""
    db = copy_fixture(fixture, tmp_path)
    sid = plant_tool_call_hit(db)
    client = make_app(db, tmp_path / "inst").test_client()
    html = client.get(f"/search?q=zebrafish&session={sid}").get_data(as_text=True)
    hits = re.findall(r'<a class="snippet".*?</a>', html, re.S)
    assert len(hits) == 2, hits
    joined = " ".join(hits)
    assert "web_search · query:" in joined
    assert "web_search result · results[0].snippet:" in joined
    for raw in ("call_1556abc", "&#34;function&#34;", '"function"', "&#34;id&#34;", "[{"):
        assert raw not in joined, raw
    assert "<mark>zebrafish</mark>" in joined.lower()
    # the JSON twin keeps Hermes's own snippet (scripts compare it with Hermes)
    body = client.get(f"/search?q=zebrafish&session={sid}&format=json").get_json()
    assert any(">>>" in r["snippet"] for r in body["results"])


def test_hidden_ids_are_read_once_by_a_crowd_and_again_after_logbooks_own_change(tmp_path):
    """Finding the rewound messages reads a whole index (~0.2 s on a million messages): eight
    searches at once read it once; after one of Logbook's own writes it is read afresh."""
    import threading

    from support import copy_fixture, make_app
    from webui.db.search.basics import SearchBasics
    from webui.web.logbooks import get_logbook

    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    reads = []
    original = SearchBasics._read_hidden_ids

    def counted(self):
        reads.append(1)
        time.sleep(0.2)
        return original(self)

    SearchBasics._read_hidden_ids = counted
    try:
        got = []

        def one():
            with app.test_request_context("/search?q=check"):
                got.append(get_logbook().search.basics.hidden_ids())

        crowd = [threading.Thread(target=one) for _ in range(8)]
        for t in crowd:
            t.start()
        for t in crowd:
            t.join()
        assert len(got) == 8 and len(set(got)) == 1 and got[0] and len(reads) == 1
        with app.test_request_context("/search?q=check"):
            lb = get_logbook()
            lb.sessions.invalidate()  # what a delete, a rename or the end of a prune does
            assert lb.search.basics.hidden_ids() == got[0] and len(reads) == 2
    finally:
        SearchBasics._read_hidden_ids = original


@pytest.mark.parametrize("fixture", ["hermes-v22.db", "hermes-v11.db"])
def test_a_substring_search_answered_from_the_newest_messages_is_the_whole_first_page(
    tmp_path, monkeypatch, fixture
):
    """A 2-character CJK word is a substring scan of every message. When the newest messages
    hold a whole first page, and (Hermes 0.19's timestamp order) no older message is dated
    after that page's last hit, the page comes from them alone, without a search slot, and
    equals the full scan's page. An older message dated later makes it search everything."""

    patch_search_limit(monkeypatch, "RECENT_WINDOW", 60)
    patch_search_limit(monkeypatch, "RECENT_STEP", 20)
    db = copy_fixture(fixture, tmp_path)
    with sqlite3.connect(db) as conn:
        sid = conn.execute("SELECT id FROM sessions LIMIT 1").fetchone()[0]
        t0 = conn.execute("SELECT MAX(timestamp) FROM messages").fetchone()[0]  # appended now
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
            [(sid, f"第{i}次 通信 测试", t0 + 10 + i) for i in range(120)],
        )

    def page_ids(client) -> list[int]:
        return [
            r["message_id"] for r in client.get("/search?q=通信&format=json").get_json()["results"]
        ]

    def with_slots_held(app, fn):
        slots = app.extensions["logbook_search_slots"]
        held = 0
        while slots.acquire(blocking=False):
            held += 1
        try:
            return fn()
        finally:
            for _ in range(held):
                slots.release()

    app = make_app(db, tmp_path / "inst")
    client = app.test_client()
    full = page_ids(client)  # the full scan (and, on 22, the older messages' newest date)
    assert len(full) == 50
    quick = with_slots_held(app, lambda: client.get("/search?q=通信&format=json"))
    assert quick.status_code == 200
    assert [r["message_id"] for r in quick.get_json()["results"]] == full

    # An old message dated after every new one: Hermes 0.19 lists it first.
    with sqlite3.connect(db) as conn:
        old = conn.execute("SELECT MIN(id) FROM messages").fetchone()[0]
        conn.execute(
            "UPDATE messages SET content = '旧的通信', timestamp = ? WHERE id = ?",
            (t0 + 100_000, old),
        )
    app = make_app(db, tmp_path / "inst2")
    client = app.test_client()
    full = page_ids(client)
    if fixture == "hermes-v22.db":
        assert full[0] == old  # timestamp order
        assert with_slots_held(app, lambda: client.get("/search?q=通信")).status_code == 503
    else:
        assert old not in full  # id order: the newest ids come first
        assert with_slots_held(app, lambda: page_ids(client)) == full
    # More than two words: each is a LIKE per row, so the search waits for a slot as before.
    assert with_slots_held(app, lambda: client.get("/search?q=通信 测试 次")).status_code == 503


def test_ranked_pages_ranked_on_the_index_first_equal_the_full_query(tmp_path, monkeypatch):
    """A ranked page is ranked on the FTS index, then its best hits are filtered (rewound,
    the session's row, the user's filters); when too few survive, the full query answers.
    Either way every page equals the full query's page, hit for hit and in order."""
    from webui.db.search.fts import FtsRoute

    db = copy_fixture("hermes-v22.db", tmp_path)
    with sqlite3.connect(db) as conn:
        sids = [r[0] for r in conn.execute("SELECT id FROM sessions ORDER BY id")]
        t0 = conn.execute("SELECT MAX(timestamp) FROM messages").fetchone()[0]
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
            [
                (
                    sids[i % len(sids)],
                    ("user", "assistant", "tool")[i % 3],
                    " ".join(["zebrafish"] * (1 + i % 4) + ["filler"] * (i % 37)),
                    t0 + i,
                )
                for i in range(420)
            ],
        )
        # Rewind the 150 best-ranked hits: the filter must drop them from the pages.
        best = [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'zebrafish' "
                "ORDER BY rank, rowid LIMIT 180"
            )
        ]
        conn.executemany("UPDATE messages SET active = 0 WHERE id = ?", [(i,) for i in best[:150]])
    calls = {"index": 0, "full": 0}
    real = FtsRoute._ranked_on_index

    def counting(self, *a, **kw):
        out = real(self, *a, **kw)
        calls["index" if out is not None else "full"] += 1
        return out

    monkeypatch.setattr(FtsRoute, "_ranked_on_index", counting)

    def pages(client, query: str) -> list[list[int]]:
        return [
            [
                r["message_id"]
                for r in client.get(f"/search?{query}&page={p}&format=json").get_json()["results"]
            ]
            for p in (1, 2, 3, 4)
        ]

    fast = make_app(db, tmp_path / "a").test_client()
    queries = [
        "q=zebrafish",
        "q=zebrafish&role=tool",
        f"q=zebrafish&source={sql(db, 'SELECT source FROM sessions LIMIT 1')[0][0]}",
    ]
    got = {q: pages(fast, q) for q in queries}
    assert calls["index"] > 0 and calls["full"] > 0  # both routes were taken
    patch_search_limit(monkeypatch, "OVERFETCH_MAX", 0)  # the full query only
    full = make_app(db, tmp_path / "b").test_client()
    for q in queries:
        assert got[q] == pages(full, q), q
    assert got["q=zebrafish"][0] and not set(best[:150]) & set(sum(got["q=zebrafish"], []))


@pytest.mark.parametrize("q", ["th*", "a*", "deploy OR docker", "the"])
def test_a_search_in_one_session_finds_exactly_its_hits_reading_only_its_ids(
    client, generated_db, q
):
    """Scoped to one session, a search reads the index only between that session's first
    and last message id (issue 37, point 3), and still finds every hit of the session."""
    import sqlite3

    from support.http import follow

    db, long_id = generated_db
    got = [
        h["message_id"]
        for h in follow(client, f"/search?format=json&session={long_id}&q={q}", "results")
    ]
    conn = sqlite3.connect(db)
    want = {
        r[0]
        for r in conn.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid IN "
            "(SELECT id FROM messages WHERE session_id = ?)",
            (q, long_id),
        )
    }
    lo, hi = conn.execute(
        "SELECT MIN(id), MAX(id) FROM messages WHERE session_id = ?", (long_id,)
    ).fetchone()
    everywhere = conn.execute(
        "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?", (q,)
    ).fetchone()[0]
    conn.close()
    assert sorted(got) == sorted(want) and want
    assert all(lo <= i <= hi for i in got)
    assert everywhere > len(want)  # the bound has something to leave out


@pytest.mark.parametrize("name", ["hermes-v8.db", "hermes-v11.db", "hermes-v22-extended.db"])
def test_a_prefix_counted_as_its_words_finds_the_same_messages(tmp_path, monkeypatch, name):
    """deploy* is counted and paged newest first as the OR of the words the index holds
    with that prefix (issue 38): the same matches in the same order as the prefix itself,
    for every prefix of two letters that matches anything, on every page (the ranking cap
    set low so that the newest-first route answers on a small file)."""
    import webui.db.search.limits as search_mod
    from webui.web.logbooks import get_logbook

    db = copy_fixture(name, tmp_path)
    app = make_app(db, tmp_path / "inst")
    patch_search_limit(monkeypatch, "RANK_CAP", 3)
    words = {
        w[:2].lower()
        for (text,) in sql(db, "SELECT content FROM messages WHERE content IS NOT NULL")
        for w in re.findall(r"[A-Za-z0-9]{2,}", text or "")
    }
    assert len(words) > 20
    common = sql(db, "SELECT source FROM sessions GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1")[0][0]
    with app.app_context():
        store = get_logbook().search
        checked = 0
        for prefix, f in [
            (p, search_mod.SearchFilters(sources=[common] if i % 2 else []))
            for i, p in enumerate(sorted(words)[:80])
        ]:
            expression = f"{prefix}*"
            wide = store.basics.prefix_words("messages_fts", expression)
            if wide is None:
                continue
            assert wide.count(" OR ") < search_mod.PREFIX_WORDS_MAX
            got = store.fts_route.fts("messages_fts", expression, f, 1)
            monkeypatch.setattr(store.basics, "prefix_words", lambda table, expression: None)
            plain = store.fts_route.fts("messages_fts", expression, f, 1)
            monkeypatch.undo()
            patch_search_limit(monkeypatch, "RANK_CAP", 3)
            assert (got.total, got.capped, got.ranked) == (plain.total, plain.capped, plain.ranked)
            assert [r["message_id"] for r in got.rows] == [r["message_id"] for r in plain.rows]
            checked += 1
        assert checked > 10
