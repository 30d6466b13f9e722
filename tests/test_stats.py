"""Statistics: every panel equals SQL over the same file, with and without filters."""

from __future__ import annotations

import sqlite3
from datetime import datetime

import pytest

from support import WAIT_BOUND_S, copy_fixture, make_app, sql

KINDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
COST = "COALESCE(actual_cost_usd, estimated_cost_usd, 0)"


def filters(db):
    src = sql(db, "SELECT source FROM sessions GROUP BY 1 ORDER BY COUNT(*) DESC")[0][0]
    model = sql(
        db, "SELECT model FROM sessions WHERE model IS NOT NULL GROUP BY 1 ORDER BY COUNT(*) DESC"
    )[0][0]
    lo, hi = sql(db, "SELECT MIN(started_at), MAX(started_at) FROM sessions")[0]
    mid = datetime.fromtimestamp((lo + hi) / 2).astimezone()
    since = mid.strftime("%Y-%m-%d")
    since_ts = datetime.strptime(since, "%Y-%m-%d").astimezone().timestamp()
    return [
        ("period=all", "1", ()),
        (f"period=all&source={src}", "source = ?", (src,)),
        (f"period=all&model={model}", "model = ?", (model,)),
        (f"since={since}", "started_at >= ?", (since_ts,)),
        (
            f"since={since}&source={src}&model={model}",
            "started_at >= ? AND source = ? AND model = ?",
            (since_ts, src, model),
        ),
    ]


def test_totals_equal_sql(fx):
    db, client = fx
    for qs, where, params in filters(db):
        t = client.get(f"/stats?{qs}&format=json").get_json()["totals"]
        (row,) = sql(
            db,
            "SELECT COUNT(*), SUM(COALESCE(message_count,0)), "
            "SUM(COALESCE(api_call_count,0)), "
            + ", ".join(f"SUM(COALESCE({k},0))" for k in KINDS)
            + f", SUM(COALESCE(estimated_cost_usd,0)), SUM(COALESCE(actual_cost_usd,0)), "
            f"SUM({COST}) FROM sessions WHERE {where}",
            params,
        )
        row = [v or 0 for v in row]
        assert [t["sessions"], t["messages"], t["api_calls"], *(t[k] for k in KINDS)] == row[:8], qs
        assert t["estimated_cost_usd"] == pytest.approx(row[8], abs=1e-9)
        assert t["actual_cost_usd"] == pytest.approx(row[9], abs=1e-9)
        assert t["cost_usd"] == pytest.approx(row[10], abs=1e-9)
        assert t["total_tokens"] == sum(row[3:7])
        by_status = {r["status"]: r for r in t["cost_by_status"]}
        for status, n, cost in sql(
            db,
            f"SELECT COALESCE(cost_status, 'none'), COUNT(*), SUM({COST}) "
            f"FROM sessions WHERE {where} GROUP BY 1",
            params,
        ):
            assert by_status[status]["sessions"] == n
            assert by_status[status]["cost_usd"] == pytest.approx(cost, abs=1e-9)
        assert sum(r["cost_usd"] for r in t["cost_by_status"]) == pytest.approx(t["cost_usd"])


def test_the_headline_compares_with_the_period_just_before(fx):
    """``previous``: the same filters over the same length of time just before the period,
    counted straight from the rows; all time has nothing before it."""
    db, client = fx
    for qs in ("period=30", "period=365&source=cli", "since=2026-01-01&until=2026-03-31"):
        r = client.get(f"/stats?{qs}&format=json").get_json()
        prev = r["previous"]
        start = r["query"]["since"]
        end = r["query"]["until"] or r["as_of"]
        assert prev["until"] == pytest.approx(start)
        assert prev["since"] == pytest.approx(start - (end - start), abs=5)
        where = "started_at >= ? AND started_at < ?" + (
            " AND source = 'cli'" if "cli" in qs else ""
        )
        (n, cost) = sql(
            db,
            f"SELECT COUNT(*), COALESCE(SUM({COST}), 0) FROM sessions WHERE {where}",
            (prev["since"], prev["until"]),
        )[0]
        assert prev["totals"]["sessions"] == n, qs
        assert prev["totals"]["cost_usd"] == pytest.approx(cost, abs=1e-9)
    assert client.get("/stats?period=all&format=json").get_json()["previous"] is None


