"""One rule for every cost on every page (issue 47, point 1): work nobody priced reads
"unknown", work included in a subscription "included", a group that mixes them says what its
sum leaves out — never "$0". In Chromium, on a copy of the schema-22 database Hermes 0.19
wrote with gateway origins, where a model's sessions and its usage rows are unpriced, a
compression chain is unpriced, a thread chat is included, and a second profile priced nothing
at all; every page where a cost appears is read whole (folded tables and tooltips too)."""

from __future__ import annotations

import re
import shutil
import sqlite3

import pytest

from support import FIXTURES, make_app, sql
from support.browser import LiveServer, screenshot

pytestmark = pytest.mark.browser

UNPRICED = "nousresearch/hermes-4-405b"
CHAIN = ("20260923_084247_f63264", "20260923_085112_6e0757")  # a compression chain
ALICE = "agent:main:telegram:dm:1001"
THREAD = "agent:main:discord:thread:7700:7701"
ZERO = re.compile(r"\$0(?![.,\d])")


def unpriced(db, where: str, status: str = "unknown") -> None:
    """Sessions matching ``where`` as Hermes writes them when it has no price (status
    unknown, no figures) or under a subscription (included, estimate 0), usage rows too."""
    conn = sqlite3.connect(db)
    with conn:
        estimate = "NULL" if status == "unknown" else "0"
        ids = [r[0] for r in conn.execute(f"SELECT id FROM sessions WHERE {where}")]
        conn.executemany(
            f"UPDATE sessions SET cost_status = ?, estimated_cost_usd = {estimate}, "
            "actual_cost_usd = NULL WHERE id = ?",
            [(status, i) for i in ids],
        )
        conn.executemany(
            "UPDATE session_model_usage SET cost_status = ?, estimated_cost_usd = 0, "
            "actual_cost_usd = 0 WHERE session_id = ?",
            [(status, i) for i in ids],
        )
    conn.close()


