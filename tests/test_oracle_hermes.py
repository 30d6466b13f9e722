"""The comparison tier: Hermes Agent 0.19.0 itself (its CLI and its SessionDB, installed in a
venv of its own) and Logbook, each on its own copy of the same real database, must give the
same answers. Runs in CI; builds the venv on first use (tests/support/oracle.py)."""

from __future__ import annotations

import shutil

import pytest

from support import copy_fixture, make_app, sql
from support.http import follow
from support.oracle import Hermes, dry_run_ids, ensure_venv, listed_ids

pytestmark = pytest.mark.oracle

# The real files, and the schema-22 demo Logbook's generator writes ("demo-22").
ORACLE_FIXTURES = ("hermes-v22.db", "hermes-v22-extended.db", "hermes-v11.db", "demo-22")


@pytest.fixture(scope="session")
def venv():
    return ensure_venv()


@pytest.fixture(scope="module", params=ORACLE_FIXTURES)
def pair(request, venv, tmp_path_factory):
    """(Hermes on one copy, Logbook's client on another copy) of one fixture. Hermes opens
    its copy first: an older file is migrated to schema 22 then (hermes-v11.db's migration
    tags 12 untitled tool-using roots as orphaned subagent runs), which is what happens to
    every user's file; Logbook reads a copy of the migrated file."""
    name = request.param
    home = tmp_path_factory.mktemp("hermes-home")
    if name == "demo-22":
        from webui.demo import generate

        generate(home / "state.db", sessions=300, long_session_messages=300, schema=22)
    else:
        shutil.copyfile(copy_fixture(name, tmp_path_factory.mktemp("src")), home / "state.db")
    hermes = Hermes(venv, home)
    hermes.call("list", kwargs={})  # opens (and migrates) the file, then closes it cleanly
    mine = tmp_path_factory.mktemp("logbook")
    db = mine / "state.db"
    shutil.copyfile(home / "state.db", db)
    client = make_app(db, mine / "inst").test_client()
    return name, hermes, client


def _logbook_rows(client, query: str) -> list[dict]:
    return follow(client, f"/sessions?format=json{query}", "sessions")


def _order(rows: list[dict]) -> list[str]:
    # Hermes orders by started_at alone; Logbook breaks ties by id. Equal start times are
    # compared as sets, everything else in order.
    return [r["id"] for r in sorted(rows, key=lambda r: (-r["started_at"], r["id"]))]


@pytest.mark.parametrize(
    "cli_args,query",
    [
        ((), ""),
        (("--source", "telegram"), "&source=telegram"),
        (("--source", "cli"), "&source=cli"),
        (("--source", "tool"), "&source=tool"),
        (("--source", "cron"), "&source=cron"),
    ],
)
def test_sessions_list_rows_equal_hermes_cli(pair, cli_args, query):
    name, hermes, client = pair
    theirs = listed_ids(hermes.cli("sessions", "list", "--limit", "100000", *cli_args))
    ours = _logbook_rows(client, query)
    assert [r["id"] for r in ours] == theirs or _order(ours) == theirs, name
    assert len(ours) == len(theirs)


@pytest.mark.parametrize(
    "kwargs,query",
    [
        ({"exclude_sources": ["tool"]}, ""),
        ({"exclude_sources": ["tool"], "include_archived": True}, "&archived=include"),
        ({"exclude_sources": ["tool"], "archived_only": True}, "&archived=only"),
        ({"source": "telegram", "include_archived": True}, "&archived=include&source=telegram"),
    ],
)
def test_list_rows_previews_and_tips_equal_session_db(pair, kwargs, query):
    """The same rows as list_sessions_rich with the CLI's and the dashboard's arguments: ids,
    start (the root's), title and preview (the tip's), and which root a tip stands for."""
    name, hermes, client = pair
    theirs = hermes.call("list", kwargs=kwargs)
    ours = {r["id"]: r for r in _logbook_rows(client, query)}
    assert sorted(ours) == sorted(r["id"] for r in theirs), name
    for t in theirs:
        o = ours[t["id"]]
        assert o["started_at"] == t["started_at"], t["id"]
        assert o["title"] == t["title"], t["id"]
        assert o["preview"] == t["preview"], t["id"]
        assert o["message_count"] == t["message_count"], t["id"]
        assert o.get("lineage_root_id") == t["lineage_root_id"], t["id"]


