"""Where the templates and static files are: at the top of a source checkout, or inside the
package when installed from a wheel (pyproject.toml's force-include puts them there)."""

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PKG / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise RuntimeError(f"Logbook's {name}/ folder is missing from {_PKG}")


TEMPLATES = _find("templates")
STATIC = _find("static")
