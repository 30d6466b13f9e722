"""The comparison tier for today's Hermes (issue 44): Hermes 0.20.1 and 0.22.2 themselves (their CLI
and SessionDB, each in a venv of its own, tests/support/oracle.py) on copies of fixtures they wrote
(tests/data/fixtures/README.md), against Logbook on twin copies.

* The recorded truth (tests/data/hermes/<fixture>.json) the everyday tests compare with
  (tests/test_generation_truth.py) is still what each Hermes answers.
* Relative-age prune and archive previews, live, at the real clock.
* Changes, each on twin copies, compared table by table: delete, prune, archive, pin, rename.
* Living beside 0.22: its held-store refusal names a busy Logbook, and an idle Logbook lets
  `hermes sessions prune` run.

What Logbook does not do yet is marked xfail(strict=True) with the concrete difference
(tests/support/gaps.py), so each flips when the implementers close it."""

from __future__ import annotations

import shutil
import sqlite3
import time

import pytest
from oracle import cases as oracle_cases

from support import copy_fixture, make_app
from support.gaps import GAPS
from support.http import post
from support.oracle import dry_run_ids
from support.truth import cases, truth
from support.twins import NEW, change, effect, hermes_on_copy, tables

pytestmark = pytest.mark.oracle

ALL = list(oracle_cases.FIXTURES)
G22 = [f for f, (gen, _) in oracle_cases.FIXTURES.items() if gen == "0.22"]


def _twins(fixture: str, tmp_path):
    """(Hermes on one copy, Logbook's database and client on another copy) of one fixture."""
    home = tmp_path / "hermes"
    home.mkdir()
    hermes = hermes_on_copy(fixture, home)
    mine = tmp_path / "logbook"
    mine.mkdir()
    shutil.copyfile(hermes.db, mine / "state.db")
    return hermes, mine / "state.db", make_app(mine / "state.db", mine / "inst").test_client()


# -- the recorded truth is still true ---------------------------------------------------------


@pytest.mark.parametrize("fixture", ALL)
def test_recorded_truth_is_what_hermes_answers_today(fixture):
    """Re-asks every recorded question (clock pinned at cases.NOW) and compares the whole file."""
    import json

    from oracle.record_generations import record

    assert json.loads(json.dumps(record(fixture))) == truth(fixture)


# -- previews with ages relative to now, at the real clock ------------------------------------
#
# An age filter is measured from the real clock here (Logbook's cannot be pinned). So that a
# case answers the same on any day, its number of days is worked out each run to put the cutoff
# inside a quiet stretch of the fixture (two days or more with no session starting, ending or
# active), the one nearest a target date: no session can cross the cutoff as the days pass.

# name -> (fixed options, {age option: target date}); the options are Logbook's names, the
# CLI's are the same with dashes.
RELATIVE_PRUNE = {
    "older-than, cutoff near 2026-10-15": ({}, {"older_than": "2026-10-15"}),
    "older-than, cutoff near 2026-08-01": ({}, {"older_than": "2026-08-01"}),
    "telegram, older-than near 2026-09-10": ({"source": "telegram"}, {"older_than": "2026-09-10"}),
    "newer-than near 2025-12-01, older-than near 2026-09-20": (
        {},
        {"newer_than": "2025-12-01", "older_than": "2026-09-20"},
    ),
}
RELATIVE_ARCHIVE = {
    "older-than near 2026-03-01, min-messages 10": (
        {"min_messages": "10"},
        {"older_than": "2026-03-01"},
    ),
    "cli, older-than near 2026-10-01": ({"source": "cli"}, {"older_than": "2026-10-01"}),
}


def _quiet_days(db, target: str) -> str:
    """Days from now to the middle of the quiet stretch of ``db`` nearest ``target``."""
    import math
    from datetime import UTC, datetime

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        cols = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
        moments = [r[0] for r in conn.execute("SELECT timestamp FROM messages")]
        moments += [
            v
            for row in conn.execute(
                "SELECT started_at, ended_at"
                + (", last_activity_at" if "last_activity_at" in cols else "")
                + " FROM sessions"
            )
            for v in row
            if v is not None
        ]
    finally:
        conn.close()
    aim = datetime.fromisoformat(target).replace(tzinfo=UTC).timestamp()
    moments = sorted(set(moments) | {0.0, time.time()})
    gaps = [(a, b) for a, b in zip(moments, moments[1:], strict=False) if b - a >= 2 * 86400]
    a, b = min(gaps, key=lambda g: abs((g[0] + g[1]) / 2 - aim))
    return str(math.ceil((time.time() - (a + b) / 2) / 86400))


def _aged(db, fixed: dict, ages: dict) -> tuple[dict, list[str]]:
    """(Logbook's parameters, the CLI's options) for one relative case on ``db``."""
    params = {**fixed, **{k: _quiet_days(db, target) for k, target in ages.items()}}
    cli = [part for k, v in params.items() for part in (f"--{k.replace('_', '-')}", v)]
    return params, cli


