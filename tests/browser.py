"""Real-browser support: Debian's Chromium driven by Playwright, against a real waitress
server in a background thread. Tests skip when Chromium is absent, except under CI, where a
missing browser fails the run."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("LOGBOOK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]


def require_chromium() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail(f"Chromium not found at {CHROMIUM}; CI must install Debian's chromium")
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)")


class LiveServer:
    """The app served by waitress, as in production, on a free loopback port."""

    def __init__(self, app):
        from waitress import create_server
        self.server = create_server(app, host="127.0.0.1", port=0, threads=4, ident="")
        self.url = f"http://127.0.0.1:{self.server.effective_port}"
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()

    def close(self):
        self.server.close()


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


def screenshot(pg, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SCREENSHOTS / name))
