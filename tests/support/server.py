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
    """``python``: another interpreter (with ``env``), e.g. one that can load SQLite extensions
    with this venv's packages on its PYTHONPATH."""

    def __init__(self, *args, python: list[str] | None = None, env: dict | None = None):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [*(python or [sys.executable]), "-m", "webui", "--port", str(self.port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self._opener = None
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

    def post(self, path: str, data: dict, headers: dict | None = None):
        """A POST as a script sends it: the page's CSRF token in X-CSRFToken, its cookie kept.
        Returns (status, body text); an error status is returned, not raised."""
        import http.cookiejar
        import re
        import urllib.error
        import urllib.parse

        if self._opener is None:
            self._opener = urllib.request.build_opener(
                urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
            )
        base = f"http://127.0.0.1:{self.port}"
        page = self._opener.open(base + "/sessions", timeout=60).read().decode()
        token = re.search(r'<meta name="csrf-token" content="([^"]+)"', page).group(1)
        req = urllib.request.Request(
            base + path,
            data=urllib.parse.urlencode(data, doseq=True).encode(),
            headers={"X-CSRFToken": token, **(headers or {})},
        )
        try:
            with self._opener.open(req, timeout=300) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
