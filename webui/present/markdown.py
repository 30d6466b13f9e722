"""Markdown from language models, rendered safely.

markdown-it-py parses with raw HTML switched off (any HTML in a message stays text); nh3
(Ammonia) then sanitizes the result again as a second wall: only a short list of tags, links
limited to http/https/mailto with rel="noopener noreferrer", no images fetched automatically
(an image becomes a link the reader may choose to follow). Code blocks are highlighted by
Pygments with CSS classes (no inline styles, so the Content-Security-Policy can forbid them).
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from webui import keep

ALLOWED_TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "code",
    "del",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "kbd",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "span",
    "strong",
    "sub",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
    "div",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class"},
    "code": {"class"},
    "span": {"class"},
    "div": {"class"},
    "pre": {"class"},
    "td": {"align"},
    "th": {"align"},
    "ol": {"start"},
}
_formatter = HtmlFormatter(nowrap=True, classprefix="")


@keep.memoize(128)
def _lexer(name: str):
    """Pygments finds a lexer by name by scanning its whole registry (about 0.1 ms each); a
    viewer page asks for the same few (json, python, bash) dozens of times. Lexers keep no
    state between inputs, so one instance per name serves them all. None: no such lexer."""
    try:
        return get_lexer_by_name(name, stripall=False)
    except ClassNotFound:
        return None


def _highlight(code: str, lang: str, _attrs: str) -> str:
    if not lang:
        return ""  # markdown-it escapes and wraps it itself
    lexer = _lexer(lang.split()[0].lower()[:40])
    if lexer is None:
        return ""
    return highlight(code, lexer, _formatter)


def _render_image(self, tokens, idx, options, env):
    # Remote images are never loaded on their own: show a link instead.
    token = tokens[idx]
    src = token.attrGet("src") or ""
    alt = "".join(t.content for t in (token.children or [])) or "image"
    return f'<a href="{escape(src)}" class="md-image">🖼 {escape(alt)}</a>'


# A message's headings sit under the page's own: h1 is the page's title and h2 a section of it
# (the viewer's "Messages", one session of a chat), so a message's "#" becomes an h3.
MESSAGE_TOP_HEADING = 3


def _demote_headings(state) -> None:
    """Each heading of a message one level under the page's, and never more than one level
    deeper than the heading before it (``#`` then ``####`` reads h3 then h4): wherever a
    message sits, the page's heading order holds. h6 is the deepest."""
    before = MESSAGE_TOP_HEADING - 1
    level = before
    for token in state.tokens:
        if token.type == "heading_open":
            written = int(token.tag[1])
            level = min(written + MESSAGE_TOP_HEADING - 1, before + 1, 6)
            before = level
            token.tag = f"h{level}"
        elif token.type == "heading_close":
            token.tag = f"h{level}"


def _make_parser() -> MarkdownIt:
    md = MarkdownIt(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False, "highlight": _highlight},
    )
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _render_image)
    md.core.ruler.push("demote_headings", _demote_headings)
    return md


_md = _make_parser()


def sanitize(html: str) -> str:
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


@keep.memoize_text(8_000_000)
def markdown(text: str) -> Markup:
    """Safe HTML for one message's Markdown. Cached: live pages re-render the same text."""
    if not text:
        return Markup("")
    # Code blocks scroll sideways: focusable, so keyboard users can scroll them too.
    return Markup(sanitize(_md.render(text)).replace("<pre>", '<pre tabindex="0">'))


def highlight_code(code: str, lang: str) -> Markup:
    """A highlighted block for tool arguments and results (JSON mostly)."""
    html = _highlight(code, lang, "")
    return Markup(html) if html else escape(code)


@keep.memoize_text(1_000_000)
def highlight_json(text: str) -> Markup:
    """highlight_code(text, "json"), kept: a session's model config is shown on every visit."""
    return highlight_code(text, "json")


def pygments_css() -> str:
    """Token colours for light (default) and dark (monokai) themes; the container
    backgrounds come from app.css, so Pygments' own background rules are dropped."""

    def rules(style: str, scope: str) -> list[str]:
        defs = HtmlFormatter(style=style, classprefix="").get_style_defs(scope)
        return [
            line
            for line in defs.splitlines()
            if line.startswith(scope + " .") and "linenos" not in line
        ]

    dark_auto = rules("monokai", ":root:not([data-theme=light]) .hl")
    return "\n".join(
        [
            "/* Generated by webui.present.markdown.pygments_css(): Pygments 'default' and 'monokai'. */",
            *rules("default", ".hl"),
            "@media (prefers-color-scheme: dark) {",
            *dark_auto,
            "}",
            *rules("monokai", "[data-theme=dark] .hl"),
            "",
        ]
    )
