"""Session titles exactly as Hermes's ``SessionDB.sanitize_title`` cleans them (reference §4).

Compatibility decides one detail: Hermes's cleaning also removes the zero-width joiner inside
emoji sequences (👨‍💻 becomes 👨💻). Logbook does the same, on purpose: a title must be
stored exactly as Hermes would store it, or `hermes -c "<title>"`, `/resume <title>` and the
uniqueness check would treat Logbook's title and Hermes's as two different strings.
"""

from __future__ import annotations

import re

MAX_TITLE_LENGTH = 100
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_INVISIBLE = re.compile("[\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufffc\ufff9-\ufffb]")


class TitleError(ValueError):
    """A title Hermes would refuse; the message is Hermes's own wording."""


def sanitize_title(title: str | None) -> str | None:
    if not title:
        return None
    cleaned = _CONTROL.sub("", title)
    cleaned = _INVISIBLE.sub("", cleaned)
    cleaned = re.sub(r"\s+", " ", cleaned).strip()
    if not cleaned:
        return None
    if len(cleaned) > MAX_TITLE_LENGTH:
        raise TitleError(f"Title too long ({len(cleaned)} chars, max {MAX_TITLE_LENGTH})")
    return cleaned
