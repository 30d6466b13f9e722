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


def test_no_test_module_imports_another():
    """Helpers two test modules share live in tests/support: a test module imported by another
    runs its module-level code (and its fixtures' names) twice, and ties two subjects together."""
    import ast

    tests = ROOT / "tests"
    modules = {p.stem for p in tests.glob("test_*.py")}
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [
                f"{path.relative_to(ROOT)} imports {n}"
                for n in names
                if n.split(".")[0] in modules or n.startswith("tests.test_")
            ]
    assert not found, found
