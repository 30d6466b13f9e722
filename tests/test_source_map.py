"""Searches filtered by source, counted and ranked with each message's source read from an
in-memory map (webui.db.search.source_map) instead of a join per hit: every page, total and order
equals the full query's, on every real Hermes database, beside writes made after the map was
read, rewinds, and a map that is wrong."""

from __future__ import annotations

import sqlite3
from urllib.parse import quote

import pytest

from support import (
    FIXTURE_NAMES,
    WAIT_BOUND_S,
    copy_fixture,
    make_app,
    minimal_db,
    patch_search_limit,
    sql,
)
from webui.db.search import scope as search_scope
from webui.web.logbooks import get_logbook


def _answer(client, url: str) -> tuple:
    body = client.get(url).get_json()
    return (
        [r["message_id"] for r in body["results"]],
        body["total"],
        body["total_capped"],
        body["ranked"],
        bool(body["next"]),
    )


def _searches(db) -> list[str]:
    sources = [
        r[0] for r in sql(db, "SELECT source FROM sessions GROUP BY 1 ORDER BY COUNT(*) DESC")
    ]
    words = (
        [
            r[0]
            for r in sql(
                db,
                "SELECT term FROM messages_fts_v WHERE length(term) > 3 ORDER BY doc DESC LIMIT 3",
            )
        ]
        if sql(db, "SELECT 1 FROM sqlite_master WHERE name = 'messages_fts_v'")
        else []
    )
    queries = [*words, "the", "deploy*", '"docker compose"', "error OR fail*", "zzzqqq"]
    filters = [
        f"source={quote(sources[0])}",
        f"source={quote(sources[-1])}",
        f"exclude_source={quote(sources[0])}",
        f"source={quote(sources[0])}&source={quote(sources[1])}",
        "source=no-such-source",
    ]
    return [
        f"/search?format=json&q={quote(q)}&{f}&page={p}"
        for q in queries
        for f in filters
        for p in (1, 2)
    ]


def _vocab(db) -> None:
    """A vocabulary table over the index (in our copy only), to search its common words."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts_v USING fts5vocab(messages_fts, row)"
        )


def _routes(monkeypatch) -> dict[str, int]:
    taken = {"map": 0, "full": 0}
    real = search_scope.Scoping.by_source

    def counting(self, *a, **kw):
        out = real(self, *a, **kw)
        if self.sources is not None and (a[2].sources or a[2].exclude_sources):
            taken["map" if out is not None else "full"] += 1
        return out

    monkeypatch.setattr(search_scope.Scoping, "by_source", counting)
    return taken


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_source_filtered_searches_equal_the_full_query(tmp_path, monkeypatch, name):
    db = copy_fixture(name, tmp_path)
    _vocab(db)
    urls = _searches(db)
    taken = _routes(monkeypatch)
    app = make_app(db, tmp_path / "a")
    client = app.test_client()
    got = {u: _answer(client, u) for u in urls}
    assert taken["map"] > len(urls) // 2  # the map answered (pages that fall back are rare)
    with app.app_context():
        get_logbook().search.scope.sources = None  # the full query for every search
    for u in urls:
        assert got[u] == _answer(client, u), u
    assert any(g[0] for g in got.values())


def test_newest_first_past_the_cap_equals_the_full_query(tmp_path, monkeypatch):
    """Past RANK_CAP matches the pages come newest first, on the map's route too."""
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    patch_search_limit(monkeypatch, "RANK_CAP", 25)
    taken = _routes(monkeypatch)
    app = make_app(db, tmp_path / "a")
    client = app.test_client()
    source = sql(db, "SELECT source FROM sessions GROUP BY 1 ORDER BY COUNT(*) DESC")[0][0]
    urls = [
        f"/search?format=json&q={q}&{f}={source}&page={p}"
        for q in ("the", "a*")
        for f in ("source", "exclude_source")
        for p in (1, 2, 3)
    ]
    got = {u: _answer(client, u) for u in urls}
    assert taken["map"] > 0
    assert any(not g[3] and g[2] for g in got.values())  # some were past the cap
    with app.app_context():
        get_logbook().search.scope.sources = None
    for u in urls:
        assert got[u] == _answer(client, u), u


