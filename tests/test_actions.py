"""Rename, delete, prune, export — Hermes's semantics, through real HTTP with CSRF tokens."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from support import FIXTURE_NAMES, copy_fixture, make_app, sql
from support.http import fts_consistent, post
from support.reference import rebuild_long_title_inputs, title_cases
from webui.hermes.titles import TitleError, sanitize_title

TITLES = rebuild_long_title_inputs(title_cases())


def test_reference_title_table_is_complete():
    assert [c[0] for c in TITLES] == list(range(1, 34))


@pytest.mark.parametrize("row,raw,expected", TITLES, ids=[f"row{c[0]}" for c in TITLES])
def test_title_cleaning_matches_hermes(row, raw, expected):
    if isinstance(expected, ValueError):
        with pytest.raises(TitleError) as exc:
            sanitize_title(raw)
        assert str(exc.value) == str(expected)
    else:
        assert sanitize_title(raw) == expected


@pytest.fixture
def v11(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    return db, make_app(db, tmp_path / "inst").test_client()


def title_of(db, sid):
    return sql(db, "SELECT title FROM sessions WHERE id = ?", (sid,))[0][0]


def test_rename_rules(v11):
    db, client = v11
    (a, ta), (b, tb) = sql(db, "SELECT id, title FROM sessions WHERE title IS NOT NULL LIMIT 2")
    r = post(client, f"/sessions/{a}/title", {"title": "  Fresh\u200b name\t "}, htmx=True)
    assert r.status_code == 200 and title_of(db, a) == "Fresh name"
    assert "Renamed" in r.headers["HX-Trigger"] and "Fresh name" in r.get_data(as_text=True)
    # duplicate: inline error naming the other session, nothing changed
    r = post(client, f"/sessions/{a}/title", {"title": tb}, htmx=True)
    assert r.status_code == 409
    html = r.get_data(as_text=True)
    assert "already in use by" in html and f'href="/sessions/{b}"' in html
    assert title_of(db, a) == "Fresh name"
    # case-sensitive uniqueness, as Hermes
    r = post(client, f"/sessions/{a}/title", {"title": tb.upper()}, htmx=True)
    assert (r.status_code == 200) == (tb.upper() != tb)
    # too long after cleaning
    r = post(client, f"/sessions/{a}/title", {"title": "x" * 101}, htmx=True)
    assert r.status_code == 422 and "Title too long (101 chars, max 100)" in r.get_data(
        as_text=True
    )
    # its own title again is fine; empty clears
    current = title_of(db, a)
    assert post(client, f"/sessions/{a}/title", {"title": current}, htmx=True).status_code == 200
    assert post(client, f"/sessions/{a}/title", {"title": "   "}, htmx=True).status_code == 200
    assert title_of(db, a) is None
    assert post(client, "/sessions/nope/title", {"title": "x"}).status_code == 404
    # without htmx: a redirect back to the viewer
    r = post(client, f"/sessions/{a}/title", {"title": "Plain form"}, browser_form=True)
    assert r.status_code == 302 and title_of(db, a) == "Plain form"
    # a script (token in the header) gets the updated fragment
    r = post(client, f"/sessions/{a}/title", {"title": "From a script"})
    assert r.status_code == 200 and "From a script" in r.get_data(as_text=True)


def test_rename_without_csrf_is_refused(v11):
    db, client = v11
    sid, title = sql(db, "SELECT id, title FROM sessions WHERE title IS NOT NULL LIMIT 1")[0]
    r = client.post(f"/sessions/{sid}/title", data={"title": "hijacked"})
    assert r.status_code == 400 and "CSRF" in r.get_data(as_text=True)
    assert title_of(db, sid) == title


def test_cross_site_posts_are_refused(v11):
    db, client = v11
    sid, title = sql(db, "SELECT id, title FROM sessions WHERE title IS NOT NULL LIMIT 1")[0]
    for headers in (
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
    ):
        r = post(client, f"/sessions/{sid}/title", {"title": "x"}, headers=headers)
        assert r.status_code == 403, headers
    assert title_of(db, sid) == title


def test_delete_orphans_children_and_keeps_search_consistent(v11):
    db, client = v11
    parent = sql(
        db,
        "SELECT parent_session_id FROM sessions WHERE parent_session_id IS NOT NULL "
        "GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1",
    )[0][0]
    children = [
        r[0] for r in sql(db, "SELECT id FROM sessions WHERE parent_session_id = ?", (parent,))
    ]
    n_msgs = sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = ?", (parent,))[0][0]
    before = sql(db, "SELECT COUNT(*) FROM messages")[0][0]
    grand = sql(
        db,
        "SELECT id, parent_session_id FROM sessions WHERE parent_session_id IN "
        f"({','.join('?' * len(children))})",
        tuple(children),
    )
    r = post(client, f"/sessions/{parent}/delete", htmx=True)
    assert r.status_code == 200 and "Deleted" in r.headers["HX-Trigger"]
    assert sql(db, "SELECT COUNT(*) FROM sessions WHERE id = ?", (parent,))[0][0] == 0
    assert sql(db, "SELECT COUNT(*) FROM messages")[0][0] == before - n_msgs
    for c in children:
        assert sql(db, "SELECT parent_session_id FROM sessions WHERE id = ?", (c,))[0][0] is None
    for g, p in grand:
        assert sql(db, "SELECT parent_session_id FROM sessions WHERE id = ?", (g,))[0][0] == p
    assert fts_consistent(db) == 0
    body = client.get(f"/search?q=the&session={parent}&format=json").get_json()
    assert body["results"] == []
    assert post(client, f"/sessions/{parent}/delete").status_code == 404


def test_bulk_preview_then_delete_removes_rows(v11):
    db, client = v11
    ids = [r[0] for r in sql(db, "SELECT id FROM sessions ORDER BY started_at LIMIT 3")]
    r = post(client, "/sessions/bulk", {"session": ids, "action": "preview"})
    assert r.status_code == 200 and "Delete 3 sessions?" in r.get_data(as_text=True)
    assert sql(db, "SELECT COUNT(*) FROM sessions WHERE id IN (?,?,?)", tuple(ids))[0][0] == 3
    r = post(
        client, "/sessions/bulk", {"session": ids, "action": "delete", "confirm": "yes"}, htmx=True
    )
    assert r.status_code == 200
    assert r.get_data(as_text=True).count('hx-swap-oob="delete"') == 3
    assert sql(db, "SELECT COUNT(*) FROM sessions WHERE id IN (?,?,?)", tuple(ids))[0][0] == 0
    assert fts_consistent(db) == 0


DAY = 86400


def build_prune_probe(db, now):
    """The reference's §5 probe: sessions and a chain relative to a pinned clock."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM messages")
        conn.execute("DELETE FROM sessions")
        rows = [
            ("old_ended", 200, 199, None, "cli"),
            ("old_active", 200, None, None, "cli"),
            ("longrun", 100, 1, None, "cli"),
            ("recent_ended", 10, 9, None, "cli"),
            ("A", 200, 199.9, None, "cli"),
            ("B", 199, 198, "A", "cli"),
            ("C", 10, 9.9, "B", "cli"),
            ("D", 9, 8, "C", "cli"),
            ("old_tg", 300, 299, None, "telegram"),
            ("edge_90", 90, 89, None, "cli"),
            ("old_child_active", 150, None, "old_ended", "cli"),
        ]
        for sid, started, ended, parent, source in rows:
            conn.execute(
                "INSERT INTO sessions (id, source, started_at, ended_at, parent_session_id)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    sid,
                    source,
                    now - started * DAY,
                    None if ended is None else now - ended * DAY,
                    parent,
                ),
            )
            for i in range(3):
                conn.execute(
                    "INSERT INTO messages (session_id, role, content, timestamp) VALUES "
                    "(?, 'user', 'prunetoken message', ?)",
                    (sid, now - started * DAY + i),
                )
    conn.close()


