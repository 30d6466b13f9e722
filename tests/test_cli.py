"""The command line, as a user runs it: real processes, real sockets."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import FIXTURE_NAMES, copy_fixture, sql
from support.server import Server, free_port

pytestmark = pytest.mark.slow

TOKEN = "a-token-long-enough-to-resist-guessing"


def run_cli(*args, env=None, timeout=60):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "webui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
    )


def assert_one_clear_line(proc, *needles):
    assert proc.returncode == 2, proc
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_missing_database_exits_2_naming_the_path(tmp_path):
    missing = tmp_path / "nope" / "state.db"
    assert_one_clear_line(run_cli("--db", str(missing)), str(missing), "--demo", "--db")


def test_default_path_follows_hermes_home(tmp_path):
    proc = run_cli(env={"HERMES_HOME": str(tmp_path)})
    assert_one_clear_line(proc, str(tmp_path / "state.db"), "--demo")


def test_not_sqlite_file(tmp_path):
    f = tmp_path / "state.db"
    f.write_text("hello, I am a text file\n" * 100)
    assert_one_clear_line(run_cli("--db", str(f)), "not an SQLite database")


def test_corrupt_database(tmp_path):
    f = copy_fixture("hermes-v11.db", tmp_path)
    data = bytearray(f.read_bytes())
    data[100 : 4096 * 4] = os.urandom(4096 * 4 - 100)  # header kept, schema pages destroyed
    f.write_bytes(bytes(data))
    assert_one_clear_line(run_cli("--db", str(f)), str(f))


def test_sqlite_but_not_hermes(tmp_path):
    f = tmp_path / "other.db"
    with sqlite3.connect(f) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    assert_one_clear_line(run_cli("--db", str(f)), "not a Hermes state.db")


def test_directory_instead_of_file(tmp_path):
    assert_one_clear_line(run_cli("--db", str(tmp_path)), "not a file")


def test_non_loopback_host_needs_insecure(tmp_path):
    f = copy_fixture("hermes-v11.db", tmp_path)
    assert_one_clear_line(run_cli("--db", str(f), "--host", "0.0.0.0"), "--insecure")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_serves_fixture_over_http(tmp_path, name):
    db = copy_fixture(name, tmp_path)
    srv = Server("--db", str(db), "--instance", str(tmp_path / "inst"))
    try:
        banner = "".join(srv.banner)
        version = sql(db, "SELECT version FROM schema_version")[0][0]
        assert f"http://127.0.0.1:{srv.port}/" in banner
        assert str(db) in banner and f"schema v{version}" in banner
        assert re.search(r"\d (KB|MB)", banner)  # its size
        ids, url = [], "/sessions?format=json&archived=1&rows=all"
        while url:
            status, headers, body = srv.get(url)
            assert status == 200
            assert "Server" not in headers
            page = json.loads(body)
            ids += [s["id"] for s in page["sessions"]]
            url = page["next"]
        assert sorted(ids) == sorted(r[0] for r in sql(db, "SELECT id FROM sessions"))
        status, _, body = srv.get(f"/sessions/{ids[0]}")
        assert status == 200 and b"<article" in body or b"no messages" in body
    finally:
        srv.close()


def test_demo_is_built_once_and_served(tmp_path):
    inst = tmp_path / "inst"
    srv = Server("--demo", "--instance", str(inst))
    try:
        assert (inst / "demo-22.db").exists()
        status, _, body = srv.get("/sessions?format=json")
        assert status == 200 and len(json.loads(body)["sessions"]) == 50
        assert "schema v22" in "".join(srv.banner)
        status, _, body = srv.get("/chats?format=json")
        assert status == 200 and len(json.loads(body)["chats"]) > 5  # the demo has origins
    finally:
        srv.close()
    mtime = (inst / "demo-22.db").stat().st_mtime
    srv = Server("--demo", "--instance", str(inst))
    srv.close()
    assert (inst / "demo-22.db").stat().st_mtime == mtime


def test_installed_wheel_carries_templates_and_static(tmp_path):
    """A normal (non-editable) install must find its templates and static files."""
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    import zipfile

    (wheel,) = tmp_path.glob("hermes_logbook-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "webui/templates/base.html",
        "webui/templates/sessions.html",
        "webui/static/app.css",
        "webui/static/vendor/htmx-2.0.11.min.js",
        "webui/cli.py",
    ):
        assert needed in names, needed


def test_remote_mode_over_a_real_socket(tmp_path):
    """Bound to 0.0.0.0 with --insecure and reached over loopback: viewing works, a change is
    refused without the token and accepted after logging in with it."""
    import http.cookiejar
    import re
    import urllib.parse

    db = copy_fixture("hermes-v11.db", tmp_path)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "webui",
            "--db",
            str(db),
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--insecure",
            "--token-file",
            str(token_file),
            "--instance",
            str(tmp_path / "inst"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        banner = ""
        while "Stop with" not in banner:
            line = proc.stdout.readline()
            assert line, banner
            banner += line
        assert "REMOTE" in banner and "admin token" in banner
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        base = f"http://127.0.0.1:{port}"
        html = opener.open(base + "/sessions").read().decode()
        token = re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)
        sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
        req = urllib.request.Request(
            base + f"/sessions/{sid}/title",
            method="POST",
            data=urllib.parse.urlencode({"title": "remote"}).encode(),
            headers={"X-CSRFToken": token},
        )
        try:
            opener.open(req)
            raise AssertionError("a change went through without the token")
        except urllib.error.HTTPError as exc:
            assert exc.code == 403
        login = urllib.request.Request(
            base + "/login",
            method="POST",
            data=urllib.parse.urlencode({"token": TOKEN, "csrf_token": token}).encode(),
        )
        opener.open(login)
        html = opener.open(base + "/sessions").read().decode()
        token = re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)
        req = urllib.request.Request(
            base + f"/sessions/{sid}/title",
            method="POST",
            data=urllib.parse.urlencode({"title": "remote"}).encode(),
            headers={"X-CSRFToken": token},
        )
        assert opener.open(req).status == 200
        assert sql(db, "SELECT title FROM sessions WHERE id = ?", (sid,))[0][0] == "remote"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


@pytest.mark.parametrize("how", ["--token", "--token-file"])
def test_short_tokens_are_refused_at_start(tmp_path, how):
    db = copy_fixture("hermes-v11.db", tmp_path)
    value = "short"
    if how == "--token-file":
        (tmp_path / "t").write_text(value)
        value = str(tmp_path / "t")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "webui",
            "--db",
            str(db),
            "--host",
            "0.0.0.0",
            "--insecure",
            how,
            value,
            "--port",
            str(free_port()),
            "--instance",
            str(tmp_path / "inst"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "at least 16" in proc.stderr and "Traceback" not in proc.stderr


def _start_only(tmp_path, *extra, env=None):
    """Runs the command line up to its checks (a bad token exits 2 before serving)."""
    db = copy_fixture("hermes-v11.db", tmp_path)
    args = ["--db", str(db), "--host", "0.0.0.0", "--insecure", "--port", str(free_port())]
    return run_cli(*args, "--instance", str(tmp_path / "inst"), *extra, env=env, timeout=30)


@pytest.mark.parametrize("content", ["", "   \n", " " * 16, "\t\n\n"])
def test_a_token_file_holding_nothing_is_refused_not_ignored(tmp_path, content):
    """A blank file no longer silently overrides a token given elsewhere (issue 37, point 9)."""
    f = tmp_path / "token"
    f.write_text(content)
    f.chmod(0o600)
    proc = _start_only(tmp_path, "--token-file", str(f), env={"HERMES_LOGBOOK_TOKEN": TOKEN})
    assert_one_clear_line(proc, f"--token-file {f}", "holds no token")


@pytest.mark.parametrize("how", ["--token", "env"])
def test_a_token_of_spaces_is_no_token(tmp_path, how):
    spaces = " " * 20
    if how == "--token":
        proc = _start_only(tmp_path, "--token", spaces)
    else:
        proc = _start_only(tmp_path, env={"HERMES_LOGBOOK_TOKEN": spaces})
    assert_one_clear_line(proc, "holds no token")


def test_a_token_file_others_can_read_is_warned_about_and_its_token_stripped(tmp_path):
    f = tmp_path / "token"
    f.write_text(f"  {TOKEN}  \n")
    f.chmod(0o644)
    port = free_port()
    db = copy_fixture("hermes-v11.db", tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "webui", "--db", str(db), "--host", "127.0.0.1", "--insecure",
         "--port", str(port), "--instance", str(tmp_path / "inst"), "--token-file", str(f)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        banner = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            banner.append(line)
            if "changes:" in line or not line:
                break
        changes = banner[-1]
        assert f"from --token-file {f}" in changes, banner
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=20)
    assert "can be read by other users (mode 644)" in err and "chmod 600" in err