@pytest.mark.parametrize(
    ("now", "before", "text", "direction"),
    [
        (12, 10, "+20%", "up"),
        (5, 10, "−50%", "down"),
        (10, 10, "same", "flat"),
        (3, 0, "new", "up"),
        (0, 0, "same", "flat"),
        (1000, 10, "100×", "up"),
    ],
)
def test_a_change_in_words(now, before, text, direction):
    from webui.present.headline import change

    got = change(now, before)
    assert (got["text"], got["dir"]) == (text, direction)
    assert change(now, None) is None


def has_table(db, name: str) -> bool:
    return bool(sql(db, "SELECT 1 FROM sqlite_master WHERE name = ?", (name,)))


def test_breakdowns_equal_sql(fx):
    db, client = fx
    for qs, where, params in filters(db):
        body = client.get(f"/stats?{qs}&format=json").get_json()
        for key, col in (
            ("by_model", "model"),
            ("by_source", "source"),
            ("by_provider", "billing_provider"),
        ):
            got = {
                r["key"]: (r["sessions"], round(r["cost_usd"], 9), r["input_tokens"])
                for r in body[key]
            }
            expected = {
                k: (n, round(c or 0, 9), i or 0)
                for k, n, c, i in sql(
                    db,
                    f"SELECT COALESCE({col}, '(none)'), COUNT(*), SUM({COST}), "
                    f"SUM(COALESCE(input_tokens, 0)) FROM sessions WHERE {where} GROUP BY 1",
                    params,
                )
            }
            if key == "by_model" and has_table(db, "session_model_usage"):
                # Hermes 0.19 adds auxiliary calls (task != '') into their model's row
                for model, cost, tokens in sql(
                    db,
                    "SELECT u.model, SUM(u.estimated_cost_usd), SUM(u.input_tokens) FROM "
                    "session_model_usage u WHERE u.task != '' AND u.session_id IN "
                    f"(SELECT id FROM sessions WHERE {where}) GROUP BY 1",
                    params,
                ):
                    n, c, i = expected.get(model, (0, 0, 0))
                    expected[model] = (n, round(c + cost, 9), i + tokens)
            assert got == expected, (qs, key)


def test_series_adds_up_to_totals(fx):
    db, client = fx
    for qs, _, _ in filters(db):
        body = client.get(f"/stats?{qs}&format=json").get_json()
        t = body["totals"]
        assert sum(r["sessions"] for r in body["series"]) == t["sessions"]
        for k in KINDS:
            assert sum(r[k] for r in body["series"]) == t[k]
        assert sum(r["cost_usd"] for r in body["series"]) == pytest.approx(t["cost_usd"])


def test_top_sessions_equal_sql(fx):
    db, client = fx
    body = client.get("/stats?period=all&format=json").get_json()
    expected = [r[0] for r in sql(db, f"SELECT id FROM sessions ORDER BY {COST} DESC LIMIT 10")]
    got = [r["id"] for r in body["top_sessions"]["cost"]]
    values = [r["value"] for r in body["top_sessions"]["cost"]]
    assert values == sorted(values, reverse=True)
    assert set(got[:5]) <= set(expected) or values[4] == values[5]
    tok = " + ".join(f"COALESCE({k}, 0)" for k in KINDS[:4])
    top = sql(db, f"SELECT MAX({tok}) FROM sessions")[0][0]
    assert body["top_sessions"]["tokens"][0]["value"] == top


