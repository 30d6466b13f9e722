"""The demo/test/benchmark database generator: exact v11 schema, consistent counters, deterministic."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from support import FIXTURES
from webui.demo import SCHEMA_VERSION, XSS_CORPUS, create_schema, generate

V11 = FIXTURES / "hermes-v11.db"

SESSIONS = 120
LONG = 300
SEED = 5


def _ro(path: Path, immutable: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro" + ("&immutable=1" if immutable else ""), uri=True)


def _fixture() -> sqlite3.Connection:
    """The real v11 database, opened without touching its folder (no -shm is created)."""
    return closing(_ro(V11, immutable=True))


def _catalogue(conn: sqlite3.Connection) -> list[tuple]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return sorted((t, n, tb, re.sub(r"\s+", " ", s).strip() if s else None) for t, n, tb, s in rows)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    path = tmp_path_factory.mktemp("gen") / "state.db"
    seen = []
    info = generate(
        path,
        sessions=SESSIONS,
        seed=SEED,
        long_session_messages=LONG,
        progress=lambda done, total: seen.append((done, total)),
    )
    # only the finished file is left behind: no temp file, no -wal/-shm after the checkpoint
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.db"]
    conn = _ro(path)
    yield path, info, conn, seen
    conn.close()


def test_info_and_file(built):
    path, info, conn, seen = built
    assert info.path == str(path)
    assert info.sessions == SESSIONS + 1
    assert info.messages == conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    assert info.sessions == conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    assert info.long_session_id is not None and info.seconds >= 0
    assert seen and seen[-1][0] == seen[-1][1] == info.messages
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:], strict=False))


def test_schema_matches_the_real_v11_fixture(built):
    _, _, conn, _ = built
    with _fixture() as fx:
        assert _catalogue(conn) == _catalogue(fx)
        for table in ("sessions", "messages"):
            assert (
                conn.execute(f"PRAGMA table_info({table})").fetchall()
                == fx.execute(f"PRAGMA table_info({table})").fetchall()
            )
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (
        conn.execute("SELECT version FROM schema_version").fetchall()
        == [(SCHEMA_VERSION,)]
        == [(11,)]
    )
    assert conn.execute("SELECT key, value FROM state_meta").fetchall() == [
        ("ghost_session_prune_v1", "1")
    ]


def test_create_schema_alone(tmp_path):
    path = tmp_path / "empty.db"
    conn = sqlite3.connect(path)
    create_schema(conn)
    create_schema(conn)  # idempotent
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(11,)]
    with _fixture() as fx:
        assert _catalogue(conn) == _catalogue(fx)
    conn.close()


def test_fts_tables_are_complete_and_consistent(built, tmp_path):
    path, info, conn, _ = built
    for table in ("messages_fts", "messages_fts_trigram"):
        assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == info.messages
    copy = tmp_path / "copy.db"
    shutil.copyfile(path, copy)
    with closing(sqlite3.connect(copy)) as rw:
        for table in ("messages_fts", "messages_fts_trigram"):
            rw.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
        assert rw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # the index matches what the triggers are defined to index
        row = rw.execute(
            "SELECT m.id, f.content FROM messages m JOIN messages_fts f ON f.rowid = m.id "
            "WHERE m.tool_calls IS NOT NULL LIMIT 1"
        ).fetchone()
        m = rw.execute(
            "SELECT content, tool_name, tool_calls FROM messages WHERE id = ?", (row[0],)
        ).fetchone()
        assert row[1] == f"{m[0] or ''} {m[1] or ''} {m[2] or ''}"
    # and it is searchable the way Hermes searches
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'docker'"
        ).fetchone()[0]
        > 0
    )
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH '\"chat-send\"'"
        ).fetchone()[0]
        > 0
    )
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM messages_fts_trigram "
            "WHERE messages_fts_trigram MATCH '\"大别山项目\"'"
        ).fetchone()[0]
        > 0
    )


def test_session_counters_match_messages(built):
    _, _, conn, _ = built
    bad = conn.execute("""
        SELECT s.id FROM sessions s
        WHERE s.message_count != (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)
           OR s.tool_call_count != (SELECT COALESCE(SUM(json_array_length(m.tool_calls)), 0)
                                    FROM messages m WHERE m.session_id = s.id)
           OR s.tool_call_count != (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND m.role = 'tool')
    """).fetchall()
    assert bad == []
    # api_call_count: one per assistant message written by the model (branch copies excluded)
    for _sid, api, assistants, parent in conn.execute("""
            SELECT s.id, s.api_call_count, (SELECT COUNT(*) FROM messages m
                                            WHERE m.session_id = s.id AND m.role = 'assistant'),
                   s.parent_session_id
            FROM sessions s"""):
        assert api <= assistants
        if api < assistants:  # only /branch children hold copied assistant messages
            assert parent is not None
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)"
        ).fetchone()[0]
        == 0
    )
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM sessions WHERE parent_session_id IS NOT NULL "
            "AND parent_session_id NOT IN (SELECT id FROM sessions)"
        ).fetchone()[0]
        == 0
    )


def test_tokens_and_costs_are_plausible(built):
    _, _, conn, _ = built
    rows = conn.execute(
        "SELECT model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, "
        "billing_provider, estimated_cost_usd, actual_cost_usd, cost_status, api_call_count "
        "FROM sessions"
    ).fetchall()
    statuses = {r[8] for r in rows}
    assert {"estimated", "included", "unknown", None} <= statuses
    for _model, inp, out, cr, cw, provider, est, act, status, calls in rows:
        assert min(inp, out, cr, cw) >= 0
        if calls == 0:
            assert (inp, out, provider, est, status) == (0, 0, None, None, None)
            continue
        assert inp > 0 and out > 0
        if status == "included":
            assert est == 0.0 and provider == "nous"
        if status == "actual":
            assert act is not None and act > 0
        if status == "estimated":
            assert est is not None and est > 0 and round(est, 6) == est
    assert any(r[4] > 0 for r in rows if r[5] == "anthropic")
    assert {r[0] for r in rows} >= {"anthropic/claude-sonnet-4.6", None}


def test_titles_unique_and_varied(built):
    _, _, conn, _ = built
    titles = [t for (t,) in conn.execute("SELECT title FROM sessions WHERE title IS NOT NULL")]
    assert len(titles) == len(set(titles))
    total = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    untitled = total - len(titles)
    assert 0.1 * total <= untitled <= 0.45 * total
    assert all(len(t) <= 100 and t == t.strip() for t in titles)
    assert any(re.search(r"[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]", t) for t in titles)
    assert any(re.search(r"[\U0001F300-\U0001FAFF]", t) for t in titles)
    assert any("<script>" in t for t in titles)


def test_lineages_branches_and_subagents(built):
    _, _, conn, _ = built
    chains = conn.execute("""
        SELECT c.title, p.title, p.end_reason, c.started_at - p.ended_at
        FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
        WHERE p.end_reason = 'compression'""").fetchall()
    assert chains
    for child_title, parent_title, _, gap in chains:
        assert 0 <= gap < 1.0
        if parent_title is None:
            assert child_title is None
        else:
            base = re.sub(r" #\d+$", "", parent_title)
            assert re.fullmatch(re.escape(base) + r" #\d+", child_title)
    assert any(t and t.endswith(" #2") for t, *_ in chains)
    assert any(t and re.search(r" #[3-9]$", t) for t, *_ in chains)
    # /branch: the parent ends 'branched' and the child starts with a copy of its history
    branch = conn.execute("""
        SELECT c.id, p.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
        WHERE p.end_reason IN ('branched', 'session_switch') AND c.started_at >= p.ended_at""").fetchone()
    assert branch
    child, parent = branch
    copied = conn.execute(
        "SELECT role, content, tool_calls FROM messages WHERE session_id = ? "
        "ORDER BY timestamp, id",
        (parent,),
    ).fetchall()
    mine = conn.execute(
        "SELECT role, content, tool_calls FROM messages WHERE session_id = ? "
        "ORDER BY timestamp, id LIMIT ?",
        (child, len(copied)),
    ).fetchall()
    assert mine == copied
    # subagents: started during the parent, same source, untitled; the parent did not end because of them
    subs = conn.execute("""
        SELECT c.source = p.source, c.started_at > p.started_at AND c.started_at < p.ended_at, c.title,
               p.end_reason
        FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
        WHERE c.started_at < p.ended_at""").fetchall()
    assert subs
    for same_source, during, title, parent_reason in subs:
        assert same_source and during and title is None
        assert parent_reason not in ("compression", "branched", None)


def test_large_structures_when_there_is_room(tmp_path):
    path = tmp_path / "big.db"
    info = generate(path, sessions=220, seed=3, messages_per_session=6)
    with closing(_ro(path)) as conn:
        assert info.sessions == 220
        longest = 0
        for (sid,) in conn.execute("SELECT id FROM sessions WHERE parent_session_id IS NULL"):
            n, cur = 1, sid
            while True:
                nxt = conn.execute(
                    "SELECT id FROM sessions WHERE parent_session_id = ? AND "
                    "(SELECT end_reason FROM sessions WHERE id = ?) = 'compression'",
                    (cur, cur),
                ).fetchone()
                if not nxt:
                    break
                n, cur = n + 1, nxt[0]
            longest = max(longest, n)
        assert longest >= 8
        most = conn.execute(
            "SELECT MAX(k) FROM (SELECT COUNT(*) AS k FROM sessions "
            "WHERE parent_session_id IS NOT NULL GROUP BY parent_session_id)"
        ).fetchone()[0]
        assert most >= 12


def test_active_and_empty_sessions(built):
    _, _, conn, _ = built
    now = 1793491200.0
    active = conn.execute(
        "SELECT started_at, end_reason FROM sessions WHERE ended_at IS NULL"
    ).fetchall()
    assert len(active) >= 2
    assert all(now - 2 * 86400 <= s < now and r is None for s, r in active)
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND "
            "(ended_at < started_at OR ended_at > ?)",
            (now,),
        ).fetchone()[0]
        == 0
    )
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL AND end_reason IS NULL "
            "AND parent_session_id IS NULL"
        ).fetchone()[0]
        == 0
    )
    assert conn.execute("SELECT MIN(started_at) FROM sessions").fetchone()[0] >= now - 366 * 86400
    assert conn.execute("SELECT MAX(timestamp) FROM messages").fetchone()[0] < now
    assert conn.execute("SELECT COUNT(*) FROM sessions WHERE message_count = 0").fetchone()[0] >= 2
    sources = {s for (s,) in conn.execute("SELECT DISTINCT source FROM sessions")}
    assert {"cli", "telegram", "cron", "discord"} <= sources and len(sources) >= 10
    # messages stay inside their session's lifetime
    assert (
        conn.execute(
            """SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id
                           WHERE m.timestamp < s.started_at OR m.timestamp > COALESCE(s.ended_at, ?)""",
            (now,),
        ).fetchone()[0]
        == 0
    )


def test_tool_results_follow_their_calls(built):
    _, _, conn, _ = built
    calls: dict[str, set] = {}
    last_ts: dict[str, float] = {}
    n_results = 0
    for sid, role, content, tc_id, tool_calls, tool_name, ts, finish, token_count in conn.execute(
        "SELECT session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, finish_reason, "
        "token_count FROM messages ORDER BY session_id, timestamp, id"
    ):
        assert ts > last_ts.get(sid, float("-inf")), "timestamps strictly increase within a session"
        last_ts[sid] = ts
        if role == "assistant":
            assert token_count and token_count > 0
            if tool_calls:
                assert finish == "tool_calls"
                parsed = json.loads(tool_calls)
                assert 1 <= len(parsed) <= 3
                for call in parsed:
                    assert call["type"] == "function" and call["id"].startswith("call_")
                    json.loads(call["function"]["arguments"])
                    calls.setdefault(sid, {})
                    calls[sid][call["id"]] = call["function"]["name"]
            else:
                assert finish in ("stop", "length")
        elif role == "tool":
            n_results += 1
            assert calls.get(sid, {}).get(tc_id) == tool_name
            json.loads(content)
    assert n_results > 50


def test_ids_interleave_like_a_live_database(built):
    _, _, conn, _ = built
    # ids follow time across the whole database, so overlapping sessions interleave
    prev = None
    for (ts,) in conn.execute("SELECT timestamp FROM messages ORDER BY id"):
        assert prev is None or ts >= prev
        prev = ts
    ids = [sid for (sid,) in conn.execute("SELECT id FROM sessions")]
    assert any(re.fullmatch(r"\d{8}_\d{6}_[0-9a-f]{8}", i) for i in ids)
    assert any(re.fullmatch(r"\d{8}_\d{6}_[0-9a-f]{6}", i) for i in ids)
    assert any(re.fullmatch(r"cron_[0-9a-f]{12}_\d{8}_\d{6}", i) for i in ids)


def test_special_content_is_present(built):
    _, _, conn, _ = built

    def count(where, *args):
        return conn.execute(f"SELECT COUNT(*) FROM messages WHERE {where}", args).fetchone()[0]

    total = count("1")
    cjk = count("content GLOB '*[一-龥]*' OR content GLOB '*[ぁ-ン]*' OR content GLOB '*[가-힣]*'")
    assert 0.02 * total < cjk < 0.2 * total
    for word in ("记忆断裂", "通信", "大别山项目"):
        assert count("instr(content, ?) > 0", word)
    assert (
        count(
            "content LIKE '%🚀%' OR content LIKE '%✅%' OR content LIKE '%🔥%' OR content LIKE '%💡%'"
        )
        > 0
    )
    for payload in XSS_CORPUS:
        assert count("instr(content, ?) > 0", payload), payload
    assert count("role = 'tool' AND content LIKE '%<script>%'")
    assert count("tool_calls LIKE '%alert(1)%'")
    assert count("reasoning LIKE '%javascript:alert(1)%'")
    assert conn.execute(
        "SELECT COUNT(*) FROM sessions WHERE system_prompt LIKE '%onerror=alert(1)%'"
    ).fetchone()[0]
    assert conn.execute(
        "SELECT COUNT(*) FROM sessions WHERE model_config LIKE '%<script>%'"
    ).fetchone()[0]
    assert count("instr(content, '>>>') > 0") and count("instr(content, '<<<') > 0")
    for term in ("chat-send", "P2.2", "sp_new", "docker-compose-up", "my-app.config.ts"):
        assert count("instr(content, ?) > 0 OR instr(tool_calls, ?) > 0", term, term), term
    assert count("lower(content) LIKE '%docker%'") > 0.05 * total
    # (SQLite's text functions stop at the NUL, so the prefix is matched with LIKE)
    multimodal = conn.execute(
        "SELECT content FROM messages WHERE content LIKE char(0) || 'json:%'"
    ).fetchall()
    assert multimodal
    for (content,) in multimodal:
        parts = json.loads(content[6:])
        assert parts[0]["type"] == "text" and parts[1]["image_url"]["url"].startswith(
            "data:image/png;base64,"
        )
    for lang in ("python", "bash", "yaml", "json", "rust"):
        assert count("role = 'assistant' AND instr(content, ?) > 0", "```" + lang + "\n"), lang
    assert count("role = 'assistant' AND content LIKE '%|---|%'")
    assert count("role = 'assistant' AND instr(content, char(10) || '## ') > 0")
    assert count("role = 'tool' AND length(content) > 5000")
    assert count("role = 'system'")
    assert count("reasoning IS NOT NULL") and count("reasoning_details IS NOT NULL")
    assert count("codex_reasoning_items IS NOT NULL") and count("reasoning_content IS NOT NULL")
    details = conn.execute(
        "SELECT reasoning_details FROM messages WHERE reasoning_details IS NOT NULL"
    ).fetchone()[0]
    assert json.loads(details)[0]["type"] == "reasoning.text"


def test_long_session(built):
    _, info, conn, _ = built
    row = conn.execute(
        "SELECT message_count, ended_at, end_reason FROM sessions WHERE id = ?",
        (info.long_session_id,),
    ).fetchone()
    assert row[0] == LONG and row[1] is not None and row[2]
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM messages WHERE session_id = ?", (info.long_session_id,)
        ).fetchone()[0]
        == LONG
    )


@pytest.mark.parametrize("n", [1, 7])
def test_exact_long_session_lengths(tmp_path, n):
    info = generate(tmp_path / "x.db", sessions=0, long_session_messages=n)
    assert info.sessions == 1 and info.messages == n
    with closing(_ro(tmp_path / "x.db")) as conn:
        assert conn.execute("SELECT message_count FROM sessions").fetchone()[0] == n


def test_deterministic(built, tmp_path):
    path, _, conn, _ = built
    again = tmp_path / "again.db"
    generate(again, sessions=SESSIONS, seed=SEED, long_session_messages=LONG)
    with closing(_ro(again)) as other:
        for sql in (
            "SELECT * FROM sessions ORDER BY id",
            "SELECT * FROM messages ORDER BY id",
            "SELECT rowid, * FROM messages_fts ORDER BY rowid",
        ):
            assert conn.execute(sql).fetchall() == other.execute(sql).fetchall(), sql
    different = tmp_path / "different.db"
    generate(different, sessions=SESSIONS, seed=SEED + 1, long_session_messages=LONG)
    with closing(_ro(different)) as other:
        assert (
            conn.execute("SELECT id FROM sessions ORDER BY id").fetchall()
            != other.execute("SELECT id FROM sessions ORDER BY id").fetchall()
        )


def test_now_anchor_moves_history(tmp_path):
    now = 1700000000.0
    generate(tmp_path / "a.db", sessions=30, now=now)
    with closing(_ro(tmp_path / "a.db")) as conn:
        lo, hi = conn.execute(
            "SELECT MIN(started_at), MAX(COALESCE(ended_at, started_at)) FROM sessions"
        ).fetchone()
        assert now - 366 * 86400 <= lo and hi < now


def test_refuses_to_overwrite(tmp_path):
    path = tmp_path / "exists.db"
    path.write_bytes(b"keep me")
    with pytest.raises(ValueError):
        generate(path, sessions=5)
    assert path.read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exists.db"]  # no temp file left behind
    with pytest.raises(ValueError):
        generate(tmp_path / "new.db", sessions=-1)
    assert not (tmp_path / "new.db").exists()
    # a leftover WAL beside the target would be replayed into the new database
    (tmp_path / "stale.db-wal").write_bytes(b"x" * 64)
    with pytest.raises(ValueError):
        generate(tmp_path / "stale.db", sessions=5)
    assert not (tmp_path / "stale.db").exists()


def test_small_and_empty(tmp_path):
    info = generate(tmp_path / "zero.db", sessions=0)
    assert (info.sessions, info.messages, info.long_session_id) == (0, 0, None)
    for n in (1, 2, 3, 5, 13):
        info = generate(tmp_path / f"s{n}.db", sessions=n, messages_per_session=4)
        assert info.sessions == n


@pytest.mark.slow
def test_messages_per_session_scales(tmp_path):
    info = generate(tmp_path / "m.db", sessions=300, messages_per_session=30, seed=1)
    assert 0.75 * 300 * 30 < info.messages < 1.3 * 300 * 30


def test_cli(tmp_path, capsys):
    from webui.demo.__main__ import main

    out = tmp_path / "cli.db"
    assert (
        main(
            [
                str(out),
                "--sessions",
                "12",
                "--messages-per-session",
                "5",
                "--long-session",
                "20",
                "--seed",
                "2",
                "--quiet",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "13 sessions" in printed and "cli.db" in printed and out.exists()
    assert main([str(out), "--sessions", "3", "--quiet"]) == 2  # refuses to overwrite


def test_text_scale(built, tmp_path):
    """text_scale shrinks the text (for ~1.5 KB a message on disk at benchmark scale) and keeps the
    structure; 1.0 is the historical output exactly."""
    path, _, conn, _ = built
    same = tmp_path / "same.db"
    generate(same, sessions=SESSIONS, seed=SEED, long_session_messages=LONG, text_scale=1.0)
    with closing(_ro(same)) as other:
        for sql in ("SELECT * FROM sessions ORDER BY id", "SELECT * FROM messages ORDER BY id"):
            assert conn.execute(sql).fetchall() == other.execute(sql).fetchall(), sql
    small = tmp_path / "small.db"
    info = generate(small, sessions=SESSIONS, seed=SEED, long_session_messages=LONG, text_scale=0.1)
    shape = "SELECT id, session_id, role, timestamp FROM messages ORDER BY id"
    text = (
        "SELECT SUM(LENGTH(content) + COALESCE(LENGTH(tool_calls), 0) + COALESCE(LENGTH(reasoning), 0)) "
        "FROM messages"
    )
    with closing(_ro(small)) as other:
        assert other.execute(shape).fetchall() == conn.execute(shape).fetchall()
        assert (
            other.execute(
                "SELECT id, title, parent_session_id, started_at, message_count FROM sessions "
                "ORDER BY id"
            ).fetchall()
            == conn.execute(
                "SELECT id, title, parent_session_id, started_at, message_count FROM sessions "
                "ORDER BY id"
            ).fetchall()
        )
        assert other.execute(text).fetchone()[0] < 0.5 * conn.execute(text).fetchone()[0]
        # still consistent: FTS complete, counters right, every tool call answered
        n = info.messages
        assert other.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0] == n
        assert other.execute("SELECT COUNT(*) FROM messages_fts_trigram").fetchone()[0] == n
        assert (
            other.execute(
                "SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id "
                "WHERE m.role = 'tool' AND m.tool_call_id IS NULL"
            ).fetchone()[0]
            == 0
        )
    assert os.path.getsize(small) < 0.7 * os.path.getsize(path)
    again = tmp_path / "again.db"
    generate(again, sessions=SESSIONS, seed=SEED, long_session_messages=LONG, text_scale=0.1)
    with closing(_ro(small)) as a, closing(_ro(again)) as b:
        sql = "SELECT * FROM messages ORDER BY id"
        assert a.execute(sql).fetchall() == b.execute(sql).fetchall()
    for bad in (0, -1.0, float("inf"), float("nan"), True, "0.5"):
        with pytest.raises(ValueError):
            generate(tmp_path / "bad.db", sessions=3, text_scale=bad)
    assert not (tmp_path / "bad.db").exists()


def test_cli_text_scale(tmp_path, capsys):
    from webui.demo.__main__ import main

    out = tmp_path / "scaled.db"
    assert main([str(out), "--sessions", "20", "--text-scale", "0.3", "--quiet"]) == 0
    assert "20 sessions" in capsys.readouterr().out and out.exists()
    assert main([str(tmp_path / "neg.db"), "--sessions", "2", "--text-scale", "-1", "--quiet"]) == 2


# -- schema 22: Hermes 0.19.0's tables, with where conversations come from ------------------


@pytest.fixture(scope="module")
def built22(tmp_path_factory):
    path = tmp_path_factory.mktemp("gen22") / "state.db"
    generate(path, sessions=300, seed=7, schema=22)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    yield path, conn
    conn.close()


def test_schema_22_is_what_hermes_0_19_creates(built22):
    _, conn = built22
    fx = sqlite3.connect(f"file:{FIXTURES / 'hermes-v22-origins.db'}?mode=ro&immutable=1", uri=True)
    with closing(fx):
        assert _catalogue(conn) == _catalogue(fx)
        for table in ("sessions", "messages"):
            assert (
                conn.execute(f"PRAGMA table_info({table})").fetchall()
                == fx.execute(f"PRAGMA table_info({table})").fetchall()
            )
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(22,)]
    # messages take Hermes 0.19's defaults: all active, none compacted; both indexes full
    assert conn.execute("SELECT COUNT(*) FROM messages WHERE active != 1").fetchone()[0] == 0
    n = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    for fts in ("messages_fts", "messages_fts_trigram"):
        assert conn.execute(f"SELECT COUNT(*) FROM {fts}").fetchone()[0] == n


def test_schema_22_demo_chats_follow_the_gateway(built22):
    _, conn = built22
    rows = conn.execute(
        "SELECT s.id, s.source, s.session_key, s.chat_type, s.started_at, s.ended_at, "
        "s.end_reason, p.session_key, p.end_reason FROM sessions s LEFT JOIN sessions p "
        "ON p.id = s.parent_session_id ORDER BY s.started_at, s.id"
    ).fetchall()
    gateway = {"telegram", "discord", "signal", "whatsapp", "matrix", "slack", "email"}
    chats: dict[str, list] = {}
    for sid, source, key, kind, started, ended, reason, parent_key, parent_reason in rows:
        if parent_reason == "compression" and parent_key:
            assert key == parent_key, sid  # a continuation stays in its chat
        elif parent_reason is None and source in gateway:
            assert key and key.startswith(f"agent:main:{source}:{kind}:"), sid
        if key:
            chats.setdefault(key, []).append((started, ended, reason))
    assert len(chats) > 10 and max(len(v) for v in chats.values()) > 5
    for sessions in chats.values():
        for (start, _end, reason), (nxt, _, _) in zip(sessions, sessions[1:], strict=False):
            if reason == "daily":
                assert int(nxt // 86400) > int(start // 86400)
            elif reason in ("idle", "session_reset"):
                assert int(nxt // 86400) == int(start // 86400)
    repos = conn.execute(
        "SELECT COUNT(DISTINCT git_repo_root), COUNT(DISTINCT git_branch) FROM sessions"
    ).fetchone()
    assert repos[0] >= 3 and repos[1] >= 4
