"""Usage by model and the whole-database totals on the files Hermes 0.20 and 0.22 write: by
model as `hermes insights` counts it (session_model_usage, auxiliary tasks included, each
session's residual on its own model), the per-task panel to match, and `hermes sessions stats`
beside Logbook's own counts."""

from __future__ import annotations

import pytest
from oracle import cases as oracle_cases

from support import copy_fixture, make_app
from support.truth import truth

ALL = list(oracle_cases.FIXTURES)
NEW = [f for f, (gen, _) in oracle_cases.FIXTURES.items() if gen != "0.19"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    made: dict = {}

    def get(fixture: str, query: str = "period=all") -> dict:
        key = (fixture, query)
        if key not in made:
            tmp = tmp_path_factory.mktemp("usage")
            client = make_app(copy_fixture(fixture, tmp), tmp / "inst").test_client()
            made[key] = client.get(f"/stats?format=json&{query}").get_json()
        return made[key]

    return get


def _short(rows: list[dict]) -> dict:
    return {r["key"].split("/")[-1]: r for r in rows}


@pytest.mark.parametrize("fixture", NEW)
def test_a_session_that_switched_models_counts_on_each(report, fixture):
    """g_multimodel (recorded model gpt-5) booked 12,000 input tokens on claude-sonnet-4.6 and
    8,000 on gpt-5: the models it used both count it, and the tokens go where they were spent,
    not all on gpt-5 as grouping by the recorded model did."""
    rows = _short(report(fixture)["by_model"])
    theirs = {m["model"]: m for m in truth(fixture)["insights"]["36500"]["models"]}
    for model in ("claude-sonnet-4.6", "gpt-5", "gemini-2.5-flash"):
        assert rows[model]["input_tokens"] == theirs[model]["input_tokens"], model
        assert rows[model]["sessions"] == theirs[model]["sessions"], model
    # gemini-2.5-flash was used for compression and titles only: a model with a session
    assert rows["gemini-2.5-flash"]["sessions"] == 1
    assert {a["task"] for a in rows["gemini-2.5-flash"]["aux_tasks"]} == {
        "compression",
        "title_generation",
    }
    assert rows["gemini-2.5-flash"]["main"]["input_tokens"] == 0


@pytest.mark.parametrize("fixture", NEW)
def test_the_task_panel_adds_up_to_the_model_panel(report, fixture):
    r = report(fixture)
    by_task: dict = {}
    for row in r["aux_usage"]:
        by_task[row["model"]] = by_task.get(row["model"], 0) + row["tokens"]
    for m in r["by_model"]:
        assert by_task.get(m["key"], 0) == m["input_tokens"] + m["output_tokens"], m["key"]


def test_files_of_019_keep_its_analytics_rule(report):
    """Hermes 0.19's dashboard groups sessions by their recorded model and adds auxiliary
    rows: the marks file's by_model still equals the sessions' own totals."""
    r = report("hermes-v22-marks.db")
    assert r["query"]["models_by_usage"] is False
    assert sum(m["sessions"] for m in r["by_model"]) == r["totals"]["sessions"]


@pytest.mark.parametrize("fixture", ALL)
def test_hermes_sessions_stats_is_shown_as_hermes_prints_it(report, fixture):
    theirs = truth(fixture)["stats"]
    ours = report(fixture)["overview"]["hermes_stats"]
    assert (ours["sessions"], ours["messages"], ours["per_source"]) == (
        theirs["sessions"],
        theirs["messages"],
        theirs["per_source"],
    )


def test_logbooks_own_count_is_labelled_beside_hermess(tmp_path):
    client = make_app(
        copy_fixture("hermes-v31-fresh.db", tmp_path), tmp_path / "inst"
    ).test_client()
    page = client.get("/stats?period=all").get_data(as_text=True)
    assert "<code>hermes sessions stats</code>: 41 sessions · 141 messages" in page
    assert "Logbook counts 44 sessions: the 3 archived ones too" in page
    assert "hermes insights" in page  # the by-model table says whose rule it follows


@pytest.mark.parametrize("fixture", NEW)
@pytest.mark.parametrize("days", ["30", "36500"])
def test_a_periods_usage_by_model_is_what_insights_gives(fixture, days, tmp_path):
    """InsightsEngine.generate(days) at the recorded clock: a short period (its sessions read
    one by one) and a long one (every usage row less those of the sessions outside it)."""
    from webui.db.stats import models as stats_models
    from webui.db.stats.store import StatsQuery
    from webui.web.logbooks import get_logbook

    t = truth(fixture)
    app = make_app(copy_fixture(fixture, tmp_path), tmp_path / "inst")
    with app.app_context():
        st = get_logbook().stats
        q = StatsQuery(since=t["now"] - int(days) * 86400, now=t["now"])
        rows, _ = stats_models.model_usage(st, q)
    ours: dict = {}
    for r in rows:  # by short name, as Hermes keys them (several providers' names may meet)
        if r["sessions"]:
            short = (r["model"] or "unknown").split("/")[-1]
            s, i, o = ours.get(short, (0, 0, 0))
            ours[short] = (s + r["sessions"], i + r["input_tokens"], o + r["output_tokens"])
    theirs = {
        m["model"]: (m["sessions"], m["input_tokens"], m["output_tokens"])
        for m in t["insights"][days]["models"]
    }
    assert ours == theirs
