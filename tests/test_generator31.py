"""The generator writing Hermes 0.22.2's schema 31 in its fresh layout (issue 44 point 7): the
same history as schema 22, in the tables, views, triggers and indexes 0.22's own SessionDB
creates (webui/demo/schema31.py, read from such a file), kept by those triggers."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing

import pytest

from support import FIXTURES, make_app
from webui.demo import generate


def _catalogue(conn: sqlite3.Connection) -> list[tuple]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return sorted((t, n, tb, re.sub(r"\s+", " ", s).strip() if s else None) for t, n, tb, s in rows)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gen31")
    for schema in (22, 31):
        generate(folder / f"v{schema}.db", sessions=240, seed=5, schema=schema)
    conns = {s: sqlite3.connect(f"file:{folder / f'v{s}.db'}?mode=ro", uri=True) for s in (22, 31)}
    yield folder, conns
    for c in conns.values():
        c.close()


def test_schema_31_is_what_hermes_0_22_creates(built):
    _, conns = built
    fx = sqlite3.connect(f"file:{FIXTURES / 'hermes-v31-fresh.db'}?mode=ro&immutable=1", uri=True)
    with closing(fx):
        assert _catalogue(conns[31]) == _catalogue(fx)
        for table in ("sessions", "messages", "session_model_usage", "system_prompts"):
            assert (
                conns[31].execute(f"PRAGMA table_info({table})").fetchall()
                == fx.execute(f"PRAGMA table_info({table})").fetchall()
            )
    assert conns[31].execute("SELECT version FROM schema_version").fetchall() == [(31,)]


def test_the_same_history_as_schema_22(built):
    _, c = built
    for table, cols in (
        ("sessions", "id, source, model, started_at, title, input_tokens, parent_session_id"),
        ("messages", "id, session_id, role, content, tool_calls, tool_name, timestamp"),
    ):
        q = f"SELECT {cols} FROM {table} ORDER BY 1"
        assert c[22].execute(q).fetchall() == c[31].execute(q).fetchall(), table
    prompts22 = dict(c[22].execute("SELECT id, system_prompt FROM sessions").fetchall())
    prompts31 = dict(
        c[31]
        .execute(
            "SELECT s.id, p.prompt FROM sessions s LEFT JOIN system_prompts p "
            "ON p.hash = s.system_prompt_hash"
        )
        .fetchall()
    )
    assert prompts22 == prompts31
    assert c[31].execute(
        "SELECT COUNT(*) FROM sessions WHERE system_prompt IS NOT NULL"
    ).fetchone() == (0,)


def test_hermes_triggers_kept_every_index(built):
    _, c = built
    db = c[31]
    n = db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    assert db.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0] == n
    # no tool rows, no cron or delegate-run sessions in the trigram index
    assert (
        db.execute("SELECT COUNT(*) FROM messages_fts_trigram").fetchone()[0]
        == (db.execute("SELECT COUNT(*) FROM messages_fts_trigram_src").fetchone()[0])
    )
    assert db.execute("SELECT COUNT(*) FROM messages_fts_trigram_src").fetchone()[0] < n
    assert db.execute(
        "SELECT COUNT(*), COUNT(DISTINCT message_uid), SUM(display_order = id) FROM messages"
    ).fetchone() == (n, n, n)
    # FTS5's own check that each index holds exactly what its content view says (an error
    # if not); asked of the test's own file (the check is an INSERT)
    with closing(sqlite3.connect(built[0] / "v31.db")) as rw:
        for table in ("messages_fts", "messages_fts_trigram"):
            rw.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    usage = db.execute(
        "SELECT SUM(input_tokens), COUNT(*) FROM session_model_usage WHERE task = ''"
    ).fetchone()
    own = db.execute(
        "SELECT SUM(input_tokens), COUNT(*) FROM sessions WHERE model IS NOT NULL "
        "AND api_call_count > 0"
    ).fetchone()
    assert usage == own


def test_the_same_arguments_give_the_same_file(tmp_path, built):
    folder, _ = built
    generate(tmp_path / "again.db", sessions=240, seed=5, schema=31)
    assert (tmp_path / "again.db").read_bytes() == (folder / "v31.db").read_bytes()


def test_logbook_reads_it_as_0_22s_file(built, tmp_path):
    folder, _ = built
    client = make_app(folder / "v31.db", tmp_path / "inst").test_client()
    body = client.get("/search?q=deploy*&format=json").get_json()
    assert body["results"] and all(">>>" in h["snippet"] for h in body["results"])
    stats = client.get("/stats?period=all&format=json").get_json()
    assert stats["query"]["models_by_usage"] is True
    assert sum(m["input_tokens"] for m in stats["by_model"]) == stats["totals"]["input_tokens"]
