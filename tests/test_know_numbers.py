"""Every number of the Storage, Files and Reliability pages against a reading of the same rows
(issue 48), on real Hermes databases: the tool-work fixtures written by Hermes 0.19.0 (schema
22) and 0.22.2 (schema 31), and the older fixtures (8, 11, 22). Each truth is stated as the SQL
that reads the rows (a separate read-only connection straight to the file); where Hermes's own
rule decides (a failure, a file change, a retry loop), the rule is applied to those rows."""

from __future__ import annotations

import calendar
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from support import FIXTURE_NAMES, copy_fixture, make_app, sql
from webui.hermes import file_changes as fc
from webui.hermes import tool_runs
from webui.hermes.paths import relative
from webui.hermes.tool_results import generation, is_failure
from webui.web.logbooks import get_logbook

TOOLS = ("hermes-v22-tools.db", "hermes-v31-tools.db")
EVERY = TOOLS + FIXTURE_NAMES


@pytest.fixture(scope="module", params=EVERY)
def built(request, tmp_path_factory):
    """(database, app, its digest complete and its tables measured)."""
    tmp = tmp_path_factory.mktemp("know")
    db = copy_fixture(request.param, tmp)
    app = make_app(db, tmp / "inst")
    with app.app_context():
        d = get_logbook().digest
        for _ in range(500):
            if d.refresh(5.0).complete:
                break
        else:
            raise AssertionError("the digest never completed")
        d.objects.measure_all()
    return db, app, d


def digest_rows(d, statement: str) -> list[tuple]:
    conn = d.connect()
    try:
        return conn.execute(statement).fetchall()
    finally:
        conn.close()


def schema_version(db: Path) -> int:
    return sql(db, "SELECT MAX(version) FROM schema_version")[0][0]


def has_column(db: Path, table: str, column: str) -> bool:
    return any(r[1] == column for r in sql(db, f"PRAGMA table_info({table})"))


def nbytes(v) -> int:
    if v is None:
        return 0
    if isinstance(v, bytes):
        return len(v)
    return len(str(v).encode("utf-8")) if isinstance(v, str) else len(str(v).encode())


# -- bytes ----------------------------------------------------------------------------------------


def test_bytes_per_session_are_the_stored_lengths(built):
    """SELECT session_id, role, content, tool_calls, <reasoning columns> FROM messages, each
    value's length in bytes added up per session (sessions the file has)."""
    db, _app, d = built
    reasoning = [c for c in ("reasoning", "reasoning_content", "reasoning_details",
                             "codex_reasoning_items") if has_column(db, "messages", c)]  # fmt: skip
    calls = "tool_calls" if has_column(db, "messages", "tool_calls") else "NULL"
    truth: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for sid, role, content, tc, *rs in sql(
        db,
        f"SELECT session_id, role, content, {calls}, {', '.join(reasoning) or 'NULL'} FROM messages "
        "WHERE session_id IN (SELECT id FROM sessions)",
    ):
        t = truth[sid]
        t[0] += 1
        t[1 if role != "tool" else 3] += nbytes(content)
        t[2] += nbytes(tc)
        t[4] += sum(nbytes(x) for x in rs)
    mine = {
        r[0]: list(r[1:])
        for r in digest_rows(
            d, "SELECT session_id, n, text_b, call_b, tool_b, reasoning_b FROM sess WHERE n > 0"
        )
    }
    assert mine == dict(truth)


