"""An HTML audit: what a page would *execute or load*, parsed as a browser would tokenize it."""

from __future__ import annotations

from html.parser import HTMLParser

SAFE_SCHEMES = ("http:", "https:", "mailto:", "/", "#", "?")


class Audit(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scripts: list[dict] = []
        self.handlers: list[tuple[str, str]] = []
        self.bad_urls: list[tuple[str, str]] = []
        self.loaders: list[str] = []  # tags that fetch remote content by themselves
        self.styles: list[str] = []  # inline style attributes (CSP forbids them)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts.append(a)
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append((tag, name))
            if name == "style":
                self.styles.append(tag)
            if name in ("href", "src", "action", "formaction", "xlink:href") and value:
                v = value.strip().lower()
                if not v.startswith(SAFE_SCHEMES) and ":" in v.split("/")[0]:
                    self.bad_urls.append((tag, value))
        if tag in ("iframe", "object", "embed", "frame", "base", "meta") and tag != "meta":
            self.loaders.append(tag)
        if tag == "img" and not (a.get("src") or "").startswith("/static/"):
            self.loaders.append(f"img {a.get('src')}")
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "refresh":
            self.loaders.append("meta refresh")

    handle_startendtag = handle_starttag


def audit(html: str) -> Audit:
    a = Audit()
    a.feed(html)
    a.close()
    return a


def assert_inert(html: str) -> None:
    a = audit(html)
    foreign = [s for s in a.scripts if not (s.get("src") or "").startswith("/static/")]
    assert not foreign, f"unexpected script tags: {foreign}"
    assert not a.handlers, f"event-handler attributes: {a.handlers}"
    assert not a.bad_urls, f"dangerous URLs: {a.bad_urls}"
    assert not a.loaders, f"tags that load content: {a.loaders}"
    assert not a.styles, f"inline styles: {a.styles}"


def assert_inert_page(response) -> str:
    """A page that answered 200 and is inert; its text. A page that failed (a 500, a 404) says
    nothing of how untrusted text is shown, so it can never pass for an inert one."""
    assert response.status_code == 200, (
        response.status_code,
        response.get_data(as_text=True)[:300],
    )
    html = response.get_data(as_text=True)
    assert_inert(html)
    return html
