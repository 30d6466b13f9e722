"""A kept order pages and moves like SQLite's ORDER BY key, id (mixed types included)."""

from __future__ import annotations

import random
import sqlite3

import pytest

from webui.db.sessions.kept_order import KeptOrder

VALUES = [None, 0, 1, 2.5, -3, 7, "a", "b", "10", b"\x00", b"z"]


def _sqlite_sorted(pairs, descending):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (k, id TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", pairs)
    d = "DESC" if descending else "ASC"
    return conn.execute(f"SELECT k, id FROM t ORDER BY k {d}, id {d}").fetchall()


@pytest.mark.parametrize("descending", [True, False])
def test_pages_from_any_cursor_and_inserts_where_sqlite_would(descending):
    rng = random.Random(7)
    pairs = [(rng.choice(VALUES), f"s{i:03d}") for i in range(200)]
    truth = _sqlite_sorted(pairs, descending)
    order = KeptOrder(truth, descending)
    # every cursor: the page after it is SQLite's next rows
    for at in range(len(truth)):
        page = order.page(truth[at], 5)
        assert [(p["k"], p["id"]) for p in page] == truth[at + 1 : at + 6]
    assert [(p["k"], p["id"]) for p in order.page(None, 3)] == truth[:3]
    # moved in place: some go, some come back with new keys, new ones arrive
    gone = {i for _, i in rng.sample(truth, 40)}
    moved = order.without(gone)
    fresh = [(rng.choice(VALUES), i) for i in sorted(gone)[:20]] + [(3, "new1"), (None, "new2")]
    for k, i in fresh:
        moved.insert(k, i)
    kept = [(k, i) for k, i in truth if i not in gone]
    assert list(zip(moved.keys, moved.ids, strict=True)) == _sqlite_sorted(kept + fresh, descending)
