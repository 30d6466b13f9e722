"""Runs Hermes 0.19.0's own SessionDB on a database and prints what it answers, as JSON.
Executed by the Python of the oracle venv (tests/support/oracle.py), never imported by Logbook:

    <venv>/bin/python tests/oracle/hermes_driver.py '<request as JSON>'

A request is {"db": path, "op": ..., ...}; see OPS below."""

import json
import sys
from pathlib import Path

from hermes_state import SessionDB


def op_list(db, req):
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


def op_search(db, req):
    hits = db.search_messages(
        req["query"], limit=req.get("limit", 100_000), **req.get("kwargs", {})
    )
    return [{"id": h.get("id"), "session_id": h.get("session_id")} for h in hits]


def op_usage(db, req):
    # The dashboard's /api/analytics/usage, which reads HERMES_HOME/state.db itself.
    db.close()
    from hermes_cli.web_server import _get_usage_analytics

    return _get_usage_analytics(req["days"], None)


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

    if req.get("logical"):
        session = db.export_session_lineage(req["session_id"])
    else:
        session = db.export_session(req["session_id"])
    return list(verify_export_file(req["path"], session))


def op_redact(db, req):
    """Hermes's export redaction (force mode) of each text."""
    db.close()
    from agent.redact import redact_sensitive_text

    return [redact_sensitive_text(text, force=True) for text in req["texts"]]


def op_append(db, req):
    """Hermes continuing a session: one message appended to it (fails when the session is no
    longer in the file), and whether Hermes finds the session at all."""
    found = db.get_session(req["session_id"])
    try:
        mid = db.append_message(req["session_id"], "user", req.get("content", "still there?"))
        return {"ok": True, "id": mid, "session": found and found["id"]}
    except Exception as exc:  # noqa: BLE001 - what Hermes says is the answer
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "session": None}


OPS = {
    "append": op_append,
    "verify_export": op_verify_export,
    "redact": op_redact,
    "list": op_list,
    "search": op_search,
    "usage": op_usage,
    "profiles": op_profiles,
    "origin_keys": op_origin_keys,
}

if __name__ == "__main__":
    request = json.loads(sys.argv[1])
    db = SessionDB(Path(request["db"]))
    try:
        print(json.dumps(OPS[request["op"]](db, request), default=str))
    finally:
        db.close()
