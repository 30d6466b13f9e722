"""Lineage graphs: exactly the sessions recursive SQL finds, totals equal SQL sums, and robust
against dangling parents, cycles, 1,000-deep chains and wide fans."""

from __future__ import annotations

import sqlite3

import pytest

from support import copy_fixture, make_app, sql
from support.reference import resolve_title_cases

ROOT_SQL = """
WITH RECURSIVE up(id, parent) AS (
  SELECT id, parent_session_id FROM sessions WHERE id = ?
  UNION SELECT s.id, s.parent_session_id FROM sessions s JOIN up ON s.id = up.parent)
SELECT id FROM up WHERE parent IS NULL OR parent NOT IN (SELECT id FROM sessions)"""
DOWN_SQL = """
WITH RECURSIVE down(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN down
  ON s.parent_session_id = down.id) SELECT id FROM down"""


def test_every_family_equals_recursive_sql(fx):
    db, client = fx
    ids = [
        r[0]
        for r in sql(
            db,
            "SELECT id FROM sessions WHERE parent_session_id IS NOT NULL "
            "OR id IN (SELECT parent_session_id FROM sessions)",
        )
    ]
    assert ids
    for sid in ids:
        (root,) = sql(db, ROOT_SQL, (sid,))[0]
        expected = {r[0] for r in sql(db, DOWN_SQL, (root,))}
        body = client.get(f"/sessions/{sid}/lineage?format=json").get_json()
        assert body["root"] == root
        assert {n["id"] for n in body["nodes"]} == expected, sid
        marks = ",".join("?" * len(expected))
        (sums,) = sql(
            db,
            f"SELECT SUM(COALESCE(message_count,0)), SUM(COALESCE(input_tokens,0)), "
            f"SUM(COALESCE(output_tokens,0)), SUM(COALESCE(cache_read_tokens,0)), "
            f"SUM(COALESCE(cache_write_tokens,0)), SUM(COALESCE(reasoning_tokens,0)), "
            f"SUM(COALESCE(actual_cost_usd, estimated_cost_usd, 0)), MIN(started_at) "
            f"FROM sessions WHERE id IN ({marks})",
            tuple(expected),
        )
        t = body["totals"]
        assert (
            t["message_count"],
            t["input_tokens"],
            t["output_tokens"],
            t["cache_read_tokens"],
            t["cache_write_tokens"],
            t["reasoning_tokens"],
        ) == sums[:6]
        assert t["cost_usd"] == pytest.approx(sums[6], abs=1e-9)
        assert t["started_at"] == sums[7] and t["segments"] == len(expected)


def test_lineage_pages_render_and_link_every_node(fx):
    db, client = fx
    sid = sql(
        db,
        "SELECT parent_session_id FROM sessions WHERE parent_session_id IS NOT NULL "
        "GROUP BY parent_session_id ORDER BY COUNT(*) DESC LIMIT 1",
    )[0][0]
    html = client.get(f"/sessions/{sid}/lineage").get_data(as_text=True)
    assert "<svg class=\"lineage\"" in html
    for n in client.get(f"/sessions/{sid}/lineage?format=json").get_json()["nodes"]:
        assert f'href="/sessions/{n["id"]}"' in html


def test_compression_edges_and_viewer_navigation(fx):
    db, client = fx
    rows = sql(
        db,
        "SELECT c.id, p.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
        "WHERE p.end_reason = 'compression' AND c.started_at >= p.ended_at - 1 LIMIT 5",
    )
    if not rows:
        pytest.skip("no compression chain in this fixture")
    for child, parent in rows:
        body = client.get(f"/sessions/{child}/lineage?format=json").get_json()
        edge = next(n["edge"] for n in body["nodes"] if n["id"] == child)
        assert edge == "compression"
        html = client.get(f"/sessions/{child}").get_data(as_text=True)
        assert "Continued from" in html and f'href="/sessions/{parent}"' in html
        assert "sessions in this conversation" in html and "ontinued" in html
        html = client.get(f"/sessions/{parent}").get_data(as_text=True)
        assert "Continued in" in html and f'href="/sessions/{child}"' in html


def _write(db, statements):
    conn = sqlite3.connect(db)
    with conn:
        for sql_text, params in statements:
            conn.execute(sql_text, params)
    conn.close()