def test_bytes_by_source_and_month(built, tmp_path):
    """The page's breakdowns: per source and per month the session started
    (strftime('%Y-%m', started_at, 'unixepoch')), sessions and message bytes."""
    db, app, _d = built
    with app.test_request_context():
        pass
    r = app.test_client().get("/storage?format=json").get_json()
    per_session = {
        sid: (n, tb) for sid, n, tb in sql(
            db, "SELECT session_id, COUNT(*), TOTAL(length(CAST(content AS BLOB))) FROM messages "
            "GROUP BY 1")
    }  # fmt: skip
    by_source: dict = defaultdict(lambda: [0, 0, 0])
    by_month: dict = defaultdict(lambda: [0, 0, 0])
    for sid, source, month in sql(
        db,
        "SELECT id, source, COALESCE(strftime('%Y-%m', started_at, 'unixepoch'), '') FROM sessions",
    ):
        n, tb = per_session.get(sid, (0, 0))
        for acc, key in ((by_source, source), (by_month, month)):
            acc[key][0] += 1
            acc[key][1] += n
            acc[key][2] += int(tb)
    assert {
        x["key"]: [x["sessions"], x["n"], x["text_b"] + x["tool_b"]] for x in r["by_source"]
    } == dict(by_source)
    assert {
        x["key"]: [x["sessions"], x["n"], x["text_b"] + x["tool_b"]] for x in r["by_month"]
    } == dict(by_month)
    assert [x["key"] for x in r["by_month"]] == sorted(by_month)


def test_the_largest_sessions(built):
    """SELECT session_id FROM messages GROUP BY 1 ORDER BY the sum of every text column's
    length DESC: the page's top 50, in that order."""
    db, app, _d = built
    r = app.test_client().get("/storage?format=json").get_json()
    cols = [c for c in ("content", "tool_calls", "reasoning", "reasoning_content", "reasoning_details",
                        "codex_reasoning_items") if has_column(db, "messages", c)]  # fmt: skip
    assert len(r["sessions"]) == min(50, sql(db, "SELECT COUNT(*) FROM sessions")[0][0])
    top = r["sessions"][0]
    best = sql(
        db,
        f"SELECT session_id, TOTAL({' + '.join(f'IFNULL(length(CAST({c} AS BLOB)), 0)' for c in cols)}) AS b "
        "FROM messages WHERE session_id IN (SELECT id FROM sessions) GROUP BY 1 ORDER BY b DESC LIMIT 1",
    )[0]
    assert top["session_id"] == best[0]
    assert top["text_b"] + top["call_b"] + top["tool_b"] + top["reasoning_b"] <= top["all_b"]
    assert [s["all_b"] for s in r["sessions"]] == sorted(
        (s["all_b"] for s in r["sessions"]), reverse=True
    )


def test_tables_and_indexes_by_dbstat(built):
    """SELECT name, SUM(pgsize), COUNT(*) FROM dbstat GROUP BY name; free pages and the WAL
    from the file itself."""
    db, app, _d = built
    r = app.test_client().get("/storage?format=json").get_json()
    truth = {
        n: (b, p)
        for n, b, p in sql(db, "SELECT name, SUM(pgsize), COUNT(*) FROM dbstat GROUP BY name")
    }
    assert r["dbstat"] is True
    mine = {o["name"]: (o["bytes"], o["pages"]) for o in r["objects"] if o["method"] == "dbstat"}
    assert mine == truth
    size = sql(db, "PRAGMA page_size")[0][0]
    assert r["file"]["free_bytes"] == sql(db, "PRAGMA freelist_count")[0][0] * size
    assert r["file"]["used_bytes"] == sum(b for b, _ in truth.values())
    wal = Path(f"{db}-wal")
    assert r["file"]["wal_bytes"] == (wal.stat().st_size if wal.exists() else 0)
    assert sum(g["bytes"] for g in r["groups"]) == r["file"]["used_bytes"]


def test_shares_add_up_to_what_they_spread(built):
    """Every session's estimated share adds up to the messages' objects (the messages table
    and its indexes, the search indexes, the sessions table), less rounding."""
    _db, app, d = built
    r = app.test_client().get("/storage?format=json").get_json()
    obj = {o["name"]: o for o in r["objects"]}
    spread = sum(
        o["bytes"] for o in obj.values()
        if o["owner"] in ("messages", "sessions") or o["type"] == "fts"
    )  # fmt: skip
    total = r["messages"]["share"]["total"]
    assert spread - 4 <= total <= spread
    conn = d.connect()
    sessions = conn.execute("SELECT COUNT(*) FROM sess").fetchone()[0]
    conn.close()
    by_source = sum(s["share"]["total"] for s in r["by_source"])
    assert spread - 4 * max(1, len(r["by_source"])) <= by_source <= spread
    assert sessions == sql(_db, "SELECT COUNT(*) FROM sessions")[0][0]


