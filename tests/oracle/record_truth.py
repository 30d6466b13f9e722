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
SEARCH_TRUTH = ROOT / "data" / "hermes" / "search_truth.json"
# Words, phrases, prefixes, OR/NOT, hyphens and dots, colons, CJK of 1-3+ characters, mixed
# CJK/ASCII, quotes, malformed input.
SEARCH_QUERIES = [
    "docker",
    '"docker compose"',
    "deploy*",
    "deploy -prod",
    "docker OR kubernetes",
    "docker NOT compose",
    "TODO: fix",
    "TODO:fix",
    "a:b",
    "100%",
    "原因 天气",
    "数据库 v2",
    "数据",
    "库",
    "数据库",
    "向量数据库",
    "错误",
    "部署 docker",
    "docker 部署",
    "数据库 NOT 向量",
    "数据库 OR OR 向量数据库",
    '"原因 天气"',
    "C++",
    "node.js",
    "e-mail",
    '"unclosed',
    "a AND",
    "foo*bar",
    "re-deploy",
    "x",
    "sparrow-bot",
    "kubernetes rollout",
    "NEAR(docker compose)",
    "())",
    "*",
    "error:",
    "it's",
    "docker;",
    "session_search",
    "Deploy*",
    "rollout AND sparrow",
    "このエラー",
]


def _record(venv: Path, ask) -> dict:
    """``ask(hermes)`` on a fresh copy of each recorded fixture."""
    out: dict = {}
    for name in RECORDED_FIXTURES:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            shutil.copyfile(FIXTURES / name, home / "state.db")
            out[name] = ask(Hermes(venv, home))
    return out


def record_lists(venv: Path) -> dict:
    return _record(venv, lambda h: {q: h.call("list", kwargs=kw) for q, kw in LIST_CASES.items()})


def record_searches(venv: Path) -> dict:
    return _record(
        venv,
        lambda h: {q: [x["id"] for x in h.call("search", query=q)] for q in SEARCH_QUERIES},
    )


if __name__ == "__main__":
    venv = ensure_venv()
    TRUTH.write_text(json.dumps(record_lists(venv), indent=1, ensure_ascii=False) + "\n")
    SEARCH_TRUTH.write_text(json.dumps(record_searches(venv), ensure_ascii=False) + "\n")
    print("wrote", TRUTH, SEARCH_TRUTH)
