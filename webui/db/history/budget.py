"""When a page over many stores stops asking them: what it leaves of its deadline for its own
last queries (the live file's menus, the page's rendering). The services take
``short_of_time`` as an argument (a test or a background job gives its own); this is the
request deadline's (webui.db.deadline)."""

from __future__ import annotations

from webui.db import deadline as request_deadline

RESERVE_S = 1.0

OUT_OF_TIME = "not asked: this page ran out of time (the other stores answered)"


def short_of_time() -> bool:
    """Is this request's deadline too close to ask one more store?"""
    left = request_deadline.remaining()
    return left is not None and left < RESERVE_S
