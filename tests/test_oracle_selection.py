"""Every selection option on every route that takes one narrows the result as the same option of
`hermes sessions export` does (Hermes Agent 0.19.0 itself, on its own copy): the session list
(its JSON twin, every page) and each export format. Hermes's export selects ended sessions,
archived ones included; the list is asked for the same base (state=ended, archived=include,
rows=all) and must then hold exactly Hermes's sessions. A route that cannot honour an option
refuses it (400) instead of dropping it."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import time
import zipfile
from datetime import UTC, datetime
from urllib.parse import quote

import pytest

from support import copy_fixture, make_app, sql
from support.export_pages import logbook_page
from support.http import follow
from support.oracle import Hermes, ensure_venv

pytestmark = pytest.mark.oracle

FIXTURES = ("hermes-v22-extended.db", "hermes-v22-origins.db", "hermes-v11.db")


@pytest.fixture(scope="module", params=FIXTURES)
def pair(request, tmp_path_factory):
    venv = ensure_venv()
    home = tmp_path_factory.mktemp("hermes-home")
    shutil.copyfile(copy_fixture(request.param, tmp_path_factory.mktemp("src")), home / "state.db")
    hermes = Hermes(venv, home)
    hermes.call("list", kwargs={})  # migrates an older file, as for any user
    mine = tmp_path_factory.mktemp("logbook")
    shutil.copyfile(home / "state.db", mine / "state.db")
    return request.param, hermes, make_app(mine / "state.db", mine / "inst").test_client()


def _common(db, column: str) -> str | None:
    row = sql(
        db,
        f"SELECT {column} FROM sessions WHERE {column} IS NOT NULL AND {column} != '' "
        f"GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1",
    )
    return str(row[0][0]) if row else None


def _options(db) -> dict[str, tuple[tuple[str, ...], str, str]]:
    """option -> (Hermes's arguments, Logbook's parameter, value), values taken from the
    database so that each narrows something."""
    cols = {r[1] for r in sql(db, "PRAGMA table_info(sessions)")}

    def median(expr: str) -> float:
        values = sorted(
            r[0] for r in sql(db, f"SELECT {expr} FROM sessions WHERE ended_at IS NOT NULL")
        )
        return values[len(values) // 2]

    started = median("started_at")
    days = (time.time() - started) / 86400
    moment = datetime.fromtimestamp(started, UTC).isoformat()
    tokens = median("COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0)")
    fixed = {
        "older_than": f"{days:.1f}",
        "newer_than": f"{days:.1f}d",
        "before": moment,
        "after": moment,
        "title": "the",
        "end_reason": "compression",
        "model": "sonnet",
        "min_messages": str(int(median("COALESCE(message_count, 0)")) + 1),
        "max_messages": str(int(median("COALESCE(message_count, 0)"))),
        "min_tokens": str(int(tokens) + 1),
        "max_tokens": str(int(tokens)),
        "min_cost": "0.05",
        "max_cost": "0.01",
        "min_tool_calls": str(int(median("COALESCE(tool_call_count, 0)")) + 1),
        "max_tool_calls": "0",
        "source": "telegram",
    }
    for name, column in (
        ("cwd", "cwd"),
        ("provider", "billing_provider"),
        ("user", "user_id"),
        ("chat_id", "chat_id"),
        ("chat_type", "chat_type"),
        ("branch", "git_branch"),
    ):
        value = _common(db, column) if column in cols else None
        if value:
            fixed[name] = value[:12] if name == "branch" else value
    return {
        name: (("--" + name.replace("_", "-"), value), name, value) for name, value in fixed.items()
    }


def _hermes_ids(hermes: Hermes, tmp_path, cli: tuple[str, ...]) -> list[str]:
    out = tmp_path / "hermes.jsonl"
    hermes.cli("sessions", "export", str(out), *cli)
    return [json.loads(line)["id"] for line in out.read_text().splitlines() if line.strip()]


BASE = "state=ended&archived=include&rows=all"


def _ids_of(route: str, r) -> list[str]:
    """The sessions a response holds, read the way a user reads that format."""
    if route == "csv":
        return [row["id"] for row in csv.DictReader(io.StringIO(r.get_data(as_text=True)))]
    if route == "prompts":
        lines = r.get_data(as_text=True).splitlines()
        return sorted({json.loads(line)["session_id"] for line in lines if line.strip()})
    if route in ("md", "qmd"):
        if r.mimetype == "application/zip":
            archive = zipfile.ZipFile(io.BytesIO(r.get_data()))
            lines = archive.read("manifest.jsonl").decode().splitlines()
            return [json.loads(line)["session_id"] for line in lines]
        return re.findall(r'^session_id: "(.*)"$', r.get_data(as_text=True), re.M)
    if route == "html":
        return [s.id for s in logbook_page(r.get_data(as_text=True)).sessions]
    return [json.loads(line)["id"] for line in r.get_data(as_text=True).splitlines() if line]


ROUTES = {
    "jsonl": "/export.jsonl",
    "csv": "/export.csv",
    "md": "/export.md",
    "qmd": "/export.qmd",
    "html": "/export.html",
    "prompts": "/export.jsonl?only=user-prompts",
}


@pytest.mark.parametrize(
    "option",
    [
        "older_than", "newer_than", "before", "after", "title", "end_reason", "model",
        "min_messages", "max_messages", "min_tokens", "max_tokens", "min_cost", "max_cost",
        "min_tool_calls", "max_tool_calls", "source", "cwd", "provider", "user", "chat_id",
        "chat_type", "branch",
    ],
)  # fmt: skip
def test_each_option_narrows_every_route_as_hermes_does(pair, tmp_path, option):
    name, hermes, client = pair
    db = hermes.db
    options = _options(db)
    if option not in options:
        pytest.skip(f"{name} has no value for {option}")
    cli, param, value = options[option]
    theirs = _hermes_ids(hermes, tmp_path, cli)
    everything = _hermes_ids(hermes, tmp_path, ("--min-messages", "0"))
    assert len(theirs) < len(everything), f"{option}={value} narrows nothing here"
    query = f"{BASE}&{param}={quote(value)}"

    listed = follow(client, f"/sessions?format=json&{query}", "sessions")
    assert sorted(r["id"] for r in listed) == sorted(theirs), (name, "list", option)

    for route, path in ROUTES.items():
        sep = "&" if "?" in path else "?"
        r = client.get(f"{path}{sep}{query}")
        if not theirs:
            assert r.status_code == 404, (route, option)
            continue
        assert r.status_code == 200, (route, option, r.get_data(as_text=True)[:200])
        got = _ids_of(route, r)
        if route == "prompts":  # only sessions that have a user prompt appear
            assert set(got) <= set(theirs), (name, route, option)
        else:
            assert sorted(got) == sorted(theirs), (name, route, option)


@pytest.mark.parametrize(
    "url",
    [
        "/sessions?older=30",
        "/sessions?min_msgs=3",
        "/export.jsonl?sources=cli",
        "/export.md?session=x&fromdate=2026-01-01",
        "/export.csv?limit=3",
    ],
)
def test_an_option_no_route_reads_is_refused_not_dropped(pair, url):
    _, _, client = pair
    r = client.get(url)
    assert r.status_code == 400, url
    wrong = re.search(r"[?&]([a-z_]+)=[^&]*$", url).group(1)
    assert wrong in r.get_data(as_text=True)
    assert "nothing was filtered" in client.get(url + "&format=json").get_json()["message"]