@pytest.mark.parametrize(
    "days,source,deleted,remaining",
    [
        (
            90,
            None,
            5,
            {
                "C": None,
                "D": "C",
                "edge_90": None,
                "old_active": None,
                "old_child_active": None,
                "recent_ended": None,
            },
        ),
        (
            90,
            "telegram",
            1,
            {
                "A": None,
                "B": "A",
                "C": "B",
                "D": "C",
                "edge_90": None,
                "longrun": None,
                "old_active": None,
                "old_child_active": "old_ended",
                "old_ended": None,
                "recent_ended": None,
            },
        ),
        (365, None, 0, None),
        (
            30,
            None,
            6,
            {
                "C": None,
                "D": "C",
                "old_active": None,
                "old_child_active": None,
                "recent_ended": None,
            },
        ),
    ],
)
def test_prune_matches_hermes_probe(tmp_path, days, source, deleted, remaining):
    db = copy_fixture("hermes-v11.db", tmp_path)
    now = time.time()
    build_prune_probe(db, now)
    client = make_app(db, tmp_path / "inst").test_client()
    cutoff = now - days * DAY
    qs = f"older_than={days}" + (f"&source={source}" if source else "")
    preview = client.get(f"/prune?{qs}&cutoff={cutoff!r}&format=json").get_json()
    assert preview["count"] == deleted
    r = post(
        client,
        "/prune",
        {"older_than": days, "source": source or "", "cutoff": cutoff, "confirm": "yes"},
    )
    assert r.status_code == 200
    job = r.get_json()
    assert job["error"] is None and job["deleted"] == deleted
    left = dict(sql(db, "SELECT id, parent_session_id FROM sessions"))
    if remaining is not None:
        assert left == remaining
    else:
        assert len(left) == 11
    assert sql(db, "SELECT COUNT(*) FROM messages")[0][0] == 3 * len(left)
    assert fts_consistent(db) == 0


