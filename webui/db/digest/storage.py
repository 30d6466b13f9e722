"""Where a file's bytes go: by table and index (webui.db.digest.objects), and the messages'
share of them by source, by month, by session and for any selection of sessions.

Measured: each session's messages' lengths in bytes (message text, tool calls' arguments,
tool output, reasoning, other columns) — exact, as SQLite's ``length(CAST(x AS BLOB))`` reads
them. Estimated, and said so: their **share of the file**, which spreads the measured size of
the messages table by those lengths, of its indexes by message count, of the search indexes by
the text each message gave them, and of the sessions table by session count. The shares of
every session add up to those objects' bytes.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from webui.db import sql as sqlh
from webui.db.digest.tables import SIZES

KINDS = ("text_b", "call_b", "tool_b", "reasoning_b", "other_b")
KIND_WORDS = {
    "text_b": "message text",
    "call_b": "tool calls",
    "tool_b": "tool output",
    "reasoning_b": "reasoning",
    "other_b": "other columns",
}


def _objects(conn: sqlite3.Connection, catalogue: list[dict], pages: dict, totals: dict) -> list:
    """Every b-tree with its bytes: measured by dbstat, else an estimate (the used pages the
    measured ones leave, shared out by what the digest read: the messages table by their
    lengths, the search index by the text it was given, anything else a page)."""
    measured = {
        r[0]: {
            "pages": r[1],
            "bytes": r[2],
            "payload": r[3],
            "unused": r[4],
            "method": r[5],
            "measured_at": r[6],
            "seconds": r[7],
        }  # fmt: skip
        for r in conn.execute(
            "SELECT name, pages, bytes, payload, unused, method, measured_at, seconds FROM main.objects"
        )
    }
    used = (pages["page_count"] - pages["freelist_count"]) * pages["page_size"]
    out, weights = [], {}
    for o in catalogue:
        m = measured.get(o["name"])
        row = {**o, "bytes": None, "pages": None, "method": "estimate", "measured_at": None}
        if m is not None and m["method"] == "dbstat":
            row.update(m)
            row["bytes"] = m["bytes"] or 0
            row["pages"] = m["pages"] or 0
        else:
            if m is not None:
                row["measured_at"], row["seconds"] = m["measured_at"], m["seconds"]
            row["timed_out"] = m is not None and m["method"] == "timeout"
            if o["name"] == "messages":
                weights[o["name"]] = totals["all_b"] + 30 * totals["n"]
            elif o["type"] == "fts" and o["name"].endswith(("_data", "_content")):
                weights[o["name"]] = totals["fts_b"]
            elif o["owner"] == "messages" and o["type"] == "index":
                weights[o["name"]] = 24 * totals["n"]
            else:
                weights[o["name"]] = pages["page_size"]
        out.append(row)
    left = max(0, used - sum(r["bytes"] for r in out if r["method"] == "dbstat"))
    weight = sum(weights.values()) or 1
    for r in out:
        if r["method"] == "estimate":
            r["bytes"] = int(left * weights[r["name"]] / weight)
            r["pages"] = r["bytes"] // pages["page_size"]
    return sorted(out, key=lambda r: -r["bytes"])


def _groups(objects: list[dict]) -> list[dict]:
    """Objects added up by what they belong to (a table with its indexes, an FTS index with
    its shadow tables)."""
    groups: dict[str, dict] = {}
    for o in objects:
        g = groups.setdefault(
            o["owner"],
            {"owner": o["owner"], "bytes": 0, "objects": 0, "estimated": False, "kind": "table"},
        )
        g["bytes"] += o["bytes"]
        g["objects"] += 1
        g["estimated"] |= o["method"] != "dbstat"
        if o["type"] == "fts":
            g["kind"] = "search index"
    return sorted(groups.values(), key=lambda g: -g["bytes"])


def totals(conn: sqlite3.Connection) -> dict[str, int]:
    """Every session's sizes added up (from the sums by source and month: a few hundred rows,
    however many sessions)."""
    row = conn.execute(
        f"SELECT TOTAL(sessions), {', '.join(f'TOTAL({k})' for k in SIZES)} FROM main.bytes_month"
    ).fetchone()
    out = {"sessions": int(row[0]), **{k: int(v) for k, v in zip(SIZES, row[1:], strict=True)}}
    out["all_b"] = sum(out[k] for k in KINDS)
    return out


class Shares:
    """How the messages' objects' bytes are spread over groups of sessions."""

    def __init__(self, objects: list[dict], totals: dict[str, int]):
        def of(test) -> int:
            return sum(o["bytes"] for o in objects if test(o))

        self.table = of(lambda o: o["name"] == "messages")
        self.indexes = of(lambda o: o["owner"] == "messages" and o["name"] != "messages")
        self.search = of(lambda o: o["type"] == "fts")
        self.sessions = of(lambda o: o["owner"] == "sessions")
        self.t = totals

    def of(self, g: dict[str, Any]) -> dict[str, int]:
        """A group's share of the file (``all_b``, ``n``, ``fts_b``, ``sessions``), by part."""
        t = self.t

        def part(value: Any, total: int, whole: int) -> int:
            return int(whole * (value or 0) / total) if total else 0

        out = {
            "table": part(g.get("all_b"), t["all_b"], self.table),
            "indexes": part(g.get("n"), t["n"], self.indexes),
            "search": part(g.get("fts_b"), t["fts_b"], self.search),
            "session_rows": part(g.get("sessions"), t["sessions"], self.sessions),
        }
        out["total"] = sum(out.values())
        return out


