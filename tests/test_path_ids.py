"""Session ids are data from the database, untrusted like any text in it: an id that reads as
a path ("../../x", "/abs", "a/b", "..") never makes a file outside its folder, in a backup
before a delete or a prune, or in the zip of a Markdown export (issue 37, point 2)."""

from __future__ import annotations

import io
import re
import sqlite3
import zipfile
from urllib.parse import quote

import pytest

from support import copy_fixture, make_app, sql
from support.http import post

HOSTILE_IDS = [
    "../../escaped",
    "/tmp/logbook-abs-escape",
    "a/b/c",
    "a_b_c",  # what "a/b/c" would become: the two must still be two files
    "..",
    ".hidden",
    "x\\..\\y",
]


@pytest.fixture
def planted(tmp_path):
    db = copy_fixture("hermes-v22.db", tmp_path / "home")
    conn = sqlite3.connect(db)
    with conn:
        base = conn.execute(
            "SELECT id FROM sessions WHERE ended_at IS NOT NULL AND message_count > 2 LIMIT 1"
        ).fetchone()[0]
        cols = [
            r[1] for r in conn.execute("PRAGMA table_info(sessions)") if r[1] not in ("id", "title")
        ]
        mcols = [
            r[1]
            for r in conn.execute("PRAGMA table_info(messages)")
            if r[1] not in ("id", "session_id")
        ]
        for sid in HOSTILE_IDS:
            conn.execute(
                f"INSERT INTO sessions (id, {', '.join(cols)}) SELECT ?, {', '.join(cols)} "
                "FROM sessions WHERE id = ?",
                (sid, base),
            )
            conn.execute(
                "UPDATE sessions SET started_at = 1000 + ? WHERE id = ?",
                (HOSTILE_IDS.index(sid), sid),
            )
            conn.execute(
                f"INSERT INTO messages (session_id, {', '.join(mcols)}) SELECT ?, "
                f"{', '.join(mcols)} FROM messages WHERE session_id = ?",
                (sid, base),
            )
    conn.close()
    return tmp_path, db, make_app(db, tmp_path / "inst").test_client()


def _files(root) -> set:
    return {p for p in root.rglob("*") if p.is_file()}


def test_a_backed_up_prune_writes_only_inside_its_folder(planted, tmp_path):
    root, db, client = planted
    before = _files(root)
    r = post(client, "/prune", {"before": "1970-01-02", "confirm": "yes", "backup": "verified"})
    assert r.status_code == 200, r.get_data(as_text=True)[:300]
    body = r.get_json()
    assert body["deleted"] == len(HOSTILE_IDS), body
    folder = root / "inst" / "session-exports"
    new = _files(root) - before
    outside = [
        p
        for p in new
        if folder not in p.parents
        and "removals-" not in str(p)
        and "rollup" not in p.name
        and "kept-" not in str(p)
    ]
    assert not outside, outside
    # Logbook's kept figures are named by digests, never by anything a row holds.
    kept = [p for p in new if "kept-" in str(p)]
    assert all(re.fullmatch(r"[0-9a-f]{20}\.json", p.name) for p in kept), kept
    assert not (root.parent / "escaped").exists() and not (root / "escaped-session.md").exists()
    from pathlib import Path

    assert not list(Path("/tmp").glob("logbook-abs-escape*"))
    written = [p for p in new if p.suffix == ".md"]
    assert len(written) == len(HOSTILE_IDS)
    for p in written:
        assert p.parent.parent == folder and not p.name.startswith(".")
    assert not sql(
        db, f"SELECT 1 FROM sessions WHERE id IN ({','.join('?' * len(HOSTILE_IDS))})", HOSTILE_IDS
    )


def test_the_markdown_zip_holds_only_plain_names(planted):
    _root, _db, client = planted
    query = "&".join(f"session={quote(i, safe='')}" for i in HOSTILE_IDS)
    r = client.get(f"/export.md?{query}")
    assert r.status_code == 200 and r.mimetype == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(r.get_data())).namelist()
    assert len(names) == len(HOSTILE_IDS) + 1
    assert len(set(names)) == len(names), "two ids, two files"
    for name in names:
        assert "/" not in name and "\\" not in name and not name.startswith("."), name