def hermes_tool_counts(db, where: str, params) -> dict[str, int]:
    """Hermes 0.19's insights rule, written independently: per tool, the larger of its
    tool-result rows and the entries naming it in assistants' tool_calls lists."""
    import json as _json

    results = dict(
        sql(
            db,
            "SELECT m.tool_name, COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id "
            f"WHERE m.role = 'tool' AND m.tool_name IS NOT NULL AND {where} GROUP BY 1",
            params,
        )
    )
    entries: dict[str, int] = {}
    for (raw,) in sql(
        db,
        "SELECT m.tool_calls FROM messages m JOIN sessions s ON s.id = m.session_id "
        f"WHERE m.role = 'assistant' AND m.tool_calls IS NOT NULL AND {where}",
        params,
    ):
        try:
            calls = _json.loads(raw)
        except ValueError:
            continue
        for call in calls if isinstance(calls, list) else []:
            name = (call.get("function") or {}).get("name") if isinstance(call, dict) else None
            if isinstance(name, str):
                entries[name] = entries.get(name, 0) + 1
    return {t: max(results.get(t, 0), entries.get(t, 0)) for t in set(results) | set(entries)}


def test_tools_and_heatmap_equal_sql(fx):
    db, client = fx
    for qs, where, params in filters(db):
        body = client.get(f"/stats?{qs}&format=json").get_json()
        w = (
            where.replace("started_at", "s.started_at")
            .replace("source", "s.source")
            .replace("model", "s.model")
        )
        expected = hermes_tool_counts(db, w, params)
        assert {t["tool"]: t["calls"] for t in body["tools"]} == expected, qs
        total = sum(expected.values())
        for t in body["tools"]:
            assert t["share"] == pytest.approx(t["calls"] / total, abs=1e-6)
        heat = sql(
            db,
            "SELECT CAST(strftime('%w', m.timestamp, 'unixepoch') AS INT), "
            "CAST(strftime('%H', m.timestamp, 'unixepoch') AS INT), COUNT(*) "
            f"FROM messages m JOIN sessions s ON s.id = m.session_id WHERE {w} "
            "GROUP BY 1, 2",
            params,
        )
        assert {(c["dow"], c["hour"]): c["messages"] for c in body["heatmap"]} == {
            (d, h): n for d, h, n in heat
        }


def test_overview_is_hermes_sessions_stats(fx):
    db, client = fx
    o = client.get("/stats?format=json").get_json()["overview"]
    assert o["sessions"] == sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
    assert o["messages"] == sql(db, "SELECT COUNT(*) FROM messages")[0][0]
    assert {r["source"]: r["sessions"] for r in o["sessions_by_source"]} == dict(
        sql(db, "SELECT source, COUNT(*) FROM sessions GROUP BY 1")
    )
    assert {r["source"]: r["messages"] for r in o["messages_by_source"]} == dict(
        sql(
            db,
            "SELECT s.source, COUNT(*) FROM messages m JOIN sessions s ON "
            "s.id = m.session_id GROUP BY 1",
        )
    )
    assert o["size_bytes"] >= db.stat().st_size


def test_lineage_toggle_counts_conversations_once(fx):
    db, client = fx
    body = client.get("/stats?period=all&lineage=1&format=json").get_json()
    roots = sql(
        db,
        "WITH RECURSIVE fam(id, root) AS (SELECT id, id FROM sessions WHERE "
        "parent_session_id IS NULL OR parent_session_id NOT IN (SELECT id FROM sessions) "
        "UNION SELECT s.id, fam.root FROM sessions s JOIN fam ON s.parent_session_id = "
        "fam.id) SELECT COUNT(DISTINCT root) FROM fam",
    )[0][0]
    assert body["totals"]["conversations"] == roots
    assert body["totals"]["sessions"] == sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
    top = body["top_sessions"]["cost"][0]
    assert top["segments"] >= 1


def test_aux_usage_equals_sql(fx):
    db, client = fx
    body = client.get("/stats?period=all&format=json").get_json()
    has = sql(db, "SELECT 1 FROM sqlite_master WHERE name = 'session_model_usage'")
    if not has:
        assert body["aux_usage"] == []
        return
    expected = dict(
        sql(
            db,
            "SELECT COALESCE(NULLIF(task, ''), 'main'), SUM(api_call_count) "
            "FROM session_model_usage GROUP BY 1",
        )
    )
    got: dict = {}
    for r in body["aux_usage"]:
        got[r["task"]] = got.get(r["task"], 0) + r["api_calls"]
    assert got == expected


