""" "Render it anyway" is bounded (issue 37, point 4): a message too large to format inline is
rendered in a process of its own when asked for; a page waits for it only as long as it is
told to and its deadline allows (plain text saying the render goes on), the render is made
once and kept, and a client looping on the link starts nothing new.

No clock decides these tests: how long a page may wait is set (``LOGBOOK_RENDER_WAIT_S``, or
``wait_s``), 0 where a test needs the render not to be done yet and None where it needs it
done; only the waits for a render running in the other process have a bound, a generous one."""

from __future__ import annotations

import sqlite3

import pytest

from support import copy_fixture, make_app
from webui.present import slow_render

RENDER_BOUND_S = 300  # a render of ~0.5 MB takes seconds, on a busy machine many more


def _huge_table(rows: int) -> str:
    head = "| " + " | ".join(f"c{i}" for i in range(8)) + " |\n" + "|---" * 8 + "|\n"
    return head + "".join(
        "| " + " | ".join(f"**v{r}-{i}** `x`" for i in range(8)) + " |\n" for r in range(rows)
    )


@pytest.fixture
def big(tmp_path, request):
    """(app maker, session, message) over a copy of v22 holding a ~0.5 MB Markdown table,
    one of its own for each test (renders are kept by their text, for the process's life)."""
    db = copy_fixture("hermes-v22.db", tmp_path)
    text = f"{request.node.name}\n\n" + _huge_table(6000)  # ~0.5 MB: seconds of rendering
    with sqlite3.connect(db) as conn:
        sid, ts = conn.execute(
            "SELECT session_id, MAX(timestamp) FROM messages GROUP BY session_id LIMIT 1"
        ).fetchone()
        mid = conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'assistant', ?, ?)",
            (sid, text, ts + 1),
        ).lastrowid
    conn.close()

    def client(**config):
        return make_app(db, tmp_path / "inst", **config).test_client()

    yield client, sid, mid
    assert slow_render.wait_idle(RENDER_BOUND_S)


@pytest.mark.slow  # renders ~0.5 MB of Markdown in a process of its own
def test_a_page_never_waits_past_what_it_is_told_then_the_render_is_kept(big):
    client, sid, mid = big
    url = f"/sessions/{sid}?at={mid}&render={mid}"
    impatient = client(LOGBOOK_RENDER_WAIT_S=0)  # a page that waits for nothing
    first = impatient.get(url)
    assert first.status_code == 200
    page = first.get_data(as_text=True)
    assert "Still being formatted" in page and "<strong>v5999-7</strong>" not in page
    assert slow_render.running() == 1
    # Asking again while it runs joins the same render, starts no second one.
    assert "Still being formatted" in impatient.get(url).get_data(as_text=True)
    assert slow_render.running() == 1
    assert slow_render.wait_idle(RENDER_BOUND_S)
    # Kept: a page that waits for nothing shows it rendered, and starts nothing.
    again = impatient.get(url)
    html = again.get_data(as_text=True)
    assert again.status_code == 200 and slow_render.running() == 0
    assert "<table>" in html and "<strong>v5999-7</strong>" in html
    # The plain view (no render=) stays plain: the budget still holds.
    plain = impatient.get(f"/sessions/{sid}?at={mid}").get_data(as_text=True)
    assert "Render it anyway" in plain


@pytest.mark.slow  # renders ~0.5 MB of Markdown in a process of its own
def test_a_page_told_to_wait_shows_the_render_whatever_the_machine(big):
    client, sid, mid = big
    patient = client(LOGBOOK_RENDER_WAIT_S=None)
    r = patient.get(f"/sessions/{sid}?at={mid}&render={mid}")
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    assert "<strong>v5999-7</strong>" in html and "Still being formatted" not in html


def test_a_page_waits_at_most_its_budget_and_never_into_its_deadline():
    assert slow_render.patience(4.0, None) == 4.0  # outside a request
    assert slow_render.patience(4.0, 10.0) == 4.0
    assert slow_render.patience(4.0, 1.5) == 1.5 - slow_render.SPARE_S
    assert slow_render.patience(4.0, 0.2) == 0.0  # the deadline is all but spent
    assert slow_render.patience(0.0, 10.0) == 0.0


@pytest.mark.slow  # renders several ~0.3 MB tables at once
def test_renders_at_once_are_bounded():
    """Past MAX_PENDING different renders at once, a page shows the text plain and says so
    instead of queueing more work."""
    texts = [_huge_table(3000 + n) for n in range(slow_render.MAX_PENDING + 2)]
    outcomes = [slow_render.render("markdown", t, wait_s=0) for t in texts]
    assert [o.pending for o in outcomes] == ["running"] * slow_render.MAX_PENDING + ["busy"] * 2
    assert slow_render.wait_idle(RENDER_BOUND_S)


@pytest.mark.slow  # renders ~0.5 MB of Markdown in a process of its own
def test_pages_rendered_on_request_are_built_one_at_a_time(big):
    """Clients looping on "render it anyway" share one builder: while one such page is being
    built, another waits within its deadline, then answers 503 with Retry-After; the plain
    conversation is served meanwhile."""
    from webui.web.views import sessions as view

    client, sid, mid = big
    # A deadline with nothing to spare: the page waits for no builder (it would wait up to its
    # deadline's spare second otherwise; how long is the benchmarks' to measure).
    hurried = client(LOGBOOK_REQUEST_DEADLINE=0.5)
    c = client(LOGBOOK_RENDER_WAIT_S=None)
    assert view._ONE_RENDER.acquire(timeout=1)
    try:
        busy = hurried.get(f"/sessions/{sid}?render={mid}")
        assert busy.status_code == 503 and busy.headers.get("Retry-After") == "2"
        assert c.get(f"/sessions/{sid}").status_code == 200
    finally:
        view._ONE_RENDER.release()
    assert c.get(f"/sessions/{sid}?at={mid}&render={mid}").status_code == 200
