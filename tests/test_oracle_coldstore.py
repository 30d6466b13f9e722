"""Cold storage beside the Hermes that wrote the live file (issue 44 point 3), compared table by
table with that Hermes on twin copies (marker oracle: each generation in its own venv).

* A move out leaves the live file exactly as Hermes's own `hermes sessions delete` of the same
  sessions leaves its twin: every table a change may touch (session rows and flags, messages,
  system prompts, per-model usage, conversation generations, the rows each search index holds).
* That Hermes reads the archive file as its own state.db: `hermes sessions list` lists the moved
  conversations as it listed them in the original, `hermes sessions export` writes the same
  records (system prompts resolved), and its search finds the same messages.
* A move back gives the live file back exactly as it was before (prompts restored, none twice;
  the trigram index of 0.22, whose trigger needs the session, complete).

The CJK file runs Logbook under a Python that loads the cjk_unicode61 tokenizer (as a user with
it would); without it every move is refused (tests/test_changes_generations.py)."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from support import make_app
from support.oracle import Hermes, listed_ids
from support.twins import CJK, NEW, change, effect, hermes_on_copy, tables

pytestmark = pytest.mark.oracle

# Conversations of the story files: a delegate tree two levels deep (subagent runs, left out of
# 0.22's trigram index), a /branch parent and its child, a session that switched models (usage
# rows on three models) and one that changed its system prompt.
MOVED = ["g_deleg_parent", "g_branch_parent", "g_multimodel", "g_prompt_changed"]
# Words of their messages (pgvector and qdrant only in the subagent runs; "vect" only a
# trigram route finds), and a word none of them holds.
SEARCHES = ["Postgres", "index", "pgvector", "qdrant", "haiku", "sailor", "vect", "nginx"]


def _members(db, roots: list[str]) -> list[str]:
    """Every session of the conversations of ``roots`` (children of any kind, recursively)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        found, level = [], list(roots)
        while level:
            found.extend(level)
            marks = ",".join("?" * len(level))
            level = [
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM sessions WHERE parent_session_id IN ({marks})", level
                )
            ]
        return found
    finally:
        conn.close()


def _status(response) -> int:
    return response if isinstance(response, int) else response.status_code


def _reader(hermes: Hermes, db, name: str) -> Hermes:
    """That generation's Hermes on a copy of ``db`` as the state.db of a home of its own."""
    home = hermes.home.parent / name
    home.mkdir()
    shutil.copyfile(db, home / "state.db")
    return Hermes(hermes.venv, home, hermes.gen, cjk=hermes.cjk is not None)


def _records(reader: Hermes, ids: set[str]) -> dict:
    out = reader.home / "export.jsonl"
    reader.cli("sessions", "export", str(out))
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in records if r["id"] in ids}


def _hits(reader: Hermes, ids: set[str]) -> dict:
    return {
        q: sorted(h["id"] for h in reader.call("search", query=q) if h["session_id"] in ids)
        for q in SEARCHES
    }


@pytest.mark.parametrize("fixture", NEW)
def test_cold_storage_moves_as_hermes_deletes_and_its_hermes_reads_the_archive(tmp_path, fixture):
    home = tmp_path / "hermes"
    home.mkdir()
    hermes = hermes_on_copy(fixture, home)
    mine = tmp_path / "logbook"
    mine.mkdir()
    db = mine / "state.db"
    shutil.copyfile(hermes.db, db)
    original = _reader(hermes, hermes.db, "original")  # Hermes on the untouched file
    client = make_app(db, mine / "inst").test_client() if fixture not in CJK else None
    instance = mine / "inst" if fixture not in CJK else tmp_path / "inst-cjk"
    members = _members(db, MOVED)
    before = tables(db)

    # Logbook moves the conversations out; Hermes deletes the same sessions on its twin.
    out = {"session": MOVED, "archived": "include", "resumable": "include", "confirm": "yes"}
    status = _status(change(fixture, db, tmp_path, client, "/coldstore", out, htmx=False))
    for sid in members:
        hermes.cli_result("sessions", "delete", sid, "--yes")  # delegates went with their parent
    theirs, ours = tables(hermes.db), tables(db)
    assert status == 200, (
        f"Logbook's move answers {status}; Hermes's delete did {effect(before, theirs)}"
    )
    wrong = [t for t in theirs if ours.get(t) != theirs[t]]
    assert not wrong, (
        f"after the move {wrong} differ: Logbook did {effect(before, ours)}; Hermes's delete "
        f"did {effect(before, theirs)}"
    )

    # That Hermes reads the archive file as its own.
    (archive,) = (instance / "archives").glob("hermes-archive-*.db")
    reader = _reader(hermes, archive, "archive")
    moved = set(members)
    assert listed_ids(reader.cli("sessions", "list", "--limit", "1000")) == [
        i for i in listed_ids(original.cli("sessions", "list", "--limit", "1000")) if i in moved
    ]
    assert _records(reader, moved) == _records(original, moved)
    found = _hits(original, moved)
    assert sum(1 for hits in found.values() if hits) >= 5, found  # the queries find them
    assert _hits(reader, moved) == found

    # And back: the live file is as it was.
    name = "archive " + archive.stem.removeprefix("hermes-archive-")
    back = {"session": MOVED, "archived": "include", "back": "1", "from": name, "confirm": "yes"}
    status = _status(change(fixture, db, tmp_path, client, "/coldstore", back, htmx=False))
    assert status == 200, f"the move back answers {status}"
    now = tables(db)
    assert now == before, f"after the move back: {effect(before, now)}"
