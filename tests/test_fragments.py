"""htmx fragments: every target id the templates name answers without a 500 on every page,
and a fragment's root element is the element it replaces (it targets itself: hx-swap
outerHTML leaves no nested duplicate ids)."""

from __future__ import annotations

import re

import pytest

from support import ROOT

TEMPLATES = ROOT / "templates"
TARGETS = sorted(
    {
        t
        for p in TEMPLATES.glob("*.html")
        for t in re.findall(r'hx-target="#([\w-]+)"', p.read_text(encoding="utf-8"))
    }
)
# ...plus ids a client may still send that no template names any more (a dead mapping to a
# missing block once answered 500).
TARGETS += ["more-hits", "no-such-target"]
PAGES = ["/sessions", "/search?q=docker", "/stats?period=30", "/prune?older_than=300"]

# The fragments that replace themselves: target id → the pages that answer it.
SELF_TARGETING = {
    "results": "/sessions",
    "search-results": "/search?q=docker",
    "stats-body": "/stats?period=30",
    "prune-preview": "/prune?older_than=300",
}


def test_templates_name_targets():
    assert set(SELF_TARGETING) <= set(TARGETS)


@pytest.mark.parametrize("target", TARGETS)
def test_every_target_answers_on_every_page(client, target):
    for url in PAGES:
        r = client.get(url, headers={"HX-Request": "true", "HX-Target": target})
        assert r.status_code < 500, (url, target, r.status_code)
        assert "HX-Request" in r.headers.get("Vary", "")


@pytest.mark.parametrize("target,url", sorted(SELF_TARGETING.items()))
def test_fragment_root_is_the_target_and_swaps_outer(client, target, url):
    r = client.get(url, headers={"HX-Request": "true", "HX-Target": target})
    body = r.get_data(as_text=True).lstrip()
    first_tag = re.match(r"(?:\{#.*?#\}\s*)?<(\w+)([^>]*)>", body, re.S)
    assert first_tag and f'id="{target}"' in first_tag.group(2), body[:200]
    assert body.count(f'id="{target}"') == 1
    page = client.get(url.split("?")[0] if target != "search-results" else url).get_data(
        as_text=True
    )
    swaps = re.findall(rf'hx-target="#{target}"[^>]*', page)
    assert swaps and all('hx-swap="outerHTML"' in s for s in swaps), swaps