def test_recorded_lists_are_what_hermes_answers_today(venv):
    """The fast tier compares with tests/data/hermes/list_truth.json; it must still be true."""
    import json

    from oracle.record_truth import record_lists

    from support import DATA

    assert record_lists(venv) == json.loads((DATA / "hermes" / "list_truth.json").read_text())


def test_recorded_searches_are_what_hermes_answers_today(venv):
    import json

    from oracle.record_truth import record_searches

    from support import DATA

    assert record_searches(venv) == json.loads((DATA / "hermes" / "search_truth.json").read_text())


def test_search_hits_equal_live_hermes(pair):
    """Every recorded query, live, on each fixture (the v11 file as Hermes 0.19 migrated it)."""
    from oracle.record_truth import SEARCH_QUERIES

    from support.search_check import search_matches_hermes

    name, hermes, client = pair
    db = hermes.db
    outcomes = {
        q: search_matches_hermes(client, db, q, [h["id"] for h in hermes.call("search", query=q)])
        for q in SEARCH_QUERIES
    }
    assert sum(v == "equal" for v in outcomes.values()) >= len(outcomes) - 2, (name, outcomes)


@pytest.mark.parametrize("days", [7, 30, 365])
def test_stats_equal_hermes_dashboard_analytics(pair, days):
    """The figures of Hermes 0.19's /api/analytics/usage for the same period: totals, days
    (UTC), by model with auxiliary usage merged in, and tools (the larger of calls and results)."""
    name, hermes, client = pair
    theirs = hermes.call("usage", days=days)
    ours = client.get(f"/stats?period={days}&format=json").get_json()
    t, o = theirs["totals"], ours["totals"]
    # SQL's SUM over no rows is NULL in Hermes's answer; Logbook says 0
    assert (o["sessions"], o["input_tokens"], o["output_tokens"]) == (
        t["total_sessions"] or 0,
        t["total_input"] or 0,
        t["total_output"] or 0,
    ), name
    assert o["estimated_cost_usd"] == pytest.approx(t["total_estimated_cost"] or 0)
    assert o["actual_cost_usd"] == pytest.approx(t["total_actual_cost"] or 0)
    by_model = {r["key"]: r for r in ours["by_model"] if r["key"] != "(none)"}
    assert sorted(by_model) == sorted(r["model"] for r in theirs["by_model"]), name
    for r in theirs["by_model"]:
        m = by_model[r["model"]]
        assert (m["sessions"], m["input_tokens"], m["output_tokens"], m["api_calls"]) == (
            r["sessions"],
            r["input_tokens"],
            r["output_tokens"],
            r["api_calls"],
        ), r["model"]
        assert m["estimated_cost_usd"] == pytest.approx(r["estimated_cost"]), r["model"]
    assert {x["tool"]: x["calls"] for x in ours["tools"]} == {
        x["tool"]: x["count"] for x in theirs["tools"]
    }, name
    if ours["query"]["bucket"] == "day":
        days_ours: dict[str, list[int]] = {}
        for r in ours["series"]:
            d = days_ours.setdefault(r["bucket"], [0, 0, 0])
            d[0] += r["sessions"]
            d[1] += r["input_tokens"]
            d[2] += r["output_tokens"]
        assert days_ours == {
            d["day"]: [d["sessions"], d["input_tokens"], d["output_tokens"]]
            for d in theirs["daily"]
        }, name


