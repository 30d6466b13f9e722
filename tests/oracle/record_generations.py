"""Records what each newer Hermes generation answers on its own fixtures into
``tests/data/hermes/<fixture>.json``: the fast path the everyday tests compare with (the oracle
tier checks that the recording still equals live Hermes). Hermes's clock is pinned to
``cases.NOW`` so relative filters answer the same on any day. Run from the repository root with
Logbook's venv (it builds or reuses the oracle venvs):

    .venv/bin/python tests/oracle/record_generations.py [fixture ...]

What one file holds (see tests/data/hermes/README.md): list ids and order (CLI variants and
list_sessions_rich variants with their fields), pinned ids and order, every session's displayed
row ids, system prompts (by digest, texts once), the JSONL export (order, keys, each record's
digest and row flags; a few records verbatim), searches (ids, route), the sanitizer's output,
usage by model (InsightsEngine and the dashboard's analytics), `sessions stats`, and the ids
prune and archive --dry-run list for each filter combination."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oracle import cases  # noqa: E402
from support import DATA, FIXTURES  # noqa: E402
from support.oracle import GENERATIONS, Hermes, dry_run_ids, ensure_venv, listed_ids  # noqa: E402

OUT = DATA / "hermes"


def digest(value) -> str:
    """sha256 of a value's canonical JSON (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hermes_for(name: str, home: Path) -> Hermes:
    key, cjk = cases.FIXTURES[name]
    gen = GENERATIONS[key]
    shutil.copyfile(FIXTURES / name, home / "state.db")
    return Hermes(ensure_venv(gen), home, gen, cjk=cjk)


def parse_stats(out: str) -> dict:
    return {
        "sessions": int(re.search(r"Total sessions: (\d+)", out).group(1)),
        "messages": int(re.search(r"Total messages: (\d+)", out).group(1)),
        "per_source": {
            m[0]: int(m[1]) for m in re.findall(r"^\s+(\S+): (\d+) sessions$", out, re.M)
        },
    }


def export_truth(records: list[dict]) -> dict:
    """The JSONL export, compactly: record order, key order, and per record its digest, its rows'
    ids with their active/compacted flags, and its timings' digest; a few records verbatim."""
    return {
        "order": [r["id"] for r in records],
        "session_keys": list(records[0]) if records else [],
        "message_keys": next((list(r["messages"][0]) for r in records if r.get("messages")), []),
        "records": {
            r["id"]: {
                "sha256": digest(r),
                "rows": [
                    [m.get("id"), m.get("active"), m.get("compacted")]
                    for m in r.get("messages", [])
                ],
            }
            for r in records
        },
        "verbatim": {r["id"]: r for r in records if r["id"] in cases.VERBATIM_EXPORTS},
    }


