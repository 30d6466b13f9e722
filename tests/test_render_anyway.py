""" "Render it anyway" is bounded (issue 37, point 4): a message too large to format inline is
rendered in a process of its own when asked for; the page answers within its deadline (plain
text saying the render goes on), the render is made once and kept, and a client looping on
the link starts nothing new."""

from __future__ import annotations

import sqlite3
import time

import pytest

from support import copy_fixture, make_app
from webui.present import slow_render


def _huge_table(rows: int) -> str:
    head = "| " + " | ".join(f"c{i}" for i in range(8)) + " |\n" + "|---" * 8 + "|\n"
    return head + "".join(
        "| " + " | ".join(f"**v{r}-{i}** `x`" for i in range(8)) + " |\n" for r in range(rows)
    )


@pytest.fixture
def big(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path)
    text = _huge_table(6000)  # ~0.5 MB of Markdown: seconds of rendering
    with sqlite3.connect(db) as conn:
        sid, ts = conn.execute(
            "SELECT session_id, MAX(timestamp) FROM messages GROUP BY session_id LIMIT 1"
        ).fetchone()
        mid = conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'assistant', ?, ?)",
            (sid, text, ts + 1),
        ).lastrowid
    conn.close()
    app = make_app(db, tmp_path / "inst", LOGBOOK_REQUEST_DEADLINE=1.5)
    return app.test_client(), sid, mid, text


def test_a_huge_render_answers_within_the_deadline_then_is_kept(big):
    client, sid, mid, text = big
    url = f"/sessions/{sid}?at={mid}&render={mid}"
    t0 = time.monotonic()
    first = client.get(url)
    took = time.monotonic() - t0
    assert first.status_code == 200
    page = first.get_data(as_text=True)
    if "Still being formatted" in page:  # the render outlasted the request's deadline
        assert took < 1.5 + 1.0, took
        # Asking again while it runs joins the same render, starts no second one.
        assert len(slow_render._running) <= 1
        deadline = time.monotonic() + 60
        while slow_render._running and time.monotonic() < deadline:
            time.sleep(0.2)
    t0 = time.monotonic()
    again = client.get(url)
    took = time.monotonic() - t0
    html = again.get_data(as_text=True)
    assert "<table>" in html and "<strong>v5999-7</strong>" in html
    assert took < 1.0, f"a kept render costs nothing to show again: {took:.2f} s"
    # The plain view (no render=) stays plain and fast: the budget still holds.
    plain = client.get(f"/sessions/{sid}?at={mid}").get_data(as_text=True)
    assert "Render it anyway" in plain


def test_renders_at_once_are_bounded():
    """Past MAX_PENDING different renders at once, a page shows the text plain and says so
    instead of queueing more work."""
    from webui.db import deadline

    texts = [_huge_table(3000 + n) for n in range(slow_render.MAX_PENDING + 2)]
    deadline.begin(0.55)  # as in a request with almost nothing left: no waiting for renders
    try:
        outcomes = [slow_render.render("markdown", t) for t in texts]
    finally:
        deadline.end()
    busy = [o for o in outcomes if o.pending == "busy"]
    assert busy, [o.pending for o in outcomes]
    deadline = time.monotonic() + 120
    while slow_render._running and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not slow_render._running


def test_pages_rendered_on_request_are_built_one_at_a_time(big):
    """Clients looping on "render it anyway" share one builder: while one such page is being
    built, another waits within its deadline, then answers 503 with Retry-After; the plain
    conversation is served meanwhile."""
    from webui.web.views import sessions as view

    client, sid, mid, _text = big
    assert view._ONE_RENDER.acquire(timeout=1)
    try:
        began = time.monotonic()
        busy = client.get(f"/sessions/{sid}?render={mid}")
        waited = time.monotonic() - began
        assert busy.status_code == 503 and busy.headers.get("Retry-After") == "2"
        assert waited < 1.5 + 0.5, waited  # within the request's deadline
        assert client.get(f"/sessions/{sid}").status_code == 200
    finally:
        view._ONE_RENDER.release()
    assert client.get(f"/sessions/{sid}?render={mid}").status_code == 200