@pytest.fixture(scope="module")
def costs(tmp_path_factory):
    root = tmp_path_factory.mktemp("costs") / "hermes"
    (root / "profiles" / "lab").mkdir(parents=True)
    db = root / "state.db"
    shutil.copyfile(FIXTURES / "hermes-v22-origins.db", db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET model = ? WHERE model = 'openai/gpt-5'", (UNPRICED,))
        conn.execute(
            "UPDATE session_model_usage SET model = ? WHERE model = 'openai/gpt-5'", (UNPRICED,)
        )
    conn.close()
    unpriced(db, f"model = '{UNPRICED}'")
    unpriced(db, f"id IN {CHAIN!r}")
    unpriced(db, f"session_key = '{THREAD}'", "included")
    # A second profile that priced nothing at all.
    lab = root / "profiles" / "lab" / "state.db"
    shutil.copyfile(FIXTURES / "hermes-v22.db", lab)
    unpriced(lab, "1")
    app = make_app(
        db, root.parent / "inst", LOGBOOK_HERMES_ROOT=str(root), LOGBOOK_PROFILE_NAME="default"
    )
    srv = LiveServer(app)
    yield db, srv
    srv.close()


def pages(db) -> dict[str, str]:
    day = sql(
        db,
        "SELECT date(started_at, 'unixepoch') FROM sessions GROUP BY 1 "
        f"HAVING MIN(model = '{UNPRICED}') = 1 LIMIT 1",
    )[0][0]
    return {
        "list": "/sessions?archived=include&sort=started",
        "list, every row": "/sessions?rows=all&archived=include",
        "chats": "/chats",
        "a chat": f"/chats/{ALICE}",
        "a thread": f"/chats/{THREAD}",
        "people": "/people",
        "workspaces": "/workspaces",
        "stats": "/stats?period=all",
        "stats by source": "/stats?period=all&cost_by=source",
        "stats of a day": f"/stats?since={day}&until={day}",
        "every profile": "/stats?period=all&profile=all",
        "session": f"/sessions/{CHAIN[0]}",
        "lineage": f"/sessions/{CHAIN[0]}/lineage",
        "prune": f"/prune?older_than=0&model={UNPRICED.split('/')[1]}",
        "archive": f"/archive?older_than=0&model={UNPRICED.split('/')[1]}",
    }


def text_of(page) -> str:
    """Everything the page says, folded tables and SVG tooltips included, one text node a
    line (so one cell's "$0" never runs into the next cell's digits)."""
    return page.evaluate(
        """() => { const w = document.createTreeWalker(document.querySelector('main'),
                                                      NodeFilter.SHOW_TEXT);
                   const out = []; while (w.nextNode()) out.push(w.currentNode.nodeValue);
                   return out.join('\\n'); }"""
    )


def test_no_page_prices_unpriced_work_at_zero(costs, page):
    db, live = costs
    found = {}
    for name, path in pages(db).items():
        page.goto(live.url + path)
        text = text_of(page)
        zeros = [text[max(0, m.start() - 60) : m.end() + 5] for m in ZERO.finditer(text)]
        if zeros:
            found[name] = zeros[:3]
    assert not found, found


def test_each_place_names_what_nobody_priced(costs, page):
    db, live = costs
    # The list: the chain's "whole conversation" line beside its Cost column.
    page.goto(f"{live.url}/sessions?archived=include&sort=started")
    # (the chain's row shows its newest segment, as `hermes sessions list` does)
    row = page.locator("table.sessions tbody tr", has=page.locator(f"a[href$='{CHAIN[1]}']"))
    assert row.count() == 1
    assert "whole conversation" in row.inner_text()
    assert row.locator(".chain .cost").inner_text() == "unknown"
    assert row.locator("td[data-label='Cost']").inner_text() == "unknown"
    screenshot(page, "costs-list.png")
    # A chat's "Sessions of this chat" index and its timeline's session headings.
    page.goto(f"{live.url}/chats/{ALICE}")
    index = page.locator("details.chat-index li", has=page.locator(f"a[href*='{CHAIN[0]}']"))
    page.locator("details.chat-index > summary").click()  # folded: open it as a reader does
    assert index.locator(".cost").inner_text() == "unknown"
    page.goto(f"{live.url}/chats/{THREAD}")
    page.locator("details.chat-index > summary").click()
    assert set(page.locator("details.chat-index .cost").all_inner_texts()) == {"included"}
    assert "included" in page.locator(".chat-head").inner_text()
    # Stats: the series table, model usage by task and by model.
    page.goto(f"{live.url}/stats?period=all")
    for details in page.locator("details.data-table").all():  # the tables are folded
        details.locator("summary").first.click()
    series = page.locator("#over-time table.data tbody tr", has_text=UNPRICED)
    assert series.count() > 0
    assert set(series.locator("td:last-child").all_inner_texts()) == {"unknown"}
    usage = page.locator("#aux table.data tbody tr", has_text=UNPRICED)
    assert usage.count() == 1 and usage.locator("td:last-child").inner_text() == "unknown"
    by_model = page.locator("#breakdowns table.data tbody tr", has_text=UNPRICED)
    assert by_model.first.locator("td:last-child").inner_text() == "unknown"
    page.locator("#over-time table.data").scroll_into_view_if_needed()
    screenshot(page, "stats-unpriced.png")
    # Every profile side by side: a profile that priced nothing says so.
    page.goto(f"{live.url}/stats?period=all&profile=all")
    lab = page.locator("table tbody tr", has_text="lab")
    assert "unknown" in lab.inner_text()
    default = page.locator("table tbody tr", has_text="default")
    assert re.search(r"\$[\d.,]+ \+ [\d,]+ unknown, [\d,]+ included", default.inner_text())
    # The conversation: the lineage's totals on the session page and the lineage page.
    page.goto(f"{live.url}/sessions/{CHAIN[0]}")
    assert page.locator(".lineage-box .cost").inner_text() == "unknown"
    page.goto(f"{live.url}/sessions/{CHAIN[0]}/lineage")
    assert page.locator(".totals .cost").first.inner_text() == "unknown"