@pytest.mark.parametrize("behind", [False, True], ids=["caught-up", "map-behind"])
def test_writes_after_the_map_was_read_are_counted_and_rewinds_are_not_shown(
    tmp_path, monkeypatch, behind
):
    """Messages written after the map was read (an existing session, and a new session of
    another source) are found at once, whether the map caught up with them or they are
    newer than it (written between its catching up and the search: checked in SQL); a
    message rewound a moment ago is never shown, even while the shared set of hidden ids
    does not know it yet."""
    from webui.db.search.source_map import SourceMap

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "a")
    client = app.test_client()
    cli, other = "cli", "telegram"
    url = f"/search?format=json&q=zebrafish&source={other}"
    assert _answer(client, url)[1] == 0  # the map is read now
    if behind:
        monkeypatch.setattr(SourceMap, "_catch_up", lambda self, most: True)
    taken = _routes(monkeypatch)
    with sqlite3.connect(db) as conn:
        t0 = conn.execute("SELECT MAX(timestamp) FROM messages").fetchone()[0]
        old = conn.execute(f"SELECT id FROM sessions WHERE source = '{other}' LIMIT 1").fetchone()[
            0
        ]
        conn.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES ('zz-new', ?, ?)", (cli, t0)
        )
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
            [(old, "zebrafish one", t0 + 1), ("zz-new", "zebrafish two", t0 + 2)]
            + [(old, f"zebrafish {i}", t0 + 3 + i) for i in range(5)],
        )
    assert _answer(client, url)[1] == 6
    assert _answer(client, f"/search?format=json&q=zebrafish&source={cli}")[1] == 1
    assert _answer(client, f"/search?format=json&q=zebrafish&exclude_source={cli}")[1] == 6
    assert taken == {"map": 3, "full": 0}  # answered on the map's route, not by falling back
    first = _answer(client, url)[0][0]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE messages SET active = 0 WHERE id = ?", (first,))
    shown = _answer(client, url)[0]
    assert shown and first not in shown
    with app.app_context():
        get_logbook().search.scope.sources = None
    assert _answer(client, url)[0] == shown


def test_a_wrong_map_never_shows_a_row_of_another_source(tmp_path):
    """The rows a page shows are checked in SQL: a map that says every message is
    telegram's gives a wrong count at worst, never a hit of another source on the page."""
    db = copy_fixture("hermes-v11.db", tmp_path)
    app = make_app(db, tmp_path / "a")
    client = app.test_client()
    url = "/search?format=json&q=the&source=telegram"
    right = _answer(client, url)
    with app.app_context():
        m = get_logbook().search.sources
        code = m._code_of["telegram"]
        for i in range(len(m._codes)):
            m._codes[i] = code
    body = client.get(url).get_json()
    assert {r["source"] for r in body["results"]} == {"telegram"}
    assert [r["message_id"] for r in body["results"]] == right[0]


def test_no_map_for_ids_that_may_be_reused(tmp_path):
    """Without AUTOINCREMENT a deleted newest id can come back in another session: no map,
    the full query answers."""
    db = minimal_db(
        tmp_path / "state.db",
        """
        CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id);
        INSERT INTO sessions VALUES ('s1', 'cli', 1), ('s2', 'telegram', 1);
        INSERT INTO messages VALUES (1, 's1', 'user', 'docker is down', 2),
                                    (2, 's2', 'user', 'docker again', 3);
        INSERT INTO messages_fts (rowid, content) SELECT id, content FROM messages;
        """,
    )
    app = make_app(db, tmp_path / "inst")
    body = app.test_client().get("/search?q=docker&source=telegram&format=json").get_json()
    assert [r["message_id"] for r in body["results"]] == [2]
    with app.app_context():
        assert not get_logbook().search.sources.ready()


@pytest.mark.slow  # a database above the in-request map size
def test_a_large_database_is_mapped_in_the_background(tmp_path, monkeypatch):
    """Above BUILD_HERE_MAX messages the first filtered search does not wait for the map: it
    takes the full route and starts the build behind it; the start-up warmer builds it too."""
    import time

    from webui.db import start_rollup_warmer
    from webui.db.search import source_map

    monkeypatch.setattr(source_map, "BUILD_HERE_MAX", 0)
    db = copy_fixture("hermes-v22.db", tmp_path)
    taken = _routes(monkeypatch)
    app = make_app(db, tmp_path / "a")
    client = app.test_client()
    url = "/search?format=json&q=the&source=telegram"
    first = _answer(client, url)
    assert taken == {"map": 0, "full": 1}
    with app.app_context():
        m = get_logbook().search.sources
        deadline = time.monotonic() + WAIT_BOUND_S
        while not m.ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert m.ready()
    assert _answer(client, url) == first
    assert taken == {"map": 1, "full": 1}

    warmed = make_app(db, tmp_path / "b")
    with warmed.app_context():
        lb = get_logbook()
        assert not lb.search.sources.ready()
        start_rollup_warmer(warmed, lb).join(60)
        assert lb.search.sources.ready()
