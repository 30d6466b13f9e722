"""Records what Hermes 0.19.0 answers on the schema-22 fixtures into tests/data/hermes/, the
fast path the everyday tests compare with (the oracle tier checks that the recording still
equals live Hermes). Run from the repository root with Logbook's venv:

    .venv/bin/python tests/oracle/record_truth.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from support import FIXTURES  # noqa: E402
from support.oracle import Hermes, ensure_venv  # noqa: E402

LIST_CASES = {
    "": {"exclude_sources": ["tool"]},
    "source=telegram": {"source": "telegram"},
    "source=tool": {"source": "tool"},
    "archived=include": {"exclude_sources": ["tool"], "include_archived": True},
    "archived=only": {"exclude_sources": ["tool"], "archived_only": True},
}
RECORDED_FIXTURES = ("hermes-v22.db", "hermes-v22-extended.db")
TRUTH = ROOT / "data" / "hermes" / "list_truth.json"


def record_lists(venv: Path) -> dict:
    out: dict = {}
    for name in RECORDED_FIXTURES:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            shutil.copyfile(FIXTURES / name, home / "state.db")
            hermes = Hermes(venv, home)
            out[name] = {query: hermes.call("list", kwargs=kw) for query, kw in LIST_CASES.items()}
    return out


if __name__ == "__main__":
    TRUTH.write_text(json.dumps(record_lists(ensure_venv()), indent=1, ensure_ascii=False) + "\n")
    print("wrote", TRUTH)
