"""Everything shown from the database is untrusted text: it must come out inert."""

from __future__ import annotations

import pytest

from support import sql
from support.htmlcheck import assert_inert, assert_inert_page
from support.xss import PAYLOADS, sessions_with_markup
from webui.present.markdown import markdown


@pytest.mark.parametrize("payload", PAYLOADS)
def test_markdown_output_is_inert(payload):
    assert_inert(str(markdown(payload)))


def test_markdown_keeps_safe_links_with_rel():
    html = str(markdown("[docs](https://example.org/x) and <https://example.org/y>"))
    assert 'href="https://example.org/x"' in html
    assert 'rel="noopener noreferrer nofollow"' in html


def test_markdown_images_become_links_not_loads():
    html = str(markdown("![diagram](https://example.org/d.png)"))
    assert "<img" not in html
    assert 'href="https://example.org/d.png"' in html


def test_raw_html_in_markdown_is_shown_as_text():
    html = str(markdown("before <b>bold</b> after"))
    assert "&lt;b&gt;bold&lt;/b&gt;" in html


def test_code_is_highlighted_and_escaped():
    html = str(markdown("```python\nprint('<script>')\n```"))
    assert "&lt;script&gt;" in html and 'class="' in html


@pytest.mark.slow
def test_every_fixture_page_is_inert(fixture_client, fixture_db):
    """The fixtures carry HTML/script payloads inside messages (see fixtures/README.md)."""
    assert sql(fixture_db, "SELECT COUNT(*) FROM messages WHERE content LIKE '%<script%'")[0][0] > 0
    assert_inert_page(fixture_client.get("/sessions"))
    ids = [
        r[0]
        for r in sql(
            fixture_db,
            "SELECT DISTINCT session_id FROM messages WHERE "
            "content LIKE '%<%' OR tool_calls LIKE '%<%'",
        )
    ]
    assert ids
    for sid in ids:
        assert_inert_page(fixture_client.get(f"/sessions/{sid}?rewound=1"))


def test_generated_xss_corpus_is_inert_everywhere(client, generated_db):
    ids = sessions_with_markup(generated_db[0])
    assert ids, "the generator should plant an XSS corpus"
    for sid in set(ids):
        assert_inert_page(client.get(f"/sessions/{sid}"))
    for q in ("?sort=-messages", "?q=%3Cscript", "?sort=cost"):
        assert_inert_page(client.get(f"/sessions{q}"))


def test_security_headers(client):
    r = client.get("/sessions")
    csp = r.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert "HX-Request" in r.headers.get("Vary", "")
    assert "Server" not in r.headers or "waitress" not in r.headers["Server"].lower()


def test_foreign_host_header_is_refused(client):
    r = client.get("/sessions", headers={"Host": "evil.example:9130"})
    assert r.status_code == 400
    assert client.get("/sessions", headers={"Host": "127.0.0.1:9130"}).status_code == 200
