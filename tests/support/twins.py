"""Hermes and Logbook side by side for the comparison tiers (tests/test_oracle_generations.py,
tests/test_oracle_coldstore.py): a Hermes of the fixture's generation on its own copy, a change
made by Logbook (under the CJK tokenizer where the file's index needs it), and every table a
change may touch, read back and told apart. Shared here so no test module imports another."""

from __future__ import annotations

import shutil
import sqlite3

from oracle import cases as oracle_cases

from support import copy_fixture
from support.http import post
from support.oracle import GENERATIONS, Hermes, ensure_venv

NEW = [f for f, (gen, _) in oracle_cases.FIXTURES.items() if gen != "0.19"]


def hermes_on_copy(fixture: str, home) -> Hermes:
    key, cjk = oracle_cases.FIXTURES[fixture]
    gen = GENERATIONS[key]
    shutil.copyfile(copy_fixture(fixture, home.parent / f"src-{home.name}"), home / "state.db")
    return Hermes(ensure_venv(gen), home, gen, cjk=cjk)


def tables(db) -> dict:
    """Everything a change may touch: session rows and flags, message ids and flags, prompts,
    per-model usage, conversation generations, and the rows each FTS index holds."""
    conn = sqlite3.connect(db)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        cols = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
        flags = [
            c
            for c in ("archived", "auto_archived", "pinned", "hidden", "title_source")
            if c in cols
        ]
        out = {
            "sessions": conn.execute(
                f"SELECT id, parent_session_id, title, {', '.join(flags) or 'NULL'} FROM sessions ORDER BY id"
            ).fetchall(),
            "messages": conn.execute(
                "SELECT id, session_id, active, compacted FROM messages ORDER BY id"
            ).fetchall(),
        }
        for table, order in (
            ("system_prompts", "hash"),
            ("session_model_usage", "session_id, model, task"),
            ("conversation_generations", "source, session_key"),
        ):
            if table in names:
                out[table] = conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
        for fts in ("messages_fts", "messages_fts_trigram", "messages_fts_cjk"):
            if f"{fts}_docsize" in names:
                out[fts] = conn.execute(f"SELECT COUNT(*) FROM {fts}_docsize").fetchone()[0]
        return out
    finally:
        conn.close()


def effect(before: dict, after: dict) -> str:
    """What a change did, table by table: rows gone/added/changed, index rows."""
    parts = []
    for table, b in before.items():
        a = after.get(table)
        if isinstance(b, int):
            if a != b:
                parts.append(f"{table} {a - b:+d}")
            continue
        old, new = {r[0]: r for r in b}, {r[0]: r for r in a}
        gone, added = len(set(old) - set(new)), len(set(new) - set(old))
        changed = sum(1 for k in set(old) & set(new) if old[k] != new[k])
        if gone or added or changed:
            parts.append(f"{table} -{gone}/+{added}/~{changed}")
    return ", ".join(parts) or "nothing"


CJK = [f for f, (_, cjk) in oracle_cases.FIXTURES.items() if cjk]


def with_tokenizer(
    fixture: str, db, tmp_path, url: str, data: dict, preview: dict | None = None
) -> int:
    """A change by Logbook as a user with the CJK tokenizer runs it: a server under a Python
    that can load SQLite extensions (Debian's, with this venv's packages), the library where
    Hermes looks for it ($HERMES_FTS5_CJK_SO). ``preview``: the parameters of the preview
    (read from that server) whose selection the POST confirms. Returns the POST's status."""
    import json
    import os
    import sysconfig
    import urllib.parse

    from support import ROOT
    from support.oracle import ensure_cjk_runtime
    from support.server import Server

    python, so = ensure_cjk_runtime(GENERATIONS[oracle_cases.FIXTURES[fixture][0]])
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}:{sysconfig.get_paths()['purelib']}",
        "HERMES_FTS5_CJK_SO": str(so),
    }
    srv = Server(
        "--db",
        str(db),
        "--instance",
        str(tmp_path / "inst-cjk"),
        python=[str(python), "-s"],
        env=env,
    )
    try:
        if preview is not None:
            query = urllib.parse.urlencode({**preview, "format": "json"})
            shown = json.loads(srv.get(f"{url}?{query}")[2])
            data = {**shown["selection"], **data}
        status, _body = srv.post(url, data)
        return status
    finally:
        srv.close()


def change(
    fixture: str,
    db,
    tmp_path,
    client,
    url: str,
    data: dict,
    htmx: bool = True,
    preview: dict | None = None,
):
    """Logbook's change: in this process, or (the CJK file) by a Logbook that loads the
    tokenizer its search index needs. ``preview``: the parameters of the preview whose
    selection the POST confirms (read first, from the same Logbook)."""
    if fixture in CJK:
        return with_tokenizer(fixture, db, tmp_path, url, data, preview)
    if preview is not None:
        shown = client.get(url, query_string={**preview, "format": "json"}).get_json()
        data = {**shown["selection"], **data}
    return post(client, url, data, htmx=htmx)
