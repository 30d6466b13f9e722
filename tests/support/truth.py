"""What Hermes 0.19.0, 0.20.1 and 0.22.2 answered on their own fixtures, as recorded by
tests/oracle/record_generations.py into tests/data/hermes/<fixture>.json, and the known gaps
between Logbook and those answers (issue 44).

A gap is a concrete difference Logbook still has: the tests that meet one are marked
``xfail(strict=True)`` with the difference as the reason, so the list below is the list of
what remains, and a test flips to a failure (XPASS) the day the difference is fixed: delete its
line then."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

import pytest

from . import DATA

TRUTH = DATA / "hermes"


@cache
def truth(fixture: str) -> dict:
    return json.loads((TRUTH / (Path(fixture).stem + ".json")).read_text())


def digest(value) -> str:
    """The recorder's digest: sha256 of canonical JSON (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cases(gaps: dict, fixtures, extra=None):
    """pytest params over ``fixtures`` (and each item of ``extra``), an ``xfail(strict=True)``
    on those ``gaps`` names, keyed ``fixture`` or ``(fixture, item)``."""
    params = []
    for fixture in fixtures:
        for item in extra if extra is not None else [None]:
            key = fixture if item is None else (fixture, item)
            values = (fixture,) if item is None else (fixture, item)
            marks = [pytest.mark.xfail(strict=True, reason=gaps[key])] if key in gaps else []
            ident = fixture if item is None else f"{fixture}-{item}"
            params.append(pytest.param(*values, marks=marks, id=ident))
    return params
