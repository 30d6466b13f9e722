"""Every place in reach (issue 47, point 6): /stores and /coldstore are in the navigation,
with archive and prune, under one "History" menu that opens by keyboard, touch or mouse (and
without JavaScript); /stores fits a phone's screen (it was 691 px wide at 390). In Chromium,
on a live file with an archive file beside it kept under a long folder path."""

from __future__ import annotations

import re
import shutil

import pytest

from support import FIXTURES, copy_fixture, make_app
from support.browser import LiveServer, screenshot

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("navigation")
    db = copy_fixture("hermes-v22-origins.db", tmp)
    archives = tmp / "home" / "someone" / "hermes-history" / "archives-from-the-old-laptop"
    archives.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "hermes-v11.db", archives / "hermes-archive-2026-03-old-laptop.db")
    srv = LiveServer(make_app(db, tmp / "inst", LOGBOOK_ARCHIVES=[str(archives)]))
    yield srv
    srv.close()


def test_stores_fit_a_phone(site, chromium):
    context = chromium.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(f"{site.url}/stores")
        assert page.locator("table.stores tbody tr").count() == 2
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        for cell in page.locator("table.stores tbody td").all():
            box = cell.bounding_box()
            assert box is None or box["x"] + box["width"] <= PHONE["width"], cell.inner_text()
        screenshot(page, "stores-phone.png")
    finally:
        context.close()


def test_the_history_menu_by_keyboard(site, page):
    page.goto(f"{site.url}/sessions")
    menu = page.locator("header.top details.nav-menu")
    summary = menu.locator("summary")
    assert summary.inner_text().startswith("History")
    labels = menu.locator("li a").all()
    assert [a.evaluate("a => a.firstChild.textContent") for a in labels] == [
        "Where it is kept",
        "Archive",
        "Cold storage",
        "Prune",
    ]
    assert not labels[0].is_visible()  # folded until asked for
    summary.focus()
    page.keyboard.press("Enter")
    assert menu.get_attribute("open") is not None and labels[0].is_visible()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('href')") == "/stores"
    # Escape folds it again and gives the focus back to the menu's button.
    page.keyboard.press("Escape")
    assert menu.get_attribute("open") is None
    assert page.evaluate("document.activeElement.tagName") == "SUMMARY"
    # Open, walk to Cold storage and follow it.
    page.keyboard.press("Enter")
    for _ in range(3):
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('href')") == "/coldstore"
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/coldstore$"))
    # Where the reader is: the menu and its place are marked.
    menu = page.locator("header.top details.nav-menu")
    assert menu.get_attribute("data-current") is not None
    assert menu.locator("a[aria-current=page]").get_attribute("href") == "/coldstore"
    # A click elsewhere folds an open menu.
    menu.locator("summary").click()
    page.locator("h1").click()
    assert menu.get_attribute("open") is None


def test_the_history_menu_on_a_phone_and_without_javascript(site, chromium):
    context = chromium.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(f"{site.url}/sessions")
        # Every place of the bar is in sight, the menu's button among them.
        for el in page.locator(
            "header.top nav.main-nav > a, header.top nav.main-nav summary"
        ).all():
            box = el.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (
                el.inner_text()
            )
        page.locator("details.nav-menu > summary").tap()
        for a in page.locator("details.nav-menu li a").all():
            box = a.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
            assert box["height"] >= 24  # a finger's target
        page.locator("details.nav-menu li a", has_text="Where it is kept").tap()
        page.wait_for_url(re.compile(r"/stores$"))
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    finally:
        context.close()
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(f"{site.url}/stats")
        page.locator("details.nav-menu > summary").click()
        page.locator("details.nav-menu li a", has_text="Prune").click()
        page.wait_for_url(re.compile(r"/prune$"))
    finally:
        context.close()
