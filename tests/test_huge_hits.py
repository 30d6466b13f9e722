"""A search whose hits include a huge repetitive message (issue 49, N-8): FTS5's snippet()
scores every match of its row inside one SQLite step, out of reach of the deadline; a 1 MB tool
result holding the word 100,000 times took 43-52 s and then answered 503, 10 MB more than five
minutes. Such a row is now cut into pieces first (webui.db.search.snippet_source): the search answers
within its deadline and the snippet still shows the match marked. Real files in Hermes's
schema, written through its FTS triggers."""

from __future__ import annotations

import sqlite3

import pytest

from support import WAIT_BOUND_S, copy_fixture, make_app
from webui.db.search import snippet_source
from webui.db.search.limits import MARK_END, MARK_START

# The request deadline: what a page may take here. The old code spent 43 s on one 1 MB row and
# more than five minutes on the 10 MB one below, inside one SQLite step, and then answered 503;
# the fixed code takes a fraction of a second on any machine.
DEADLINE = WAIT_BOUND_S


def plant(db, text: str, role: str = "tool") -> int:
    """A message of ``text`` in the newest session, indexed by Hermes's own triggers."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            sid = conn.execute("SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1")
            sid = sid.fetchone()[0]
            t = conn.execute("SELECT MAX(timestamp) FROM messages").fetchone()[0] + 1
            cur = conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_name, timestamp) "
                "VALUES (?, ?, ?, 'terminal', ?)",
                (sid, role, text, t),
            )
            return cur.lastrowid
    finally:
        conn.close()


def repetitive(word: str, times: int, tail: str = "") -> str:
    return f"{word} " * times + "lorem ipsum dolor sit amet " * 1000 + tail


@pytest.fixture(scope="module")
def huge(tmp_path_factory):
    """hermes-v22.db with a 10 MB tool result holding "zeta" two million times (and 'omega' once,
    near its end), and a 4 MB CJK one holding 东京都 a million times."""
    folder = tmp_path_factory.mktemp("huge")
    db = copy_fixture("hermes-v22.db", folder)
    ids = {
        "zeta": plant(db, repetitive("zeta", 2_000_000, tail=" the omega point")),
        "cjk": plant(db, "东京都 " * 1_000_000),
    }
    app = make_app(
        db, folder / "inst", LOGBOOK_REQUEST_DEADLINE=DEADLINE, LOGBOOK_QUERY_TIME_LIMIT=DEADLINE
    )
    return app.test_client(), ids


def _hit(client, query: str, message_id: int) -> dict:
    r = client.get("/search", query_string={"q": query, "format": "json"})
    assert r.status_code == 200, (query, r.status_code, r.get_data(as_text=True)[:300])
    hits = [h for h in r.get_json()["results"] if h["message_id"] == message_id]
    assert hits, (query, r.get_json())
    return hits[0]


@pytest.mark.parametrize(
    "query,marked",
    [
        ("zeta", ">>>zeta<<<"),
        ("zet*", ">>>zeta<<<"),
        ('"zeta zeta"', ">>>zeta zeta"),
        # Words a megabyte apart: no piece holds both; the snippet marks the first (as FTS5's
        # own shows one fragment, never two far apart side by side).
        ("zeta omega", ">>>zeta<<<"),
        ("zeta OR nothingatall", ">>>zeta<<<"),
    ],
)
def test_a_huge_repetitive_hit_answers_with_its_match_marked(huge, query, marked):
    client, ids = huge
    hit = _hit(client, query, ids["zeta"])
    assert marked in hit["snippet"], hit["snippet"]
    assert len(hit["snippet"]) < 2_000


def test_a_huge_cjk_hit_through_the_trigram_index(huge):
    client, ids = huge
    hit = _hit(client, "东京都", ids["cjk"])
    assert ">>>东京都<<<" in hit["snippet"], hit["snippet"]


def test_a_substring_hit_deep_inside_a_huge_message_is_marked(tmp_path):
    """The substring route (a two-character CJK word: no index answers it) reads a window of
    the text from shortly before the word, not the whole 2 MB, and still marks it."""
    db = copy_fixture("hermes-v22.db", tmp_path)
    mid = plant(db, "filler words here " * 120_000 + "and then 京都 at last")
    client = make_app(db, tmp_path / "inst", LOGBOOK_REQUEST_DEADLINE=DEADLINE).test_client()
    hit = _hit(client, "京都", mid)
    assert ">>>京都<<<" in hit["snippet"] and hit["snippet"].startswith("..."), hit["snippet"]


def test_the_page_marks_it_too(huge):
    client, ids = huge
    r = client.get("/search?q=zeta")
    assert r.status_code == 200
    assert "<mark>zeta</mark>" in r.get_data(as_text=True)


def test_without_the_mirror_the_table_path_is_bounded_too(huge, monkeypatch):
    """Where no mirror can be made (an FTS table whose declaration cannot be copied), the
    large row gets a snippet made from its words, never snippet() on the whole row."""
    client, ids = huge
    monkeypatch.setattr("webui.db.search.reading.mirror_declaration", lambda _sql: None)
    hit = _hit(client, "zeta", ids["zeta"])
    assert MARK_START not in hit["snippet"] and ">>>zeta<<<" in hit["snippet"]


# -- what is cut, and what is left whole ----------------------------------------------------


def test_query_words_leave_out_operators_columns_and_distances():
    words = snippet_source.query_words
    assert words("zeta") == ["zeta"]
    assert words('NEAR("Docker compose" nginx, 8)') == ["docker", "compose", "nginx", "8"]
    assert words("content: alpha AND beta NOT gamma") == ["alpha", "beta", "gamma"]
    assert words("dep* OR ^start") == ["dep", "start"]
    assert words("Café") == ["cafe"]  # folded as the tokenizer folds (and a little more)


def test_short_rows_with_few_matches_are_left_whole():
    assert snippet_source.whole("a line about zeta and more", ["zeta"])
    assert not snippet_source.whole("zeta " * 1_000, ["zeta"])  # many matches: cut
    assert not snippet_source.whole("x" * (snippet_source.WHOLE_CHARS + 1), ["zeta"])
    assert not snippet_source.whole("café " * 600, ["cafe"])  # counted as the tokenizer folds


def test_pieces_cover_the_text_overlapping_and_never_split_a_word():
    text = " ".join(f"w{i:05d}" for i in range(5_000))
    pieces = list(snippet_source.pieces(text))
    assert pieces[0][0] == 0 and pieces[-1][0] + len(pieces[-1][1]) == len(text)
    for (at, piece), (nxt, _) in zip(pieces, pieces[1:], strict=False):
        assert nxt < at + len(piece)  # overlapping: no gap
        assert at + len(piece) - nxt >= snippet_source.PIECE_OVERLAP // 2
        assert len(piece) <= snippet_source.PIECE_CHARS
    for at, piece in pieces:
        assert at == 0 or text[at] == " ", piece[:10]  # a piece starts between words
        assert at + len(piece) == len(text) or text[at + len(piece)] == " "


def test_a_literal_snippet_marks_every_word_it_shows():
    text = "prefix " * 2_000 + "the needle and the NEEDLE again " + "suffix " * 2_000
    got = snippet_source.literal_snippet(text, ["needle"], (MARK_START, MARK_END), 40)
    assert got.startswith("...") and got.endswith("...")
    assert got.count(MARK_START) == 2 and f"{MARK_START}NEEDLE{MARK_END}" in got
    assert len(got) < 600