def test_prune_needs_confirmation_and_valid_input(v11):
    db, client = v11
    n = sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
    assert post(client, "/prune", {"older_than": 1}).status_code == 400
    assert post(client, "/prune", {"older_than": "soon", "confirm": "yes"}).status_code == 400
    assert client.get("/prune?older_than=-4").status_code == 400
    assert sql(db, "SELECT COUNT(*) FROM sessions")[0][0] == n
    html = client.get("/prune?older_than=90").get_data(as_text=True)
    assert "VACUUM" in html and "reuses the freed pages" in html
    # A time no calendar can name (the fuzz found one just before year 1): a message, not a
    # 500. The edge moves a day every day, so it is counted from today.
    from datetime import date

    edge = date.today().toordinal() + 2  # days ago: just before 0001-01-01
    for url in (
        f"/prune?after={edge}",
        f"/prune?older_than={edge}",
        "/prune?older_than=99999999",
        "/prune?before=99999999",
    ):
        r = client.get(url)
        assert r.status_code == 400 and "too far from today" in r.get_data(as_text=True), url
    r = client.get("/prune?older_than=1&cursor=not-a-cursor")
    assert r.status_code == 400 and "cursor is not valid" in r.get_data(as_text=True)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_preview_pages_and_totals_cover_the_whole_selection(tmp_path, name):
    """Each real schema: the preview's pages, read as a user's "show more" reads them, hold
    exactly the sessions the prune would delete, and each family of totals sums to them."""
    db = copy_fixture(name, tmp_path)
    app = make_app(db, tmp_path / "inst")
    client = app.test_client()
    expected = client.get("/prune?older_than=1&format=json").get_json()
    with app.app_context():
        from webui.hermes.selection import selection_from_args
        from webui.web.logbooks import get_logbook

        lb = get_logbook()
        sel = selection_from_args({"older_than": "1"}, command="prune")
        seen, cursor = [], None
        while True:
            page = lb.actions.selection_page(sel, cursor, limit=2)
            assert page["position"] == len(seen)
            seen += [r["id"] for r in page["sessions"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert seen == expected["sessions"] and len(seen) == expected["count"] > 2
    for family in ("source", "model", "month"):
        groups = expected["totals"][family]
        assert sum(g["sessions"] for g in groups) == expected["count"]
        assert sum(g["messages"] for g in groups) == expected["messages"]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_jsonl_export_is_hermes_records(tmp_path, name):
    db = copy_fixture(name, tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    r = client.get("/export.jsonl")
    assert r.status_code == 200 and r.is_streamed
    lines = r.get_data(as_text=True).splitlines()
    assert len(lines) == sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
    session_cols = [c[1] for c in sql(db, "PRAGMA table_info(sessions)")]
    message_cols = [c[1] for c in sql(db, "PRAGMA table_info(messages)")]
    version = sql(db, "SELECT version FROM schema_version")[0][0]
    # Hermes 0.19 (schema 22): active messages by id, a NULL tool_calls stays null; before:
    # every message by time, tool_calls always a list.
    v22 = version >= 22
    messages_sql = (
        "SELECT id FROM messages WHERE session_id = ? AND active = 1 ORDER BY id"
        if v22
        else "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp, id"
    )
    total = 0
    for line in lines:
        rec = json.loads(line)
        expected_keys = session_cols + (["last_active"] if version >= 11 else []) + ["messages"]
        assert list(rec) == expected_keys
        ids = [x[0] for x in sql(db, messages_sql, (rec["id"],))]
        assert [m["id"] for m in rec["messages"]] == ids
        for m in rec["messages"]:
            assert list(m) == message_cols
            assert isinstance(m["tool_calls"], list) or (v22 and m["tool_calls"] in (None, ""))
        total += len(ids)
    everything = "SELECT COUNT(*) FROM messages" + (" WHERE active = 1" if v22 else "")
    assert total == sql(db, everything)[0][0]
    order = [json.loads(x)["id"] for x in lines]
    assert order == [
        r[0]
        for r in sql(
            db,
            "SELECT s.id FROM sessions s ORDER BY COALESCE((SELECT MAX(timestamp) FROM messages m "
            "WHERE m.session_id = s.id), s.started_at) DESC, s.started_at DESC, s.id DESC",
        )
    ]


def test_export_scopes(v11, tmp_path):
    db, client = v11
    src = sql(db, "SELECT source FROM sessions GROUP BY 1 ORDER BY COUNT(*) DESC")[0][0]
    lines = client.get(f"/export.jsonl?source={src}").get_data(as_text=True).splitlines()
    assert {json.loads(x)["source"] for x in lines} == {src}
    assert len(lines) == sql(db, "SELECT COUNT(*) FROM sessions WHERE source = ?", (src,))[0][0]
    child = sql(db, "SELECT id FROM sessions WHERE parent_session_id IS NOT NULL LIMIT 1")[0][0]
    family = {
        json.loads(x)["id"]
        for x in client.get(f"/export.jsonl?lineage={child}").get_data(as_text=True).splitlines()
    }
    tree = client.get(f"/sessions/{child}/lineage?format=json").get_json()
    assert family == {n["id"] for n in tree["nodes"]}
    csv_text = client.get(f"/export.csv?source={src}").get_data(as_text=True)
    assert csv_text.splitlines()[0].startswith("id,title,source")
    assert len(csv_text.strip().splitlines()) == len(lines) + 1 or '"' in csv_text
    md = client.get(f"/export.md?session={child}&style=transcript")
    assert md.status_code == 200 and md.mimetype == "text/markdown"
    assert "## user" in md.get_data(as_text=True) or "## assistant" in md.get_data(as_text=True)
    assert client.get("/export.md").status_code == 400
    assert client.get("/export.jsonl?session=nope").status_code == 404
    two = [r[0] for r in sql(db, "SELECT id FROM sessions LIMIT 2")]
    lines = (
        client.get(f"/export.jsonl?session={two[0]}&session={two[1]}")
        .get_data(as_text=True)
        .splitlines()
    )
    assert [json.loads(x)["id"] for x in lines] == two


def test_read_only_hides_controls_and_refuses_changes(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    client = make_app(db, tmp_path / "inst", LOGBOOK_READ_ONLY=True).test_client()
    sid, title = sql(db, "SELECT id, title FROM sessions WHERE title IS NOT NULL LIMIT 1")[0]
    html = client.get(f"/sessions/{sid}").get_data(as_text=True)
    assert "Delete…" not in html and 'class="title-edit"' not in html
    assert "Delete selected" not in client.get("/sessions").get_data(as_text=True)
    for url, data in (
        (f"/sessions/{sid}/title", {"title": "x"}),
        (f"/sessions/{sid}/delete", {}),
        ("/prune", {"older_than": 0, "confirm": "yes"}),
        ("/sessions/bulk", {"session": sid, "action": "delete", "confirm": "yes"}),
    ):
        r = post(client, url, data)
        assert r.status_code == 403 and "read-only" in r.get_data(as_text=True), url
    assert title_of(db, sid) == title
    assert client.get("/export.jsonl?session=" + sid).status_code == 200


def test_newer_schema_refuses_writes_but_reads(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    client = make_app(db, tmp_path / "inst").test_client()
    sid, title = sql(db, "SELECT id, title FROM sessions WHERE title IS NOT NULL LIMIT 1")[0]
    assert client.get(f"/sessions/{sid}").status_code == 200
    r = post(client, f"/sessions/{sid}/title", {"title": "x"})
    assert r.status_code == 403 and "newer than Logbook knows" in r.get_data(as_text=True)
    assert title_of(db, sid) == title


@pytest.mark.slow
def test_prune_interrupted_midway_leaves_a_consistent_database(tmp_path, monkeypatch):
    from webui.db.changes.writer import Writer
    from webui.demo import generate

    db = tmp_path / "state.db"
    generate(db, sessions=400, seed=3, messages_per_session=8)
    app = make_app(db, tmp_path / "inst")
    calls = {"n": 0}
    real_run = Writer.run

    def flaky(self, fn, **kw):
        calls["n"] += 1
        if calls["n"] == 12:
            raise sqlite3.OperationalError("disk I/O error (simulated crash mid-prune)")
        return real_run(self, fn, **kw)

    monkeypatch.setattr(Writer, "run", flaky)
    client = app.test_client()
    before = sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
    r = post(client, "/prune", {"older_than": 30, "confirm": "yes"})
    job = r.get_json()
    assert r.status_code == 503 and job["error"] and calls["n"] > 0
    after = sql(db, "SELECT COUNT(*) FROM sessions")[0][0]
    assert after == before - job["deleted"]
    assert fts_consistent(db) == 0
    monkeypatch.setattr(Writer, "run", real_run)
    r = post(client, "/prune", {"older_than": 30, "confirm": "yes"})
    assert r.status_code == 200 and r.get_json()["error"] is None
    assert (
        sql(
            db,
            "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND started_at < "
            "strftime('%s','now') - 30 * 86400",
        )[0][0]
        == 0
    )
    assert fts_consistent(db) == 0


# -- Hermes 0.19's delete: delegate subagent runs and transcript files go too ------------------


def _transcripts(home, ids):
    folder = home / "sessions"
    folder.mkdir(exist_ok=True)
    made = []
    for sid in ids:
        for name in (f"{sid}.json", f"{sid}.jsonl", f"request_dump_{sid}_1.json"):
            (folder / name).write_text("{}")
            made.append(name)
    return made


def test_delete_on_schema_22_takes_delegates_and_their_transcripts(tmp_path):
    from support.http import post

    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    doomed = ["x_deleg_parent", "x_deleg_a", "x_deleg_a1", "x_deleg_b"]
    _transcripts(tmp_path, [*doomed, "x_plain_child", "x_deleg_parentx"])
    (tmp_path / "sessions" / "request_dump_x_deleg_parent_2.txt").write_text("not a dump")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text("keep me")
    (tmp_path / "sessions" / "x_deleg_b.json").unlink()
    (tmp_path / "sessions" / "x_deleg_b.json").symlink_to(outside)  # a link out of the home
    page = client.get("/sessions/x_deleg_parent/delete").get_data(as_text=True)
    assert "3 subagent runs" in page and "x_deleg_a1" in page
    assert "12 transcript files" in page and "x_plain_child" in page  # orphaned, not deleted
    r = post(client, "/sessions/x_deleg_parent/delete", {}, htmx=True)
    assert r.status_code == 200
    assert "with 3 subagent runs and 12 transcript files" in r.headers["HX-Trigger"]
    left = {
        row[0]
        for row in sql(
            db, "SELECT id FROM sessions WHERE id LIKE 'x_deleg%' OR id = 'x_plain_child'"
        )
    }
    assert left == {"x_plain_child"}
    assert sql(db, "SELECT parent_session_id FROM sessions WHERE id = 'x_plain_child'") == [(None,)]
    assert sql(
        db,
        f"SELECT COUNT(*) FROM messages WHERE session_id IN ({','.join('?' * 4)})",
        tuple(doomed),
    ) == [(0,)]
    remaining = sorted(p.name for p in (tmp_path / "sessions").iterdir())
    assert remaining == sorted(
        [
            "request_dump_x_deleg_parent_2.txt",
            "x_deleg_parentx.json",
            "x_deleg_parentx.jsonl",
            "request_dump_x_deleg_parentx_1.json",
            "x_plain_child.json",
            "x_plain_child.jsonl",
            "request_dump_x_plain_child_1.json",
        ]
    )
    assert outside.read_text() == "keep me"  # the link went, not what it pointed to


def test_delete_on_older_schemas_orphans_children_and_takes_its_transcripts(tmp_path):
    """Hermes at schema 11 removes a deleted session's transcripts when it knows the sessions
    folder; Logbook always knows it (beside the database): deleted conversations must not
    stay on disk. Children are orphaned, as there; their files stay."""
    from support.http import post

    db = copy_fixture("hermes-v11.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    parent, child = sql(
        db, "SELECT parent_session_id, id FROM sessions WHERE parent_session_id IS NOT NULL LIMIT 1"
    )[0]
    _transcripts(tmp_path, [parent])
    kept = _transcripts(tmp_path, [child])
    assert post(client, f"/sessions/{parent}/delete", {}, htmx=True).status_code == 200
    assert sql(db, "SELECT parent_session_id FROM sessions WHERE id = ?", (child,)) == [(None,)]
    assert sorted(p.name for p in (tmp_path / "sessions").iterdir()) == sorted(kept)


def test_a_sessions_folder_linked_out_of_the_home_is_never_touched(tmp_path):
    from support.http import post

    home = tmp_path / "home"
    home.mkdir()
    db = copy_fixture("hermes-v22-extended.db", home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x_tool_run.json").write_text("{}")
    (home / "sessions").symlink_to(elsewhere)
    client = make_app(db, tmp_path / "inst").test_client()
    assert post(client, "/sessions/x_tool_run/delete", {}, htmx=True).status_code == 200
    assert (elsewhere / "x_tool_run.json").exists()


def test_rename_takes_a_title_from_an_earlier_segment_and_actions_take_prefixes(tmp_path):
    """Hermes 0.19: the title an earlier compression segment holds moves to the later one
    (the earlier segments are hidden from the list); a stranger's title is still refused.
    A unique id prefix names its session for every action."""
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    assert sql(db, "SELECT title FROM sessions WHERE id = 'x_chain_root'") == [("Atlas migration",)]
    r = post(client, "/sessions/x_chain_t/title", {"title": "Atlas migration"}, htmx=True)
    assert r.status_code == 200
    assert sql(db, "SELECT id FROM sessions WHERE title = 'Atlas migration'") == [("x_chain_tip",)]
    other = sql(
        db, "SELECT title FROM sessions WHERE title IS NOT NULL AND id NOT LIKE 'x_%' LIMIT 1"
    )[0][0]
    assert (
        post(client, "/sessions/x_chain_tip/title", {"title": other}, htmx=True).status_code == 409
    )
    assert post(client, "/sessions/x_chain/delete", {}, htmx=True).status_code == 404  # ambiguous
    assert post(client, "/sessions/x_preview_l/delete", {}, htmx=True).status_code == 200
    assert sql(db, "SELECT COUNT(*) FROM sessions WHERE id = 'x_preview_long'") == [(0,)]


def test_rename_on_schema_11_keeps_the_documented_refusal(tmp_path):
    db = copy_fixture("hermes-v11.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    parent, child, title = sql(
        db,
        "SELECT p.id, c.id, p.title FROM sessions p JOIN sessions c ON c.parent_session_id = p.id "
        "WHERE p.end_reason = 'compression' AND p.title IS NOT NULL LIMIT 1",
    )[0]
    assert post(client, f"/sessions/{child}/title", {"title": title}, htmx=True).status_code == 409
    assert sql(db, "SELECT title FROM sessions WHERE id = ?", (parent,)) == [(title,)]


def test_maintenance_state_is_read_never_done(tmp_path):
    """Free pages and FTS blocks as SQLite reports them; after a delete the free pages grow
    and the file is not vacuumed (Logbook never runs VACUUM beside a gateway)."""
    db = copy_fixture("hermes-v22.db", tmp_path)
    client = make_app(db, tmp_path / "inst").test_client()
    before = client.get("/stats?format=json").get_json()["overview"]["maintenance"]
    (free,) = sql(db, "PRAGMA freelist_count")[0]
    (page_size,) = sql(db, "PRAGMA page_size")[0]
    assert before["free_pages"] == free and before["reclaimable_bytes"] == free * page_size
    segments = {f["table"]: f["segments"] for f in before["fts"]}
    assert segments["messages_fts"] > 1 and segments["messages_fts_trigram"] > 1
    # FTS5's 'optimize' (what `hermes sessions optimize` runs) merges an index into one
    # segment: on an optimized copy, Logbook reads exactly that from the structure record.
    optimized = copy_fixture("hermes-v22.db", tmp_path / "optimized")
    conn = sqlite3.connect(optimized)
    with conn:
        conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('optimize')")
    conn.close()
    other = make_app(optimized, tmp_path / "inst2").test_client()
    merged = other.get("/stats?format=json").get_json()["overview"]["maintenance"]["fts"]
    assert {"table": "messages_fts", "segments": 1} in merged
    big = sql(db, "SELECT session_id FROM messages GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1")[0][0]
    pages = sql(db, "PRAGMA page_count")[0][0]
    assert post(client, f"/sessions/{big}/delete", {}, htmx=True).status_code == 200
    after = client.get("/stats?format=json").get_json()["overview"]["maintenance"]
    assert after["free_pages"] > before["free_pages"]
    assert sql(db, "PRAGMA page_count")[0][0] >= pages  # not vacuumed
    assert "hermes sessions optimize" in client.get("/prune").get_data(as_text=True)


@pytest.mark.parametrize("name", ["hermes-v8.db", "hermes-v11.db"])
def test_prune_on_an_older_schema_takes_the_pruned_sessions_transcripts(tmp_path, name):
    """As on schema 22 (the oracle tier compares that with Hermes's own prune): the pruned
    sessions' transcript files go, every other session's stay."""
    db = copy_fixture(name, tmp_path)
    everyone = [r[0] for r in sql(db, "SELECT id FROM sessions")]
    made = set(_transcripts(tmp_path, everyone))
    client = make_app(db, tmp_path / "inst").test_client()
    preview = client.get("/prune?older_than=30&format=json").get_json()
    doomed = set(preview["sessions"])
    assert 0 < len(doomed) < len(everyone)
    r = post(client, "/prune", {"older_than": 30, "cutoff": preview["cutoff"], "confirm": "yes"})
    job = r.get_json()
    assert r.status_code == 200 and job["error"] is None and job["deleted"] == len(doomed)
    left = {p.name for p in (tmp_path / "sessions").iterdir()}
    gone = made - left
    assert left <= made
    assert {
        n.split(".")[0].removeprefix("request_dump_").rsplit("_", 1)[0]
        if n.startswith("request_dump_")
        else n.split(".")[0]
        for n in gone
    } == doomed
    assert job["transcript_files_removed"] == 3 * len(doomed)
