"""Search snippets come from a private mirror of the page's rows (webui.db.search.snippets): they must
be exactly what FTS5's snippet() gives on the real table, for every kind of query, on every
schema Hermes writes (v8's external-content table, v11 and v22's own-content ones, trigram)."""

from __future__ import annotations

import sqlite3

import pytest

from support import FIXTURE_NAMES, copy_fixture, make_app
from webui.db.search import snippets as snippet_mirror
from webui.db.search.limits import MARK_END, MARK_START, SNIPPET_TOKENS
from webui.db.search.snippets import mirror_declaration


@pytest.mark.parametrize(
    "create_sql,expected",
    [
        ("CREATE VIRTUAL TABLE messages_fts USING fts5(\n    content\n)", "content"),
        (
            "CREATE VIRTUAL TABLE messages_fts USING fts5(\n    content,\n    content=messages,"
            "\n    content_rowid=id\n)",
            "content",
        ),
        ("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='trigram')", None),
        (
            "CREATE VIRTUAL TABLE t USING fts5(a, b UNINDEXED, content='', "
            "tokenize = \"unicode61 remove_diacritics 2, x\", prefix='2 3')",
            "a, b UNINDEXED, tokenize = \"unicode61 remove_diacritics 2, x\", prefix='2 3'",
        ),
        ("CREATE TABLE messages (id INTEGER PRIMARY KEY)", "-"),
    ],
)
def test_the_mirror_is_declared_like_the_table_less_where_its_content_lives(create_sql, expected):
    got = mirror_declaration(create_sql)
    if expected == "-":
        assert got is None
    elif expected is None:
        assert got == "content, tokenize='trigram'"
    else:
        assert " ".join(got.split()) == expected


def _terms(conn: sqlite3.Connection, table: str, n: int = 6) -> list[str]:
    conn.execute(f"CREATE VIRTUAL TABLE temp.vocab_{table} USING fts5vocab(main, {table}, row)")
    return [
        r[0]
        for r in conn.execute(
            f"SELECT term FROM temp.vocab_{table} WHERE length(term) >= 4 AND term GLOB "
            "'[a-z]*' ORDER BY doc DESC LIMIT ?",
            (n,),
        )
    ]


def _queries(terms: list[str]) -> list[str]:
    a, b, c = terms[0], terms[1], terms[-1]
    return [
        a,
        f"{a[:3]}*",
        f"{c[:2]}*",
        f"{a} {b}",
        f"{a} OR {c}",
        f"NEAR({a} {b}, 8)",
        f"{a} NOT {b}",
        f'"{a} {b}"',
        f"content: {b}",
        f"{a}* {b[:3]}*",
        f"({a} OR {b}) AND {c[:3]}*",
    ]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_mirror_snippets_equal_fts5_snippets_on_every_fixture(name, tmp_path):
    db = copy_fixture(name, tmp_path)
    conn = sqlite3.connect(db)
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE name IN ('messages_fts', 'messages_fts_trigram')"
        )
    ]
    assert "messages_fts" in tables
    compared = 0
    for table in tables:
        declaration = mirror_declaration(
            conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        )
        terms = _terms(conn, table) if table == "messages_fts" else ["the", "ing", "ion"]
        queries = _queries(terms) if table == "messages_fts" else [*terms, "the OR ion"]
        for q in queries:
            real = dict(
                conn.execute(
                    f"SELECT rowid, snippet({table}, 0, ?, ?, '...', ?) FROM {table} "
                    f"WHERE {table} MATCH ? LIMIT 60",
                    (MARK_START, MARK_END, SNIPPET_TOKENS, q),
                ).fetchall()
            )
            if not real:
                continue
            cur = conn.execute(
                f"SELECT rowid AS id, * FROM {table} WHERE rowid IN ({','.join('?' * len(real))})",
                list(real),
            )
            names = [d[0] for d in cur.description]
            docs = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
            mirrored = snippet_mirror.snippets(
                declaration, docs, q, (MARK_START, MARK_END), SNIPPET_TOKENS
            )
            assert mirrored == real, (name, table, q)
            compared += len(real)
    conn.close()
    assert compared > 100


def test_search_pages_show_the_same_snippets_with_and_without_the_mirror(tmp_path, monkeypatch):
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    conn = sqlite3.connect(db)
    terms = _terms(conn, "messages_fts")
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    urls = [f"/search?q={q}&format=json" for q in _queries(terms)]
    urls += [f"/search?q={terms[0][:3]}*&sort=newest&format=json"]
    mirrored = [client.get(u).get_json() for u in urls]
    calls = []
    real_snippets = snippet_mirror.snippets

    def counting(*a, **kw):
        calls.append(1)
        return real_snippets(*a, **kw)

    monkeypatch.setattr("webui.db.search.reading.mirror_snippets", counting)
    again = [client.get(u).get_json() for u in urls]
    assert calls, "the mirror answered the snippets"
    monkeypatch.setattr("webui.db.search.reading.mirror_declaration", lambda _sql: None)
    direct = [client.get(u).get_json() for u in urls]
    assert mirrored == again == direct
    assert sum(len(p["results"]) for p in direct) > 50
    assert any(
        MARK_START in r["snippet"] or ">>>" in r["snippet"] for p in direct for r in p["results"]
    )
