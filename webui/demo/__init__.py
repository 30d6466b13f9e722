"""Deterministic synthetic Hermes ``state.db`` (schema v11) for the demo, tests and benchmarks.

The database is written in exactly the layout of Hermes Agent's ``hermes_state.py`` at schema
version 11 (``webui.demo.schema``). The content copies the *shape* of real Hermes data: 14
sources, session id formats per source, several models (and NULL), billing/cost columns,
compression lineages titled "X", "X #2", ..., /branch children that copy their parent's history,
subagent children, active sessions, sessions without messages, OpenAI-style tool calls followed
by their tool results, reasoning fields per model family, Markdown/code, CJK, emoji, an XSS
corpus and multimodal ``"\\x00json:"`` messages.

Everything is derived from ``random.Random(seed)`` and the ``now`` anchor, so the same arguments
always give byte-identical rows. The rooms: ``corpus`` (fixed vocabulary), ``spec`` (session
shapes), ``planner`` (the whole database's plan), ``text`` (one session's words), ``stream``
(rows in time order); ``webui.demo.schema`` and ``webui.demo.writer`` hold the SQL.

Usage::

    from webui.demo import generate
    info = generate("/tmp/demo.db", sessions=300)

    python -m webui.demo OUT.db --sessions 20000 --messages-per-session 50
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import time
from collections.abc import Callable

from webui.demo.corpus import XSS_CORPUS  # noqa: F401 - re-exported
from webui.demo.origins import plan_origins
from webui.demo.planner import _Planner
from webui.demo.schema import (
    SCHEMA_VERSION,  # noqa: F401 - re-exported
    create_schema,  # noqa: F401 - re-exported
)
from webui.demo.spec import DEFAULT_NOW
from webui.demo.stream import _batches
from webui.demo.writer import write_database


@dataclasses.dataclass
class GeneratedInfo:
    path: str
    sessions: int
    messages: int
    long_session_id: str | None
    seconds: float



def generate(path: str | os.PathLike, *, sessions: int = 300, seed: int = 7, now: float | None = None,
             long_session_messages: int = 0, messages_per_session: float = 14.0,
             progress: Callable[[int, int], None] | None = None, text_scale: float = 1.0,
             schema: int = 11) -> GeneratedInfo:
    """Build a realistic Hermes v11 ``state.db`` at ``path`` (which must not exist yet).

    ``sessions`` session rows are generated (plus one extra when ``long_session_messages`` > 0),
    with history spread over the 365 days before ``now`` (default :data:`DEFAULT_NOW`).  The result
    is identical for identical arguments.  ``progress(done, total)`` is called with message counts.

    ``text_scale`` scales message lengths: paragraph, reasoning and tool-output line counts, and
    both the share and the size of long (5-20 KB) tool outputs.  1.0 (the default) gives exactly
    the historical output; about 0.3 gives ~1.5 KB per message on disk (FTS tables included),
    like real Hermes databases (a 1,000,000-message database of ~1.5 GB), against ~5.5 KB at 1.0.
    The number of messages, sessions, timestamps and lineages does not depend on it.

    ``schema`` 22 writes Hermes 0.19.0's schema and, in its columns, where each conversation
    came from (``webui.demo.origins``: chats across resets, people, workspaces); 31 the same
    data in Hermes 0.22.2's fresh schema (external-content FTS over views, content-addressed
    system prompts, a minted ``message_uid`` per row); both with a usage row per session
    that made API calls (``session_model_usage``, as Hermes's token accounting writes one).
    """
    t0 = time.perf_counter()
    path = os.fspath(path)
    if os.path.lexists(path):
        raise ValueError(f"refusing to overwrite existing file: {path}")
    try:
        if os.path.getsize(path + "-wal") > 0:  # a stale WAL would be replayed into the new file
            raise ValueError(f"refusing to write beside a leftover write-ahead log: {path}-wal")
    except OSError:
        pass
    if isinstance(sessions, bool) or int(sessions) != sessions or sessions < 0:
        raise ValueError("sessions must be a non-negative integer")
    if isinstance(long_session_messages, bool) or int(long_session_messages) != long_session_messages \
            or long_session_messages < 0:
        raise ValueError("long_session_messages must be a non-negative integer")
    if not (messages_per_session > 0) or math.isinf(messages_per_session):
        raise ValueError("messages_per_session must be a positive number")
    if isinstance(text_scale, bool) or not isinstance(text_scale, (int, float)) or not (text_scale > 0) \
            or math.isinf(text_scale):
        raise ValueError("text_scale must be a positive number")
    anchor = DEFAULT_NOW if now is None else float(now)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ValueError(f"directory does not exist: {directory}")

    rng = random.Random(seed)
    planner = _Planner(rng, int(sessions), anchor, float(messages_per_session), int(long_session_messages),
                       float(text_scale))
    specs, long_spec = planner.plan()
    total_msgs = sum(s.n_total for s in specs)

    if schema not in (11, 22, 31):
        raise ValueError("schema must be 11, 22 or 31")
    done = write_database(path, _batches(specs), total_msgs, progress, schema=schema,
                          origins=plan_origins if schema >= 22 else None)
    return GeneratedInfo(path=path, sessions=len(specs), messages=done,
                         long_session_id=long_spec.id if long_spec is not None else None,
                         seconds=round(time.perf_counter() - t0, 3))


__all__ = ["SCHEMA_VERSION", "DEFAULT_NOW", "XSS_CORPUS", "GeneratedInfo", "create_schema",
           "generate"]