# -- tools -----------------------------------------------------------------------------------------


def calls_of(db: Path) -> list[tuple]:
    """SELECT every entry of assistants' tool_calls, in order: (session, message, place, call
    id, function name, arguments)."""
    if not has_column(db, "messages", "tool_calls"):
        return []
    return sql(
        db,
        "SELECT m.session_id, m.id, CAST(j.key AS INTEGER), json_extract(j.value, '$.id'), "
        "json_extract(j.value, '$.function.name'), json_extract(j.value, '$.function.arguments') "
        "FROM messages m, json_each(CASE WHEN json_valid(m.tool_calls) AND json_type(m.tool_calls) "
        "= 'array' THEN m.tool_calls ELSE '[]' END) j WHERE m.role = 'assistant' "
        "AND json_type(j.value) = 'object' AND m.session_id IN (SELECT id FROM sessions) "
        "ORDER BY m.session_id, m.id, j.key",
    )


def results_of(db: Path) -> list[tuple]:
    """SELECT every tool result with the name of the call it answers: (session, message,
    call id, tool (its own tool_name, else the call's function name), content)."""
    name = "r.tool_name" if has_column(db, "messages", "tool_name") else "NULL"
    cid = "r.tool_call_id" if has_column(db, "messages", "tool_call_id") else "NULL"
    call_name = (
        "(SELECT json_extract(j.value, '$.function.name') FROM messages a, json_each("
        "CASE WHEN json_valid(a.tool_calls) THEN a.tool_calls ELSE '[]' END) j WHERE a.session_id "
        f"= r.session_id AND a.role = 'assistant' AND json_extract(j.value, '$.id') = {cid} "
        "ORDER BY a.id DESC LIMIT 1)"
        if has_column(db, "messages", "tool_calls")
        else "NULL"
    )
    return sql(
        db,
        f"SELECT r.session_id, r.id, {cid}, COALESCE(NULLIF({name}, ''), {call_name}), r.content "
        "FROM messages r WHERE r.role = 'tool' AND r.session_id IN (SELECT id FROM sessions) "
        "ORDER BY r.id",
    )


def test_calls_results_and_failures_per_tool(built):
    """Per tool: calls (entries of tool_calls with a name), results (tool rows) and the results
    Hermes's rule of this file's generation counts as failures."""
    db, app, d = built
    gen = generation(schema_version(db))
    calls = Counter(name for *_x, name, _a in calls_of(db) if isinstance(name, str))
    results, failures = Counter(), Counter()
    for _sid, _mid, _cid, tool, content in results_of(db):
        key = tool or "(no name)"
        results[key] += 1
        failures[key] += is_failure(tool, content, gen)
    rel = app.test_client().get("/stats?format=json&period=all").get_json()["reliability"]
    assert {t["tool"]: t["calls"] for t in rel["tools"] if t["calls"]} == dict(calls)
    assert {t["tool"]: t["results"] for t in rel["tools"] if t["results"]} == dict(results)
    assert {t["tool"]: t["failures"] for t in rel["tools"] if t["failures"]} == {
        k: v for k, v in failures.items() if v
    }
    assert rel["totals"]["failures"] == sum(failures.values())
    assert rel["rule"] == gen


