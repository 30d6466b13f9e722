"""The comparison tier: Hermes Agent 0.19.0 itself (its CLI and its SessionDB, installed in a
venv of its own) and Logbook, each on its own copy of the same real database, must give the
same answers. Runs in CI; builds the venv on first use (tests/support/oracle.py)."""

from __future__ import annotations

import shutil

import pytest

from support import copy_fixture, make_app
from support.http import follow
from support.oracle import Hermes, ensure_venv, listed_ids

pytestmark = pytest.mark.oracle

ORACLE_FIXTURES = ("hermes-v22.db", "hermes-v22-extended.db", "hermes-v11.db")


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
    from test_search import search_matches_hermes

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
