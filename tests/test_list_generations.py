"""The list and the selection on the files Hermes 0.20 and 0.22 write, beyond what the recorded
truth holds (tests/test_generation_truth.py compares ids and order with Hermes): the flags every
row carries, the pinned and hidden views and their badges, where imported sessions came from,
what a prune preview spares and says, the preview's pages, and the forms' empty boxes."""

from __future__ import annotations

import json
import re

import pytest

from support import copy_fixture, make_app, sql
from support.http import follow
from support.truth import truth

G20 = ["hermes-v26-fresh.db", "hermes-v26-migrated.db"]
G22 = ["hermes-v31-fresh.db", "hermes-v31-migrated.db"]


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    made: dict = {}

    def client(fixture: str):
        if fixture not in made:
            tmp = tmp_path_factory.mktemp("lists")
            db = copy_fixture(fixture, tmp)
            made[fixture] = (db, make_app(db, tmp / "inst").test_client())
        return made[fixture]

    return client


def _ids(client, url: str) -> list[str]:
    return [r["id"] for r in follow(client, url, "sessions")]


def _text(response) -> str:
    return response.get_data(as_text=True)


@pytest.mark.parametrize("fixture", G20 + G22)
def test_every_row_carries_its_pin_and_hidden_flags(clients, fixture):
    """Contract: on files whose sessions table has the columns each row carries both."""
    db, client = clients(fixture)
    rows = follow(client, "/sessions?format=json&rows=all&archived=include", "sessions")
    flags = {
        r[0]: (bool(r[1]), bool(r[2])) for r in sql(db, "SELECT id, pinned, hidden FROM sessions")
    }
    assert rows and all((r["pinned"], r["hidden"]) == flags[r["id"]] for r in rows)
    assert any(r["pinned"] for r in rows) and any(r["hidden"] for r in rows)


def test_a_019_file_has_no_flags_and_says_so(clients):
    _, client = clients("hermes-v22-marks.db")
    rows = follow(client, "/sessions?format=json", "sessions")
    assert rows and not any("pinned" in r or "hidden" in r for r in rows)
    for asked in ("pinned=only", "hidden=include"):
        r = client.get(f"/sessions?format=json&{asked}")
        assert r.status_code == 400
        assert "Hermes 0.20 added" in _text(r) and "Hermes Agent 0.19.0" in _text(r)
    assert 'id="f-pinned"' not in _text(client.get("/sessions"))


@pytest.mark.parametrize("fixture", G22)
def test_the_pinned_view_is_hermes_sessions_pinned_in_its_order(clients, fixture):
    """`hermes sessions pinned`: archived pins too, hidden ones not, a pinned compression root
    shown as its tip, newest first."""
    _, client = clients(fixture)
    ours = follow(client, "/sessions?format=json&pinned=only", "sessions")
    assert [r["id"] for r in ours] == [p["id"] for p in truth(fixture)["pinned"]]
    assert all(r["pinned"] for r in ours) and any(r["archived"] for r in ours)


@pytest.mark.parametrize("fixture", G20)
def test_the_pinned_view_of_020_keeps_archived_pins_out(clients, fixture):
    """0.20's pinned back-fill keeps the page's `archived = 0` (and its hidden rule)."""
    db, client = clients(fixture)
    ours = _ids(client, "/sessions?format=json&pinned=only")
    listed = set(truth(fixture)["list_cli"]["default"])
    pinned = {r[0] for r in sql(db, "SELECT id FROM sessions WHERE pinned = 1")}
    chains_tips = {"g_pin_tip"}  # g_pin_root's chain is listed as its tip
    assert set(ours) == (listed & (pinned | chains_tips))
    assert "g_pin_archived" not in ours and "g_hidden_then_pinned" not in ours


@pytest.mark.parametrize("fixture", G20 + G22)
def test_pinned_hide_leaves_out_exactly_the_pinned_rows(clients, fixture):
    _, client = clients(fixture)
    every = follow(client, "/sessions?format=json", "sessions")
    unpinned = _ids(client, "/sessions?format=json&pinned=hide")
    assert unpinned == [r["id"] for r in every if not r["pinned"]]
    assert len(unpinned) < len(every)


@pytest.mark.parametrize("fixture", G20 + G22)
def test_hidden_sessions_are_left_out_unless_asked(clients, fixture):
    """list_sessions_rich(include_hidden=True) is recorded: hidden=include lists its rows;
    hidden=only just the hidden ones; the default none of them."""
    db, client = clients(fixture)
    default = _ids(client, "/sessions?format=json")
    included = _ids(client, "/sessions?format=json&hidden=include")
    only = _ids(client, "/sessions?format=json&hidden=only")
    assert sorted(included) == sorted(truth(fixture)["list_rich"]["hidden=include"])
    hidden = {r[0] for r in sql(db, "SELECT id FROM sessions WHERE hidden != 0")}
    assert only and set(only) <= hidden and not set(default) & hidden
    assert sorted(included) == sorted(default + only)