# Each: the CLI options, the same selection as URL parameters.
PRUNE_CASES = [
    (["--older-than", "90"], {"older_than": "90"}),
    (["--source", "cli"], {"source": "cli"}),
    (["--source", "telegram", "--older-than", "30d"], {"source": "telegram", "older_than": "30d"}),
    (["--title", "migration"], {"title": "migration"}),
    (["--min-messages", "20"], {"min_messages": "20"}),
    (["--max-messages", "3"], {"max_messages": "3"}),
    (["--end-reason", "compression"], {"end_reason": "compression"}),
    (["--model", "gpt"], {"model": "gpt"}),
    (["--newer-than", "400", "--older-than", "6w"], {"newer_than": "400", "older_than": "6w"}),
    (["--min-cost", "0.5"], {"min_cost": "0.5"}),
    (["--max-tokens", "1000"], {"max_tokens": "1000"}),
    (["--include-archived", "--source", "telegram"], {"archived": "include", "source": "telegram"}),
    (
        ["--after", "2026-06-01", "--before", "2026-09-01 12:00"],
        {"after": "2026-06-01", "before": "2026-09-01 12:00"},
    ),
    (["--min-tool-calls", "5", "--max-cost", "2"], {"min_tool_calls": "5", "max_cost": "2"}),
    (["--cwd", "/home/ana/src/atlas"], {"cwd": "/home/ana/src/atlas"}),
    (["--provider", "openrouter"], {"provider": "openrouter"}),
    (["--chat-type", "dm"], {"chat_type": "dm"}),
]


@pytest.mark.parametrize("cli,params", PRUNE_CASES, ids=[" ".join(c) for c, _ in PRUNE_CASES])
def test_prune_preview_lists_what_hermes_dry_run_lists(pair, cli, params):
    name, hermes, client = pair
    theirs = dry_run_ids(hermes.cli("sessions", "prune", *cli, "--dry-run"))
    body = client.get("/prune", query_string={**params, "format": "json"}).get_json()
    assert body["sessions"] == theirs or sorted(body["sessions"]) == sorted(theirs), (name, cli)
    assert body["count"] == len(theirs)


ARCHIVE_CASES = [
    (["--source", "slack"], {"source": "slack"}),
    (["--title", "atlas"], {"title": "atlas"}),
    (["--older-than", "200", "--min-messages", "10"], {"older_than": "200", "min_messages": "10"}),
]


@pytest.mark.parametrize("cli,params", ARCHIVE_CASES, ids=[" ".join(c) for c, _ in ARCHIVE_CASES])
def test_archive_preview_lists_what_hermes_dry_run_lists(pair, cli, params):
    name, hermes, client = pair
    theirs = dry_run_ids(hermes.cli("sessions", "archive", *cli, "--dry-run"))
    body = client.get("/archive", query_string={**params, "format": "json"}).get_json()
    assert sorted(body["sessions"]) == sorted(theirs), (name, cli)


def _fresh_pair(name, venv, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(copy_fixture(name, tmp_path / "src"), home / "state.db")
    hermes = Hermes(venv, home)
    hermes.call("list", kwargs={})
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copyfile(home / "state.db", mine / "state.db")
    return hermes, mine / "state.db", make_app(mine / "state.db", mine / "inst").test_client()


def _state(db) -> tuple:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        sessions = conn.execute(
            "SELECT id, parent_session_id, COALESCE(archived, 0) FROM sessions ORDER BY id"
        ).fetchall()
        messages = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        fts = conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0]
    finally:
        conn.close()
    return sessions, messages, fts


@pytest.mark.parametrize(
    "cli,params",
    [PRUNE_CASES[1], PRUNE_CASES[3], PRUNE_CASES[8], PRUNE_CASES[11]],
    ids=["source", "title", "window", "archived"],
)
def test_prune_leaves_the_database_as_hermes_leaves_it(venv, tmp_path, cli, params):
    """Same filters, each on its own copy of the home: the same sessions, parents, messages
    and FTS rows remain, and the same transcript files in its sessions/ folder (the pruned
    sessions' files gone, every other one kept)."""
    from support.http import post

    hermes, db, client = _fresh_pair("hermes-v22-extended.db", venv, tmp_path)
    _transcripts_for_every_session(db, [hermes.home, db.parent])
    hermes.cli("sessions", "prune", *cli, "--yes")
    preview = client.get("/prune", query_string={**params, "format": "json"}).get_json()
    r = post(client, "/prune", {**preview["selection"], "confirm": "yes"})
    assert r.status_code == 200, r.get_data(as_text=True)[:300]
    body = r.get_json()
    assert body["deleted"] == preview["count"]
    assert body["transcript_files_removed"] == 3 * preview["count"]
    assert _state(db) == _state(hermes.db)
    ours = sorted(p.name for p in (db.parent / "sessions").iterdir())
    assert ours == sorted(p.name for p in (hermes.home / "sessions").iterdir())
    kept = {r[0] for r in sql(db, "SELECT id FROM sessions")}
    assert {f"{sid}.jsonl" for sid in kept} <= set(ours)
    assert not {f"{sid}.json" for sid in preview["sessions"]} & set(ours)


