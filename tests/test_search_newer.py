"""Search on the files Hermes 0.20 and 0.22 write (schemas 26 and 31), beyond the 51 recorded
queries of tests/test_generation_truth.py: the rows each route leaves out, the states Hermes's
markers put a file in (a damaged index, a pending rebuild, a stale CJK index), sort, the CJK
bigram index read without its tokenizer, the notices, and how such searches are classed."""

from __future__ import annotations

import sqlite3
from urllib.parse import urlencode

import pytest
from oracle import cases as oracle_cases

from support import copy_fixture, make_app
from support.http import follow
from support.truth import truth
from webui.door.workclass import work_class
from webui.hermes import cjk_bigram, search_newer
from webui.hermes.rules import rules_for
from webui.hermes.search import IndexState, is_costly, plan, sanitize_fts5_query

NEW = [f for f, (gen, _) in oracle_cases.FIXTURES.items() if gen != "0.19"]


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    made: dict = {}

    def client(fixture: str):
        if fixture not in made:
            tmp = tmp_path_factory.mktemp("newer")
            made[fixture] = make_app(copy_fixture(fixture, tmp), tmp / "inst").test_client()
        return made[fixture]

    return client


def _search(client, q: str, **params) -> dict:
    query = urlencode([("q", q), ("format", "json"), *params.items()])
    r = client.get(f"/search?{query}")
    assert r.status_code == 200, r.data[:300]
    return r.get_json()


def _ids(client, q: str, **params) -> list[int]:
    query = urlencode([("q", q), ("format", "json"), *params.items()])
    return [h["message_id"] for h in follow(client, f"/search?{query}", "results")]


def _copy(fixture: str, tmp_path, change: str = "", params=()) -> tuple:
    """A copy of the fixture, changed by ``change`` (SQL), and a client on it."""
    db = copy_fixture(fixture, tmp_path)
    if change:
        conn = sqlite3.connect(db)
        try:
            conn.execute(change, params)
            conn.commit()
        finally:
            conn.close()
    return db, make_app(db, tmp_path / "inst").test_client()


# -- the sanitizer -----------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", NEW)
def test_sanitizer_gives_what_hermes_gave(fixture):
    t = truth(fixture)
    for name, asked in t["search_queries"].items():
        assert sanitize_fts5_query(asked["query"], dialect="v26") == t["sanitized"][name], name


def test_percent_is_kept_only_beside_cjk():
    assert sanitize_fts5_query("100%", dialect="v26") == "100"
    assert sanitize_fts5_query("数据 100%", dialect="v26") == "数据 100%"
    # 0.19 keeps it either way, and the apostrophe
    assert sanitize_fts5_query("it's 100%", dialect="v22") == "it's 100%"


# -- which rows a route leaves out -------------------------------------------------------------


@pytest.mark.parametrize("fixture", NEW)
def test_hidden_rows_are_hits_in_020_and_never_in_022(clients, fixture):
    """g_hidden_rows' first user row ("[delegation result delivered to the model only]") has
    display_kind='hidden': 0.22 never finds it, 0.20 does."""
    hits = _search(clients(fixture), "delegation result delivered")["results"]
    in_hidden = [h for h in hits if h["session_id"] == "g_hidden_rows"]
    skips = rules_for(truth(fixture)["schema"]).search_skips_hidden_rows
    assert skips == (truth(fixture)["hermes"].startswith("0.22"))
    assert (len(in_hidden) == 0) == skips, hits


def test_rewound_rows_are_left_out_of_the_cjk_substring_route(clients):
    """0.19 kept rewound rows in its CJK substring route; 0.20 and 0.22 leave them out (库: 25
    hits, 26 with the rewound one)."""
    ids = _ids(clients("hermes-v31-migrated.db"), "库")
    assert ids == truth("hermes-v31-migrated.db")["search"]["库"]["ids"]
    assert len(ids) == 25


# -- states Hermes's markers put a file in -----------------------------------------------------


