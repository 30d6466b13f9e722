"""Makes the fixtures of the newer Hermes generations (tests/data/fixtures/README.md), each one
written by that generation's own code (tests/oracle/write_history.py, marks_fixture_019.py).
Run from the repository root with Logbook's venv; it builds or reuses the oracle venvs:

    .venv/bin/python tests/oracle/make_fixtures.py [name ...]

Not run in CI: the .db files it writes are committed. Each is made in a scratch Hermes home,
then copied in: WAL files are checkpointed away by SQLite itself (no row is touched by us).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from support import FIXTURES  # noqa: E402
from support.oracle import G019, G020, G022, Hermes, ensure_venv  # noqa: E402

HERE = Path(__file__).resolve().parent
MIGRATED_FROM = "hermes-v22-extended.db"
# name -> (generation, migrated?, CJK tokenizer?, START, END, idle-sweep days)
TARGETS = {
    "hermes-v26-migrated.db": (G020, True, False, "2026-11-23", "2026-11-26", 300),
    "hermes-v26-fresh.db": (G020, False, False, "2026-06-01", "2026-11-25", 150),
    "hermes-v31-migrated.db": (G022, True, False, "2026-11-23", "2026-11-26", 300),
    "hermes-v31-fresh.db": (G022, False, False, "2026-06-01", "2026-11-25", 150),
    "hermes-v31-cjk.db": (G022, False, True, "2026-06-01", "2026-11-25", 150),
}
MARKS_019 = "hermes-v22-marks.db"


def _oldest_cli_root(db: Path) -> str:
    """An old ended CLI root of the migrated history: pinned before the sweep, which spares it."""
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        return conn.execute(
            "SELECT id FROM sessions WHERE source = 'cli' AND parent_session_id IS NULL "
            "AND ended_at IS NOT NULL AND message_count > 0 ORDER BY started_at LIMIT 1"
        ).fetchone()[0]
    finally:
        conn.close()


def _settle(db: Path) -> None:
    """Fold a leftover -wal into the file (SQLite's checkpoint; no row changes) so the fixture is
    one file, as the older fixtures are."""
    wal = db.with_name(db.name + "-wal")
    if wal.exists():
        conn = sqlite3.connect(db)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    for suffix in ("-wal", "-shm"):
        side = db.with_name(db.name + suffix)
        if side.exists() and side.stat().st_size == 0:
            side.unlink()
    assert not db.with_name(db.name + "-wal").exists(), f"{db} keeps a WAL file"


def make(name: str) -> dict:
    if name == MARKS_019:
        return make_marks()
    gen, migrated, cjk, start, end, sweep = TARGETS[name]
    venv = ensure_venv(gen)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        hermes = Hermes(venv, home, gen, cjk=cjk)
        args = [str(hermes.db), start, end, "--sweep-days", str(sweep)]
        if migrated:
            shutil.copyfile(FIXTURES / MIGRATED_FROM, hermes.db)
            args += ["--pin-old", _oldest_cli_root(hermes.db)]
        out = hermes._run([*hermes.python(), str(HERE / "write_history.py"), *args], name)
        _settle(hermes.db)
        shutil.copyfile(hermes.db, FIXTURES / name)
    return {"name": name, "log": out.strip().splitlines()[-2:], **describe(FIXTURES / name)}


def make_marks() -> dict:
    venv = ensure_venv(G019)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        hermes = Hermes(venv, home, G019)
        out = hermes._run(
            [*hermes.python(), str(HERE / "marks_fixture_019.py"), str(hermes.db)], MARKS_019
        )
        _settle(hermes.db)
        shutil.copyfile(hermes.db, FIXTURES / MARKS_019)
    return {
        "name": MARKS_019,
        "log": out.strip().splitlines()[-1:],
        **describe(FIXTURES / MARKS_019),
    }


def describe(db: Path) -> dict:
    """What the fixtures README says about a file."""
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        fts = one("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'") or ""
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {
            "schema": one("SELECT version FROM schema_version"),
            "bytes": db.stat().st_size,
            # the header's read/write version bytes: 2 = WAL, 1 = a rollback journal
            "journal": "wal" if db.read_bytes()[18] == 2 else "rollback (delete)",
            "sessions": one("SELECT COUNT(*) FROM sessions"),
            "messages": one("SELECT COUNT(*) FROM messages"),
            "fts_layout": "legacy inline" if "tool_name" not in fts else "v23 external-content",
            "fts_tables": sorted(
                t
                for t in tables
                if t in ("messages_fts", "messages_fts_trigram", "messages_fts_cjk")
            ),
        }
    finally:
        conn.close()


if __name__ == "__main__":
    names = sys.argv[1:] or [*TARGETS, MARKS_019]
    for n in names:
        print(json.dumps(make(n)), flush=True)