def _transcripts_for_every_session(db, homes) -> None:
    """Hermes's transcript files (and one file of another kind) for every session."""
    ids = [r[0] for r in sql(db, "SELECT id FROM sessions")]
    for home in homes:
        folder = home / "sessions"
        folder.mkdir(exist_ok=True)
        for sid in ids:
            for name in (f"{sid}.json", f"{sid}.jsonl", f"request_dump_{sid}_7.json"):
                (folder / name).write_text("{}")
        (folder / "notes.txt").write_text("not a transcript")


@pytest.mark.parametrize("cli,params", ARCHIVE_CASES[:2], ids=["source", "title"])
def test_archive_leaves_the_database_as_hermes_leaves_it(venv, tmp_path, cli, params):
    from support.http import post

    hermes, db, client = _fresh_pair("hermes-v22-extended.db", venv, tmp_path)
    hermes.cli("sessions", "archive", *cli, "--yes")
    preview = client.get("/archive", query_string={**params, "format": "json"}).get_json()
    r = post(client, "/archive", {**preview["selection"], "confirm": "yes"})
    assert r.status_code == 200, r.get_data(as_text=True)[:300]
    assert _state(db) == _state(hermes.db)


@pytest.mark.parametrize(
    "session_id", ["x_deleg_parent", "x_deleg_a", "x_chain_mid", "x_branch_parent", "x_tool_run"]
)
def test_delete_leaves_the_database_and_files_as_hermes_leaves_them(venv, tmp_path, session_id):
    """`hermes sessions delete <id> --yes` and Logbook's delete, each on its own copy of the
    home: the same sessions, parent links, messages, FTS rows and transcript files remain."""
    from support.http import post

    hermes, db, client = _fresh_pair("hermes-v22-extended.db", venv, tmp_path)
    ids = [r[0] for r in sql(db, "SELECT id FROM sessions")]
    for home in (hermes.home, db.parent):
        folder = home / "sessions"
        folder.mkdir(exist_ok=True)
        for sid in ids:
            if sid.startswith("x_"):
                for name in (f"{sid}.json", f"{sid}.jsonl", f"request_dump_{sid}_7.json"):
                    (folder / name).write_text("{}")
    hermes.cli("sessions", "delete", session_id, "--yes")
    assert post(client, f"/sessions/{session_id}/delete", {}, htmx=True).status_code == 200
    assert _state(db) == _state(hermes.db)
    assert sorted(p.name for p in (db.parent / "sessions").iterdir()) == sorted(
        p.name for p in (hermes.home / "sessions").iterdir()
    )


def test_full_export_equals_hermes_record_for_record(pair, tmp_path):
    """`hermes sessions export <file>` and /export.jsonl: the same records, keys, values and
    order (rewound messages left out, a NULL tool_calls null, messages by id on schema 22)."""
    import json

    name, hermes, client = pair
    out = tmp_path / f"{name}.jsonl"
    hermes.cli("sessions", "export", str(out))
    theirs = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    ours = [
        json.loads(line)
        for line in client.get("/export.jsonl").get_data(as_text=True).splitlines()
        if line.strip()
    ]
    assert [r["id"] for r in ours] == [r["id"] for r in theirs], name
    for o, t in zip(ours, theirs, strict=True):
        assert o == t, (name, o["id"])


@pytest.mark.parametrize("needle", ["atlas", "/home/ana/src", "ATLAS", "nowhere"])
def test_workspace_filter_equals_hermes_sessions_list_workspace(pair, needle):
    name, hermes, client = pair
    theirs = listed_ids(hermes.cli("sessions", "list", "--limit", "100000", "--workspace", needle))
    ours = _logbook_rows(client, f"&workspace={needle}")
    assert sorted(r["id"] for r in ours) == sorted(theirs), (name, needle)
    if name == "hermes-v22-extended.db" and needle != "nowhere":
        assert "x_chain_tip" in theirs  # the chain's tip carries the workspace


