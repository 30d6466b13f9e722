"""What a user met in the browser (issue 20), pinned over real HTTP on copies of the real
Hermes databases: the same-origin guard, costs in words, "live" by recent activity, export
of nothing, plain-word search notices, hit labels, readable messages."""

from __future__ import annotations

import re
import sqlite3
import time

import pytest

from support import copy_fixture, make_app, sql
from support.http import post
from webui.hermes.activity import ACTIVE_WINDOW_S, session_state
from webui.hermes.cost import session_cost
from webui.present.filters import short_id
from webui.present.rows import call_hint, lift_long_strings, number_and_date, reasoning_blocks


@pytest.fixture
def v22(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path)
    return db, make_app(db, tmp_path / "inst").test_client()


def _row_html(html: str, sid: str) -> str:
    """The <tr> of one session in the list."""
    start = html.index(f'name="session" value="{sid}"')
    return html[html.rindex("<tr", 0, start) : html.index("</tr>", start)]


# -- 1. plain form POSTs from our own pages ----------------------------------------------------


def test_plain_form_post_with_null_origin_but_same_origin_fetch_site_is_accepted(v22):
    """Chromium sends Origin: null on some plain form POSTs; Sec-Fetch-Site tells the truth."""
    db, client = v22
    sid = sql(db, "SELECT id FROM sessions ORDER BY started_at LIMIT 1")[0][0]
    r = post(
        client,
        f"/sessions/{sid}/delete",
        browser_form=True,
        headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"},
    )
    assert r.status_code == 302
    assert sql(db, "SELECT COUNT(*) FROM sessions WHERE id = ?", (sid,))[0][0] == 0
    # ...while a cross-site request with the same null Origin is still refused
    other = sql(db, "SELECT id FROM sessions ORDER BY started_at LIMIT 1")[0][0]
    r = post(
        client,
        f"/sessions/{other}/delete",
        browser_form=True,
        headers={"Origin": "null", "Sec-Fetch-Site": "cross-site"},
    )
    assert r.status_code == 403
    assert sql(db, "SELECT COUNT(*) FROM sessions WHERE id = ?", (other,))[0][0] == 1


def test_referrer_policy_keeps_our_own_origin(v22):
    _, client = v22
    assert client.get("/sessions").headers["Referrer-Policy"] == "same-origin"


# -- 2. cost in words --------------------------------------------------------------------------


def test_unknown_and_included_costs_are_words_not_zero(v22):
    db, client = v22
    html = client.get("/sessions?rows=all&archived=1").get_data(as_text=True)
    checked = 0
    for status in ("included", "unknown"):
        ids = [
            r[0]
            for r in sql(
                db,
                "SELECT id FROM sessions WHERE cost_status = ? ORDER BY started_at DESC",
                (status,),
            )
        ]
        for sid in ids:
            if f'value="{sid}"' not in html:
                continue
            cell = re.search(r'data-label="Cost">(.*?)</td>', _row_html(html, sid), re.S).group(1)
            assert status in cell and "$0" not in cell, (sid, cell)
            checked += 1
    assert checked >= 2


def test_estimated_and_actual_costs_are_told_apart(v22):
    db, client = v22
    html = client.get("/sessions?archived=1").get_data(as_text=True)
    (est_id,) = sql(
        db,
        "SELECT id FROM sessions WHERE cost_status = 'estimated' AND "
        "actual_cost_usd IS NULL AND estimated_cost_usd > 0.01 "
        "ORDER BY started_at DESC LIMIT 1",
    )[0]
    if f'value="{est_id}"' in html:
        assert "≈ $" in _row_html(html, est_id)
    assert session_cost(0.5, 0.7, "actual") == (0.5, "actual")
    assert session_cost(None, 0.7, "estimated") == (0.7, "estimated")
    assert session_cost(None, 0.0, "unknown") == (None, "unknown")
    assert session_cost(None, 0.3, "included") == (None, "included")


def test_stats_say_how_much_of_the_cost_is_actual(v22):
    db, client = v22
    html = client.get("/stats?period=all").get_data(as_text=True)
    totals = client.get("/stats?period=all&format=json").get_json()["totals"]
    known, total = sql(db, "SELECT SUM(actual_cost_usd IS NOT NULL), COUNT(*) FROM sessions")[0]
    assert (totals["actual_known"], totals["sessions"]) == (known, total)
    text = re.sub(r"\s+", " ", html)
    assert f"actual cost known for {known} of {total} sessions" in text


