"""The viewer, its JSON twin and the transcript on files written by Hermes 0.19, 0.20 and 0.22
(issue 44): what each Hermes shows first, Logbook's extra rows behind the toggle, each labelled;
hidden rows counted and never painted; system prompts, pinned tool lists and imported sessions;
pages that stay consistent when a long conversation is walked in either direction."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3

import pytest

from support import copy_fixture, make_app
from support.http import follow
from webui.hermes import display
from webui.hermes.rules import rules_for


def _client(tmp_path, fixture):
    db = copy_fixture(fixture, tmp_path)
    return db, make_app(db, tmp_path / "inst").test_client()


def _painted(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<article class="msg[^"]*" id="m-(\d+)"', html)]


def _article(html: str, mid: int) -> str:
    start = html.index(f'id="m-{mid}"')
    return html[html.rindex("<article", 0, start) : html.index("</article>", start)]


def test_0_19_compacted_history_is_behind_the_toggle_labelled_with_its_summary(tmp_path):
    """Issue 44 point 6: m_compacted shows 9 rows in 0.19 (its live ones) and Logbook shows
    exactly those; the 23 compacted rows come with the toggle, each saying which summary took
    its place."""
    db, client = _client(tmp_path, "hermes-v22-marks.db")
    html = client.get("/sessions/m_compacted").get_data(as_text=True)
    assert _painted(html) == list(range(40, 49))
    assert "23 summarised away by /compact" in html
    every = client.get("/sessions/m_compacted?rewound=1").get_data(as_text=True)
    assert _painted(every) == list(range(17, 49))
    assert "summarised into message 29" in _article(every, 17)
    assert "summarised into message 40" in _article(every, 30)
    assert ">compacted</span>" in _article(every, 17) and "not-shown" not in _article(every, 40)
    twin = follow(client, "/sessions/m_compacted?format=json", "messages")
    labels = {m["id"]: m.get("not_shown") for m in twin}
    assert labels[17] == {
        "why": "compacted",
        "of": 29,
        "words": "compacted: summarised into message 29",
    }
    assert [m["id"] for m in twin if m["hermes_shows"]] == list(range(40, 49))
    # A link to a compacted row (a search hit: 0.19 searches compacted rows) opens the view
    # that paints it.
    r = client.get("/sessions/m_compacted?at=20&hl=nginx")
    assert r.status_code == 302 and "rewound=1" in r.headers["Location"]
    assert r.headers["Location"].endswith("#m-20") and "hl=nginx" in r.headers["Location"]
    assert 20 in _painted(client.get(r.headers["Location"]).get_data(as_text=True))
    assert client.get("/sessions/m_compacted?at=44").status_code == 200


@pytest.mark.parametrize("fixture", ["hermes-v26-fresh.db", "hermes-v31-fresh.db"])
def test_compacted_history_is_shown_as_the_hermes_that_wrote_the_file_shows_it(tmp_path, fixture):
    db, client = _client(tmp_path, fixture)
    rows = [dict(r) for r in _rows(db, "SELECT * FROM messages WHERE session_id = 'g_compact'")]
    rule = rules_for(26 if "v26" in fixture else 31).display
    expected = [r["id"] for r in display.project(rows, rule, display.keeps_order(rows))]
    html = client.get("/sessions/g_compact").get_data(as_text=True)
    assert _painted(html) == expected and len(expected) == 22
    # The compacted history carries its badge: Hermes shows it as earlier history.
    first = _article(html, expected[0])
    assert "badge history" in first and "not-shown" not in first
    every = client.get("/sessions/g_compact?rewound=1").get_data(as_text=True)
    extra = [i for i in _painted(every) if i not in expected]
    assert extra and sorted(_painted(every)) == sorted(r["id"] for r in rows)
    twin = {m["id"]: m for m in follow(client, "/sessions/g_compact?format=json", "messages")}
    for mid in extra:
        label = twin[mid]["not_shown"]
        assert label["why"] in ("copy", "carried", "model_only", "rewound"), (mid, label)
        assert f'data-why="{label["why"]}"' in _article(every, mid)
    if "v31" in fixture:
        # 0.22: the carried originals point to the copies shown; the model-only merge is out.
        assert twin[28]["not_shown"] == {
            "why": "carried",
            "of": 32,
            "words": "carried into message 32 by a compaction",
        }
        assert twin[31]["not_shown"]["why"] == "model_only"
        assert "Next: the HorizontalPodAutoscaler\n\nAnd the" not in html
    else:
        # 0.20: earlier copies of the carried tail, shown by their newest copy.
        assert twin[15]["not_shown"] == {
            "why": "copy",
            "of": 20,
            "words": "an earlier copy of message 20",
        }


@pytest.mark.parametrize("fixture", ["hermes-v26-fresh.db", "hermes-v31-fresh.db"])
def test_hidden_rows_are_counted_and_never_painted(tmp_path, fixture):
    db, client = _client(tmp_path, fixture)
    hidden = [
        r[0]
        for r in _rows(
            db,
            "SELECT id FROM messages WHERE session_id = 'g_hidden_rows' AND display_kind = 'hidden'",
        )
    ]
    assert len(hidden) == 2
    for url in ("/sessions/g_hidden_rows", "/sessions/g_hidden_rows?rewound=1"):
        html = client.get(url).get_data(as_text=True)
        assert not set(hidden) & set(_painted(html))
        assert "2 hidden rows" in html
        assert (
            "[delegation result delivered to the model only]" not in html.split("</header>", 1)[1]
        )
    twin = follow(client, "/sessions/g_hidden_rows?format=json", "messages")
    assert {m["id"] for m in twin if not m["painted"]} == set(hidden)
    assert all(m["hermes_shows"] for m in twin)  # Hermes's projection holds them
    # The list's label is not a hidden row either.
    html = client.get("/sessions/g_hidden_rows").get_data(as_text=True)
    assert "<title>Why did the nightly backup fail?" in html


@pytest.mark.parametrize("fixture", ["hermes-v26-migrated.db", "hermes-v31-fresh.db"])
def test_system_prompts_come_from_system_prompts(tmp_path, fixture):
    db, client = _client(tmp_path, fixture)
    (sid, digest, inline), *_ = _rows(
        db,
        "SELECT id, system_prompt_hash, system_prompt FROM sessions WHERE system_prompt_hash "
        "IS NOT NULL ORDER BY id LIMIT 1",
    )
    assert inline is None  # moved into system_prompts by Hermes's migration 25
    (prompt,) = _rows(db, "SELECT prompt FROM system_prompts WHERE hash = ?", (digest,))[0]
    session = client.get(f"/sessions/{sid}?format=json").get_json()["session"]
    assert session["system_prompt"] == prompt and session["system_prompt_hash"] == digest
    html = client.get(f"/sessions/{sid}").get_data(as_text=True)
    assert "System prompt" in html and _escaped(prompt.splitlines()[0]) in html
    md = client.get(f"/export.md?style=transcript&session={sid}").get_data(as_text=True)
    assert "## System prompt" in md and prompt.splitlines()[0] in md
    record = json.loads(client.get(f"/export.jsonl?session={sid}").get_data(as_text=True))
    assert record["system_prompt"] == prompt


def test_a_pinned_tool_list_is_resolved_and_shown(tmp_path):
    """0.22 keeps the session's tool list content-addressed in system_prompts too: the viewer
    lists its names, one session's export resolves it (get_session), the whole-database export
    leaves the hash (export_all)."""
    db = copy_fixture("hermes-v31-fresh.db", tmp_path)
    tools = json.dumps(["terminal", "read_file", "web_search"])
    digest = hashlib.sha256(tools.encode()).hexdigest()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT INTO system_prompts (hash, prompt) VALUES (?, ?)", (digest, tools))
        conn.execute("UPDATE sessions SET tool_names = ? WHERE id = 'g_words'", (digest,))
    conn.close()
    client = make_app(db, tmp_path / "inst").test_client()
    html = client.get("/sessions/g_words").get_data(as_text=True)
    assert "3 pinned for this session" in html and "<code>read_file</code>" in html
    assert client.get("/sessions/g_words?format=json").get_json()["session"]["tool_names"] == tools
    one = json.loads(client.get("/export.jsonl?session=g_words").get_data(as_text=True))
    assert one["tool_names"] == tools and "last_active" not in one and "timings" in one
    every = [json.loads(x) for x in client.get("/export.jsonl").get_data(as_text=True).splitlines()]
    assert next(r for r in every if r["id"] == "g_words")["tool_names"] == digest


@pytest.mark.parametrize("fixture", ["hermes-v26-fresh.db", "hermes-v31-migrated.db"])
def test_imported_sessions_say_where_they_came_from(tmp_path, fixture):
    db, client = _client(tmp_path, fixture)
    imported = _rows(
        db, "SELECT id, source, origin_json FROM sessions WHERE origin_json LIKE '%imported_from%'"
    )
    assert {r[1] for r in imported} == {"claude-code", "codex-cli"}
    for sid, source, origin in imported:
        html = client.get(f"/sessions/{sid}").get_data(as_text=True)
        words = "Claude Code" if source == "claude-code" else "Codex CLI"
        assert f"imported from {words}" in html
        assert _escaped(json.loads(origin)["imported_from"]["path"]) in html


def test_transcripts_of_0_22_read_its_display_projection(tmp_path):
    db, client = _client(tmp_path, "hermes-v31-fresh.db")
    md = client.get("/export.md?session=g_compact").get_data(as_text=True)
    assert "Plan the migration of the billing service" in md  # compacted history
    assert "Next: the HorizontalPodAutoscaler\n\nAnd the PodDisruptionBudget" not in md
    assert "- Exported messages: `22`" in md
    prompts = [
        json.loads(x)
        for x in client.get("/export.jsonl?only=user-prompts&session=g_compact")
        .get_data(as_text=True)
        .splitlines()
    ]
    assert prompts[0]["text"].startswith("Plan the migration")
    whole = json.loads(client.get("/export.jsonl?session=g_compact").get_data(as_text=True))
    assert (
        len(whole["messages"]) == 29 and whole["timings"]["message_timestamps"]["available"] == 29
    )
    # Logbook's own transcript follows the viewer: Hermes's rows, or every row labelled.
    mine = client.get("/export.md?style=transcript&session=g_compact").get_data(as_text=True)
    heads = re.compile(r"^## (user|assistant|tool)", re.M)
    assert len(heads.findall(mine)) == 22
    every = client.get("/export.md?style=transcript&session=g_compact&rewound=1").get_data(
        as_text=True
    )
    assert len(heads.findall(every)) == 29
    assert "_Not shown by Hermes Agent 0.22.2: model only" in every


def _long_session(tmp_path, schema_fixture: str, n: int = 430) -> tuple:
    """A copy of a fixture with one more session of ``n`` rows compacted in place twice the way
    the fixture's Hermes does (its triggers keep display_order on schema 31), with hidden rows
    and a rewind at the end."""
    db = copy_fixture(schema_fixture, tmp_path)
    conn = sqlite3.connect(db)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    g22 = "display_order" in cols
    conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('long', 'cli', 1.0e9)")

    def insert(role, content, ts, **extra):
        values = {"session_id": "long", "role": role, "content": content, "timestamp": ts, **extra}
        if g22:
            key = json.dumps([role, content, ts])
            values["display_identity"] = hashlib.sha256(key.encode()).digest()
        names = ", ".join(values)
        cur = conn.execute(
            f"INSERT INTO messages ({names}) VALUES ({', '.join('?' * len(values))})",
            list(values.values()),
        )
        return cur.lastrowid

    live: list[tuple] = []
    for i in range(n):
        role = "user" if i % 3 == 0 else "assistant"
        extra = {"display_kind": "hidden"} if i % 47 == 5 else {}
        mid = insert(role, f"message {i}", 1.0e9 + i, **extra)
        live.append((mid, role, f"message {i}", 1.0e9 + i))
        if i in (150, 300):
            tail = live[-3:]
            conn.execute("UPDATE messages SET active = 0, compacted = 1 WHERE session_id = 'long'")
            live = [
                (
                    insert(
                        "user", f"[CONTEXT COMPACTION — REFERENCE ONLY] at {i}", 1.0e9 + i + 0.5
                    ),
                    "user",
                    "",
                    0,
                )
            ]
            for _mid, r, c, ts in tail:
                live.append((insert(r, c, ts), r, c, ts))
            if g22:
                conn.execute(
                    f"UPDATE messages SET active = 0, compacted = 0 WHERE id IN ({', '.join(str(t[0]) for t in tail)})"
                )
    conn.execute(
        "UPDATE messages SET active = 0 WHERE session_id = 'long' AND id > (SELECT MAX(id) - 5 FROM messages)"
    )
    conn.commit()
    conn.close()
    return db, 31 if g22 else 26


@pytest.mark.parametrize("fixture", ["hermes-v26-fresh.db", "hermes-v31-fresh.db"])
def test_a_long_conversation_pages_the_same_forward_backward_and_by_number(tmp_path, fixture):
    db, schema = _long_session(tmp_path, fixture)
    client = make_app(db, tmp_path / "inst").test_client()
    rows = [dict(r) for r in _rows(db, "SELECT * FROM messages WHERE session_id = 'long'")]
    rule = rules_for(schema).display
    expected = [
        r["id"]
        for r in display.project(rows, rule, display.keeps_order(rows))
        if not display.is_hidden(r)
    ]
    # Forward through every page (htmx-free: the "Load more" links).
    seen, url, numbers = [], "/sessions/long", []
    while url:
        html = client.get(url).get_data(as_text=True)
        seen += _painted(html)
        numbers += [int(x) for x in re.findall(r'id="m-\d+" data-n="(\d+)"', html)]
        more = re.search(r'<a href="([^"]+)">Load more messages</a>', html)
        url = more.group(1).replace("&amp;", "&") if more else None
    assert seen == expected and numbers == list(range(1, len(expected) + 1))
    # Backward from the end.
    back, url = [], "/sessions/long?end=1"
    while url:
        html = client.get(url).get_data(as_text=True)
        back = _painted(html) + back
        earlier = re.search(r'<a href="([^"]+)" hx-get="[^"]+" hx-target="#earlier-messages"', html)
        url = earlier.group(1).replace("&amp;", "&") if earlier else None
    assert back == expected
    # Message n opens the page holding the n-th painted message, numbered n.
    for n in (1, 150, 151, len(expected)):
        r = client.get(f"/sessions/long?n={n}")
        assert r.status_code == 302
        target = int(re.search(r"#m-(\d+)", r.headers["Location"]).group(1))
        assert target == expected[n - 1], n
        html = client.get(r.headers["Location"]).get_data(as_text=True)
        assert f'id="m-{target}" data-n="{n}"' in html
    # Every stored row (the toggle): the same walk, numbered as painted.
    every, url, numbers = [], "/sessions/long?rewound=1", []
    while url:
        html = client.get(url).get_data(as_text=True)
        every += _painted(html)
        numbers += [int(x) for x in re.findall(r'id="m-\d+" data-n="(\d+)"', html)]
        more = re.search(r'<a href="([^"]+)">Load more messages</a>', html)
        url = more.group(1).replace("&amp;", "&") if more else None
    stored = [r["id"] for r in rows if not display.is_hidden(r)]
    assert sorted(every) == sorted(stored) and numbers == list(range(1, len(stored) + 1))
    assert [i for i in every if i in set(expected)] == expected
    # The header counts what it paints.
    html = client.get("/sessions/long").get_data(as_text=True)
    assert f'data-total="{len(expected)}"' in html
    # The JSON twin: every stored row once; Hermes's rows in Hermes's order.
    twin = follow(client, "/sessions/long?format=json", "messages")
    assert sorted(m["id"] for m in twin) == sorted(r["id"] for r in rows)
    shown = [r["id"] for r in display.project(rows, rule, display.keeps_order(rows))]
    assert [m["id"] for m in twin if m["hermes_shows"]] == shown


def test_a_growing_session_keeps_its_census_up_to_date(tmp_path, monkeypatch):
    """The census is brought up to date from the new rows: a copy of an older message written
    later (a compaction's carried tail) is folded exactly as a fresh read folds it."""
    db, _schema = _long_session(tmp_path, "hermes-v26-fresh.db", n=60)
    app = make_app(db, tmp_path / "inst")
    from webui.db.sessions import census
    from webui.web.logbooks import get_logbook

    with app.app_context():
        store = get_logbook().messages
        before = store.census("long")
        (ts, content) = _rows(
            db,
            "SELECT timestamp, content FROM messages WHERE session_id = 'long' AND active = 1 ORDER BY id LIMIT 1",
        )[0]
        conn = sqlite3.connect(db)
        with conn:
            conn.execute(
                "UPDATE messages SET active = 1, compacted = 0 WHERE session_id = 'nobody'"
            )
            conn.execute(
                "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('long', 'user', ?, ?)",
                (content, ts),
            )
        conn.close()
        whole = []
        read = census.read
        monkeypatch.setattr(census, "read", lambda *a: whole.append(a) or read(*a))
        grown = store.census("long")
        assert whole == []  # only the new row was read
        fresh = read(store.r, "long", store.display, store._count("long")).census
        assert grown == fresh and grown != before
        assert any(label.why == "copy" for label in grown.labels.values())


def _rows(db, query, params=()):
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.close()


def _escaped(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))
