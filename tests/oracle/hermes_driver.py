"""Runs one Hermes generation's own code on a database and prints what it answers, as JSON.
Executed by the Python of that generation's oracle venv (tests/support/oracle.py), never imported
by Logbook:

    <venv>/bin/python tests/oracle/hermes_driver.py '<request as JSON>'

A request is {"db": path, "op": ..., ...}; see OPS below. ``"now"`` (epoch seconds) pins
Hermes's clock for the request: relative filters (``--older-than``, analytics windows) then give
the same answer on any day, which is what the recorded truth needs.

The same file serves 0.19.0, 0.20.1 and 0.22.2: where their APIs differ the op says which one
it calls (``_GEN``, from the schema version the installed ``hermes_state`` writes)."""

import contextlib
import inspect
import io
import json
import sys
import time
from pathlib import Path


def _pin_clock(now):
    if now is not None:
        time.time = lambda: float(now)


def _schema_version() -> int:
    try:
        from hermes_state_common import SCHEMA_VERSION
    except ImportError:
        from hermes_state import SCHEMA_VERSION
    return SCHEMA_VERSION


def _open(req):
    from hermes_state import SessionDB

    return SessionDB(Path(req["db"]))


# -- listing ----------------------------------------------------------------------------------


def op_list(db, req):
    """list_sessions_rich with the given arguments (0.19's fields; kept as recorded)."""
    rows = db.list_sessions_rich(limit=1_000_000, compact_rows=True, **req.get("kwargs", {}))
    return [
        {
            "id": r["id"],
            "started_at": r["started_at"],
            "title": r.get("title"),
            "preview": r.get("preview"),
            "message_count": r.get("message_count"),
            "lineage_root_id": r.get("_lineage_root_id"),
        }
        for r in rows
    ]


_RICH_KEYS = (
    "source",
    "started_at",
    "last_active",
    "title",
    "title_source",
    "preview",
    "message_count",
    "end_reason",
    "pinned",
    "hidden",
    "archived",
    "auto_archived",
    "continuation_kind",
)


def op_rich_list(db, req):
    """list_sessions_rich, every field a list shows (those this generation has)."""
    kwargs = req.get("kwargs", {})
    accepted = inspect.signature(db.list_sessions_rich).parameters
    if any(k not in accepted for k in kwargs):
        return None  # a variant this generation does not have
    rows = db.list_sessions_rich(limit=req.get("limit", 1_000_000), **kwargs)
    return [
        {
            "id": r["id"],
            "lineage_root_id": r.get("_lineage_root_id"),
            **{k: r[k] for k in _RICH_KEYS if k in r},
        }
        for r in rows
    ]


# -- conversations ------------------------------------------------------------------------------

_MESSAGE_KEYS = (
    "id",
    "role",
    "content",
    "tool_name",
    "tool_call_id",
    "tool_calls",
    "timestamp",
    "active",
    "compacted",
    "display_kind",
    "display_metadata",
    "_compressed_summary",
)


def _all_session_ids(db):
    return [r[0] for r in db._conn.execute("SELECT id FROM sessions ORDER BY id").fetchall()]


def op_display(db, req):
    """Each session's rows as this generation's UIs show them: 0.20 and 0.22 read
    get_messages(include_compacted=True) (live rows plus compaction-archived ones, model-only rows
    left out, one row per logical message); 0.19 has no such projection and shows live rows."""
    ids = req.get("sessions") or _all_session_ids(db)
    out = {}
    for sid in ids:
        if _schema_version() >= 23:
            rows = db.get_messages(sid, include_compacted=True)
        else:
            rows = db.get_messages(sid)
        out[sid] = [{k: m[k] for k in _MESSAGE_KEYS if k in m} for m in rows]
    return out


def op_system_prompts(db, req):
    """get_session()'s system_prompt for each session (0.20 and 0.22 resolve system_prompts)."""
    ids = req.get("sessions") or _all_session_ids(db)
    return {sid: (db.get_session(sid) or {}).get("system_prompt") for sid in ids}


# -- search -------------------------------------------------------------------------------------


def op_search(db, req):
    hits = db.search_messages(
        req["query"], limit=req.get("limit", 100_000), **req.get("kwargs", {})
    )
    return [{"id": h.get("id"), "session_id": h.get("session_id")} for h in hits]


def op_search_full(db, req):
    """Hits with their snippet and role, and the route 0.22 says it took (0.22 only)."""
    hits = db.search_messages(
        req["query"], limit=req.get("limit", 100_000), **req.get("kwargs", {})
    )
    route = None
    if hasattr(db, "_describe_search_path"):
        route = db._describe_search_path(req["query"])
    return {
        "route": route,
        "hits": [
            {
                "id": h.get("id"),
                "session_id": h.get("session_id"),
                "role": h.get("role"),
                "snippet": h.get("snippet"),
            }
            for h in hits
        ],
    }


def op_sanitize(db, req):
    return [db._sanitize_fts5_query(q) for q in req["queries"]]


# -- usage --------------------------------------------------------------------------------------


def op_usage(db, req):
    """The dashboard's /api/analytics/usage, which reads HERMES_HOME/state.db itself."""
    db.close()
    try:
        from hermes_cli.web_routers.analytics import _get_usage_analytics  # 0.22
    except ImportError:
        from hermes_cli.web_server import _get_usage_analytics  # 0.19, 0.20

    return _get_usage_analytics(req["days"], None)


