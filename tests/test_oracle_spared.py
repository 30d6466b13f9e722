"""What a prune or archive preview spares, against what Hermes 0.20.1 and 0.22.2 print for the
same filters on their own fixtures: the "Note: N pinned session(s) … will NOT be deleted" and
"Note: N open session(s) … will be skipped" lines of `--dry-run`, and the sessions
`--include-pinned` adds (the recorded truth holds the ids of the plain dry runs only)."""

from __future__ import annotations

import re
import shutil

import pytest
from oracle import cases as oracle_cases

from support import copy_fixture, make_app
from support.oracle import GENERATIONS, Hermes, dry_run_ids, ensure_venv

pytestmark = pytest.mark.oracle

NEW = [f for f, (gen, _) in oracle_cases.FIXTURES.items() if gen != "0.19"]

# (Hermes's options, Logbook's parameters)
CASES = {
    "title Garden": (["--title", "Garden"], {"title": "Garden"}),
    "source cli": (["--source", "cli"], {"source": "cli"}),
    "end-reason compression": (["--end-reason", "compression"], {"end_reason": "compression"}),
    "title ''": (["--title", ""], {"title": ""}),
    "include-pinned title Garden": (
        ["--include-pinned", "--title", "Garden"],
        {"include_pinned": "1", "title": "Garden"},
    ),
    "include-pinned source cli": (
        ["--include-pinned", "--source", "cli"],
        {"include_pinned": "1", "source": "cli"},
    ),
}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    made: dict = {}

    def get(fixture: str):
        if fixture not in made:
            key, cjk = oracle_cases.FIXTURES[fixture]
            gen = GENERATIONS[key]
            home = tmp_path_factory.mktemp("hermes")
            shutil.copyfile(
                copy_fixture(fixture, tmp_path_factory.mktemp("src")), home / "state.db"
            )
            mine = tmp_path_factory.mktemp("logbook")
            shutil.copyfile(home / "state.db", mine / "state.db")
            made[fixture] = (
                Hermes(ensure_venv(gen), home, gen, cjk=cjk),
                make_app(mine / "state.db", mine / "inst").test_client(),
            )
        return made[fixture]

    return get


def _note(out: str, what: str) -> int:
    found = re.search(rf"Note: (\d+) {what} sessions? also match", out)
    return int(found.group(1)) if found else 0


@pytest.mark.parametrize("fixture,name", [(f, n) for f in NEW for n in CASES])
def test_a_prune_preview_spares_what_hermes_spares_and_says_so(pair, fixture, name):
    hermes, client = pair(fixture)
    cli, params = CASES[name]
    if "--include-pinned" in cli and hermes.gen.key != "0.22":
        pytest.skip("0.20's prune has no --include-pinned (it spares no pins)")
    code, out = hermes.cli_result("sessions", "prune", *cli, "--dry-run")
    assert code in (0, None), out
    ours = client.get("/prune", query_string={**params, "format": "json"}).get_json()
    assert ours["sessions"] == dry_run_ids(out)
    spared = ours["spared"]
    assert spared.get("pinned", 0) == _note(out, "pinned"), out
    assert spared.get("open", 0) == _note(out, "open"), out


@pytest.mark.parametrize("fixture", NEW)
def test_an_archive_preview_spares_what_hermes_spares(pair, fixture):
    hermes, client = pair(fixture)
    code, out = hermes.cli_result("sessions", "archive", "--source", "cli", "--dry-run")
    assert code in (0, None), out
    ours = client.get("/archive", query_string={"source": "cli", "format": "json"}).get_json()
    assert ours["sessions"] == dry_run_ids(out)
    assert ours["spared"].get("pinned", 0) == _note(out, "pinned"), out
