"""Untrusted text in the shapes that would run or load something if a page let it through as
markup: script, event handlers, javascript: and data: URLs, remote images, styles, a meta
refresh. Pages and exports must show each as text (tests/test_untrusted_content.py,
tests/test_export_page.py); the demo plants its own corpus (webui/demo/corpus.py)."""

from pathlib import Path

from support import sql

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '"><svg onload=alert(1)>',
    "<iframe src=javascript:alert(1)></iframe>",
    '<a href="javascript:alert(1)">x</a>',
    "[click](javascript:alert(1))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![img](http://example.invalid/x.png)",
    "<style>body{display:none}</style>",
    '<div style="position:fixed">x</div>',
    "<meta http-equiv=refresh content='0;url=http://evil.invalid'>",
    "```html\n<script>alert(1)</script>\n```",
    "[x](JaVaScRiPt:alert(1))",
    "<details open ontoggle=alert(1)>",
]


def sessions_with_markup(db: Path) -> list[str]:
    """The sessions of a database (the generated one plants the demo's corpus) holding markup
    or a javascript: URL somewhere a page shows it: messages, tool calls, reasoning, title,
    system prompt, model configuration."""
    return [
        r[0]
        for r in sql(
            db,
            "SELECT session_id FROM messages WHERE content LIKE '%<script%' OR content LIKE "
            "'%onerror%' OR content LIKE '%javascript:%' OR tool_calls LIKE '%<%' OR reasoning "
            "LIKE '%<%' UNION SELECT id FROM sessions WHERE title LIKE '%<%' OR system_prompt "
            "LIKE '%<%' OR model_config LIKE '%<%'",
        )
    ]