def record(name: str) -> dict:
    key, _ = cases.FIXTURES[name]
    gen = GENERATIONS[key]
    now = cases.NOW
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        hermes = hermes_for(name, home)
        export_path = home / "export.jsonl"

        def cli(*argv):
            return {"op": "cli", "argv": list(argv), "now": now}

        requests = (
            [cli("sessions", "list", "--limit", "100000", *a) for a in cases.LIST_CLI.values()]
            + [cli("sessions", "pinned", "--json"), cli("sessions", "stats")]
            + [cli("sessions", "prune", *a, "--dry-run") for a in cases.PRUNE.values()]
            + [cli("sessions", "archive", *a, "--dry-run") for a in cases.ARCHIVE.values()]
            + [cli("sessions", "export", str(export_path))]
        )
        answers = hermes.call("batch", requests=requests, now=now)
        it = iter(answers)
        lists = {n: listed_ids(next(it)["stdout"]) for n in cases.LIST_CLI}
        pinned_out = next(it)
        stats = parse_stats(next(it)["stdout"])
        prune = {n: _dry_run(next(it)) for n in cases.PRUNE}
        archive = {n: _dry_run(next(it)) for n in cases.ARCHIVE}
        next(it)
        records = [
            json.loads(line) for line in export_path.read_text().splitlines() if line.strip()
        ]

        queries = list(cases.SEARCHES.items())
        data_requests = (
            [{"op": "rich_list", "kwargs": kw, "now": now} for kw in cases.LIST_RICH.values()]
            + [{"op": "display", "now": now}, {"op": "system_prompts", "now": now}]
            + [
                {"op": "search_full", "query": q, "kwargs": kw, "now": now}
                for _, (q, kw) in queries
            ]
            + [{"op": "sanitize", "queries": [q for _, (q, _kw) in queries], "now": now}]
            + [{"op": "insights", "days": d, "now": now} for d in cases.INSIGHT_DAYS]
            + [{"op": "usage", "days": d, "now": now} for d in cases.USAGE_DAYS]
        )
        answers = iter(hermes.call("batch", requests=data_requests, now=now))
        rich = {n: next(answers) for n in cases.LIST_RICH}
        display = next(answers)
        prompts = next(answers)
        searches = {n: next(answers) for n, _ in queries}
        sanitized = dict(zip([n for n, _ in queries], next(answers), strict=True))
        insights = {str(d): _ties_sorted(next(answers)) for d in cases.INSIGHT_DAYS}
        usage = {str(d): _ties_sorted(next(answers)) for d in cases.USAGE_DAYS}

    texts = {digest(p): p for p in prompts.values() if p is not None}
    return {
        "fixture": name,
        "hermes": gen.version,
        "package": gen.requirement,
        "schema": gen.schema,
        "now": now,
        "list_cli": lists,
        # every field for the default variant; the other variants by their ids and order
        "list_rich": {
            n: (rows if n == "default" or rows is None else [r["id"] for r in rows])
            for n, rows in rich.items()
        },
        "pinned": json.loads(pinned_out["stdout"]) if pinned_out["code"] == 0 else None,
        "display": {
            sid: [
                [m["id"], m.get("active"), m.get("compacted"), m.get("display_kind")] for m in rows
            ]
            for sid, rows in display.items()
        },
        "system_prompts": {
            sid: (digest(p) if p is not None else None) for sid, p in prompts.items()
        },
        "system_prompt_texts": texts,
        "export_jsonl": export_truth(records),
        "search": {
            n: {"route": a["route"], "ids": [h["id"] for h in a["hits"]]}
            for n, a in searches.items()
        },
        "search_queries": {n: {"query": q, "kwargs": kw} for n, (q, kw) in queries},
        "sanitized": sanitized,
        "insights": insights,
        "usage": usage,
        "stats": stats,
        "prune_dry_run": prune,
        "archive_dry_run": archive,
    }


def _ties_sorted(report: dict) -> dict:
    """Tools with equal counts come out of Hermes in hash order (a set walk before
    ``Counter.most_common``): sorted by name within a count, the record is the same every run."""
    tools = report.get("tools")
    if isinstance(tools, list):
        report["tools"] = sorted(tools, key=lambda t: (-(t.get("count") or 0), str(t.get("tool"))))
    return report


def _dry_run(answer: dict):
    """The ids a --dry-run lists, or None when this generation rejects the options."""
    if answer["code"] not in (0, None):
        return None
    return dry_run_ids(answer["stdout"])


def dumps(truth: dict) -> str:
    """JSON with one line per entry of each top-level object: small diffs, a few hundred KB."""
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    lines = ["{"]
    for i, (key, value) in enumerate(truth.items()):
        end = "," if i < len(truth) - 1 else ""
        if isinstance(value, dict) and value:
            lines.append(f"{json.dumps(key)}: {{")
            items = list(value.items())
            for j, (k, v) in enumerate(items):
                sep = "," if j < len(items) - 1 else ""
                lines.append(
                    f" {json.dumps(k, ensure_ascii=False)}: {json.dumps(v, **compact)}{sep}"
                )
            lines.append("}" + end)
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value, **compact)}{end}")
    return "\n".join(lines) + "\n}\n"


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[1:] or list(cases.FIXTURES):
        truth = record(name)
        path = OUT / (Path(name).stem + ".json")
        text = dumps(truth)
        assert json.loads(text) == json.loads(json.dumps(truth))
        path.write_text(text)
        print("wrote", path, path.stat().st_size, "bytes")
