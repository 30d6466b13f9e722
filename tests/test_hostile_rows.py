"""Rows Hermes would never write, planted in a copy of its database: every column of both
tables holding each kind of value SQLite allows there (huge and negative integers, huge and
tiny floats, dates that are no dates, text where numbers belong, bytes, nothing), each on a
session of its own. Every page, JSON twin and export that shows such a row answers without a
500 (issue 37, point 8): what cannot be shown is shown as what it is, or named."""

from __future__ import annotations

import re
import sqlite3
from urllib.parse import quote

import pytest

from support import copy_fixture, make_app, sql

pytestmark = pytest.mark.slow

VALUES = {
    "int64": 9223372036854775807,
    "negative": -9223372036854775807,
    "huge-float": 1e308,
    "minus-1e20": -1e20,
    "bad-date": "2026-13-45",
    "text": "not a number \u202e<b>x</b>",
    "blob": b"\x00\xff\x10 docker",
    "empty": "",
    "null": None,
}
# Columns whose odd values cannot be planted (keys, and what ties a row to its session).
FIXED = {("sessions", "id"), ("messages", "id"), ("messages", "session_id")}


def _columns(conn, table: str) -> list[tuple[str, bool]]:
    return [(r[1], bool(r[3])) for r in conn.execute(f"PRAGMA table_info({table})")]


@pytest.fixture(
    scope="module",
    params=[("hermes-v22-origins.db", k) for k in VALUES] + [("hermes-v11.db", k) for k in VALUES],
    ids=lambda p: f"{p[0].split('.')[0]}-{p[1]}",
)
def planted(request, tmp_path_factory):
    fixture, kind = request.param
    value = VALUES[kind]
    d = tmp_path_factory.mktemp(f"hostile-{kind}")
    db = copy_fixture(fixture, d)
    conn = sqlite3.connect(db)
    ids = []
    with conn:
        base = conn.execute(
            "SELECT id FROM sessions WHERE message_count > 3 AND ended_at IS NOT NULL "
            "ORDER BY started_at DESC LIMIT 1"
        ).fetchone()[0]
        scols = _columns(conn, "sessions")
        mcols = _columns(conn, "messages")
        names = ", ".join(c for c, _ in scols if c != "id")
        # A title is unique on schema 11 (an index): the copies start untitled.
        copied = ", ".join("NULL" if c == "title" else c for c, _ in scols if c != "id")
        mnames = ", ".join(c for c, _ in mcols if c not in ("id", "session_id"))
        for table, cols in (("sessions", scols), ("messages", mcols)):
            for col, notnull in cols:
                if (table, col) in FIXED or (value is None and notnull):
                    continue
                sid = f"hostile-{table}-{col}"
                conn.execute(
                    f"INSERT INTO sessions (id, {names}) SELECT ?, {copied} FROM sessions WHERE id = ?",
                    (sid, base),
                )
                conn.execute(
                    f"INSERT INTO messages (session_id, {mnames}) SELECT ?, {mnames} FROM "
                    "messages WHERE session_id = ? ORDER BY id",
                    (sid, base),
                )
                if table == "sessions":
                    conn.execute(f"UPDATE sessions SET {col} = ? WHERE id = ?", (value, sid))
                else:
                    conn.execute(
                        f"UPDATE messages SET {col} = ? WHERE id = (SELECT MAX(id) FROM messages "
                        "WHERE session_id = ?)",
                        (value, sid),
                    )
                ids.append(sid)
    conn.close()
    return kind, db, ids, make_app(db, d / "inst").test_client()


PER_SESSION = [
    "/sessions/{sid}",
    "/sessions/{sid}?format=json",
    "/sessions/{sid}/lineage",
    "/sessions/{sid}/lineage?format=json",
    "/export.jsonl?session={sid}",
    "/export.md?session={sid}",
    "/export.qmd?session={sid}",
    "/export.html?session={sid}",
    "/export.csv?session={sid}",
    "/export.md?style=transcript&session={sid}",
    "/export.jsonl?only=user-prompts&session={sid}",
    "/search?q=docker&session={sid}",
    "/sessions/{sid}/delete",
    "/sessions/{sid}/tail",
    "/sessions/{sid}/title",
    "/sessions/{sid}/title/edit",
    "/sessions/{sid}?render=1",
    "/coldstore?session={sid}",
    "/archive?session={sid}",
    "/sessions/{sid}/files",
    "/sessions/{sid}/files?format=json",
    "/files?session={sid}&format=json",
]
WHOLE = [
    "/sessions",
    "/sessions?format=json",
    "/sessions?rows=all&sort=-tokens",
    "/sessions?rows=all&sort=-cost&format=json",
    "/sessions?rows=all&sort=-last_active",
    "/sessions?rows=all&sort=messages",
    "/sessions?q=hostile",
    "/search?q=docker",
    "/search?q=docker&format=json",
    "/search?q=docker&group=session",
    "/stats",
    "/stats?period=all",
    "/stats?period=all&format=json",
    "/stats?period=365",
    "/stats.csv?period=all",
    "/chats",
    "/chats?format=json",
    "/people",
    "/people?format=json",
    "/workspaces",
    "/workspaces?format=json",
    "/prune?older_than=0",
    "/prune?older_than=0&format=json",
    "/archive?title=a",
    "/export.html?q=hostile",
    "/export.jsonl?q=hostile",
    "/export.md?q=hostile",
    "/export/summary?q=hostile",
    "/live",
    "/",
    "/changes",
    "/stores",
    "/stores?format=json",
    "/coldstore?older_than=0",
    "/coldstore?older_than=0&format=json",
    "/export",
    "/export?q=hostile",
    "/chats/telegram",
    "/t/hostile",
    "/storage",
    "/storage?format=json",
    "/files",
    "/files?format=json",
    "/files?workspace=(none)",
]


def _broken(client, url: str) -> str | None:
    r = client.get(url)
    body = r.get_data()  # streamed bodies run to their end here
    # A stack trace of Logbook's own (a message may well quote someone else's traceback).
    leaked = re.search(rb'File (?:"|&#34;|&quot;)[^"&]*/webui/', body)
    if r.status_code >= 500 or leaked:
        return f"{url} -> {r.status_code}"
    return None


def test_no_page_breaks_on_a_hostile_row(planted):
    kind, _db, ids, client = planted
    urls = WHOLE + [u.replace("{sid}", quote(sid)) for sid in ids for u in PER_SESSION]
    broken = [b for b in (_broken(client, url) for url in urls) if b]
    assert not broken, f"{kind}: {len(broken)} of {len(urls)}:\n" + "\n".join(broken[:40])


def test_rename_and_delete_of_a_hostile_row_work_or_say_why(planted):
    from support.http import post

    kind, db, ids, client = planted
    for sid in ids[:: max(1, len(ids) // 6)]:
        r = post(client, f"/sessions/{quote(sid)}/title", {"title": f"renamed {kind}"})
        assert r.status_code < 500, (sid, r.status_code, r.get_data(as_text=True)[:300])
        r = post(client, f"/sessions/{quote(sid)}/title", {})
        assert r.status_code < 500, (sid, r.status_code)
    sid = ids[-1]
    r = post(client, f"/sessions/{quote(sid)}/delete", {"confirm": "yes"})
    assert r.status_code < 500
    assert not sql(db, "SELECT 1 FROM sessions WHERE id = ?", (sid,))