# -- 5. live means recent activity -------------------------------------------------------------


def test_sessions_never_closed_but_idle_are_not_live(v22):
    db, client = v22
    open_ids = [r[0] for r in sql(db, "SELECT id FROM sessions WHERE ended_at IS NULL")]
    assert open_ids
    html = client.get("/sessions?rows=all&archived=1").get_data(as_text=True)
    assert "● live" not in html  # the fixture's newest message is weeks old
    shown = [sid for sid in open_ids if f'value="{sid}"' in html]
    assert shown and all("not closed" in _row_html(html, sid) for sid in shown)
    page = client.get(f"/sessions/{shown[0]}").get_data(as_text=True)
    assert "not closed" in page and "● live" not in page.split('id="live-tail"')[0]


def test_a_session_with_a_message_a_minute_ago_is_live(v22):
    db, client = v22
    sid = sql(db, "SELECT id FROM sessions WHERE ended_at IS NULL LIMIT 1")[0][0]
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) "
            "VALUES (?, 'user', 'still here', ?)",
            (sid, time.time() - 60),
        )
    conn.close()
    html = client.get(f"/sessions?rows=all&q={sid}").get_data(as_text=True)
    assert "● live" in _row_html(html, sid)
    assert session_state(None, time.time() - ACTIVE_WINDOW_S - 1) == "open"
    assert session_state(123.0, time.time()) == "ended"


# -- 9. small things ---------------------------------------------------------------------------


def test_id_column_shows_the_part_that_differs(v22):
    db, client = v22
    html = client.get("/sessions").get_data(as_text=True)
    # the id is the last thing on a row's detail line, whose tooltip holds the whole id
    shown = re.findall(
        r'<div class="line2 detail" title="[^"]*?id ([^" ]+)">(?:(?!</div>).)*?'
        r'<code class="sid">([^<]+)</code>',
        html,
        re.S,
    )
    assert len(shown) >= 10
    labels = [label for _, label in shown]
    assert len(set(labels)) == len(labels), "every row's id label differs"
    assert short_id("20261031_174951_f7466a") == "…f7466a"
    assert short_id("cron_ec3fc2001234567") == "cron_ec3fc20…"
    assert short_id("cron_167b69247670_20261007_110004") == "cron_167b69…20261007_110004"


def test_a_filtered_export_that_matches_nothing_says_so(v22):
    _, client = v22
    r = client.get("/export.jsonl?source=no-such-platform")
    assert r.status_code == 404
    assert "nothing to export" in r.get_data(as_text=True)
    assert "attachment" not in r.headers.get("Content-Disposition", "")


def test_search_notice_speaks_plain_words(v22):
    _, client = v22
    for q in ("a AND OR b", "docker OR", "(unbalanced"):
        body = client.get("/search", query_string={"q": q, "format": "json"}).get_json()
        notice = body["notice"] or ""
        assert "fts5:" not in notice and "syntax error" not in notice, (q, notice)


def test_untitled_sessions_are_named_by_their_first_message_in_search_hits(v22):
    db, client = v22
    sid, first = sql(
        db,
        "SELECT s.id, (SELECT content FROM messages m WHERE m.session_id = s.id "
        "AND m.role = 'user' ORDER BY timestamp, id LIMIT 1) FROM sessions s "
        "WHERE s.title IS NULL AND EXISTS (SELECT 1 FROM messages m WHERE "
        "m.session_id = s.id AND m.role = 'user' AND length(m.content) > 20) "
        "LIMIT 1",
    )[0]
    word = max(re.findall(r"[A-Za-z]{5,}", first), key=len)
    html = client.get("/search", query_string={"q": word, "session": sid}).get_data(as_text=True)
    label = re.search(r'class="hit-session"[^>]*>([^<]*)<', html)
    if label:  # the hit list names the session only when not searching inside it
        assert label.group(1).strip() != sid
    html = client.get("/search", query_string={"q": word}).get_data(as_text=True)
    labels = re.findall(
        rf'href="/sessions/{re.escape(sid)}"[^>]*class="hit-session"|'
        rf'class="hit-session" href="/sessions/{re.escape(sid)}[^"]*">([^<]*)<',
        html,
    )
    assert any(lbl and lbl.strip() != sid for lbl in labels), labels


def test_stats_heading_names_the_period_and_offers_month_presets(v22):
    _, client = v22
    html = client.get("/stats?since=2026-10-01&until=2026-10-31").get_data(as_text=True)
    assert "1 Oct 2026 – 31 Oct 2026 (31 days)" in html
    assert not re.search(r'name="period" value="30" checked', html)
    assert "this month" in html and "last month" in html