def report(conn: sqlite3.Connection, catalogue: list[dict], pages: dict, top: int = 50) -> dict:
    """The storage page: pages, objects, groups and the messages' bytes by source, month and
    session (top ``top``), each with its estimated share of the file."""
    t = totals(conn)
    objects = _objects(conn, catalogue, pages, t)
    shares = Shares(objects, t)

    def with_share(row: dict) -> dict:
        row["all_b"] = sum(int(row.get(k) or 0) for k in KINDS)
        row["share"] = shares.of(row)
        return row

    cols = ", ".join(f"SUM({k}) AS {k}" for k in ("sessions", *SIZES))
    names = ("key", "sessions", *SIZES)
    by_source = [
        with_share(dict(zip(names, r, strict=True)))
        for r in conn.execute(
            f"SELECT source, {cols} FROM main.bytes_month GROUP BY 1 ORDER BY SUM(text_b + call_b "
            "+ tool_b + reasoning_b + other_b) DESC, 1"
        )
    ]
    by_month = [
        with_share(dict(zip(names, r, strict=True)))
        for r in conn.execute(f"SELECT month, {cols} FROM main.bytes_month GROUP BY 1 ORDER BY 1")
    ]
    sess_cols = ("session_id", "source", "started_at", "model", *SIZES, "all_b")
    title = sqlh.attached_col(conn, "st", "title", "t")
    sessions = []
    for r in conn.execute(
        f"SELECT {', '.join('s.' + c for c in sess_cols)}, {title} FROM main.sess s "
        "LEFT JOIN st.sessions t ON t.id = s.session_id ORDER BY s.all_b DESC, s.session_id "
        "LIMIT ?",
        (top,),
    ):
        row = dict(zip((*sess_cols, "title"), r, strict=True))
        row["sessions"] = 1
        sessions.append(with_share(row))
    used = (pages["page_count"] - pages["freelist_count"]) * pages["page_size"]
    measured = [o for o in objects if o["method"] == "dbstat"]
    return {
        "file": {
            **pages,
            "used_bytes": used,
            "free_bytes": pages["freelist_count"] * pages["page_size"],
        },
        "objects": objects,
        "groups": _groups(objects),
        "measured": {
            "objects": len(measured),
            "of": len(objects),
            "oldest": min((o["measured_at"] for o in measured), default=None),
            "newest": max((o["measured_at"] for o in measured), default=None),
            "seconds": round(sum(o.get("seconds") or 0 for o in measured), 2),
        },
        "messages": {**t, "share": shares.of(t)},
        "by_source": by_source,
        "by_month": by_month,
        "sessions": sessions,
    }


def estimate(conn: sqlite3.Connection, catalogue: list[dict], pages: dict, ids: list[str]) -> dict:
    """What removing these sessions would free, estimated: their messages' bytes and their
    share of the file."""
    t = totals(conn)
    shares = Shares(_objects(conn, catalogue, pages, t), t)
    # the ids as one JSON array: one statement, no temporary table to fill row by row
    row = conn.execute(
        f"SELECT COUNT(*), {', '.join(f'TOTAL(s.{k})' for k in (*SIZES, 'all_b'))} FROM main.sess s "
        "WHERE s.session_id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(set(ids))),),
    ).fetchone()
    g: dict[str, Any] = {k: int(v) for k, v in zip(("sessions", *SIZES, "all_b"), row, strict=True)}
    g["share"] = shares.of(g)
    g["asked"] = len(set(ids))
    return g