def _like_expected(db, where: str, params=(), order="DESC", ties=None) -> list[int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [
            r[0]
            for r in conn.execute(
                "SELECT m.id FROM messages m WHERE (m.active = 1 OR m.compacted = 1) AND "
                f"COALESCE(m.display_kind, '') <> 'hidden' AND {where} "
                f"ORDER BY m.timestamp {order}, m.id {ties or order}",
                params,
            )
        ]
    finally:
        conn.close()


def _holds(word: str) -> str:
    w = word.replace("'", "''")
    return (
        f"(COALESCE(m.content, '') LIKE '%{w}%' OR COALESCE(m.tool_name, '') LIKE '%{w}%' "
        f"OR COALESCE(m.tool_calls, '') LIKE '%{w}%')"
    )


def test_a_file_marked_fts_stale_is_searched_from_its_stored_rows(tmp_path):
    """Hermes 0.22 detaches a damaged index and marks the file ``fts_stale``: every search then
    reads the stored rows, the boolean query compiled (NOT excludes), newest first."""
    db, client = _copy(
        "hermes-v31-migrated.db",
        tmp_path,
        "INSERT INTO state_meta (key, value) VALUES ('fts_stale', '1')",
    )
    body = _search(client, "nginx NOT canary")
    assert "damaged" in body["notice"]
    expected = _like_expected(db, f"{_holds('nginx')} AND NOT {_holds('canary')}")
    assert _ids(client, "nginx NOT canary") == expected
    assert len(expected) > 200
    oldest = _ids(client, "docker OR kubernetes", sort="oldest")
    assert oldest == _like_expected(
        db, f"({_holds('docker')} OR {_holds('kubernetes')})", (), "ASC"
    )


def test_tool_searches_read_the_stored_rows_in_022_only(tmp_path, clients):
    """0.22 answers role=tool from the stored rows (whole tool results, newest first); 0.20 from
    its index, ranked."""
    db = tmp_path / "ro"
    db = copy_fixture("hermes-v31-migrated.db", db)
    ids = _ids(clients("hermes-v31-migrated.db"), "billing", role="tool")
    assert ids == _like_expected(db, f"m.role = 'tool' AND {_holds('billing')}")
    body = _search(clients("hermes-v26-migrated.db"), "billing", role="tool")
    assert body["ranked"] is True and "stored" not in (body["notice"] or "")


def _drop_from_index(conn: sqlite3.Connection, above: int) -> None:
    """Take the rows above ``above`` out of both external-content indexes, as a rebuild that
    has not reached them yet leaves them."""
    conn.execute(
        "INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls) "
        "SELECT 'delete', id, content, tool_name, tool_calls FROM messages_fts_src WHERE id > ?",
        (above,),
    )
    conn.execute(
        "INSERT INTO messages_fts_trigram(messages_fts_trigram, rowid, content, tool_name) "
        "SELECT 'delete', id, content, tool_name FROM messages_fts_trigram_src WHERE id > ?",
        (above,),
    )


def test_a_pending_rebuild_is_topped_up_by_the_unindexed_ids(tmp_path):
    """While Hermes rebuilds its index (state_meta fts_rebuild_high_water/_progress), the ids
    it has not reached are scanned for every word and their hits follow the ranked ones."""
    db = copy_fixture("hermes-v31-fresh.db", tmp_path)
    conn = sqlite3.connect(db)
    top = conn.execute("SELECT MAX(id) FROM messages").fetchone()[0]
    done = 80
    _drop_from_index(conn, done)
    conn.executemany(
        "INSERT INTO state_meta (key, value) VALUES (?, ?)",
        [("fts_rebuild_high_water", str(top)), ("fts_rebuild_progress", str(done))],
    )
    conn.commit()
    ranked = [
        r[0]
        for r in conn.execute(
            "SELECT m.id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
            "WHERE messages_fts MATCH 'nginx' AND (m.active = 1 OR m.compacted = 1) AND "
            "COALESCE(m.display_kind, '') <> 'hidden' ORDER BY rank, m.id"
        )
    ]
    conn.close()
    # Hermes sorts them by time alone over an id-ordered scan: equal times oldest id first
    gap = _like_expected(db, f"m.id > {done} AND m.id <= {top} AND {_holds('nginx')}", ties="ASC")
    assert ranked and gap and max(ranked) <= done
    client = make_app(db, tmp_path / "inst").test_client()
    assert _ids(client, "nginx") == ranked + gap
    body = _search(client, "nginx")
    assert body["total"] == len(ranked) + len(gap)
    assert "rebuilding" in body["notice"]


def test_a_stale_cjk_index_is_routed_around_as_022_does(tmp_path):
    """A Hermes without the tokenizer drops the CJK triggers and marks the index stale; 0.22
    then takes trigram / substrings: the cjk file answers as its twin without that index
    (hermes-v31-fresh.db, the same story) answered."""
    _, client = _copy(
        "hermes-v31-cjk.db",
        tmp_path,
        "INSERT INTO state_meta (key, value) VALUES ('fts_cjk_stale', '1')",
    )
    twin = truth("hermes-v31-fresh.db")
    for name in ("项目", "大别山", "原因", "구글 일정", "東京", "大别山 OR 数据库", "youer"):
        assert _ids(client, name) == twin["search"][name]["ids"], name
    assert "out of date" in _search(client, "项目")["notice"]


def test_the_cjk_index_is_read_as_the_index_answers(clients):
    """Without the tokenizer, the bigram route gives Hermes's hits in bm25 order (recorded with
    the tokenizer) and says how it found them."""
    t = truth("hermes-v31-cjk.db")
    client = clients("hermes-v31-cjk.db")
    for name in ("项目", "数据库", "原因", "구글 일정", "大别山 OR 数据库", "修改youer服务端"):
        assert t["search"][name]["route"] == "fts_cjk"
        assert _ids(client, name) == t["search"][name]["ids"], name
    body = _search(client, "原因")
    assert "tokenizer" in body["notice"]
    assert all(h["snippet"] and ">>>" in h["snippet"] for h in body["results"])


def test_bigram_tokens_and_bm25_pieces():
    assert cjk_bigram.tokens("修改youer服务端") == ["修改", "youer", "服务", "务端"]
    assert cjk_bigram.tokens("Café 東京。大") == ["cafe", "東京", "大"]
    q = cjk_bigram.parse('"大别山" OR "数据库" NOT "库存"')
    assert q.phrases == [["大别", "别山"], ["数据", "据库"], ["库存"]]
    assert q.tree == ("or", ("p", 0), ("not", ("p", 1), ("p", 2)))
    assert cjk_bigram.instances(["哈哈"], [cjk_bigram.tokens("哈哈哈")]) == 2
    assert cjk_bigram.varints(bytes([0x81, 0x00, 0x05])) == [128, 5]
    assert cjk_bigram.bm25([0], [1.0], 10, 10.0) == 0.0


# -- sort ----------------------------------------------------------------------------------------


def test_sort_newest_and_oldest(clients):
    client = clients("hermes-v31-migrated.db")
    relevance = _ids(client, "nginx")
    newest = _ids(client, "nginx", sort="newest")
    oldest = _ids(client, "nginx", sort="oldest")
    assert sorted(newest) == sorted(relevance) == sorted(oldest)
    url = "/search?" + urlencode({"q": "nginx", "format": "json", "sort": "newest"})
    hits = follow(client, url, "results")
    stamps = [h["timestamp"] for h in hits]
    assert stamps == sorted(stamps, reverse=True)
    assert newest != relevance and oldest[::-1] != relevance
    r = client.get("/search?q=nginx&sort=sideways")
    assert r.status_code == 400


def test_sort_is_not_applied_to_019_files(tmp_path):
    db = copy_fixture("hermes-v22-marks.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    body = _search(client, "nginx", sort="newest")
    assert "relevance only" in body["notice"]


# -- notices tell what the Hermes of the file does --------------------------------------------


@pytest.mark.parametrize("fixture", NEW)
def test_no_notice_says_hermes_finds_nothing_when_it_found_something(clients, fixture):
    t = truth(fixture)
    client = clients(fixture)
    for name, asked in t["search_queries"].items():
        if asked["kwargs"]:
            continue
        notice = _search(client, asked["query"])["notice"] or ""
        assert "0.19" not in notice, (name, notice)
        if "finds nothing" in notice:
            assert t["search"][name]["ids"] == [], (name, notice)


def test_retries_say_why_they_answered(clients):
    body = _search(clients("hermes-v31-fresh.db"), "nginx qqqzzzxxx")
    assert "any of them" in body["notice"] and body["query"] == "nginx OR qqqzzzxxx"
    body = _search(clients("hermes-v26-fresh.db"), "youer")
    assert "inside words" in body["notice"] and len(body["results"]) == 1
    assert _search(clients("hermes-v26-fresh.db"), "nginx qqqzzzxxx")["results"] == []


# -- planning and classing ---------------------------------------------------------------------


def test_routes_of_cjk_queries():
    r22, r20 = rules_for(31), rules_for(26)
    ready = IndexState(cjk="ready")

    def route(q, rules=r22, index=ready, **kw):
        p = plan(q, has_fts=True, has_trigram=True, dialect="v26", rules=rules, index=index, **kw)
        return p.route

    assert route("项目") == "cjk"
    assert route("库") == "like"  # a lone character: no bigram
    assert route("项目", index=IndexState()) == "like"  # two characters: no trigram
    assert route("大别山", index=IndexState()) == "trigram"
    assert route("大别山", roles=["tool"]) == "like_bool"  # 0.22: tool searches read rows
    assert route("大别山", rules=r20, roles=["tool"]) == "like"
    assert route("大别山", sources=["cron"]) == "like"  # not in the substring indexes (0.22)
    assert route("大别山", rules=r20, sources=["cron"]) == "cjk"
    assert route("数据*", rules=r22) == "cjk"
    assert plan("数据*", has_fts=True, has_trigram=True, dialect="v26", rules=r22,
                index=ready).match == '"数据"'  # fmt: skip
    assert search_newer.or_relaxed('"docker networking" tls') == '"docker networking" OR tls'
    assert search_newer.or_relaxed("docker OR tls") is None
    assert search_newer.boolean_groups("python NOT java OR go") == [
        [("python", False), ("java", True)],
        [("go", False)],
    ]


def test_heavy_searches_are_classed_by_the_files_rules():
    facts = {"has_fts": True, "has_trigram": True, "dialect": "v26", "rules": rules_for(31)}
    assert work_class("/search", "q=billing&role=tool", facts) == "heavy"
    assert work_class("/search", "q=billing", facts) == "cheap"
    older = {**facts, "rules": rules_for(26)}
    assert work_class("/search", "q=billing&role=tool", older) == "cheap"
    cjk = {**facts, "index": IndexState(cjk="ready")}
    assert work_class("/search", "q=" + "项目", cjk) == "heavy"  # read from its documents
    p = plan("nginx", has_fts=True, has_trigram=True, dialect="v26", rules=rules_for(31))
    assert not is_costly(p)


def test_the_search_form_offers_the_orders_hermes_offers(clients, tmp_path):
    page = clients("hermes-v26-fresh.db").get("/search?q=nginx&sort=oldest").get_data(as_text=True)
    assert 'name="sort"' in page and '<option value="oldest" selected>' in page
    db = copy_fixture("hermes-v22-marks.db", tmp_path)
    page = (
        make_app(db, tmp_path / "inst").test_client().get("/search?q=nginx").get_data(as_text=True)
    )
    assert 'name="sort"' not in page


def test_snippets_come_from_the_best_column_on_the_v23_layout(clients):
    """The v23 index keeps content, tool name and tool calls apart: a hit in a tool call is
    marked there, as Hermes's snippet(…, -1, …) marks it (column 0 alone showed no match)."""
    hits = _search(clients("hermes-v31-fresh.db"), "kubectl")["results"]
    assert hits and all(">>>kubectl<<<" in h["snippet"] for h in hits)


def test_hidden_rows_are_not_counted_either(tmp_path):
    """An unfiltered search is counted on the index alone, less the rows it must not show:
    0.22's hidden rows are among those (a hidden row written by the gateway is found by
    Hermes's index, never by its search)."""
    db = copy_fixture("hermes-v31-fresh.db", tmp_path)
    conn = sqlite3.connect(db)
    for kind, word in (("hidden", "zebrafishhidden"), (None, "zebrafishshown")):
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp, display_kind) "
            "VALUES ('g_hidden_rows', 'user', ?, 1795000000, ?)",
            (f"a note about {word}", kind),
        )
    conn.commit()
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    hidden = _search(client, "zebrafishhidden")
    assert hidden["results"] == [] and hidden["total"] == 0
    shown = _search(client, "zebrafishshown")
    assert len(shown["results"]) == 1 and shown["total"] == 1
