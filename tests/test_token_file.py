"""A token file that is not one (issue 49, point 8): a FIFO used to hang the start with no
message, a link to /dev/zero or a huge file to be read without end. Each is refused at start,
in one clear line, exit status 2. Real processes, as a user starts Logbook."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support import WAIT_BOUND_S, copy_fixture

pytestmark = pytest.mark.slow


def _start(tmp_path, token_file) -> subprocess.CompletedProcess:
    db = copy_fixture("hermes-v11.db", tmp_path)
    args = ["--db", str(db), "--host", "0.0.0.0", "--insecure", "--port", "0"]
    return subprocess.run(
        [sys.executable, "-m", "webui", *args, "--instance", str(tmp_path / "inst")]
        + ["--token-file", str(token_file)],
        capture_output=True,
        text=True,
        timeout=WAIT_BOUND_S,  # the old code waited on a FIFO for ever: a hang fails here
    )


def _refused(proc, *needles) -> None:
    assert proc.returncode == 2, proc
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "token"
    os.mkfifo(fifo, 0o600)
    _refused(_start(tmp_path, fifo), f"--token-file {fifo}", "FIFO", "not a regular file")


def test_a_link_to_an_endless_device_is_refused(tmp_path):
    link = tmp_path / "token"
    link.symlink_to("/dev/zero")
    _refused(_start(tmp_path, link), f"--token-file {link}", "character device")


def test_a_huge_file_is_refused_without_being_read(tmp_path):
    huge = tmp_path / "token"
    with huge.open("wb") as f:
        f.truncate(10 * 1024 * 1024)  # sparse: 10 MB that cost no disk
    huge.chmod(0o600)
    _refused(_start(tmp_path, huge), f"--token-file {huge}", "10,485,760 bytes", "one token")


def test_a_folder_is_refused(tmp_path):
    folder = tmp_path / "tokens"
    folder.mkdir()
    _refused(_start(tmp_path, folder), f"--token-file {folder}", "is a folder")