def test_terminal_exits_and_timeouts_in_plain_sql(built):
    """Terminal failures without any Python: SELECT COUNT(*) ... WHERE tool_name = 'terminal'
    AND json_extract(content, '$.exit_code') != 0 (124: timeouts)."""
    db, app, _d = built
    if not has_column(db, "messages", "tool_name"):
        pytest.skip("no tool_name column")
    nonzero = sql(
        db,
        "SELECT COUNT(*), TOTAL(json_extract(content, '$.exit_code') = 124) FROM messages WHERE "
        "role = 'tool' AND tool_name = 'terminal' AND json_valid(content) AND "
        "json_type(content) = 'object' AND json_extract(content, '$.exit_code') != 0 "
        "AND session_id IN (SELECT id FROM sessions)",
    )[0]
    rel = app.test_client().get("/stats?format=json&period=all").get_json()["reliability"]
    terminal = next(
        (t for t in rel["tools"] if t["tool"] == "terminal"),
        {"failures": 0, "timeouts": 0, "exits": 0},
    )
    assert terminal["failures"] == nonzero[0]
    assert terminal["timeouts"] == int(nonzero[1])
    # 0.22 words a denied approval (user_summary) as an error, not an exit
    summaries = sql(
        db,
        "SELECT COUNT(*) FROM messages WHERE role = 'tool' AND tool_name = 'terminal' AND "
        "json_valid(content) AND json_extract(content, '$.user_summary') != ''",
    )[0][0]
    denied = summaries if generation(schema_version(db)) == "0.22" else 0
    assert terminal["timeouts"] + terminal["exits"] == nonzero[0] - denied


def test_turns_that_ended_in_a_failure_per_model(built):
    """A turn: an assistant message with tool calls (SELECT COUNT(DISTINCT m.id) ... per
    sessions.model); it ended in a failure when a result answering one of its calls failed."""
    db, app, _d = built
    gen = generation(schema_version(db))
    model = "s.model" if has_column(db, "sessions", "model") else "NULL"
    models = dict(sql(db, f"SELECT s.id, COALESCE({model}, '(none)') FROM sessions s"))
    turn_of, turns = {}, defaultdict(set)
    for sid, mid, _i, cid, name, _a in calls_of(db):
        if isinstance(name, str):
            turns[models[sid]].add(mid)
            if cid is not None:
                turn_of[(sid, str(cid))] = mid
    failed = defaultdict(set)
    for sid, _mid, cid, tool, content in results_of(db):
        turn = turn_of.get((sid, cid))
        if turn is not None and is_failure(tool, content, gen):
            failed[models[sid]].add(turn)
    rel = app.test_client().get("/stats?format=json&period=all").get_json()["reliability"]
    assert {m["model"]: (m["turns"], m["failed_turns"]) for m in rel["models"]} == {
        k: (len(v), len(failed[k])) for k, v in turns.items()
    }


def test_retry_loops(built):
    """Each session's calls in order (the SQL of calls_of), cut into runs by the rule
    (webui.hermes.tool_runs.loops): the digest found the same loops."""
    db, _app, d = built
    per_session = defaultdict(list)
    for sid, mid, _i, _cid, name, args in calls_of(db):
        if isinstance(name, str):
            head = None if args is None else str(args)[: tool_runs.SIGNATURE_CHARS]
            per_session[sid].append(
                (name, tool_runs.signature_of(head, len(str(args)) if args is not None else 0), mid)
            )
    truth = set()
    for sid, calls in per_session.items():
        for start, length in tool_runs.loops([(t, s) for t, s, _m in calls]):
            truth.add((sid, calls[start][0], calls[start][2], calls[start + length - 1][2], length))
    mine = set(
        digest_rows(d, "SELECT session_id, tool, first_message, last_message, calls FROM loops")
    )
    assert mine == truth


def test_the_fixture_holds_the_loops_it_was_written_with(built):
    db, _app, d = built
    if db.name not in TOOLS:
        pytest.skip("the tool-work fixtures")
    assert sorted(digest_rows(d, "SELECT session_id, tool, calls FROM loops")) == [
        ("tools_atlas_2", "read_file", 3),
        ("tools_atlas_2", "terminal", 4),
    ]