# -- 8. reading long conversations -------------------------------------------------------------


def test_tool_calls_name_the_argument_that_differs():
    assert call_hint('{"path": "src/app.py", "limit": 40}') == "src/app.py"
    assert call_hint({"command": "ls -la", "timeout": 5}) == "ls -la"
    assert call_hint("{}") == ""


def test_file_contents_in_json_results_read_as_text():
    body = "line one\n" * 30
    short, lifted = lift_long_strings(
        '{"path": "a.txt", "content": ' + __import__("json").dumps(body) + "}"
    )
    assert lifted == [{"key": "content", "text": body}]
    assert short["path"] == "a.txt" and "shown below" in short["content"]


def test_reasoning_details_that_repeat_the_reasoning_are_shown_once():
    text = "First I will look at the config file, then run the tests."
    m = {
        "reasoning": text,
        "reasoning_details": '[{"type": "reasoning.text", "text": "' + text + '"}]',
    }
    assert [b["field"] for b in reasoning_blocks(m)] == ["reasoning"]
    m["reasoning_details"] = '[{"type": "reasoning.text", "text": "Something else entirely."}]'
    assert [b["field"] for b in reasoning_blocks(m)] == ["reasoning", "reasoning_details"]


def test_dates_show_where_a_conversation_crosses_midnight():
    day = time.mktime((2026, 3, 1, 23, 50, 0, 0, 0, -1))
    views = [{"timestamp": day}, {"timestamp": day + 300}, {"timestamp": day + 900}]
    number_and_date(views, 41, day)
    assert [v["n"] for v in views] == [41, 42, 43]
    assert [v["show_date"] for v in views] == [False, False, True]


def test_viewer_numbers_messages_and_jumps_to_the_end(client, generated_db):
    db, long_id = generated_db
    total = sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = ?", (long_id,))[0][0]
    (last_id,) = sql(
        db,
        "SELECT id FROM messages WHERE session_id = ? ORDER BY timestamp DESC, id DESC LIMIT 1",
        (long_id,),
    )[0]
    html = client.get(f"/sessions/{long_id}").get_data(as_text=True)
    assert f'data-total="{total}"' in html and 'data-n="1"' in html
    end = client.get(f"/sessions/{long_id}?end=1").get_data(as_text=True)
    assert f'id="m-{last_id}"' in end and f'data-n="{total}"' in end
    assert 'id="conversation-end"' in end and "Load earlier messages" in end
    assert "Raw text" not in html.split('class="msg-menu"')[0].split('class="conversation"')[1]


def test_stats_groups_without_any_price_say_so_instead_of_zero(v22):
    """A model or provider whose sessions are all "included" or "unknown" is not a $0 bar."""
    db, client = v22
    report = client.get("/stats?period=all&format=json").get_json()
    html = client.get("/stats?period=all").get_data(as_text=True)
    groups = sql(
        db,
        "SELECT billing_provider, SUM(cost_status = 'included') = COUNT(*) FROM "
        "sessions GROUP BY 1 HAVING SUM(cost_status IN ('unknown', 'included')) "
        "= COUNT(*)",
    )
    assert groups
    for provider, all_included in groups:
        row = next(r for r in report["by_provider"] if r["key"] == (provider or "(none)"))
        word = "included" if all_included else "unknown"
        assert row["included_sessions"] + row["unpriced_sessions"] == row["sessions"]
        cell = re.search(
            rf'<th scope="row">{re.escape(provider)}</th>(?:<td[^>]*>[^<]*</td>){{3}}'
            rf'<td class="n">(?:<span [^>]*>)?([^<]*)(?:</span>)?</td>',
            html,
        )
        assert cell and cell.group(1) == word, (provider, cell and cell.group(1))


def test_long_chart_labels_end_in_an_ellipsis():
    from webui.present.charts import LABEL_CHARS, ellipsize, horizontal_bars

    name = "anthropic/claude-sonnet-4.6-with-a-very-long-suffix"
    chart = horizontal_bars("Cost by model", [name, "short"], [2.0, 1.0], str)
    assert chart.bars[0]["label"].endswith("…") and len(chart.bars[0]["label"]) == LABEL_CHARS
    assert chart.bars[0]["tip"].startswith(name)  # the whole name in the tooltip
    assert chart.bars[1]["label"] == "short" and ellipsize("abc", 3) == "abc"
