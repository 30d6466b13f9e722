"""A Logbook server as a user starts it: ``python -m webui`` in a process of its own, ready
once its banner says how to stop it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *args):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "webui", "--port", str(self.port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.banner: list[str] = []
        deadline = time.time() + 120
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError("server exited: " + "".join(self.banner))
            self.banner.append(line)
            if "Stop with" in line:
                return
        raise AssertionError("no banner")

    def get(self, path: str):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as r:
            return r.status, dict(r.headers), r.read()

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
