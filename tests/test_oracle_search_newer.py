"""Search on 0.20/0.22 files against the live Hermes of each, beyond the recorded queries: with
sort, with role and source filters, and in the states Hermes's own code puts a file in — its
index detached as damaged (``fts_stale``), a rebuild under way (optimize-storage's chunked
backfill, part done), the CJK index marked stale by a Hermes without its tokenizer. Hermes
changes its copy, Logbook reads a twin copy taken afterwards, and the hit ids (all of them, in
order) must be equal."""

from __future__ import annotations

import shutil
from urllib.parse import urlencode

import pytest
from oracle import cases as oracle_cases

from support import copy_fixture, make_app
from support.http import follow
from support.oracle import GENERATIONS, Hermes, ensure_venv

pytestmark = pytest.mark.oracle

# Hermes's keyword arguments -> Logbook's parameters.
PARAMS = {"role_filter": "role", "source_filter": "source", "exclude_sources": "exclude_source"}
WORDS = ["nginx", "it's", "ginx", "nginx qqqzzzxxx", "deploy*", "docker OR kubernetes",
         "nginx NOT canary", "大别山", "项目", "库", "youer", "구글 일정", "Postgres"]  # fmt: skip
SORTED = [(q, {"sort": s}) for q in ("nginx", "kubectl", "大别山", "deploy*") for s in ("newest", "oldest")]  # fmt: skip
FILTERED = [
    ("billing", {"role_filter": ["tool"]}),
    ("nginx", {"role_filter": ["tool"], "sort": "oldest"}),
    ("大别山", {"source_filter": ["cron"]}),
    ("backup", {"source_filter": ["cron"]}),
    ("nginx", {"exclude_sources": ["cli"], "sort": "newest"}),
]


def _hermes(fixture: str, tmp_path, cjk: bool | None = None) -> Hermes:
    key, needs_cjk = oracle_cases.FIXTURES[fixture]
    home = tmp_path / "hermes"
    home.mkdir()
    shutil.copyfile(copy_fixture(fixture, tmp_path / "src"), home / "state.db")
    gen = GENERATIONS[key]
    return Hermes(ensure_venv(gen), home, gen, cjk=needs_cjk if cjk is None else cjk)


def _logbook_ids(client, query: str, kwargs: dict) -> list[int]:
    params = [("q", query), ("format", "json")]
    for key, value in kwargs.items():
        values = value if isinstance(value, list) else [value]
        params += [(PARAMS.get(key, key), v) for v in values]
    return [h["message_id"] for h in follow(client, f"/search?{urlencode(params)}", "results")]


def _compare(hermes: Hermes, tmp_path, searches: list, **state) -> None:
    theirs = hermes.call("search_state", searches=searches, **state)
    mine = tmp_path / "logbook"
    mine.mkdir()
    shutil.copyfile(hermes.db, mine / "state.db")
    client = make_app(mine / "state.db", mine / "inst").test_client()
    wrong = {}
    for (query, kwargs), ids in zip(searches, theirs, strict=True):
        ours = _logbook_ids(client, query, kwargs)
        if ours != ids:
            wrong[f"{query} {kwargs}"] = (len(ours), len(ids))
    assert not wrong, f"(Logbook, Hermes) hits: {wrong}"


NEW = [f for f, (gen, _) in oracle_cases.FIXTURES.items() if gen != "0.19"]


@pytest.mark.parametrize("fixture", NEW)
def test_sorted_and_filtered_searches_equal_hermes(fixture, tmp_path):
    _compare(_hermes(fixture, tmp_path), tmp_path, [[q, k] for q, k in SORTED + FILTERED])


@pytest.mark.parametrize("fixture", ["hermes-v26-migrated.db", "hermes-v31-migrated.db"])
def test_a_file_hermes_marked_fts_stale_searches_as_hermes(fixture, tmp_path):
    searches = [[q, {}] for q in WORDS] + [["nginx", {"sort": "oldest"}]]
    _compare(_hermes(fixture, tmp_path), tmp_path, searches, state="fts_stale")


@pytest.mark.parametrize("fixture", ["hermes-v26-migrated.db", "hermes-v31-migrated.db"])
def test_a_rebuild_under_way_searches_as_hermes(fixture, tmp_path):
    """optimize-storage's backfill stopped after 6 chunks of 500 rows (of ~4,000): the rest is
    read as plain text after the index's hits, as Hermes tops it up."""
    searches = [[q, {}] for q in WORDS] + [[q, k] for q, k in SORTED]
    _compare(_hermes(fixture, tmp_path), tmp_path, searches, state="rebuild", chunk=500, steps=6)


def test_a_cjk_index_marked_stale_searches_as_hermes(tmp_path):
    """0.22 without the tokenizer, opening the CJK file for writing, drops the CJK triggers and
    marks the index stale; from then on it takes trigram and substrings."""
    hermes = _hermes("hermes-v31-cjk.db", tmp_path, cjk=False)
    _compare(hermes, tmp_path, [[q, {}] for q in WORDS])


def test_the_generators_schema_31_file_searches_as_hermes(tmp_path):
    """The benchmark's schema-31 file (webui.demo, schema=31) is a file 0.22 reads as its own:
    the same hits for the same searches."""
    from webui.demo import generate

    home = tmp_path / "hermes"
    home.mkdir()
    generate(home / "state.db", sessions=300, seed=7, schema=31)
    gen = GENERATIONS["0.22"]
    hermes = Hermes(ensure_venv(gen), home, gen)
    queries = ["deploy*", "docker compose", "kubernetes", "the", "数据库", "東京", "nginx OR redis"]
    _compare(hermes, tmp_path, [[q, {}] for q in queries] + [[q, k] for q, k in SORTED])