def test_pages_csv_and_bad_input(fx):
    db, client = fx
    for qs in ("", "period=7", "period=90", "period=365&lineage=1", "period=all&cost_by=source"):
        r = client.get(f"/stats?{qs}")
        assert r.status_code == 200 and b"<svg" in r.data
    r = client.get("/stats.csv?panel=by_source&period=all")
    assert r.status_code == 200 and r.mimetype == "text/csv"
    lines = r.get_data(as_text=True).splitlines()
    assert lines[0].startswith("key,sessions") and len(lines) - 1 == len(
        sql(db, "SELECT DISTINCT source FROM sessions")
    )
    for panel in ("totals", "series", "tools", "heatmap", "top_by_cost", "cost_by_status"):
        assert client.get(f"/stats.csv?panel={panel}").status_code == 200
    assert client.get("/stats?period=12").status_code == 400
    assert client.get("/stats?cost_by=moon").status_code == 400
    assert client.get("/stats.csv?panel=nope").status_code == 400
    assert client.get("/stats?since=not-a-date").status_code == 400
    # ...and the page says so beside the field, with the form still there to fix it
    page = client.get("/stats?since=not-a-date&until=2026-01-31").get_data(as_text=True)
    assert 'id="st-since-error"' in page and "not-a-date" in page
    assert 'id="st-since"' in page and 'aria-invalid="true"' in page
    assert client.get("/stats?since=not-a-date&format=json").get_json()["status"] == 400


def test_rollup_follows_appends_and_deletions(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    # Reports not reused across another connection's commits: each change is seen at once,
    # rows deleted from a session that gets nothing new included (the FTS index's row count
    # no longer matches, and every session's count is checked).
    client = make_app(db, tmp_path / "inst", LOGBOOK_STATS_REUSE_S=0).test_client()

    def tools():
        return {
            t["tool"]: t["calls"]
            for t in client.get("/stats?period=all&format=json").get_json()["tools"]
        }

    def truth():
        return hermes_tool_counts(db, "1", ())

    assert tools() == truth()
    conn = sqlite3.connect(db)
    sid = conn.execute("SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    with conn:
        for i in range(5):
            conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_name, timestamp) "
                "VALUES (?, 'tool', '{}', 'brand_new_tool', 1.8e9 + ?)",
                (sid, i),
            )
    assert tools() == truth() and tools()["brand_new_tool"] == 5
    victim = conn.execute(
        "SELECT session_id FROM messages WHERE tool_name IS NOT NULL "
        "GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1"
    ).fetchone()[0]
    with conn:
        conn.execute("DELETE FROM messages WHERE session_id = ?", (victim,))
    conn.close()
    assert tools() == truth()


@pytest.mark.parametrize("mode", ["hide", "only", "include"])
def test_archived_filter_reaches_the_tool_and_heatmap_panels(tmp_path, mode):
    """The rollup's panels take the archived flag from the live database (it changes after a
    session is rolled up): their totals follow the filter like every other figure."""
    from support import copy_fixture, make_app, sql

    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    r = client.get(f"/stats?format=json&period=all&archived={mode}")
    assert r.status_code == 200
    report = r.get_json()
    test = {"hide": "= 0", "only": "!= 0", "include": "IS NOT NULL OR 1"}[mode]
    want = sql(
        db,
        "SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id "
        f"WHERE COALESCE(s.archived, 0) {test}",
    )[0][0]
    assert sum(h["messages"] for h in report["heatmap"]) == want
    tool_rows = sql(
        db,
        "SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id WHERE "
        f"m.role = 'tool' AND COALESCE(s.archived, 0) {test}",
    )[0][0]
    assert sum(t["results"] for t in report["tools"]) <= tool_rows
    assert (
        report["totals"]["sessions"]
        == sql(db, f"SELECT COUNT(*) FROM sessions WHERE COALESCE(archived, 0) {test}")[0][0]
    )


