"""Logbook's standalone HTML export (/export.html, templates/exports/page.html): untrusted
text in every place the page shows it comes out as text (no script, no event handler, no
javascript: URL, nothing loaded), each value whole; any number of sessions on one page; the
page made as it is read. (What it holds against Hermes's own page: test_oracle_exports.py.)"""

from __future__ import annotations

import json
import re
import sqlite3
from urllib.parse import quote

import pytest

from support import copy_fixture, make_app, sql
from support.export_pages import logbook_page
from support.htmlcheck import assert_inert_page, audit
from support.xss import PAYLOADS, sessions_with_markup
from webui.demo.corpus import XSS_CORPUS
from webui.present import export_html

HOSTILE = list(dict.fromkeys([*PAYLOADS, *XSS_CORPUS]))
HOSTILE_ID = 'x"><script>alert(9)</script> #frag'


@pytest.fixture
def v22(tmp_path):
    db = copy_fixture("hermes-v22-extended.db", tmp_path)
    return db, make_app(db, tmp_path / "inst").test_client()


def _plant(db) -> str:
    """A session whose every shown value is hostile: its id, title, model and system prompt,
    and one message of each role carrying the corpus in its text, tool calls (names and
    arguments), reasoning and role."""
    text = "\n".join(HOSTILE)
    calls = [
        {"id": f"c{n}", "type": "function", "function": {"name": p, "arguments": json.dumps(p)}}
        for n, p in enumerate(HOSTILE)
    ]
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO sessions (id, source, model, title, system_prompt, started_at) "
            "VALUES (?, 'cli', ?, ?, ?, 1.7e9)",
            (HOSTILE_ID, HOSTILE[1], HOSTILE[0], text),
        )
        rows = [
            ("user", text, None, None),
            ("assistant", text, json.dumps(calls), text),
            ("tool", text, None, None),
            ('"><img src=x onerror=alert(3)>', text, None, None),
        ]
        for n, (role, content, tool_calls, reasoning) in enumerate(rows):
            conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_calls, reasoning, "
                "timestamp) VALUES (?, ?, ?, ?, ?, ?)",
                (HOSTILE_ID, role, content, tool_calls, reasoning, 1.7e9 + n),
            )
    return text


@pytest.mark.parametrize("redact", ["", "&redact=1"])
def test_hostile_text_in_every_place_is_inert_and_whole(v22, redact):
    db, client = v22
    text = _plant(db)
    other = sql(
        db, "SELECT id FROM sessions WHERE id != ? ORDER BY started_at LIMIT 1", (HOSTILE_ID,)
    )[0][0]
    for query in (f"session={quote(HOSTILE_ID)}", f"session={quote(HOSTILE_ID)}&session={other}"):
        html = assert_inert_page(client.get(f"/export.html?{query}{redact}"))
        found = audit(html)
        # Nothing but the page's own stylesheet and anchors into the page itself.
        assert html.count("<style>") == 1 and html.count("</style>") == 1
        assert not re.search(r"<(script|link|img|iframe|object|embed|base|svg)\b", html, re.I)
        assert not found.styles
        hrefs = re.findall(r'href="([^"]*)"', html)
        assert all(h.startswith("#s-") for h in hrefs), hrefs
        assert "javascript:" not in " ".join(hrefs).lower()
        page = logbook_page(html)
        (hostile,) = [s for s in page.sessions if s.id == HOSTILE_ID]
        if not redact:  # every value whole, as text
            assert hostile.title == HOSTILE[0] and hostile.model == HOSTILE[1]
            assert hostile.system_prompt == text
            user, assistant, tool, odd = hostile.messages
            assert user.text == assistant.text == tool.text == odd.text == text
            assert assistant.reasoning == text
            assert assistant.calls == [(p, json.dumps(p)) for p in HOSTILE]
            assert odd.role == '"><img src=x onerror=alert(3)>'
        if "&session=" in query:  # the contents link to each session on the page
            assert page.contents == [s.id for s in page.sessions] and HOSTILE_ID in page.contents


def test_the_generated_xss_corpus_exports_inert(client, generated_db):
    ids = sessions_with_markup(generated_db[0])
    assert len(ids) > 1, "the generator plants an XSS corpus"
    html = assert_inert_page(client.get("/export.html?" + "&".join(f"session={i}" for i in ids)))
    assert "&lt;script&gt;" in html
    assert sorted(s.id for s in logbook_page(html).sessions) == sorted(ids)


def test_a_page_holds_any_number_of_sessions_each_once(v22):
    """Hermes wrote 251 sessions in one file; Logbook once stopped at 200."""
    db, client = v22
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO sessions (id, source, started_at, ended_at) SELECT id || '-twin', "
            "source, started_at + 1, ended_at FROM sessions LIMIT 70"
        )
    every = [r[0] for r in sql(db, "SELECT id FROM sessions ORDER BY started_at")]
    page = logbook_page(
        assert_inert_page(client.get("/export.html?" + "&".join(f"session={i}" for i in every)))
    )
    assert len(every) > 200
    assert page.contents == [s.id for s in page.sessions]
    assert sorted(page.contents) == sorted(every)


def test_one_session_page_is_titled_by_it_and_lists_no_contents(v22):
    db, client = v22
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET title = '</title><b>x' WHERE id = 'x_rewound'")
    html = assert_inert_page(client.get("/export.html?session=x_rewound"))
    assert "<title>&lt;/title&gt;&lt;b&gt;x · Hermes Logbook export</title>" in html
    page = logbook_page(html)
    assert page.contents == [] and [s.id for s in page.sessions] == ["x_rewound"]
    assert page.sessions[0].title == "</title><b>x"


def test_the_page_is_made_as_it_is_read():
    """Records are taken one at a time as the page is written: the first session is on its
    way before the second is read, so a page of any size holds one conversation in memory."""
    taken = []

    def records():
        for n in range(3):
            taken.append(n)
            yield {"id": f"s{n}", "messages": [{"role": "user", "content": f"m{n}"}]}

    contents = [{"id": f"s{n}", "title": None, "started_at": 1.7e9} for n in range(3)]
    chunks = export_html.page_chunks(records(), contents)
    seen = ""
    for chunk in chunks:
        seen += chunk
        if "m0" in seen:
            break
    assert taken == [0]
    rest = "".join(chunks)
    assert taken == [0, 1, 2] and "m2" in rest


def test_the_site_stylesheet_is_safe_inline():
    """The page's only markup not written in its template is static/app.css: it must not be
    able to close its <style> element, nor load anything."""
    css = str(export_html.site_css())
    assert css and "</" not in css and "url(" not in css and "@import" not in css


@pytest.mark.browser
def test_the_page_opened_in_a_browser_loads_nothing_and_shows_the_text(v22, page, tmp_path):
    """In Chromium, from a file as a user opens a download: no request but the page itself,
    no script error, no dialog (the page fixture checks both), the hostile text on screen."""
    db, client = v22
    _plant(db)
    r = client.get(f"/export.html?session={quote(HOSTILE_ID)}&session=x_rewound")
    saved = tmp_path / "export.html"
    saved.write_bytes(r.get_data())
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto(saved.as_uri())
    assert requests == [saved.as_uri()]
    shown = page.locator("section.session .msg .text").first.inner_text()
    assert "<script>alert(1)</script>" in shown and "<img src=x onerror=alert(1)>" in shown
    assert page.locator("script, img, iframe").count() == 0
    # The contents lead to each session on the page.
    page.locator("nav.contents a").nth(1).click()
    assert page.evaluate("location.hash") == "#s-x_rewound"
