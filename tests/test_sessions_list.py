"""The sessions list against independent SQL: several sources at once, and facet counts that
honour every filter but their own."""

from __future__ import annotations

import json

import pytest

from support import DATA, WAIT_BOUND_S, copy_fixture, make_app, sql
from support.http import follow


def _archived_clause(db) -> str:
    has = sql(db, "SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'archived'")
    return " AND COALESCE(archived, 0) = 0" if has else ""


def _top_sources(db, n=2):
    return [
        r[0]
        for r in sql(
            db,
            f"SELECT source FROM sessions WHERE 1{_archived_clause(db)} "
            "GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT ?",
            (n,),
        )
    ]


def test_two_sources_at_once(fx):
    db, client = fx
    a, b = _top_sources(db)
    rows = follow(client, f"/sessions?format=json&rows=all&source={a}&source={b}", "sessions")
    expected = {
        r[0]
        for r in sql(
            db, f"SELECT id FROM sessions WHERE source IN (?, ?){_archived_clause(db)}", (a, b)
        )
    }
    assert {r["id"] for r in rows} == expected
    assert {r["source"] for r in rows} == {a, b}


@pytest.mark.parametrize("other", ["model", "state", "q"])
def test_facets_count_under_every_filter_but_their_own(fx, other):
    db, client = fx
    a, b = _top_sources(db)
    clause, value = {
        "model": (
            "model = ?",
            sql(
                db,
                "SELECT model FROM sessions WHERE model IS NOT NULL "
                "GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1",
            )[0][0],
        ),
        "state": ("ended_at IS NOT NULL", "ended"),
        "q": ("(title LIKE '%' || ? || '%' OR id LIKE ? || '%')", "a"),
    }[other]
    params = {"model": (value,), "state": (), "q": (value, value)}[other]
    # the source filter itself is ignored by the source facet: ticking a source shows what
    # ticking another would add
    body = client.get(
        "/sessions", query_string={"format": "json", "rows": "all", other: value, "source": a}
    ).get_json()
    expected = dict(
        sql(
            db,
            f"SELECT source, COUNT(*) FROM sessions WHERE {clause}"
            f"{_archived_clause(db)} GROUP BY 1",
            params,
        )
    )
    facets = {k: v for k, v in body["facets"]["source"].items() if v}
    assert facets == expected, (other, value)
    assert facets.get(b, 0) == expected.get(b, 0)


# -- Hermes's rows, compared with what Hermes 0.19.0 answered (tests/data/hermes/) ----------

LIST_TRUTH = json.loads((DATA / "hermes" / "list_truth.json").read_text())