def test_the_rollup_is_built_in_the_background_and_pages_never_wait_for_it(tmp_path):
    """From start-up a thread reads the history into the rollup; a stats request meanwhile
    answers at once with how far it got (and a progress notice that reloads itself), never
    queueing behind the thread."""
    import threading

    from webui.db import start_rollup_warmer
    from webui.web.logbooks import get_logbook

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    client = app.test_client()
    with app.app_context():
        lb = get_logbook()
        lb.rollup.lock.acquire()  # as if the warmer were in the middle of a step
        try:
            done = threading.Event()
            result = {}

            def ask():
                result["r"] = client.get("/stats?period=all")
                done.set()

            threading.Thread(target=ask).start()
            assert done.wait(WAIT_BOUND_S), "the page waited for the rollup's lock"
            page = result["r"].get_data(as_text=True)
            assert "rollup-progress" in page and 'hx-trigger="load delay:1500ms"' in page
        finally:
            lb.rollup.lock.release()
        start_rollup_warmer(app, lb).join(WAIT_BOUND_S)
        assert lb.rollup.coverage().complete
        # The reliability figures have a follower of their own (the digest), which a page
        # brings up to date within its budget: read to the end here, so no budget a busy
        # machine can outrun leaves its progress notice on the page.
        assert lb.digest.refresh(WAIT_BOUND_S).complete
    page = client.get("/stats?period=all").get_data(as_text=True)
    assert 'id="rollup-progress"' not in page
    # The notice's own poll, once the figures are whole, ends in a toast that says so.
    r = client.get(
        "/stats?period=all", headers={"HX-Request": "true", "HX-Trigger": "rollup-progress"}
    )
    assert "every message is now counted" in r.headers["HX-Trigger"]
    assert (
        "HX-Trigger" not in client.get("/stats?period=all", headers={"HX-Request": "true"}).headers
    )


def test_a_shared_report_never_outlives_a_write(tmp_path):
    """Reports are shared only while nobody commits: another connection's write is seen by
    the very next request."""
    db = copy_fixture("hermes-v22.db", tmp_path)
    # Reuse beside a writer off: every commit is seen by the very next request.
    client = make_app(db, tmp_path / "inst", LOGBOOK_STATS_REUSE_S=0).test_client()

    def tokens():
        return client.get("/stats?period=all&format=json").get_json()["totals"]["input_tokens"]

    before = tokens()
    assert tokens() == before
    conn = sqlite3.connect(db)
    with conn:  # a gateway's counter update: no session or message added
        conn.execute(
            "UPDATE sessions SET input_tokens = COALESCE(input_tokens, 0) + 1000000 "
            "WHERE id = (SELECT MIN(id) FROM sessions)"
        )
    conn.close()
    assert tokens() == before + 1000000


def test_beside_a_busy_writer_a_report_is_reused_for_seconds_and_says_when(tmp_path):
    """A gateway commits with every message: a report younger than LOGBOOK_STATS_REUSE_S is
    reused across those commits (one computation per few seconds however many readers),
    and it carries the moment it was computed."""
    import time

    db = copy_fixture("hermes-v22.db", tmp_path)
    client = make_app(db, tmp_path / "inst", LOGBOOK_STATS_REUSE_S=60).test_client()
    first = client.get("/stats?period=all&format=json").get_json()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE sessions SET input_tokens = COALESCE(input_tokens, 0) + 1000000 "
            "WHERE id = (SELECT MIN(id) FROM sessions)"
        )
    conn.close()
    again = client.get("/stats?period=all&format=json").get_json()
    assert again["totals"]["input_tokens"] == first["totals"]["input_tokens"]
    assert again["as_of"] == first["as_of"] <= time.time()


def _rollup_truth(db, where: str, params) -> dict:
    """Tools, heatmap and messages per source, straight from the messages."""
    heat = sql(
        db,
        "SELECT CAST(strftime('%w', m.timestamp, 'unixepoch') AS INT), "
        "CAST(strftime('%H', m.timestamp, 'unixepoch') AS INT), COUNT(*) "
        f"FROM messages m JOIN sessions s ON s.id = m.session_id WHERE {where} GROUP BY 1, 2",
        params,
    )
    return {
        "tools": hermes_tool_counts(db, where, params),
        "heatmap": {(d, h): n for d, h, n in heat if d is not None and h is not None},
    }


