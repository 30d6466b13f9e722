"""The pure rules of a conversation's display projection and of the export records
(webui/hermes/display.py, webui/hermes/records.py), on rows built the way each Hermes writes
them (docs/hermes-generations.md §2 and §5)."""

from __future__ import annotations

import json

from webui.hermes import display, records
from webui.hermes.rules import rules_for

R19, R20, R22 = rules_for(22), rules_for(26), rules_for(31)


def row(i, role="user", content="hi", ts=None, active=1, compacted=0, **extra):
    return {
        "id": i,
        "role": role,
        "content": content,
        "timestamp": float(ts if ts is not None else i),
        "tool_call_id": None,
        "tool_calls": None,
        "tool_name": None,
        "active": active,
        "compacted": compacted,
        **extra,
    }


def compaction(carried_originals_retired: bool) -> list[dict]:
    """Rows 1-4 compacted in place, 5 the summary, 6-7 copies of 3-4 (the carried tail), 8 a
    model-only merge (0.22), 9 a new turn; 0.22 retires the carried originals (3, 4)."""
    tail = 0 if carried_originals_retired else 1
    return [
        row(1, content="plan it", compacted=1, active=0),
        row(2, "assistant", "step one", compacted=1, active=0),
        row(3, content="canary?", ts=30, compacted=tail, active=0),
        row(4, "assistant", "10%", ts=40, compacted=tail, active=0),
        row(5, content="[CONTEXT COMPACTION — REFERENCE ONLY] done", ts=50),
        row(6, content="canary?", ts=30),
        row(7, "assistant", "10%", ts=40),
        row(
            8, content="canary?\n\nwhat next", ts=50.000001, display_metadata='{"model_only": true}'
        ),
        row(9, content="what next", ts=60),
    ]


def test_each_generation_projects_its_own_rows_in_its_own_order():
    rows = compaction(carried_originals_retired=False)
    # 0.19: live rows by id (the model-only rule is 0.22's).
    assert [r["id"] for r in display.project(rows, R19.display)] == [5, 6, 7, 8, 9]
    # 0.20: the display set, each message once by its live copy, at that copy's place.
    assert [r["id"] for r in display.project(rows, R20.display)] == [1, 2, 5, 6, 7, 8, 9]
    # 0.22: model-only rows out, the live copy at the place of the message's first row.
    assert [r["id"] for r in display.project(rows, R22.display)] == [1, 2, 6, 7, 5, 9]
    retired = compaction(carried_originals_retired=True)
    assert [r["id"] for r in display.project(retired, R22.display)] == [1, 2, 5, 6, 7, 9]


def test_a_census_names_what_hermes_leaves_out_and_where_it_paints_the_rest():
    rows = compaction(carried_originals_retired=False)
    marked = [r for r in rows if not display.in_display_set(r, R22.display) or r["id"] == 8]
    c = display.census(R22.display, rows, marked)
    # 3 and 4 are the first rows of messages shown by their copies 6 and 7.
    assert c.rep_of == {3: 6, 4: 7} and c.slot_of == {6: 3, 7: 4}
    assert c.labels[3] == display.Label("copy", 6) and c.labels[8].why == "model_only"
    assert c.skip == [6, 7] and c.out == [8]
    c20 = display.census(R20.display, rows, [])
    assert c20.skip == [3, 4] and c20.slot_of == {} and c20.labels[4] == display.Label("copy", 7)
    retired = compaction(carried_originals_retired=True)
    out = [r for r in retired if not display.in_display_set(r, R22.display)]
    c = display.census(R22.display, retired, out)
    assert c.labels[3] == display.Label("carried", 6) and c.labels[4] == display.Label("carried", 7)


def test_hidden_rows_stay_in_the_projection_and_are_counted():
    rows = [row(1), row(2, display_kind="hidden"), row(3, "assistant", "ok")]
    assert [r["id"] for r in display.project(rows, R22.display)] == [1, 2, 3]
    c = display.census(R22.display, [], [rows[1]])
    assert c.hidden == [2] and c.out == [] and display.label_of(rows[1], c, R22.display) is None


def test_0_22_keys_a_tool_calling_turn_by_its_call_ids():
    call = [{"id": "call_1|item_9", "function": {"name": "terminal", "arguments": '{"a": 1}'}}]
    pruned = [{"call_id": "call_1", "function": {"name": "terminal", "arguments": "{}"}}]
    a = row(1, "assistant", None, ts=5, compacted=1, active=0, tool_calls=json.dumps(call))
    b = row(2, "assistant", None, ts=5, tool_calls=json.dumps(pruned))
    assert display.dedupe_key(a, R22.display) == display.dedupe_key(b, R22.display)
    assert display.dedupe_key(a, R20.display) != display.dedupe_key(b, R20.display)
    # Digests compare as the text does.
    assert display.dedupe_key(display.compact(a), R22.display) == display.dedupe_key(
        display.compact(b), R22.display
    )
    assert display.dedupe_key(display.compact(a), R20.display) != display.dedupe_key(
        display.compact(b), R20.display
    )
    # One call without an id: keyed by its content, as any other row.
    half = [{"id": "call_1"}, {"function": {"name": "x"}}]
    c = row(3, "assistant", None, ts=5, tool_calls=json.dumps(half))
    assert (
        display.dedupe_key(c, R22.display)[1] is None
        and display.dedupe_key(c, R22.display)[4] == c["tool_calls"]
    )