@pytest.mark.parametrize("name", sorted(LIST_TRUTH))
@pytest.mark.parametrize(
    "query", ["", "source=telegram", "source=tool", "archived=include", "archived=only"]
)
def test_default_rows_equal_recorded_hermes(tmp_path, name, query):
    """Rows, root start times, tip titles and previews equal list_sessions_rich's (recorded;
    the oracle tier re-checks the recording against live Hermes)."""
    db = copy_fixture(name, tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    ours = {r["id"]: r for r in follow(client, f"/sessions?format=json&{query}", "sessions")}
    theirs = LIST_TRUTH[name][query]
    assert sorted(ours) == sorted(t["id"] for t in theirs)
    for t in theirs:
        o = ours[t["id"]]
        assert (o["started_at"], o["title"], o["preview"], o["message_count"]) == (
            t["started_at"],
            t["title"],
            t["preview"],
            t["message_count"],
        ), t["id"]
        assert o.get("lineage_root_id") == t["lineage_root_id"]
    order = [r["id"] for r in follow(client, f"/sessions?format=json&{query}", "sessions")]
    assert [ours[i]["started_at"] for i in order] == sorted(
        (t["started_at"] for t in theirs), reverse=True
    )


def test_shared_counts_follow_new_sessions_and_our_own_changes(tmp_path):
    """Facets and counts are shared for a few seconds (a full scan on big files), but a new
    session from the gateway or a change made through Logbook shows at once."""
    import sqlite3
    import time

    from support.http import post

    db = copy_fixture("hermes-v22.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()

    def telegram() -> int:
        return client.get("/sessions?format=json").get_json()["facets"]["source"]["telegram"]

    before = telegram()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES ('fresh-1', 'telegram', ?)",
            (time.time(),),
        )
    assert telegram() == before + 1
    sid = sql(
        db,
        "SELECT id FROM sessions WHERE source = 'telegram' AND parent_session_id IS NULL AND archived = 0 AND id != 'fresh-1' LIMIT 1",
    )[0][0]
    assert post(client, f"/sessions/{sid}/delete", {}, htmx=True).status_code == 200
    assert telegram() == before


def test_during_a_prune_figures_catch_up_in_the_background_and_end_exact(tmp_path):
    """A prune's batches do not make every list request recount the table: the previous
    facets are served while one background thread counts anew; the prune's end (a hard
    change) makes them exact at once. The rows themselves are always fresh."""
    import sqlite3
    import time

    from webui.web.logbooks import get_logbook

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    client = app.test_client()

    def telegram() -> tuple[int, list[str]]:
        body = client.get("/sessions?format=json&source=telegram&limit=200").get_json()
        return body["facets"]["source"]["telegram"], [r["id"] for r in body["sessions"]]

    before, rows = telegram()
    gone = rows[0]
    with app.app_context():
        lb = get_logbook()
        with sqlite3.connect(db) as conn:  # as one batch of a prune would
            conn.execute(
                "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?", (gone,)
            )
            conn.execute("DELETE FROM messages WHERE session_id = ?", (gone,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (gone,))
        lb.sessions.invalidate(soft=True)
        n, rows = telegram()
        assert gone not in rows  # the rows: fresh
        assert n == before  # the count: the previous one, while it is counted again
        deadline = time.monotonic() + WAIT_BOUND_S
        while telegram()[0] != before - 1:
            assert time.monotonic() < deadline, "the background count never landed"
            time.sleep(0.05)
        lb.sessions.invalidate(soft=True)
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO sessions (id, source, started_at) VALUES ('p-1', 'telegram', ?)",
                (time.time(),),
            )
        lb.sessions.invalidate()  # the prune's end
        assert telegram()[0] == before


def test_shared_figures_are_counted_once_by_a_crowd_and_served_while_recounted(tmp_path):
    """Figures that scan every session row: a crowd of requests that finds one missing counts
    it once and all get that count; when its key moved (a session appeared) one request
    counts anew while the others get the previous count; past its ttl with the same key, the
    value is served while one background thread counts again."""
    import sqlite3
    import threading
    import time

    from webui.keep import Policy
    from webui.web.logbooks import get_logbook

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    calls = []

    def slow_count() -> int:
        calls.append(1)
        time.sleep(0.2)
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM sessions WHERE source = 'cli'").fetchone()[0]

    def crowd(ttl: float) -> list[int]:
        got: list[int] = []

        def one() -> None:
            with app.app_context():
                got.append(
                    lb.sessions.shared(
                        "n", slow_count, Policy(ttl=ttl, stale_while_revalidate=60.0)
                    )
                )

        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return got

    def write(statement: str, *params) -> None:
        with sqlite3.connect(db) as conn:
            conn.execute(statement, params)

    with app.app_context():
        lb = get_logbook()
        first = crowd(ttl=60)
        assert len(first) == 8 and set(first) == {first[0]} and len(calls) == 1
        # Another writer adds a session: the key moves.
        write("INSERT INTO sessions (id, source, started_at) VALUES ('c-1', 'cli', ?)", time.time())
        moved = crowd(ttl=60)
        # The request that noticed counts anew; the ones arriving meanwhile get the
        # previous count rather than queue behind it; it is counted once.
        assert first[0] + 1 in moved and set(moved) <= {first[0], first[0] + 1}
        assert len(calls) == 2
        assert (
            lb.sessions.shared("n", slow_count, Policy(ttl=60.0, stale_while_revalidate=60.0))
            == first[0] + 1
        )  # exact from now on
        assert len(calls) == 2
        write("UPDATE sessions SET source = 'discord' WHERE id = 'c-1'")  # in place: same key
        assert crowd(ttl=0) == [first[0] + 1] * 8  # the aged value, served at once ...
        deadline = time.monotonic() + WAIT_BOUND_S
        while (
            lb.sessions.shared("n", slow_count, Policy(ttl=60.0, stale_while_revalidate=60.0))
            != first[0]
        ):
            assert time.monotonic() < deadline, "the background count never landed"
            time.sleep(0.05)
        assert len(calls) == 3  # ... while exactly one thread counted again


@pytest.mark.parametrize("name", ["hermes-v8.db", "hermes-v11.db", "hermes-v22.db"])
def test_kept_orders_follow_appends_as_a_fresh_order_does(tmp_path, name):
    """Orders no index serves (last activity, tokens, cost, messages) are kept between
    requests and, when messages were only appended, moved for just the sessions that got them
    (and the compression roots whose tip they are): each must equal the order a fresh server
    works out, in both row sets, for appends at the newest end, in the middle of the order,
    and to a chain's tip, each written as Hermes does (message, counters, tokens and cost in
    one transaction)."""
    import sqlite3

    db = copy_fixture(name, tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    views = [
        (sort, rows)
        for sort in ("-last_active", "-tokens", "cost", "-messages")
        for rows in ("all", "hermes")
    ]

    def order(c, sort: str, rows: str) -> list[str]:
        return [
            r["id"] for r in follow(c, f"/sessions?format=json&sort={sort}&rows={rows}", "sessions")
        ]

    def fresh(sort: str, rows: str) -> list[str]:
        other = make_app(db, tmp_path / f"fresh-{len(list(tmp_path.iterdir()))}")
        return order(other.test_client(), sort, rows)

    before = {view: order(client, *view) for view in views}
    chain_tip = sql(
        db,
        "SELECT c.id FROM sessions p JOIN sessions c ON c.parent_session_id = p.id "
        "WHERE p.end_reason = 'compression' AND c.end_reason IS NULL ORDER BY c.id LIMIT 1",
    )
    ids = before[("-last_active", "all")]
    lo, hi = sql(db, "SELECT MIN(timestamp), MAX(timestamp) FROM messages")[0]
    writes = [(ids[-1], hi + 60, 10**7), (ids[len(ids) // 2], (lo + hi) / 2, 5_000)]
    if chain_tip:
        writes.append((chain_tip[0][0], hi + 120, 10**8))
    for session_id, at, tokens in writes:
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO messages (session_id, role, content, timestamp) "
                "VALUES (?, 'user', 'appended', ?)",
                (session_id, at),
            )
            conn.execute(
                "UPDATE sessions SET message_count = COALESCE(message_count, 0) + 40, "
                "input_tokens = COALESCE(input_tokens, 0) + ?, "
                "estimated_cost_usd = COALESCE(estimated_cost_usd, 0) + ? WHERE id = ?",
                (tokens, tokens / 1e5, session_id),
            )
        for view in views:
            assert order(client, *view) == fresh(*view), (session_id, view)
    for view in views:
        assert order(client, *view) != before[view], view
    assert order(client, "-last_active", "all")[: 1 + bool(chain_tip)][-1] == ids[-1]


def test_each_source_lists_newest_first_whichever_index_serves_it(fx):
    """A common source is listed by walking the start-time index, a rare one by the source
    index: both give SQL's order, page after page."""
    db, client = fx
    sources = [r[0] for r in sql(db, "SELECT DISTINCT source FROM sessions")]
    for source in sources:
        got = [
            r["id"]
            for r in follow(
                client, f"/sessions?format=json&rows=all&source={source}&limit=7", "sessions"
            )
        ]
        assert got == [
            r[0]
            for r in sql(
                db,
                f"SELECT id FROM sessions WHERE source = ?{_archived_clause(db)} "
                "ORDER BY started_at DESC, id DESC",
                (source,),
            )
        ], source


def test_figures_recounted_in_the_background_are_counted_by_the_apps_own_reader(tmp_path):
    """During a prune (soft changes) a page gets the previous figures while a background
    thread counts anew. That thread needs the app (its engine) like any request: without it
    every background count failed, was dropped, and the next page counted in line."""
    import sqlite3
    import time

    from webui.db.sessions.store import SessionQuery
    from webui.web.logbooks import get_logbook

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    q = SessionQuery.from_args({})

    def counts(lb) -> set:
        return set(lb.sessions.cache.snapshot("shared:SELECT COUNT").values())

    with app.test_request_context("/sessions"):
        lb = get_logbook()
        n0 = lb.sessions.count(q)[0]
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO sessions (id, source, started_at, message_count) "
            "VALUES ('bg-1', 'cli', ?, 1)",
            (time.time(),),
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) "
            "VALUES ('bg-1', 'user', 'hello', ?)",
            (time.time(),),
        )
    lb.sessions.invalidate(soft=True)  # as each batch of a prune does
    with app.test_request_context("/sessions"):
        assert lb.sessions.count(q)[0] == n0  # the previous figure, at once
    deadline = time.monotonic() + WAIT_BOUND_S
    while n0 + 1 not in counts(lb):  # no request asks again: only the background can land it
        assert time.monotonic() < deadline, f"the background count never landed: {counts(lb)}"
        time.sleep(0.05)
    lb.sessions.invalidate()
    with app.test_request_context("/sessions"):
        assert lb.sessions.count(q)[0] == n0 + 1  # and it is what a fresh count says


def test_a_kept_order_checks_its_page_with_only_that_pages_tips(tmp_path, monkeypatch):
    """The kept last-activity order checks the page's rows against the filters with the tips
    of just those rows (not every chain's): pages equal those checked with every tip, also
    under filters on values a compression root takes from its tip (model, end reason)."""
    from webui.db.sessions.store import SessionStore

    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    models = [r[0] for r in sql(db, "SELECT DISTINCT model FROM sessions WHERE model IS NOT NULL")]
    urls = ["/sessions?sort=-last_active&format=json&limit=7"]
    urls += [f"/sessions?sort=-last_active&format=json&model={m}" for m in models]
    urls += ["/sessions?sort=-last_active&format=json&end_reason=compression"]

    def pages(client):
        out = []
        for url in urls:
            body = client.get(url).get_json()
            out.append([r["id"] for r in body["sessions"]])
            if body.get("next"):
                out.append(
                    [
                        r["id"]
                        for r in client.get(body["next"] + "&format=json").get_json()["sessions"]
                    ]
                )
        return out

    restricted = pages(make_app(db, tmp_path / "a").test_client())
    real = SessionStore.source_sql
    seen = []

    def every_tip(self, q, uses="t.", only=None):
        seen.append(only)
        return real(self, q, uses)

    monkeypatch.setattr(SessionStore, "source_sql", every_tip)
    assert pages(make_app(db, tmp_path / "b").test_client()) == restricted
    assert any(o for o in seen), "the page check passed only its own sessions"
    assert sum(len(p) for p in restricted) > 20


def test_the_sessions_token_is_read_again_only_after_a_commit(tmp_path, monkeypatch):
    """The token that says whether shared figures still hold (how many sessions, the newest
    start) counts every session's index entry; while nobody commits (SQLite's data_version
    stands still) it is not read again, and the first request after a commit reads it."""
    import sqlite3
    import time

    from webui.db.reader import Reader

    db = copy_fixture("hermes-v22.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    reads = []
    real_one = Reader.one

    def counting(self, statement, params=(), **kw):
        if "COUNT(*) AS n, MAX(started_at) AS s FROM sessions" in statement:
            reads.append(statement)
        return real_one(self, statement, params, **kw)

    monkeypatch.setattr(Reader, "one", counting)

    def telegram() -> int:
        return client.get("/sessions?format=json").get_json()["facets"]["source"]["telegram"]

    before = telegram()
    first = len(reads)
    assert first >= 1
    for _ in range(3):
        assert telegram() == before
    assert len(reads) == first
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES ('fresh-2', 'telegram', ?)",
            (time.time(),),
        )
    assert telegram() == before + 1
    assert len(reads) == first + 1


def test_the_first_list_after_a_restart_starts_from_what_was_kept(tmp_path, monkeypatch):
    """Hermes's chains and the menus' counts (reads of every session row: seconds on a big
    file whose pages are not cached) are kept in the instance folder; after a restart the
    first list is answered from them, the same as a fresh reading, and a new session makes
    them fresh."""
    import sqlite3
    import threading
    import time

    from webui.db.sessions.store import SessionStore

    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    first = make_app(db, tmp_path / "inst").test_client().get("/sessions?format=json").get_json()
    kept = list((tmp_path / "inst").glob("kept-*/*.json"))
    assert len(kept) >= 3
    walks = []
    real = SessionStore._walk_chains
    monkeypatch.setattr(
        SessionStore,
        "_walk_chains",
        lambda self: (
            walks.append(threading.current_thread() is threading.main_thread()) or real(self)
        ),
    )
    again = make_app(db, tmp_path / "inst").test_client().get("/sessions?format=json").get_json()
    assert again["sessions"] == first["sessions"] and again["facets"] == first["facets"]
    # No chains walk inside the request itself (one may run behind it, to refresh).
    assert not any(walks)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES ('after-restart', 'telegram', ?)",
            (time.time(),),
        )
    third = make_app(db, tmp_path / "inst").test_client().get("/sessions?format=json").get_json()
    assert third["facets"]["source"]["telegram"] == first["facets"]["source"]["telegram"] + 1