def _rollup_panels(body: dict) -> dict:
    return {
        "tools": {t["tool"]: t["calls"] for t in body["tools"]},
        "heatmap": {(c["dow"], c["hour"]): c["messages"] for c in body["heatmap"]},
    }


def test_daily_sums_give_the_panels_of_any_span(fx):
    """Whole days inside a period come from the rollup's daily sums, its first and last day
    session by session: cut anywhere (mid-day, before the first session, after the last,
    within one day), the tool and heatmap panels equal SQL over the messages."""
    import random
    from datetime import UTC

    db, client = fx
    lo, hi = sql(db, "SELECT MIN(started_at), MAX(started_at) FROM sessions")[0]
    rnd = random.Random(7)
    spans = [sorted(rnd.uniform(lo - 86400, hi + 86400) for _ in range(2)) for _ in range(5)]
    mid = (lo + hi) / 2
    spans += [[mid, mid + 3600], [lo - 10 * 86400, hi + 10 * 86400], [mid, None]]

    def stamp(t: float) -> str:
        return datetime.fromtimestamp(int(t), UTC).strftime("%Y-%m-%dT%H:%M:%S")

    for a, b in spans:
        qs = f"since={stamp(a)}" + (f"&until={stamp(b)}" if b is not None else "")
        body = client.get(f"/stats?{qs}&tz=UTC&format=json").get_json()
        where = "s.started_at >= ?" + (" AND s.started_at < ?" if b is not None else "")
        params = (int(a),) + ((int(b),) if b is not None else ())
        assert _rollup_panels(body) == _rollup_truth(db, where, params), qs


def test_the_daily_sums_are_added_up_in_index_order(tmp_path):
    """A period's tool and heatmap panels group the daily rows by tool and by (weekday,
    hour): the rollup keeps covering indexes in those orders, so no row is sorted first; an
    older rollup file gains them when it is next opened."""
    from webui.web.logbooks import get_logbook

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    with app.app_context():
        rollup = get_logbook().rollup
        rollup.refresh(5.0)
        conn = sqlite3.connect(rollup.path)
        conn.execute("DROP INDEX tools_day_by_tool")
        conn.execute("DROP INDEX hours_day_by_cell")
        conn.commit()
        conn.close()
        rollup.refresh(5.0)  # reopened: the indexes are back
        conn = sqlite3.connect(rollup.path)
        for query in (
            "SELECT tool_name, SUM(results), SUM(entries) FROM tools_day WHERE day > 0 GROUP BY 1",
            "SELECT dow, hour, SUM(n) FROM hours_day WHERE day > 0 GROUP BY 1, 2",
        ):
            plan = " ".join(r[-1] for r in conn.execute(f"EXPLAIN QUERY PLAN {query}"))
            assert "COVERING INDEX" in plan and "TEMP B-TREE" not in plan, plan
        conn.close()


