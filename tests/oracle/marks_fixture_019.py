"""Writes a small new schema-22 ``state.db`` through Hermes 0.19.0's own ``SessionDB``, holding the
cases issue 44 point 6 measures on 0.19 files (run with the Python of the 0.19.0 oracle venv;
tests/oracle/make_fixtures.py drives it):

    HERMES_HOME=/tmp/h <venv>/bin/python tests/oracle/marks_fixture_019.py OUT.db

* titles around ``Home``: a title filter of ``" Home "`` (spaces kept, as Hermes keeps them)
  matches only titles with a space on both sides; trimmed, it matches all of them;
* untitled sessions beside titled ones (an empty ``title=`` filter is no filter in Hermes);
* a session compacted in place twice (``archive_and_compact``): 0.19 shows and exports only its
  live rows, ``hermes sessions stats`` counts every row;
* a rewound session (``rewind_to_message``) and sessions of several sources.

Ids start with ``m_``. A simulated clock spreads the sessions over September-October 2026."""

import calendar
import json
import sys
import time
from pathlib import Path

_clock = [float(calendar.timegm((2026, 9, 1, 8, 0, 0)))]
time.time = lambda: _clock[0]

from hermes_state import SessionDB  # noqa: E402

db = SessionDB(Path(sys.argv[1]))


def tick(seconds=11.0):
    _clock[0] += seconds


def session(sid, source="cli", title=None, model="anthropic/claude-sonnet-4"):
    db.create_session(sid, source, model=model, system_prompt="You are Hermes.")
    tick(3)
    if title:
        db.set_session_title(sid, title)
    return sid


def talk(sid, *turns):
    ids = []
    for i, text in enumerate(turns):
        tick()
        ids.append(db.append_message(sid, "user" if i % 2 == 0 else "assistant", text))
    db.update_token_counts(
        sid,
        input_tokens=900,
        output_tokens=200,
        estimated_cost_usd=0.004,
        cost_status="estimated",
        api_call_count=max(1, len(turns) // 2),
    )
    return ids


titles = [
    ("m_home_lab", "Home lab notes"),
    ("m_my_home", "My Home server"),
    ("m_homework", "Homework help"),
    ("m_home_budget", "Family Home budget"),
    ("m_smart_home", "smart home lights"),
    ("m_at_home", "Work from home setup"),
    ("m_untitled_1", None),
    ("m_untitled_2", None),
]
for n, (sid, title) in enumerate(titles):
    session(sid, "cli" if n % 2 == 0 else "telegram", title)
    talk(sid, f"Question {n} about {title or 'something'}", f"Answer {n}.")
    db.end_session(sid, "cli_close")
    _clock[0] += 86400

# A session compacted in place twice, with tool calls, then continued.
sid = session("m_compacted", "cli", "Compacted in place on 0.19")
for n in range(6):
    talk(sid, f"Step {n}: change the nginx upstream block", f"Done step {n}.")
    tick()
    call = [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {
                "name": "terminal",
                "arguments": json.dumps({"command": f"nginx -t #{n}"}),
            },
        }
    ]
    db.append_message(sid, "assistant", "", tool_calls=call)
    tick()
    db.append_message(sid, "tool", "syntax is ok", tool_name="terminal", tool_call_id=f"call_{n}")
    if n in (2, 4):
        live = db.get_messages(sid)
        summary = {
            "role": "user",
            "content": f"[CONTEXT SUMMARY]: steps 0-{n} of the nginx change are done.",
        }
        tail = [
            {k: m[k] for k in ("role", "content", "timestamp") if m.get(k) is not None}
            for m in live[-2:]
        ]
        tick(30)
        db.archive_and_compact(sid, [summary, *tail])
talk(sid, "Reload nginx", "Reloaded; all upstreams healthy.")
db.end_session(sid, "cli_close")

# A rewound session.
_clock[0] += 86400
sid = session("m_rewound", "discord", None, model="openai/gpt-5")
ids = talk(
    sid,
    "Book the flight to Lisbon",
    "Booked TAP 1234.",
    "Cancel that, take the train",
    "Cancelled.",
)
db.rewind_to_message(sid, ids[2])
talk(
    sid,
    "What trains go to Lisbon from Madrid?",
    "The Lusitania night train was discontinued; fly instead.",
)
db.end_session(sid, "idle")

db.close()
print("wrote", sys.argv[1])
