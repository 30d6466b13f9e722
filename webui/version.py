"""The one place Logbook's version is written: pyproject.toml reads it ([tool.hatch.version]),
the banner, --version, the page foot and exported pages show it, and the README's changelog
names it first (tests/test_version_and_stop.py checks all of them)."""

__version__ = "0.6.0"