def test_files_changed(built):
    """Every change: the calls of calls_of parsed by the rule (webui.hermes.file_changes) with
    the session's folder (SELECT cwd, COALESCE(git_repo_root, cwd) FROM sessions), and whether
    the call's result says it failed."""
    db, _app, d = built
    gen = generation(schema_version(db))
    cwd = "cwd" if has_column(db, "sessions", "cwd") else "NULL"
    repo = "git_repo_root" if has_column(db, "sessions", "git_repo_root") else "NULL"
    folders = {
        r[0]: (r[1], r[2])
        for r in sql(
            db, f"SELECT id, {cwd}, COALESCE(NULLIF({repo}, ''), NULLIF({cwd}, '')) FROM sessions"
        )
    }
    outcome = {}
    for sid, _mid, cid, tool, content in results_of(db):
        if cid is not None:
            outcome[(sid, cid)] = int(is_failure(tool, content, gen))
    truth = []
    for sid, mid, i, cid, name, args in calls_of(db):
        folder, ws = folders[sid]
        for k, c in enumerate(fc.changes(name, args, folder)):
            truth.append((sid, mid, i, k, c.action, c.via, c.path, ws, relative(c.path, ws), int(c.full),
                          outcome.get((sid, cid))))  # fmt: skip
    mine = digest_rows(
        d,
        "SELECT session_id, message_id, call_index, change_index, action, via, path, workspace, rel, "
        "full, failed FROM changes ORDER BY session_id, message_id, call_index, change_index",
    )
    assert mine == sorted(truth, key=lambda t: (t[0], t[1], t[2], t[3]))


def test_every_recognised_form_is_in_the_fixture(built):
    db, _app, d = built
    if db.name not in TOOLS:
        pytest.skip("the tool-work fixtures")
    vias = {r[0] for r in digest_rows(d, "SELECT DISTINCT via FROM changes")}
    assert {"write_file", "patch", "V4A patch", ">", ">>", "tee", "tee -a", "sed -i", "mv", "cp",
            "rm", "git mv", "curl -o"} <= vias  # fmt: skip
    actions = {r[0] for r in digest_rows(d, "SELECT DISTINCT action FROM changes")}
    assert actions == set(fc.ACTIONS)


BUCKETS = {
    "month": "strftime('%Y-%m', started_at, 'unixepoch')",
    "week": "date(started_at, 'unixepoch', '-6 days', 'weekday 1')",  # the Monday that starts it
    "day": "strftime('%Y-%m-%d', started_at, 'unixepoch')",
}


def test_failures_over_time(built):
    """Per bucket of the sessions' starts (UTC; the bucket /stats chose for the period),
    results and failures of their tool rows: SELECT id, <bucket> FROM sessions, and the rule."""
    db, app, _d = built
    gen = generation(schema_version(db))
    rel = app.test_client().get("/stats?format=json&period=all&tz=UTC").get_json()["reliability"]
    bucket = dict(sql(db, f"SELECT id, {BUCKETS[rel['bucket']]} FROM sessions"))
    truth: dict = defaultdict(lambda: [0, 0])
    for sid, _mid, _cid, tool, content in results_of(db):
        truth[bucket[sid]][0] += 1
        truth[bucket[sid]][1] += is_failure(tool, content, gen)
    assert {x["bucket"]: [x["results"], x["failures"]] for x in rel["series"]} == dict(truth)
    assert sum(x["failures"] for x in rel["series"]) == rel["totals"]["failures"]


def test_one_tools_failures_over_time(built):
    """?tool=terminal: the series counts that tool's results only (the rows of results_of
    whose tool is terminal, by the bucket of their session's start)."""
    db, app, _d = built
    gen = generation(schema_version(db))
    rel = (
        app.test_client()
        .get("/stats?format=json&period=all&tz=UTC&tool=terminal")
        .get_json()["reliability"]
    )
    bucket = dict(sql(db, f"SELECT id, {BUCKETS[rel['bucket']]} FROM sessions"))
    truth: dict = defaultdict(lambda: [0, 0])
    for sid, _mid, _cid, tool, content in results_of(db):
        if tool == "terminal":
            truth[bucket[sid]][0] += 1
            truth[bucket[sid]][1] += is_failure(tool, content, gen)
    assert rel["tool"] == "terminal"
    assert {x["bucket"]: [x["results"], x["failures"]] for x in rel["series"]} == dict(truth)