@pytest.mark.parametrize("fixture,name", cases(GAPS["live prune"], NEW, list(RELATIVE_PRUNE)))
def test_relative_prune_preview_lists_what_hermes_dry_run_lists_now(tmp_path, fixture, name):
    hermes, db, client = _twins(fixture, tmp_path)
    params, cli = _aged(db, *RELATIVE_PRUNE[name])
    theirs = dry_run_ids(hermes.cli("sessions", "prune", *cli, "--dry-run"))
    _same_preview(client.get("/prune", query_string={**params, "format": "json"}), theirs)


@pytest.mark.parametrize("fixture,name", cases(GAPS["live archive"], NEW, list(RELATIVE_ARCHIVE)))
def test_relative_archive_preview_lists_what_hermes_dry_run_lists_now(tmp_path, fixture, name):
    hermes, db, client = _twins(fixture, tmp_path)
    params, cli = _aged(db, *RELATIVE_ARCHIVE[name])
    theirs = dry_run_ids(hermes.cli("sessions", "archive", *cli, "--dry-run"))
    _same_preview(client.get("/archive", query_string={**params, "format": "json"}), theirs)


def _same_preview(response, theirs: list) -> None:
    assert response.status_code == 200, f"the preview answers {response.status_code}"
    ours = response.get_json()["sessions"]
    assert sorted(ours) == sorted(theirs), (
        f"Logbook previews {len(ours)} sessions, Hermes {len(theirs)}: Logbook's extra "
        f"{sorted(set(ours) - set(theirs))[:3]}, missing {sorted(set(theirs) - set(ours))[:3]}"
    )


# -- changes, on twin copies, table by table ----------------------------------------------------


def _compare(what: str, before: dict, response, db, hermes_db) -> None:
    """Logbook's change answered and left every table as Hermes's left its twin."""
    theirs = tables(hermes_db)
    theirs_did = effect(before, theirs)
    status = response if isinstance(response, int) else response.status_code
    assert status == 200, f"Logbook's {what} answers {status}; Hermes's did: {theirs_did}"
    ours = tables(db)
    wrong = [t for t in theirs if ours.get(t) != theirs[t]]
    assert not wrong, (
        f"after the {what} {wrong} differ: Logbook did {effect(before, ours)}; Hermes {theirs_did}"
    )


def _post(client, url, data):
    return post(client, url, data, htmx=True)


DELETES = ["g_deleg_parent", "g_chain_mid", "g_multimodel", "g_prompt_changed", "g_pin_tip"]


@pytest.mark.parametrize("fixture,session_id", cases(GAPS["delete"], NEW, DELETES))
def test_delete_leaves_the_tables_as_hermes_delete_leaves_them(tmp_path, fixture, session_id):
    """`hermes sessions delete <id> --yes`: delegate runs cascade, other children orphaned,
    unreferenced system_prompts rows removed, session_model_usage rows go with their session,
    conversation_generations untouched."""
    hermes, db, client = _twins(fixture, tmp_path)
    before = tables(db)
    hermes.cli("sessions", "delete", session_id, "--yes")
    r = change(fixture, db, tmp_path, client, f"/sessions/{session_id}/delete", {})
    _compare(f"delete of {session_id}", before, r, db, hermes.db)


PRUNES = {
    "source telegram": ["--source", "telegram"],
    "title Home": ["--title", "Home"],
    "end-reason compression": ["--end-reason", "compression"],
}
PRUNE_PARAMS = {
    "source telegram": {"source": "telegram"},
    "title Home": {"title": "Home"},
    "end-reason compression": {"end_reason": "compression"},
}


@pytest.mark.parametrize("fixture,name", cases(GAPS["prune"], NEW, list(PRUNES)))
def test_prune_leaves_the_tables_as_hermes_prune_leaves_them(tmp_path, fixture, name):
    hermes, db, client = _twins(fixture, tmp_path)
    before = tables(db)
    # nobody holds the twin, so --force changes nothing but the check; 0.20 has no such flag
    force = ["--force"] if hermes.gen.key == "0.22" else []
    hermes.cli("sessions", "prune", *PRUNES[name], "--yes", *force)
    # as a script posts it: the answer comes when the prune is done (htmx gets a job page)
    r = change(
        fixture, db, tmp_path, client, "/prune", {"confirm": "yes"}, False, PRUNE_PARAMS[name]
    )
    _compare(f"prune --{name}", before, r, db, hermes.db)


ARCHIVES = {"source telegram": ["--source", "telegram"], "title Garden": ["--title", "Garden"]}
ARCHIVE_PARAMS = {"source telegram": {"source": "telegram"}, "title Garden": {"title": "Garden"}}


@pytest.mark.parametrize("fixture,name", cases(GAPS["archive"], NEW, list(ARCHIVES)))
def test_archive_leaves_the_tables_as_hermes_archive_leaves_them(tmp_path, fixture, name):
    hermes, db, client = _twins(fixture, tmp_path)
    before = tables(db)
    hermes.cli("sessions", "archive", *ARCHIVES[name], "--yes")
    preview = client.get("/archive", query_string={**ARCHIVE_PARAMS[name], "format": "json"})
    r = _post(client, "/archive", {**preview.get_json()["selection"], "confirm": "yes"})
    _compare(f"archive --{name}", before, r, db, hermes.db)


