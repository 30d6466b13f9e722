"""Writes tests/support/gaps.py: runs the tests that compare Logbook with the Hermes generations
(tests/test_generation_truth.py, and with --oracle tests/test_oracle_generations.py too) with no
gap marked, and lists each failing case with its assertion message as the xfail reason. Run
from the repository root with Logbook's venv after the recorded truth or Logbook changed:

    .venv/bin/python tests/oracle/find_gaps.py [--oracle]

Review the diff: a gap that disappeared was fixed; a new one is a regression or a new question."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "support" / "gaps.py"
# test function -> the GAPS category its xfails are keyed under
CATEGORY = {
    "test_list_ids_and_order_equal_hermes_sessions_list": "list",
    "test_list_titles_and_previews_equal_hermes": "list fields",
    "test_pinned_only_lists_what_hermes_sessions_pinned_lists": "pinned",
    "test_archived_variants_equal_list_sessions_rich": "archived",
    "test_each_conversation_shows_the_rows_hermes_shows": "conversation",
    "test_system_prompts_are_the_ones_hermes_resolves": "system prompt",
    "test_jsonl_export_equals_hermes_record_for_record": "export",
    "test_export_selection_without_a_filter_exports_what_hermes_exports": "export selection",
    "test_search_hits_equal_hermes": "search",
    "test_usage_by_model_equals_hermes_insights": "usage",
    "test_totals_equal_hermes_sessions_stats": "stats",
    "test_prune_preview_lists_what_hermes_dry_run_lists": "prune preview",
    "test_archive_preview_lists_what_hermes_dry_run_lists": "archive preview",
    "test_changes_are_allowed_on_the_files_hermes_writes": "changes",
    "test_relative_prune_preview_lists_what_hermes_dry_run_lists_now": "live prune",
    "test_relative_archive_preview_lists_what_hermes_dry_run_lists_now": "live archive",
    "test_delete_leaves_the_tables_as_hermes_delete_leaves_them": "delete",
    "test_prune_leaves_the_tables_as_hermes_prune_leaves_them": "prune",
    "test_archive_leaves_the_tables_as_hermes_archive_leaves_them": "archive",
    "test_pin_leaves_the_tables_as_hermes_pin_leaves_them": "pin",
    "test_rename_leaves_titles_and_their_source_as_hermes_leaves_them": "rename",
    "test_logbook_prune_refuses_while_hermes_holds_the_file": "held store",
    "test_the_startup_line_says_what_changes_the_file_allows": "banner",
}


ORACLE_ONLY = {
    "live prune",
    "live archive",
    "delete",
    "prune",
    "archive",
    "pin",
    "rename",
    "held store",
    "banner",
}


def _existing() -> dict:
    """The gaps the file lists now (read before the run turns them off)."""
    namespace: dict = {}
    exec(OUT.read_text(), namespace)  # our own generated file
    return {category: dict(items) for category, items in namespace["GAPS"].items()}


class Collect:
    def __init__(self):
        self.failed: dict = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when != "call" or not report.failed:
            return
        params = dict(item.callspec.params)
        fixture = params.pop("fixture")
        key = (fixture, next(iter(params.values()))) if params else fixture
        self.failed[(CATEGORY.get(item.originalname, item.originalname), key)] = _message(report)


def _message(report) -> str:
    """The assertion's own message (first line), or the exception's last line."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash else str(report.longrepr)
    text = text.split("\n")[0]
    text = re.sub(r"^(AssertionError|KeyError|AssertionError: assert .*?): ", "", text)
    return text[:240]


def _literal(value) -> str:
    """A Python literal in double quotes (JSON string syntax is valid Python)."""
    if isinstance(value, tuple):
        return "(" + ", ".join(_literal(v) for v in value) + ")"
    return json.dumps(value, ensure_ascii=False)


def main() -> int:
    files = ["tests/test_generation_truth.py"]
    if "--oracle" in sys.argv:
        files.append("tests/test_oracle_generations.py")
    kept = (
        {}
        if "--oracle" in sys.argv
        else {c: items for c, items in _existing().items() if c in ORACLE_ONLY}
    )
    os.environ["LOGBOOK_IGNORE_GAPS"] = "1"
    collect = Collect()
    pytest.main(["-q", "-p", "no:cacheprovider", "--tb=no", *files], plugins=[collect])
    lines = [
        '"""The gaps between Logbook and the Hermes generations on their own fixtures (issue 44),',
        "written by tests/oracle/find_gaps.py: category -> {fixture or (fixture, case): the",
        "difference}. Each marks its test xfail(strict=True); a fixed gap makes it XPASS: remove the",
        'line (or rerun the script)."""',
        "",
        "import os",
        "from collections import defaultdict",
        "",
        "GAPS: dict = defaultdict(dict)",
        "if not os.environ.get(\"LOGBOOK_IGNORE_GAPS\"):",
        "    GAPS.update({",
    ]
    by_category: dict = {
        c: [(k, v.removeprefix("issue 44: ")) for k, v in items.items()]
        for c, items in kept.items()
    }
    for (category, key), message in sorted(
        collect.failed.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))
    ):
        by_category.setdefault(category, []).append((key, message))
    for category, items in sorted(by_category.items()):
        lines.append(f"        {_literal(category)}: {{")
        for key, message in items:
            lines.append(f"            {_literal(key)}: {_literal('issue 44: ' + message)},")
        lines.append("        },")
    lines += ["    })", ""]
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}: {sum(len(v) for v in by_category.values())} gaps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