def test_display_metadata_is_read_as_hermes_reads_it():
    assert display.is_model_only({"display_metadata": '{"model_only": true}'})
    assert display.is_model_only({"display_metadata": json.dumps('{"model_only": 1}')})  # twice
    assert not display.is_model_only({"display_metadata": "not json"})
    assert not display.is_model_only({"display_metadata": '["model_only"]'})
    assert display.decode_metadata({"a": 1}) == {"a": 1}


def test_a_compacted_row_points_to_the_summary_after_it():
    assert display.summary_after(3, [5, 12]) == 5 and display.summary_after(5, [5, 12]) == 12
    assert display.summary_after(13, [5, 12]) is None
    assert (
        display.why_words(display.Label("compacted", 5)) == "compacted: summarised into message 5"
    )


def test_timings_say_what_the_times_say_and_never_the_text():
    msgs = [
        {"id": 1, "role": "user", "timestamp": 100.0, "content": "secret"},
        {
            "id": 2,
            "role": "assistant",
            "timestamp": 101.5,
            "tool_calls": [{"id": "a"}, {"id": "b"}],
        },
        {"id": 3, "role": "tool", "timestamp": "bad"},
        {"id": 4, "role": "tool", "timestamp": 99.0},
        {"id": 5, "role": None, "timestamp": 5e12},
    ]
    t = records.timings(msgs)
    assert "secret" not in json.dumps(t)
    assert t["message_timestamps"] == {"available": 3, "missing": 2}
    assert t["role_counts"] == {"user": 1, "assistant": 1, "tool": 2, "unknown": 1}
    assert (t["tool_result_count"], t["tool_calls_emitted"]) == (2, 2)
    assert [g["gap_ms"] for g in t["intervals"]] == [1500, 0]  # a clock going back: 0
    assert t["largest_gap_ms"] == 1500 and t["wall_clock_ms"] == 0
    assert t["first_message_at"] == "1970-01-01T00:01:40+00:00"
    assert list(t) == [
        "source", "available", "complete", "unavailable_reason", "message_timestamps",
        "first_message_at", "last_message_at", "wall_clock_ms", "largest_gap_ms", "role_counts",
        "tool_result_count", "tool_calls_emitted", "intervals",
    ]  # fmt: skip
    empty = records.timings([])
    assert empty["available"] is False and empty["unavailable_reason"] == "no_timestamped_messages"
    assert empty["wall_clock_ms"] is None and empty["largest_gap_ms"] is None


def test_session_records_resolve_prompts_and_lift_0_22_markers():
    row_ = {
        "id": "s",
        "system_prompt": None,
        "model_config": json.dumps({"_reset_from": " old ", "_branched_from": ""}),
        "tool_names": "abc",
        "_system_prompt_resolved": "You are Hermes.",
        "_tool_names_resolved": '["terminal"]',
    }
    shaped = records.session_record(row_, R22)
    assert shaped["system_prompt"] == "You are Hermes." and shaped["tool_names"] == '["terminal"]'
    assert shaped["_reset_from"] == "old" and "_branched_from" not in shaped
    assert list(shaped)[-1] == "_reset_from"
    assert "_reset_from" not in records.session_record(row_, R20)


def test_message_records_follow_each_generation():
    stored = row(
        7, "user", "hi", display_metadata='{"k": 1}', _compressed_summary=1,
        display_identity=b"x", display_order=7, tool_calls="",
    )  # fmt: skip
    m22 = records.message_record(stored, R22)
    assert "display_identity" not in m22 and "display_order" not in m22
    assert list(m22)[-1] == "_compressed_summary" and m22["_compressed_summary"] is True
    assert m22["display_metadata"] == {"k": 1} and m22["tool_calls"] == ""
    m20 = records.message_record({k: v for k, v in stored.items() if k != "display_identity"}, R20)
    assert m20["display_metadata"] == {"k": 1} and m20["_compressed_summary"] == 1
    assert records.message_record(stored, R19)["display_metadata"] == '{"k": 1}'
    plain = records.message_record({**stored, "_compressed_summary": 0}, R22)
    assert "_compressed_summary" not in plain


def test_a_pinned_tool_list_is_read_by_name():
    assert records.tool_list('["terminal", "web_search"]') == ["terminal", "web_search"]
    assert records.tool_list(json.dumps([{"type": "function", "function": {"name": "x"}}])) == ["x"]
    assert records.tool_list("0f54" * 16) is None and records.tool_list(None) is None