@pytest.mark.parametrize(
    "fixture,move",
    cases(GAPS["pin"], G22, ["pin g_chain_tip", "unpin g_pin_root", "pin g_hidden_session"]),
)
def test_pin_leaves_the_tables_as_hermes_pin_leaves_them(tmp_path, fixture, move):
    """`hermes sessions pin|unpin <id>`: the whole compression lineage; a pin clears hidden."""
    verb, session_id = move.split()
    hermes, db, client = _twins(fixture, tmp_path)
    before = tables(db)
    hermes.cli("sessions", verb, session_id)
    r = _post(client, f"/sessions/{session_id}/pin", {"pinned": "1" if verb == "pin" else "0"})
    _compare(move, before, r, db, hermes.db)


RENAMES = ["g_chain_tip=Atlas Postgres upgrade", "g_words=  Nginx   timeouts "]


@pytest.mark.parametrize("fixture,rename", cases(GAPS["rename"], NEW, RENAMES))
def test_rename_leaves_titles_and_their_source_as_hermes_leaves_them(tmp_path, fixture, rename):
    session_id, title = rename.split("=", 1)
    hermes, db, client = _twins(fixture, tmp_path)
    before = tables(db)
    hermes.cli("sessions", "rename", session_id, title)
    r = _post(client, f"/sessions/{session_id}/title", {"title": title})
    _compare(f"rename of {session_id}", before, r, db, hermes.db)


# -- living beside 0.22 -----------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["hermes-v31-fresh.db", "hermes-v31-migrated.db"])
def test_a_busy_logbook_is_named_in_hermes_refusal(tmp_path, fixture):
    from support.server import Server

    home = tmp_path / "hermes"
    home.mkdir()
    hermes = hermes_on_copy(fixture, home)
    srv = Server("--db", str(hermes.db), "--instance", str(tmp_path / "inst"))
    try:
        status, _, _ = srv.get("/sessions")
        assert status == 200
        code, out = hermes.cli_result("sessions", "prune", "--source", "telegram", "--yes")
        assert code == 1 and "Refusing `hermes sessions prune`" in out, out
        assert f"PID {srv.proc.pid} " in out, out
    finally:
        srv.close()


@pytest.mark.parametrize("fixture", ["hermes-v31-fresh.db"])
def test_an_idle_logbook_lets_hermes_prune_run(tmp_path, fixture, monkeypatch):
    from support.server import Server

    monkeypatch.setenv("HERMES_LOGBOOK_IDLE_S", "1")
    home = tmp_path / "hermes"
    home.mkdir()
    hermes = hermes_on_copy(fixture, home)
    srv = Server("--db", str(hermes.db), "--instance", str(tmp_path / "inst"))
    try:
        assert srv.get("/sessions")[0] == 200
        deadline = time.monotonic() + 15
        out = ""
        while time.monotonic() < deadline:
            _code, out = hermes.cli_result("sessions", "prune", "--source", "telegram", "--yes")
            if "Refusing" not in out:
                break
            time.sleep(1)
        assert "Pruned" in out, out
    finally:
        srv.close()


@pytest.mark.parametrize("fixture", cases(GAPS["held store"], ["hermes-v31-fresh.db"]))
def test_logbook_prune_refuses_while_hermes_holds_the_file(tmp_path, fixture):
    """As `hermes sessions prune` does: a bulk removal is refused while another process holds
    state.db, naming it; the explicit override of the form goes ahead."""
    import subprocess

    hermes, db, client = _twins(fixture, tmp_path)
    holder = subprocess.Popen(
        [*hermes.python(), "-c", f"import sqlite3, time; c = sqlite3.connect({str(db)!r}); "
         "c.execute('SELECT 1 FROM sessions').fetchone(); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env=hermes.env(),
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "ready"
        preview = client.get(
            "/prune", query_string={"source": "telegram", "format": "json"}
        ).get_json()
        r = _post(client, "/prune", {**preview["selection"], "confirm": "yes"})
        assert r.status_code == 409, (
            f"Logbook's prune answers {r.status_code} while another process holds the file "
            "(0.22 refuses, naming it)"
        )
        assert f"PID {holder.pid}" in r.get_data(as_text=True), "the refusal names no holder"
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


@pytest.mark.parametrize("fixture", cases(GAPS["banner"], NEW))
def test_the_startup_line_says_what_changes_the_file_allows(tmp_path, fixture):
    """The start-up line must not promise changes the pages then refuse (issue 44: schema 31
    answers 403 to every change while the banner says "changes: allowed")."""
    from support.server import Server

    db = copy_fixture(fixture, tmp_path)
    srv = Server("--db", str(db), "--instance", str(tmp_path / "inst"))
    try:
        banner = "".join(srv.banner)
    finally:
        srv.close()
    client = make_app(db, tmp_path / "inst2").test_client()
    refused = _post(client, "/sessions/g_words/title", {"title": "x"}).status_code == 403
    assert not (refused and "changes: allowed" in banner), (
        "the start-up line says 'changes: allowed' while a rename answers 403"
    )
