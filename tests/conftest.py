"""Fixtures: real Hermes databases in temp folders (copies of the project's own test data, and
ones built by the project's generator), the app over each, and a test client. Helpers live in
``tests/support``; the real-browser fixtures are the ``support.browser`` plugin."""

from __future__ import annotations

import pytest

from support import FIXTURE_NAMES, copy_fixture, make_app

pytest_plugins = ["support.browser"]

LONG_SESSION = 650  # messages: several viewer pages


@pytest.fixture(scope="session")
def generated_db(tmp_path_factory):
    """A generated v11 database (about 150 sessions) with one long session."""
    from webui.demo import generate

    path = tmp_path_factory.mktemp("gen") / "state.db"
    info = generate(path, sessions=150, seed=11, long_session_messages=LONG_SESSION)
    return path, info.long_session_id


@pytest.fixture(params=FIXTURE_NAMES, scope="module")
def fixture_db(request, tmp_path_factory):
    return copy_fixture(request.param, tmp_path_factory.mktemp("fx"))


@pytest.fixture(scope="module")
def fixture_client(fixture_db, tmp_path_factory):
    app = make_app(fixture_db, tmp_path_factory.mktemp("inst"))
    return app.test_client()


@pytest.fixture(scope="module")
def fx(fixture_db, fixture_client):
    """(database, client) over a private copy of each real Hermes database, read-only tests."""
    return fixture_db, fixture_client


@pytest.fixture(scope="session")
def gen_app(generated_db, tmp_path_factory):
    return make_app(generated_db[0], tmp_path_factory.mktemp("inst"))


@pytest.fixture
def client(gen_app):
    return gen_app.test_client()
