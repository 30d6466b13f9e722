"""bm25 worked out again from its parts (webui.db.search.bm25) gives SQLite's own score: on one
index with its own statistics, and on two indexes taken as one file."""

from __future__ import annotations

import sqlite3

import pytest

from webui.db.search import bm25

DOCS = [
    "docker compose up brings the stack up",
    "the docker daemon is not running, start docker first",
    "compose files describe services; docker reads them",
    "nothing about containers here at all, only words and more words to make it long",
    "deploy the service with docker compose and watch the logs of docker",
    "rust and python, python and rust",
    "a deployment deploys deployed services",
]


def _index(rows: list[tuple[int, str]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content)")
    conn.executemany("INSERT INTO t(rowid, content) VALUES (?, ?)", rows)
    conn.commit()  # FTS5 writes its records (the averages among them) as the insert commits
    return conn


def _figures(conn, query: str, phrases: list[str], ids: list[int]):
    rows, tokens = bm25.averages(
        conn.execute("SELECT block FROM t_data WHERE id = 1").fetchone()[0]
    )
    hits, scores = {}, {}
    for p in phrases:
        hits[p] = conn.execute("SELECT COUNT(*) FROM t WHERE t MATCH ?", [p]).fetchone()[0]
        scores[p] = dict(
            conn.execute(
                "SELECT rowid, bm25(t) FROM t WHERE t MATCH ? AND +rowid IN "
                f"({','.join(map(str, ids))})",
                [p],
            ).fetchall()
        )
    lengths = {
        i: bm25.doc_length(sz)
        for i, sz in conn.execute(
            f"SELECT id, sz FROM t_docsize WHERE id IN ({','.join(map(str, ids))})"
        )
    }
    return bm25.FileStats(rows, tokens, hits), scores, lengths


@pytest.mark.parametrize(
    "query", ["docker", "docker compose", '"docker compose"', "deploy*", "python OR rust"]
)
def test_scores_rebuilt_from_their_parts_are_sqlite_s_own(query):
    whole = _index(list(enumerate(DOCS, start=1)))
    phrases = bm25.phrases(query)
    assert phrases
    truth = dict(whole.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH ?", [query]))
    ids = list(truth)
    mine, scores, lengths = _figures(whole, query, phrases, ids)
    for i in ids:
        per = [(p, scores[p].get(i, 0.0)) for p in phrases]
        assert bm25.rescore(per, lengths[i], mine, mine) == pytest.approx(truth[i], rel=1e-12)
    # Split in two files: each hit scored with both files' statistics (a file without a hit
    # counts too: its rows are the one file's) is the whole file's.
    a = _index([(i, d) for i, d in enumerate(DOCS, start=1) if i % 2])
    b = _index([(i, d) for i, d in enumerate(DOCS, start=1) if not i % 2])
    parts = []
    for conn in (a, b):
        found = [r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", [query])]
        parts.append((found, *_figures(conn, query, phrases, found or [0])))
    every = bm25.combined(p[1] for p in parts)
    for found, stats, scores, lengths in parts:
        for i in found:
            per = [(p, scores[p].get(i, 0.0)) for p in phrases]
            assert bm25.rescore(per, lengths[i], stats, every) == pytest.approx(truth[i], rel=1e-12)


def test_expressions_are_taken_apart_only_when_the_rescoring_holds():
    assert bm25.phrases("docker compose") == ["docker", "compose"]
    assert bm25.phrases('"docker compose" up') == ['"docker compose"', "up"]
    assert bm25.phrases("deploy* OR (ship AND it)") == ["deploy*", "ship", "it"]
    for unsupported in ("docker NOT compose", "NEAR(a b)", "content: docker", "^start", "a + b"):
        assert bm25.phrases(unsupported) is None, unsupported