def test_daily_sums_follow_new_sessions_and_new_messages(tmp_path):
    """The daily sums grow with every batch the rollup reads: messages added to a session it
    knows go to that session's day at once, a session it has not seen yet is added when the
    set of sessions is copied again; messages per source follow both."""
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    client = make_app(db, tmp_path / "inst", LOGBOOK_STATS_REUSE_S=0).test_client()
    lo, hi = sql(db, "SELECT MIN(started_at), MAX(started_at) FROM sessions")[0]
    since = datetime.fromtimestamp(int(lo + 2 * 86400)).strftime("%Y-%m-%dT%H:%M:%S")
    since_ts = datetime.fromisoformat(since).timestamp()

    def check():
        for qs, where, params in (
            ("period=all", "1", ()),
            (f"since={since}", "s.started_at >= ?", (since_ts,)),
        ):
            body = client.get(f"/stats?{qs}&format=json").get_json()
            assert _rollup_panels(body) == _rollup_truth(db, where, params), qs
        o = client.get("/stats?period=all&format=json").get_json()["overview"]
        assert {r["source"]: r["messages"] for r in o["messages_by_source"]} == dict(
            sql(
                db,
                "SELECT s.source, COUNT(*) FROM messages m JOIN sessions s ON "
                "s.id = m.session_id GROUP BY 1",
            )
        )

    check()
    conn = sqlite3.connect(db)
    old = conn.execute(
        "SELECT id FROM sessions WHERE started_at > ? ORDER BY started_at LIMIT 1",
        (lo + 5 * 86400,),
    ).fetchone()[0]
    with conn:  # a known session, well inside the period: its day's sums grow
        for i in range(4):
            conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_name, timestamp) "
                "VALUES (?, 'tool', '{}', 'daily_tool', ?)",
                (old, hi + 60 * i),
            )
    check()
    with conn:  # a session the rollup has never seen, with its messages
        conn.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES ('fresh-one', 'discord', ?)",
            (hi + 100,),
        )
        for i in range(3):
            conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_name, timestamp) "
                "VALUES ('fresh-one', 'tool', '{}', 'daily_tool', ?)",
                (hi + 200 + i,),
            )
    conn.close()
    check()
    body = client.get("/stats?period=all&format=json").get_json()
    assert {t["tool"]: t["calls"] for t in body["tools"]}["daily_tool"] == 7


def test_half_a_report_beside_it_shares_the_app_the_deadline_and_its_errors(tmp_path):
    """A report's second half runs on a side thread in a copy of the request's context: it
    reads the same profile's database, its queries stop at the request's deadline, and its
    error reaches the request. With every side thread busy, a half runs in the caller."""
    import threading

    from webui import threads
    from webui.db import QueryTimeout, deadline
    from webui.web.logbooks import get_logbook

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    here = threading.current_thread().name
    with app.app_context():
        lb = get_logbook()
        half = threads.Beside(
            lambda: (threading.current_thread().name, get_logbook() is lb, lb.stats.counts())
        )
        where, same_book, counts = half.result()
        assert half.beside and where != here and same_book
        assert counts["sessions"] == sql(db, "SELECT COUNT(*) FROM sessions")[0][0]

        endless = (
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT MAX(x) FROM c"
        )
        deadline.begin(0.2)
        try:
            half = threads.Beside(lambda: lb.reader.scalar(endless))
            with pytest.raises(QueryTimeout):
                half.result()
        finally:
            deadline.end()
        assert half.beside

        release = threading.Event()
        busy = [threads.Beside(release.wait) for _ in range(threads.BESIDE_THREADS)]
        try:
            inline = threads.Beside(lambda: threading.current_thread().name)
            assert not inline.beside and inline.result() == here
        finally:
            release.set()
            for b in busy:
                b.result()


def test_the_rollup_panels_share_one_connection(tmp_path):
    """Opening a rollup connection attaches the state database: the panels of one report
    open one between them, and give the same figures as with one each."""
    from webui.web.logbooks import get_logbook

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    with app.app_context():
        rollup = get_logbook().rollup
        rollup.refresh(5.0)
        opened = []
        connect = rollup._connect  # the one place the panels open the rollup's file
        rollup._connect = lambda: opened.append(1) or connect()

        def panels():
            return (
                rollup.tools("1", [], (None, None)),
                rollup.heatmap("1", [], 0, (None, None)),
                rollup.messages_by_source(),
            )

        apart = panels()
        assert len(opened) == 6
        opened.clear()
        with rollup.reading():
            together = panels()
        assert len(opened) == 1 and together == apart
        assert apart[0] and apart[1] and apart[2]


