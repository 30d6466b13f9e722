"""The code base stays ruff-clean (lint and format, configured in pyproject.toml): CI runs the
README's test command, so this is how the linter runs in CI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support import ROOT


@pytest.mark.parametrize(
    "args", [["check", "."], ["format", "--check", "."]], ids=["lint", "format"]
)
def test_ruff_is_clean(args):
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