def op_insights(db, req):
    """InsightsEngine's report (`hermes insights`): per-model usage from session_model_usage
    (auxiliary tasks included) plus each session's residual, and the overview totals."""
    from agent.insights import InsightsEngine

    report = InsightsEngine(db).generate(days=req["days"], source=req.get("source"))
    return {
        "overview": report.get("overview"),
        "models": report.get("models"),
        "platforms": report.get("platforms"),
        "tools": report.get("tools"),
    }


# -- the command line, in-process (for a pinned clock) -----------------------------------------


def op_cli(db, req):
    """``hermes <argv>`` run in this process, its standard output (and exit code)."""
    db.close()
    from hermes_cli.main import main

    sys.argv = ["hermes", *req["argv"]]
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out):
        try:
            result = main()
            code = result if isinstance(result, int) else 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return {"stdout": out.getvalue(), "code": code}


# -- older ops, kept for the 0.19 tier ----------------------------------------------------------


def op_profiles(db, req):
    db.close()
    from hermes_cli.profiles import list_profiles

    return [p.name for p in list_profiles()]


def op_origin_keys(db, req):
    """The gateway's own session key and origin JSON for each source (as to_dict gives it)."""
    db.close()
    from gateway.session import SessionSource, build_session_key

    out = []
    for d in req["sources"]:
        src = SessionSource.from_dict(d)
        out.append([build_session_key(src), src.to_dict()])
    return out


def op_verify_export(db, req):
    """Hermes's own check of a Markdown/QMD export file against the session it names."""
    from hermes_cli.session_export_md import verify_export_file

    # 0.22 writes transcripts from the display projection (include_compacted); older
    # generations take no such argument.
    shown = {"include_compacted": True} if req.get("compacted") else {}
    if req.get("logical"):
        session = db.export_session_lineage(req["session_id"], **shown)
    else:
        session = db.export_session(req["session_id"], **shown)
    return list(verify_export_file(req["path"], session))


def op_redact(db, req):
    """Hermes's export redaction (force mode) of each text."""
    db.close()
    from agent.redact import redact_sensitive_text

    return [redact_sensitive_text(text, force=True) for text in req["texts"]]


def op_batch(db, req):
    """Several requests in one process (Hermes's import costs a second or more each time): each
    opens its own SessionDB, as separate calls would."""
    db.close()
    out = []
    for sub in req["requests"]:
        one = _open({"db": req["db"], **sub})
        try:
            out.append(OPS[sub["op"]](one, sub))
        finally:
            with contextlib.suppress(Exception):
                one.close()
    return out


def op_append(db, req):
    """Hermes continuing a session: one message appended to it (fails when the session is no
    longer in the file), and whether Hermes finds the session at all."""
    found = db.get_session(req["session_id"])
    try:
        mid = db.append_message(req["session_id"], "user", req.get("content", "still there?"))
        return {"ok": True, "id": mid, "session": found and found["id"]}
    except Exception as exc:  # noqa: BLE001 - what Hermes says is the answer
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "session": None}


# -- search in the states Hermes's markers describe (issue 44: search on 0.20/0.22 files) -----


def op_search_state(db, req):
    """Put the file in a state with Hermes's own code, then ask each search (``searches``: a
    list of [query, search_messages keyword arguments]) and give the hit ids. ``state``:
    "fts_stale" (the detach Hermes does on a damaged index: ``_enter_fts_fail_open``),
    "rebuild" (optimize-storage's first step on a legacy file, ``_demote_legacy_fts_to_trash``,
    then ``steps`` backfill chunks of ``chunk`` rows: a rebuild under way), or none (a plain
    open: on the CJK file without the tokenizer that alone marks the CJK index stale)."""
    import sqlite3

    state = req.get("state")
    if state == "fts_stale":
        damaged = sqlite3.DatabaseError('fts5: corrupt structure record for table "messages_fts"')
        assert db._enter_fts_fail_open(damaged)
    elif state == "rebuild":
        db._demote_legacy_fts_to_trash()
        db._FTS_REBUILD_CHUNK_ROWS = req["chunk"]
        for _ in range(req["steps"]):
            db.fts_rebuild_step()
    return [
        [h["id"] for h in db.search_messages(q, limit=100_000, **kwargs)]
        for q, kwargs in req["searches"]
    ]


OPS = {
    "search_state": op_search_state,
    "batch": op_batch,
    "append": op_append,
    "verify_export": op_verify_export,
    "redact": op_redact,
    "list": op_list,
    "rich_list": op_rich_list,
    "display": op_display,
    "system_prompts": op_system_prompts,
    "search": op_search,
    "search_full": op_search_full,
    "sanitize": op_sanitize,
    "usage": op_usage,
    "insights": op_insights,
    "cli": op_cli,
    "profiles": op_profiles,
    "origin_keys": op_origin_keys,
}

if __name__ == "__main__":
    request = json.loads(sys.argv[1])
    _pin_clock(request.get("now"))
    db = _open(request)
    try:
        answer = OPS[request["op"]](db, request)
    finally:
        with contextlib.suppress(Exception):
            db.close()
    print(json.dumps(answer, default=str, ensure_ascii=False))
