"""Untrusted text in the shapes that would run or load something if a page let it through as
markup: script, event handlers, javascript: and data: URLs, remote images, styles, a meta
refresh. Pages and exports must show each as text (tests/test_untrusted_content.py,
tests/test_export_page.py); the demo plants its own corpus (webui/demo/corpus.py)."""

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