@pytest.mark.parametrize(
    "fixture,shown", [("hermes-v31-fresh.db", True), ("hermes-v26-fresh.db", False)]
)
def test_the_archived_view_recovers_hidden_sessions_on_022_only(tmp_path, fixture, shown):
    """0.22 shows a session both archived and hidden in its archived-only view (its recovery
    surface); 0.20 leaves hidden sessions out of every view unless asked."""
    import sqlite3

    db = copy_fixture(fixture, tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET archived = 1 WHERE id = 'g_hidden_session'")
    client = make_app(db, tmp_path / "inst").test_client()
    archived = _ids(client, "/sessions?format=json&archived=only")
    assert ("g_hidden_session" in archived) is shown
    assert "g_hidden_session" in _ids(client, "/sessions?format=json&archived=only&hidden=include")
    assert "g_hidden_session" not in _ids(client, "/sessions?format=json&archived=only&hidden=hide")


def test_the_list_shows_pins_badges_and_its_pinned_view(clients):
    _, client = clients("hermes-v31-fresh.db")
    page = _text(client.get("/sessions"))
    assert re.search(r'<select id="f-pinned" name="pinned">.*?value="only"', page, re.S)
    assert re.search(r'<select id="f-hidden" name="hidden">.*?value="only"', page, re.S)
    pinned = _text(client.get("/sessions?pinned=only"))
    rows = re.findall(r'<tr id="row-[^"]+".*?</tr>', pinned, re.S)
    assert len(rows) == len(truth("hermes-v31-fresh.db")["pinned"])
    assert all('class="badge pin"' in row for row in rows)
    assert 'value="only" selected' in pinned
    # the default list marks its pinned rows too, and only those
    listed = re.findall(r'<tr id="row-([^"]+)".*?</tr>', page, re.S)
    badged = re.findall(r'<tr id="row-([^"]+)"[^>]*>(?:(?!</tr>).)*class="badge pin"', page, re.S)
    assert badged and len(badged) < len(listed)


def test_imported_sessions_say_where_they_came_from(clients):
    _, client = clients("hermes-v31-fresh.db")
    rows = {
        r["source"]: r
        for r in follow(
            client, "/sessions?format=json&source=claude-code&source=codex-cli", "sessions"
        )
    }
    assert rows["claude-code"]["imported_from"]["label"] == "Claude Code"
    assert rows["codex-cli"]["imported_from"]["label"] == "Codex CLI"
    assert rows["claude-code"]["imported_from"]["foreign_session_id"] == "5b1c7e2a"
    assert rows["claude-code"]["origin"].startswith("imported from Claude Code")
    page = _text(client.get("/sessions?source=claude-code"))
    assert "imported from Claude Code" in page


def test_title_sources_are_shown(clients):
    db, client = clients("hermes-v31-fresh.db")
    rows = {r["id"]: r for r in follow(client, "/sessions?format=json", "sessions")}
    stored = dict(sql(db, "SELECT id, title_source FROM sessions WHERE title IS NOT NULL"))
    titled = {sid: r for sid, r in rows.items() if sid in stored and stored[sid]}
    assert titled and all(r["title_source"] == stored[sid] for sid, r in titled.items())
    assert "llm title" in _text(client.get("/sessions"))


# -- the selection -------------------------------------------------------------------------


def test_a_list_title_filter_is_matched_as_typed(clients):
    """Issue 44 point 6: `title=" Home "` matches titles holding " home ", as Hermes's
    --title does; `title=` matches everything."""
    db, client = clients("hermes-v22-marks.db")
    ours = _ids(client, "/sessions?format=json&rows=all&archived=include&title=%20Home%20")
    theirs = [r[0] for r in sql(db, "SELECT id FROM sessions WHERE lower(title) LIKE '% home %'")]
    assert sorted(ours) == sorted(theirs) and ours and "m_home_lab" not in ours
    every = _ids(client, "/sessions?format=json&rows=all&archived=include")
    assert sorted(_ids(client, "/sessions?format=json&rows=all&archived=include&title=")) == sorted(
        every
    )


def test_a_forms_empty_boxes_are_not_filters_but_a_urls_empty_value_is(clients):
    """A form sends every box: empty ones mean "not filled" (a bare prune stays "older than 90
    days", and the page waits for a choice). A URL's `title=` is Hermes's `--title ""`: a
    filter given, so every ended session and no implicit 90 days."""
    db, client = clients("hermes-v22-marks.db")
    form = _text(client.get("/prune"))
    assert 'name="from_form" value="1"' in form
    empty = _text(client.get("/prune?from_form=1&older_than=&newer_than=&source=&title="))
    assert "press <strong>Preview</strong>" in empty
    ended = {
        r[0] for r in sql(db, "SELECT id FROM sessions WHERE ended_at IS NOT NULL AND archived = 0")
    }
    given = client.get("/prune?title=&format=json").get_json()
    assert set(given["sessions"]) == ended
    filled = client.get("/prune?from_form=1&older_than=&title=home&format=json").get_json()
    titled = {r[0] for r in sql(db, "SELECT id FROM sessions WHERE ended_at IS NOT NULL "
                                     "AND archived = 0 AND lower(title) LIKE '%home%'")}  # fmt: skip
    assert set(filled["sessions"]) == titled and filled["selection"].get("older_than") is None
    bare = client.get("/prune?from_form=1&older_than=&title=&format=json").get_json()
    assert bare["selection"].get("older_than")  # the bare prune's 90 days


def test_a_prune_preview_says_which_pinned_sessions_it_spares(clients):
    _, client = clients("hermes-v31-fresh.db")
    spared = client.get("/prune?title=Garden&format=json").get_json()
    assert spared["sessions"] == [] and spared["spared"]["pinned"] == 2
    page = _text(client.get("/prune?title=Garden"))
    assert "2 pinned sessions spared" in page
    assert "also match these filters but will NOT be deleted (pin is a keep flag)" in page
    assert 'name="include_pinned"' in page
    taken = client.get("/prune?title=Garden&include_pinned=1&format=json").get_json()
    assert sorted(taken["sessions"]) == ["g_pin_root", "g_pin_tip"]
    assert "pinned" not in taken["spared"] and taken["selection"]["include_pinned"] == "1"


def test_a_prune_preview_keeps_lineages_whole_and_says_so(clients):
    _, client = clients("hermes-v31-fresh.db")
    r = client.get("/prune?end_reason=compression&format=json").get_json()
    assert r["sessions"] == []
    assert r["spared"] == {"pinned": 1, "open": 0, "kept_ancestors": 2}
    page = _text(client.get("/prune?end_reason=compression"))
    assert "<strong>Logbook:</strong> 2 earlier segments of compressed conversations" in page


def test_archive_takes_no_include_pinned(clients):
    _, client = clients("hermes-v31-fresh.db")
    r = client.get("/archive?title=Garden&include_pinned=1&format=json")
    assert r.status_code == 400 and "unpin them first" in _text(r)
    assert "include_pinned" not in _text(client.get("/archive?title=Garden"))


@pytest.mark.parametrize("fixture", ["hermes-v26-fresh.db", "hermes-v31-fresh.db"])
def test_a_previews_selection_selects_the_same_sessions_again(clients, fixture):
    """The selection a preview hands its confirmation (absolute times) selects what the
    preview listed: "older than" stays an inactivity bound on these files."""
    _, client = clients(fixture)
    first = client.get("/prune?older_than=2026-10-01&format=json").get_json()
    assert first["sessions"] and "last active before" in first["filters"]
    again = client.get("/prune", query_string={**first["selection"], "format": "json"}).get_json()
    assert again["sessions"] == first["sessions"]


@pytest.mark.parametrize("fixture", ["hermes-v26-migrated.db", "hermes-v31-migrated.db"])
def test_the_previews_pages_hold_its_sessions_in_hermes_order(tmp_path, fixture):
    """Least recently active first, a page at a time (a cursor of three keys)."""
    db = copy_fixture(fixture, tmp_path)
    app = make_app(db, tmp_path / "inst")
    expected = app.test_client().get("/prune?title=&format=json").get_json()
    with app.app_context():
        from webui.hermes.selection import selection_from_args
        from webui.web.logbooks import get_logbook

        lb = get_logbook()
        sel = selection_from_args({"title": ""}, command="prune", inactivity=True)
        seen, cursor = [], None
        while True:
            page = lb.actions.selection_page(sel, cursor, limit=7)
            assert page["position"] == len(seen)
            seen += [r["id"] for r in page["sessions"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert seen == expected["sessions"] and len(seen) == expected["count"] > 14
    assert seen == truth(fixture)["prune_dry_run"]["title ''"]
    r = app.test_client().get("/prune?title=&cursor=bm9wZQ")
    assert r.status_code == 400 and "cursor is not valid" in _text(r)


def test_export_selection_without_a_filter_is_the_whole_export(clients):
    _, client = clients("hermes-v22-marks.db")
    whole = _text(client.get("/export.jsonl"))
    chosen = client.get("/export.jsonl?selection=export")
    assert chosen.status_code == 200
    assert [json.loads(x)["id"] for x in _text(chosen).splitlines()] == [
        json.loads(x)["id"] for x in whole.splitlines()
    ]
    # a filter given empty is a filter: Hermes's export selector, ended sessions only
    db, client = clients("hermes-v31-fresh.db")
    filtered = _text(client.get("/export.jsonl?selection=export&title="))
    ended = sql(db, "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL")[0][0]
    assert len(filtered.splitlines()) == ended < sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
