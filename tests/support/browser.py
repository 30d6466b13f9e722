"""Real-browser support, loaded as a pytest plugin by conftest: Debian's Chromium driven by
Playwright, against a real waitress server in a background thread. Tests skip when Chromium is
absent, except under CI, where a missing browser fails the run.

Screenshots are taken only when asked: ``LOGBOOK_SCREENSHOTS=DIR`` (the README's pictures are
made with ``LOGBOOK_SCREENSHOTS=docs/screenshots``). A test run never rewrites tracked files."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("LOGBOOK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def require_chromium() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail(f"Chromium not found at {CHROMIUM}; CI must install Debian's chromium")
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)")


class LiveServer:
    """The app served by waitress, as in production, on a free loopback port.

    The event loop runs in small steps so that `close` can stop it first and only then close
    its sockets: closing them under a running `select` fails with EBADF in the loop thread. It
    polls or selects as the server's settings say (``asyncore_use_poll``)."""

    def __init__(self, app, threads: int = 4, **settings):
        from webui.door.serve import make_server
        from webui.web.views.search import app_search_facts

        settings.setdefault("facts", app_search_facts(app))
        self.server = make_server(app, "127.0.0.1", 0, threads, **settings)
        self.url = f"http://127.0.0.1:{self.server.effective_port}"
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        from waitress import wasyncore

        poll = self.server.adj.asyncore_use_poll  # as the server's own run() loops
        while not self._stop.is_set():
            wasyncore.loop(timeout=0.05, map=self.server._map, count=1, use_poll=poll)

    def close(self):
        from waitress import wasyncore

        self._stop.set()
        self.thread.join(timeout=5)
        self.server.task_dispatcher.shutdown()
        wasyncore.close_all(self.server._map)


@pytest.fixture(scope="module")
def chromium():
    path = require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    dialogs: list[str] = []
    errors: list[str] = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.dialogs = dialogs  # type: ignore[attr-defined]
    pg.js_errors = errors  # type: ignore[attr-defined]
    yield pg
    context.close()
    assert not dialogs, f"a dialog opened: {dialogs}"
    assert not errors, f"JavaScript errors: {errors}"


def settled(pg, timeout_s: float = 15.0) -> None:
    """Wait until htmx has finished every swap: content it has just swapped in gets its
    handlers during the settle step, and a click or an Enter before then is the browser's own
    (a link followed, a form posted: the page reloads). A person is never that fast. Polled
    with evaluate(): the pages' Content-Security-Policy forbids wait_for_function's eval."""
    busy = (
        "!window.htmx || !!document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
    )
    deadline = time.monotonic() + timeout_s
    while pg.evaluate(busy):
        if time.monotonic() > deadline:
            raise AssertionError(f"htmx still busy after {timeout_s} s")
        pg.wait_for_timeout(10)


def until(pg, check, what: str, timeout_s: float | None = None) -> None:
    """Wait until ``check()`` holds, letting the page run between looks (a bound for a hang,
    not a speed target: a fixed pause decides nothing on a busy machine)."""
    from support import WAIT_BOUND_S

    deadline = time.monotonic() + (WAIT_BOUND_S if timeout_s is None else timeout_s)
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        pg.wait_for_timeout(50)


def screenshot_path(name: str) -> Path | None:
    """Where to save screenshot `name`, or None when no screenshots were asked for."""
    folder = os.environ.get("LOGBOOK_SCREENSHOTS")
    if not folder:
        return None
    path = Path(folder).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path / name


def screenshot(pg, name: str) -> None:
    path = screenshot_path(name)
    if path is not None:
        pg.screenshot(path=str(path))


@pytest.fixture
def fresh(generated_db, tmp_path):
    """(database, live server, long session id): a private copy of the generated database
    served by waitress, for browser tests that change things."""
    from support import make_app

    src, long_id = generated_db
    db = tmp_path / "state.db"
    shutil.copyfile(src, db)
    srv = LiveServer(make_app(db, tmp_path / "inst"))
    yield db, srv, long_id
    srv.close()


AXE = Path(__file__).resolve().parents[1] / "vendor" / "axe.min.js"


def axe_problems(pg, name: str) -> list[tuple]:
    """axe-core's serious and critical violations on the page now open, named by ``name``."""
    pg.evaluate(AXE.read_text(encoding="utf-8"))
    result = pg.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        (name, v["id"], v["help"], [n["target"] for n in v["nodes"][:3]])
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]