@pytest.mark.parametrize(
    "session_id,title",
    [
        ("x_chain_tip", "Atlas migration"),
        ("x_chain_mid", "Atlas migration"),
        ("x_tool_run", "  Inbox   summary "),
    ],
)
def test_rename_leaves_titles_as_hermes_leaves_them(venv, tmp_path, session_id, title):
    from support.http import post

    hermes, db, client = _fresh_pair("hermes-v22-extended.db", venv, tmp_path)
    hermes.cli("sessions", "rename", session_id, title)
    assert (
        post(client, f"/sessions/{session_id}/title", {"title": title}, htmx=True).status_code
        == 200
    )
    query = "SELECT id, title FROM sessions WHERE title IS NOT NULL ORDER BY id"
    assert sql(db, query) == sql(hermes.db, query)


def test_profiles_are_the_ones_hermes_lists(venv, tmp_path):
    """Hermes 0.19's list_profiles and Logbook's switcher, on the same Hermes root."""
    import re

    root = tmp_path / "home" / ".hermes"
    (root / "profiles").mkdir(parents=True)
    copy_fixture("hermes-v22.db", tmp_path / "src")
    shutil.copyfile(tmp_path / "src" / "hermes-v22.db", root / "state.db")
    (root / "config.yaml").write_text("model: x\n")
    for name in ("emptyone", "Work2", "my.prof", "default", "-dash", "ok_1", "nodb", "a" * 65):
        (root / "profiles" / name).mkdir()
    (root / "profiles" / "Work2" / "config.yaml").write_text("x: 1\n")
    hermes = Hermes(venv, root)
    hermes.home = tmp_path / "home"  # HOME; HERMES_HOME below is the root
    env = hermes.env()
    env["HERMES_HOME"] = str(root)
    hermes.env = lambda: env  # type: ignore[method-assign]
    theirs = hermes.call("profiles")
    app = make_app(
        root / "state.db",
        tmp_path / "inst",
        LOGBOOK_HERMES_ROOT=str(root),
        LOGBOOK_PROFILE_NAME="default",
    )
    html = app.test_client().get("/sessions").get_data(as_text=True)
    select = html[html.index('<select id="profile-select"') :]
    ours = re.findall(r'<option value="([^"]+)"', select[: select.index("</select>")])
    assert [o for o in ours if o != "all"] == theirs


def test_sessions_stats_equal_hermes_cli(pair):
    """`hermes sessions stats`: sessions (archived left out, as Hermes counts them), every
    message row, and sessions per platform it names — against the stats page's JSON with
    archived=hide for the whole history."""
    import re

    name, hermes, client = pair
    out = hermes.cli("sessions", "stats")
    theirs_sessions = int(re.search(r"Total sessions: (\d+)", out).group(1))
    theirs_messages = int(re.search(r"Total messages: (\d+)", out).group(1))
    per_source = {m[0]: int(m[1]) for m in re.findall(r"^\s+(\w+): (\d+) sessions$", out, re.M)}
    report = client.get("/stats?format=json&period=all&archived=hide").get_json()
    assert report["totals"]["sessions"] == theirs_sessions, name
    assert report["overview"]["messages"] == theirs_messages, name
    ours = {r["key"]: r["sessions"] for r in report["by_source"]}
    for source, n in per_source.items():
        assert ours.get(source) == n, (name, source)


def test_the_demo_origins_are_what_hermes_gateway_records(venv, tmp_path):
    """Every chat of the schema-22 demo has the session key and origin JSON that Hermes
    0.19's gateway (build_session_key, SessionSource.to_dict) makes of the same source."""
    import json

    from webui.demo import generate

    db = tmp_path / "state.db"
    generate(db, sessions=300, schema=22)
    rows = sql(
        db, "SELECT DISTINCT session_key, origin_json FROM sessions WHERE origin_json IS NOT NULL"
    )
    assert len(rows) > 10
    sources = [json.loads(origin) for _, origin in rows]
    theirs = Hermes(venv, tmp_path).call("origin_keys", sources=sources)
    for (key, origin), (their_key, their_dict) in zip(rows, theirs, strict=True):
        assert key == their_key
        assert origin == json.dumps(their_dict)  # byte for byte, as the gateway writes it
