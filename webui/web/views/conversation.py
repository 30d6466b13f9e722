"""What the conversation viewer, its live tail and a chat's timeline share: rows made into
what the message template paints (only the rows Logbook paints: never a
``display_kind = 'hidden'`` one), the JSON twin's message records (each says whether the Hermes
that wrote the file shows it, and if not why), and moving to a message wherever it is."""

from __future__ import annotations

from typing import Any

from flask import current_app, redirect, url_for
from htmx_flask import request

from webui.db import BadRequest
from webui.db.sessions.messages import Mark, MessagePage
from webui.db.sessions.store import encode_cursor, parse_day
from webui.hermes import display
from webui.hermes.content import plain_text
from webui.present.rows import RenderBudget, message_json, message_view, number_and_date
from webui.web.logbooks import get_logbook


def _shown(mark: Mark | None) -> tuple[bool, str | None, str | None] | None:
    if mark is None or mark.label is None:
        return None
    return (False, mark.label.why, display.why_words(mark.label))


def prepare_messages(
    session_id: str,
    rows: list[dict],
    base_args: dict,
    first_n: int = 0,
    day_of: Any = None,
    marks: dict[int, Mark] | None = None,
) -> list[dict]:
    """Rows → what the message template shows, with tool calls and results linked both ways
    (a plain #m-<id> when the partner is on the page, else ?at=<id> to load its page), each
    numbered from ``first_n`` (0: unnumbered) and dated where the day changes. Rows Logbook
    never paints (``marks``: hidden ones) are left out."""
    lb = get_logbook()
    marks = marks or {}
    rows = [m for m in rows if marks.get(m["id"], Mark(True, not display.is_hidden(m))).painted]
    links = lb.messages.tool_links(session_id, rows)
    on_page = {m["id"] for m in rows}

    def href(message_id: int) -> str:
        if message_id in on_page:
            return f"#m-{message_id}"
        return url_for(
            "sessions.view_session",
            session_id=session_id,
            at=message_id,
            _anchor=f"m-{message_id}",
            **base_args,
        )

    forced = frozenset(
        int(x) for x in request.args.getlist("render") if x.isascii() and x.isdigit()
    )
    budget = RenderBudget(forced=forced, wait_s=current_app.config["LOGBOOK_RENDER_WAIT_S"])
    views = [message_view(m, links, href, budget, _shown(marks.get(m["id"]))) for m in rows]
    number_and_date(views, first_n, day_of)
    return views


def message_records(page: MessagePage) -> list[dict[str, Any]]:
    """The JSON twin's messages: each row as Hermes's get_messages returns it, then
    ``hermes_shows`` (the Hermes that wrote the file shows this row), ``painted`` (Logbook
    draws it: false for ``display_kind = 'hidden'`` rows) and, for a row Hermes does not
    show, ``not_shown`` (``why``: rewound, compacted, copy, carried or model_only; ``of``: the
    message it points to; ``words``)."""
    out = []
    for m in page.messages:
        mark = page.marks.get(m["id"]) or Mark(True, not display.is_hidden(m))
        record = message_json(m)
        record["hermes_shows"] = mark.hermes_shows
        record["painted"] = mark.painted
        if mark.label is not None:
            record["not_shown"] = {
                "why": mark.label.why,
                "of": mark.label.of,
                "words": display.why_words(mark.label),
            }
        out.append(record)
    return out


def jump(lb, session_id: str, include_rewound: bool):
    """Moving in a conversation from anywhere, loaded or not: the next or previous question
    from a message (``question=next|prev&from=<id>``), message number ``n``, or the first
    message at or after a time (``date``). Answered with a redirect to the page that holds
    it, opened at it (``?at=<id>#m-<id>``); past the last question, to the end."""
    args = request.args
    question = args.get("question") or None
    n, when = (args.get("n") or "").strip() or None, (args.get("date") or "").strip() or None
    if not (question or n or when):
        return None
    kept = {"rewound": "1"} if include_rewound else {}
    if question:
        if question not in ("next", "prev") or not (args.get("from") or "").isdigit():
            raise BadRequest("question is next or prev, with from=<a message id>.")
        found = lb.messages.locate(
            session_id,
            question=question,
            start=int(args["from"]),
            include_rewound=include_rewound,
        )
        if found is None:
            end = {"end": "1", "_anchor": "conversation-end"} if question == "next" else {}
            return redirect(url_for("sessions.view_session", session_id=session_id, **end, **kept))
    elif n:
        if not n.strip().isdigit() or int(n) < 1:
            raise BadRequest("n is a message number: 1 for the first.")
        found = lb.messages.locate(session_id, n=int(n), include_rewound=include_rewound)
        if found is None:
            return redirect(
                url_for(
                    "sessions.view_session",
                    session_id=session_id,
                    end="1",
                    _anchor="conversation-end",
                    **kept,
                )
            )
    else:
        stamp = parse_day(when.strip()[:40], tz=None)
        found = lb.messages.locate(session_id, at_time=stamp, include_rewound=include_rewound)
        if found is None:
            return redirect(
                url_for("sessions.view_session", session_id=session_id, end="1", **kept)
            )
    return redirect(
        url_for(
            "sessions.view_session", session_id=session_id, at=found, _anchor=f"m-{found}", **kept
        )
    )


def last_cursor(rows: list[dict]) -> str | None:
    return encode_cursor(rows[-1]["timestamp"], rows[-1]["id"]) if rows else None


def first_user_text(messages: list[dict]) -> str | None:
    for m in messages:
        if m.get("role") == "user" and m.get("content") and not display.is_hidden(m):
            return plain_text(m["content"], 80)
    return None


def left_out(counts: dict[str, Any]) -> list[tuple[int, str]]:
    """What Logbook can show beyond Hermes's view of the conversation, each (how many, in
    words): rows undone by /rewind, summarised away (0.19), earlier copies, carried originals
    and model-only rows."""
    parts = [
        (counts.get("rewound") or 0, "undone by /rewind"),
        (
            0 if counts.get("compacted_shown") else counts.get("compacted") or 0,
            "summarised away by /compact",
        ),
        (counts.get("copies") or 0, "earlier copies of a message shown"),
        (counts.get("carried") or 0, "carried into a newer compaction"),
        (counts.get("model_only") or 0, "for the model only"),
    ]
    return [(n, words) for n, words in parts if n]
