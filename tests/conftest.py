"""Shared fixtures: real Hermes databases in temp folders (copies of the shared fixtures, and
ones built by the project's generator), the app over each, and a test client."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from webui import create_app

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("LOGBOOK_FIXTURES", ROOT.parent / "shared" / "fixtures"))
FIXTURE_NAMES = ("hermes-v8.db", "hermes-v11.db", "hermes-v22.db")
LONG_SESSION = 650  # messages: several viewer pages


def copy_fixture(name: str, dest: Path) -> Path:
    src = FIXTURES / name
    if not src.exists():
        pytest.fail(f"missing fixture {src}: the shared fixtures must sit beside the repository")
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / name
    shutil.copyfile(src, target)
    return target


def make_app(db_path: Path, instance: Path, **config):
    return create_app({"LOGBOOK_DB": str(db_path), "TESTING": True, **config},
                      instance_path=str(instance))


@pytest.fixture(scope="session")
def generated_db(tmp_path_factory) -> tuple[Path, str]:
    """A generated v11 database (about 150 sessions) with one long session."""
    from webui.generator import generate

    path = tmp_path_factory.mktemp("gen") / "state.db"
    info = generate(path, sessions=150, seed=11, long_session_messages=LONG_SESSION)
    return path, info.long_session_id


@pytest.fixture(params=FIXTURE_NAMES, scope="module")
def fixture_db(request, tmp_path_factory) -> Path:
    return copy_fixture(request.param, tmp_path_factory.mktemp("fx"))


@pytest.fixture(scope="module")
def fixture_client(fixture_db, tmp_path_factory):
    app = make_app(fixture_db, tmp_path_factory.mktemp("inst"))
    return app.test_client()


@pytest.fixture(scope="module")
def fx(fixture_db, fixture_client):
    """(database, client) over a private copy of each shared fixture, for read-only tests."""
    return fixture_db, fixture_client


@pytest.fixture(scope="session")
def gen_app(generated_db, tmp_path_factory):
    return make_app(generated_db[0], tmp_path_factory.mktemp("inst"))


@pytest.fixture
def client(gen_app):
    return gen_app.test_client()


def sql(db: Path, query: str, params=()) -> list[tuple]:
    """Ground truth: a separate read-only connection straight to the file."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.close()