# -- unattended work -----------------------------------------------------------------------------


def test_unattended_against_interactive_and_per_cron_job(built):
    """SELECT source, COUNT(*), SUM(tokens), SUM(cost) FROM sessions GROUP BY source (cost: the
    billed figure, else the estimate), split into cron/webhook and the rest; per cron job:
    GROUP BY the job in the session's id."""
    db, app, _d = built
    s = {c for c in ("actual_cost_usd", "estimated_cost_usd") if has_column(db, "sessions", c)}
    cost = f"COALESCE({', '.join(sorted(s))}, 0)" if s else "0"
    toks = " + ".join(
        f"COALESCE({c}, 0)" for c in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        if has_column(db, "sessions", c)
    ) or "0"  # fmt: skip
    kinds: dict = defaultdict(lambda: [0, 0, 0.0])
    for source, n, t, c in sql(
        db, f"SELECT source, COUNT(*), TOTAL({toks}), TOTAL({cost}) FROM sessions GROUP BY 1"
    ):
        k = kinds["unattended" if tool_runs.unattended(source) else "interactive"]
        k[0] += n
        k[1] += int(t)
        k[2] += c
    rel = app.test_client().get("/stats?format=json&period=all").get_json()["reliability"]
    got = {
        k["kind"]: [k["sessions"], k["tokens"], k["cost_usd"]] for k in rel["unattended"]["kinds"]
    }
    assert got.keys() == kinds.keys()
    for kind, (n, t, c) in kinds.items():
        assert got[kind][:2] == [n, t] and got[kind][2] == pytest.approx(c)
    jobs = sql(
        db,
        f"SELECT substr(id, 6, length(id) - 21), COUNT(*), TOTAL({cost}) FROM sessions WHERE "
        "source = 'cron' AND id GLOB 'cron_?*_[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]_[0-9][0-9][0-9][0-9][0-9][0-9]' "
        "GROUP BY 1",
    )
    mine = {
        j["job"]: (j["sessions"], j["cost_usd"]) for j in rel["unattended"]["cron_jobs"] if j["job"]
    }
    assert mine.keys() == {j for j, _n, _c in jobs}
    for job, n, c in jobs:
        assert mine[job][0] == n and mine[job][1] == pytest.approx(c)
    if db.name in TOOLS:
        names = {j["job"]: j["name"] for j in rel["unattended"]["cron_jobs"]}
        assert names == {
            "a1b2c3d4e5f6": "Nightly backup check",
            "0f9e8d7c6b5a": "Weekly metrics report",
        }


# -- filters ----------------------------------------------------------------------------------------


def test_the_section_follows_the_page_filters(built):
    """source=cron and a period: only the sessions the rest of /stats counts."""
    db, app, _d = built
    gen = generation(schema_version(db))
    c = app.test_client()
    for query, where, params in (
        ("source=cron&period=all", "source = ?", ["cron"]),
        # until is the last day shown: sessions before the next midnight
        (
            "since=2026-10-05&until=2026-10-09",
            "started_at >= ? AND started_at < ?",
            [calendar.timegm((2026, 10, 5, 0, 0, 0)), calendar.timegm((2026, 10, 10, 0, 0, 0))],
        ),
    ):
        ids = {r[0] for r in sql(db, f"SELECT id FROM sessions WHERE {where}", params)}
        failures = Counter()
        for sid, _mid, _cid, tool, content in results_of(db):
            if sid in ids and is_failure(tool, content, gen):
                failures[tool or "(no name)"] += 1
        rel = c.get(f"/stats?format=json&{query}&tz=UTC").get_json()["reliability"]
        assert {t["tool"]: t["failures"] for t in rel["tools"] if t["failures"]} == dict(
            failures
        ), query
        stats = c.get(f"/stats?format=json&{query}&tz=UTC").get_json()
        assert (
            rel["unattended"]["kinds"] == []
            or sum(k["sessions"] for k in rel["unattended"]["kinds"]) == stats["totals"]["sessions"]
        )