def test_dangling_parent(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    child, parent = sql(
        db, "SELECT id, parent_session_id FROM sessions WHERE parent_session_id IS NOT NULL LIMIT 1"
    )[0]
    _write(
        db,
        [
            ("DELETE FROM messages WHERE session_id = ?", (parent,)),
            ("DELETE FROM sessions WHERE id = ?", (parent,)),
        ],
    )
    client = make_app(db, tmp_path / "inst").test_client()
    body = client.get(f"/sessions/{child}/lineage?format=json").get_json()
    assert body["root"] == child and body["dangling_parent"] == parent
    html = client.get(f"/sessions/{child}/lineage").get_data(as_text=True)
    assert "no longer in the database" in html
    assert "no longer in the database" in client.get(f"/sessions/{child}").get_data(as_text=True)


def test_cycle_built_by_hand_never_loops(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    a, b, c = [
        r[0]
        for r in sql(
            db,
            "SELECT id FROM sessions WHERE parent_session_id IS NULL ORDER BY started_at LIMIT 3",
        )
    ]
    _write(
        db,
        [
            ("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (a, b)),
            ("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (b, c)),
            ("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (c, a)),
        ],
    )
    client = make_app(db, tmp_path / "inst").test_client()
    for sid in (a, b, c):
        body = client.get(f"/sessions/{sid}/lineage?format=json").get_json()
        assert body["cycle"] is True
        assert {n["id"] for n in body["nodes"]} >= {a, b, c}
        assert client.get(f"/sessions/{sid}/lineage").status_code == 200
        assert client.get(f"/sessions/{sid}").status_code == 200


def _chain(db, n: int, fan: int = 0) -> tuple[str, str]:
    conn = sqlite3.connect(db)
    with conn:
        prev = None
        t = 1.7e9
        for i in range(n):
            sid = f"chain_{i:05d}"
            conn.execute(
                "INSERT INTO sessions (id, source, started_at, ended_at, end_reason, "
                "parent_session_id, title, message_count, input_tokens) VALUES "
                "(?, 'cli', ?, ?, 'compression', ?, ?, 2, 10)",
                (sid, t, t + 50, prev, "deep chain" if i == 0 else f"deep chain #{i + 1}"),
            )
            prev, t = sid, t + 60
        for j in range(fan):
            conn.execute(
                "INSERT INTO sessions (id, source, started_at, parent_session_id) "
                "VALUES (?, 'cli', ?, 'chain_00000')",
                (f"fan_{j:03d}", 1.7e9 + 10 + j / 10),
            )
    conn.close()
    return "chain_00000", prev


def test_chain_deeper_than_1000(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    first, last = _chain(db, 1200)
    client = make_app(db, tmp_path / "inst").test_client()
    body = client.get(f"/sessions/{last}/lineage?format=json").get_json()
    assert body["root"] == first and len(body["nodes"]) == 1200
    assert body["totals"]["message_count"] == 2400
    html = client.get(f"/sessions/{last}/lineage").get_data(as_text=True)
    assert html.count('class="node') == 1200
    page = client.get(f"/sessions/{last}").get_data(as_text=True)
    # The 1,199 ancestors read alike ("deep chain #N"): one crumb says how many there are.
    assert "deep chain (1199 parts)</a>" in page and "Continued from" in page
    # /t/<title> resolves to the newest numbered segment, as Hermes does
    r = client.get("/t/deep%20chain")
    assert r.headers["Location"] == f"/sessions/{last}"


def test_wide_fan_collapses_with_a_count(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    first, _ = _chain(db, 1, fan=100)
    client = make_app(db, tmp_path / "inst").test_client()
    html = client.get(f"/sessions/{first}/lineage").get_data(as_text=True)
    assert "+88 more" in html
    assert html.count("fan_0") >= 100  # all of them in the table


def test_resolve_by_title_like_hermes(tmp_path):
    probe, results = resolve_title_cases()
    assert len(probe) == 13 and len(results) == 12
    db = copy_fixture("hermes-v11.db", tmp_path)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET title = NULL")
        for i, (sid, title) in enumerate(probe):
            conn.execute(
                "INSERT INTO sessions (id, source, started_at, title) VALUES (?, 'cli', ?, ?)",
                (sid, 2e9 + i, title),
            )
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    from urllib.parse import quote

    for title, expected in results:
        r = client.get(f"/t/{quote(title)}")
        if expected is None:
            assert r.status_code == 404
        else:
            assert r.headers["Location"] == f"/sessions/{expected}", title


def test_default_rows_are_hermes_rows_each_chain_once(fx):
    """Hermes's rows: no delegate or unmarked child and no continuation is listed; a
    compression chain appears once, as its root's slot showing its newest segment, with the
    whole chain's totals; every other row stands for itself."""
    db, client = fx
    from support.http import follow

    every = {
        r["id"]: r
        for r in follow(client, "/sessions?format=json&rows=all&archived=include", "sessions")
    }
    rows = follow(client, "/sessions?format=json&archived=include", "sessions")
    assert len({r["id"] for r in rows}) == len(rows)
    parents = dict(sql(db, "SELECT id, parent_session_id FROM sessions"))
    for r in rows:
        root = r.get("lineage_root_id") or r["id"]
        assert root in every
        parent = parents[root]
        if parent is not None:  # only branches may have a parent
            (ended_branched,) = sql(
                db,
                "SELECT COUNT(*) FROM sessions p, sessions c WHERE c.id = ? AND p.id = ? AND "
                "((p.end_reason = 'branched' AND c.started_at >= p.ended_at) OR "
                "json_extract(c.model_config, '$._branched_from') IS NOT NULL)",
                (root, parent),
            )[0]
            assert ended_branched == 1, root
        if r.get("lineage_root_id"):
            conv = r["conversation"]
            assert conv["root"] == root and conv["members"][-1] == r["id"]
            assert r["started_at"] == every[root]["started_at"]
            # the chain: each member a child of the one before, after a compression
            for before, after in zip(conv["members"], conv["members"][1:], strict=False):
                assert parents[after] == before
                assert (
                    sql(db, "SELECT end_reason FROM sessions WHERE id = ?", (before,))[0][0]
                    == "compression"
                )
            (msgs,) = sql(
                db,
                f"SELECT SUM(COALESCE(message_count, 0)) FROM sessions WHERE id IN "
                f"({','.join('?' * len(conv['members']))})",
                tuple(conv["members"]),
            )[0]
            assert conv["message_count"] == msgs
    hidden = set(every) - {r.get("lineage_root_id") or r["id"] for r in rows}
    for sid in hidden:  # what is not listed is a child that is no branch, or a tool session
        assert parents[sid] is not None or every[sid]["source"] == "tool", sid
    for sort in ("cost", "-tokens", "last_active", "-messages"):
        got = follow(client, f"/sessions?format=json&archived=include&sort={sort}", "sessions")
        assert sorted(r["id"] for r in got) == sorted(r["id"] for r in rows), sort


def test_conversation_found_by_its_root_or_tip(fx):
    """Filtering by an older segment's title or id finds its conversation (shown by its
    newest segment), not nothing."""
    db, client = fx
    from support.http import follow

    chains = [
        r
        for r in follow(client, "/sessions?format=json&archived=include", "sessions")
        if r.get("lineage_root_id")
    ]
    for row in chains[:5]:
        root = row["lineage_root_id"]
        (title,) = sql(db, "SELECT title FROM sessions WHERE id = ?", (root,))[0]
        for q in (root, title, row["id"]):
            if not q:
                continue
            got = client.get(
                "/sessions", query_string={"format": "json", "archived": "include", "q": q}
            ).get_json()["sessions"]
            assert row["id"] in [r["id"] for r in got], q


def _kind_by_sql(db, child: str) -> str:
    """Hermes's chain rule, in SQL: subagent (started before its parent ended), continuation
    (the parent ended by compression), branch, or other."""
    ((kind,),) = sql(
        db,
        "SELECT CASE WHEN p.ended_at IS NULL OR c.started_at < p.ended_at - 1.0 THEN 'subagent run' "
        "WHEN p.end_reason = 'compression' THEN 'continuation' "
        "WHEN p.end_reason IN ('branched', 'session_switch') THEN 'branch' "
        "ELSE 'child session' END FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
        "WHERE c.id = ?",
        (child,),
    )
    return kind


def test_relatives_are_rows_grouped_by_kind_and_summed_up_in_words(fx):
    """The viewer lists every direct child once, as a row under its kind, and words the whole
    conversation by the chain rule ("continued 2 times · spawned 3 subagent runs")."""
    import re
    from html import unescape

    db, client = fx
    parents = [
        r[0]
        for r in sql(
            db,
            "SELECT parent_session_id FROM sessions WHERE parent_session_id IN "
            "(SELECT id FROM sessions) GROUP BY parent_session_id ORDER BY COUNT(*) DESC LIMIT 8",
        )
    ]
    if not parents:
        pytest.skip("no parent with children in this fixture")
    for sid in parents:
        html = client.get(f"/sessions/{sid}").get_data(as_text=True)
        children = [
            r[0] for r in sql(db, "SELECT id FROM sessions WHERE parent_session_id = ?", (sid,))
        ]
        tables = re.findall(r'<table class="relatives-table".*?</table>', html, re.S)
        listed: dict[str, str] = {}
        for table in tables:
            caption = unescape(re.search(r"<caption>(.*?)</caption>", table).group(1))
            for row in re.findall(
                r"<tr>\s*<td><a href=\"/sessions/([^\"]+)\">.*?</tr>", table, re.S
            ):
                assert row not in listed, row
                kind = re.search(
                    rf'/sessions/{re.escape(row)}".*?</td>\s*<td>(.*?)</td>', table, re.S
                ).group(1)
                listed[row] = kind
                assert caption.split(" ", 1)[1].startswith(kind.split(" ")[0]), (caption, kind)
        if len(children) <= 50:
            assert set(listed) == set(children), sid
        for child, kind in listed.items():
            assert kind == _kind_by_sql(db, child), child
        # the summary: edges of every kind over the whole conversation
        (root,) = sql(db, ROOT_SQL, (sid,))[0]
        family = [r[0] for r in sql(db, DOWN_SQL, (root,)) if r[0] != root]
        kinds = [_kind_by_sql(db, c) for c in family]
        summary = re.search(r'<strong class="chain-summary">(.*?)</strong>', html)
        subagents = kinds.count("subagent run")
        continued = kinds.count("continuation")
        if subagents:
            assert f"pawned {subagents:,} subagent run" in summary.group(1)
        if continued:
            times = {1: "once", 2: "twice"}.get(continued, f"{continued:,} times")
            assert f"ontinued {times}" in summary.group(1)
        assert "Part of a conversation of" not in html