@pytest.mark.parametrize(
    ("day", "week"),
    [
        ("2026-11-23", "2026-11-23"),  # a Monday starts its own week
        ("2026-11-24", "2026-11-23"),
        ("2026-11-29", "2026-11-23"),  # Sunday ends it
        ("2026-11-30", "2026-11-30"),
    ],
)
def test_a_week_is_labelled_by_the_monday_that_starts_it(tmp_path, day, week):
    db = copy_fixture("hermes-v22.db", tmp_path)
    noon = datetime.strptime(f"{day} 12:00 +0000", "%Y-%m-%d %H:%M %z").timestamp()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO sessions (id, source, model, started_at, input_tokens) "
            "VALUES ('on-the-day', 'cli', 'week-probe', ?, 7)",
            (noon,),
        )
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    # 70 days: weekly buckets; in UTC, the day's noon is that day everywhere the test runs.
    since = datetime.fromtimestamp(noon - 35 * 86400).strftime("%Y-%m-%d")
    until = datetime.fromtimestamp(noon + 35 * 86400).strftime("%Y-%m-%d")
    body = client.get(
        f"/stats?since={since}&until={until}&model=week-probe&tz=UTC&format=json"
    ).get_json()
    assert body["query"]["bucket"] == "week"
    assert [(r["bucket"], r["sessions"]) for r in body["series"]] == [(week, 1)]


def test_a_removed_session_is_seen_at_once(tmp_path):
    """A session removed by anyone (here Hermes-style, with another connection) changes the
    number of sessions, so the rollup compares its sessions with the file's and takes the
    removed one out of every sum on the next report."""
    from webui.web.logbooks import get_logbook

    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_STATS_REUSE_S=0)
    client = app.test_client()
    with app.app_context():
        rollup = get_logbook().rollup
        while not rollup.refresh(5.0).complete:
            pass
        rollup.refresh(5.0)

    def panels():
        body = client.get("/stats?period=all&format=json").get_json()
        # The overview's message count is the rollup's own count when it is complete.
        assert body["overview"]["messages"] == sql(db, "SELECT COUNT(*) FROM messages")[0][0]
        return _rollup_panels(body)

    assert panels() == _rollup_truth(db, "1", ())
    victim = sql(
        db,
        "SELECT session_id FROM messages WHERE tool_name IS NOT NULL "
        "GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1",
    )[0][0]
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM messages WHERE session_id = ?", (victim,))
        conn.execute(
            "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?", (victim,)
        )
        conn.execute("DELETE FROM sessions WHERE id = ?", (victim,))
    conn.close()
    after = panels()
    assert after == _rollup_truth(db, "1", ()) and after != {}


def test_an_older_report_is_served_at_once_while_its_successor_is_computed(tmp_path):
    """Past LOGBOOK_STATS_REUSE_S beside a writer, the kept report is still answered at once
    (saying when it was computed) while one background thread computes the next; a later
    request gets that one, with the write in it."""
    import time

    db = copy_fixture("hermes-v22.db", tmp_path)
    client = make_app(
        db,
        tmp_path / "inst",
        LOGBOOK_STATS_REUSE_S=0.2,
        LOGBOOK_STATS_STALE_S=60,
        # the first page completes the rollup (a partial report is not kept, and a budget a
        # busy machine can outrun would decide whether this one is)
        LOGBOOK_ROLLUP_BUDGET=WAIT_BOUND_S,
    ).test_client()
    first = client.get("/stats?period=all&format=json").get_json()
    assert first["coverage"]["complete"]
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE sessions SET input_tokens = COALESCE(input_tokens, 0) + 1000000 "
            "WHERE id = (SELECT MIN(id) FROM sessions)"
        )
    time.sleep(0.3)
    stale = client.get("/stats?period=all&format=json").get_json()
    assert stale["as_of"] == first["as_of"]
    assert stale["totals"]["input_tokens"] == first["totals"]["input_tokens"]
    deadline = time.monotonic() + WAIT_BOUND_S
    while True:
        fresh = client.get("/stats?period=all&format=json").get_json()
        if fresh["as_of"] != first["as_of"]:
            break
        assert time.monotonic() < deadline, "the background report never landed"
        time.sleep(0.05)
    assert fresh["totals"]["input_tokens"] == first["totals"]["input_tokens"] + 1000000
    assert fresh["as_of"] > first["as_of"]
