"""One very long conversation, as Hermes 0.20 and 0.22 store it, and the viewer on it.

Builds (once) a copy of the schema-31 and schema-26 fixtures holding one more session of
``--messages`` rows (default 100,000) in a realistic mix (user questions, assistant turns with
tool calls, tool results of a few hundred bytes to 50 KB), compacted in place every
``--every`` rows the way each generation does it (every live row flagged compacted, a summary
row and a carried tail inserted live; 0.22 also retires the tail's originals and adds a
model-only merge of the two newest user turns), with a few ``display_kind = 'hidden'`` rows.
On schema 31 Hermes's own triggers keep ``display_order`` (the display identity is written the
way Hermes writes it: equal for equal messages). Then it times, in one process through Flask's
test client, the viewer's first page, pages deep in the conversation (HTML, JSON, the toggle
that shows every stored row), "go to message N" and the page census on a cold and a warm
cache, and prints a Markdown table.

    .venv/bin/python benchmarks/long_conversation.py                # ~2 min the first time
    .venv/bin/python benchmarks/long_conversation.py --messages 20000 --repeat 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webui import create_app  # noqa: E402

FIXTURES = ROOT / "tests" / "data" / "fixtures"
DATA = ROOT / "benchmarks" / "data"
SID = "long_conversation"
SUMMARY = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below."
)


def _identity(row: dict) -> bytes:
    # Equal for equal messages, as Hermes's display identity (any stable digest of the display
    # key serves: the triggers only compare identities).
    key = [
        row["role"],
        row["content"],
        row["timestamp"],
        row.get("tool_call_id"),
        row.get("tool_calls"),
        row.get("tool_name"),
    ]
    return hashlib.sha256(json.dumps(key).encode()).digest()


def build(schema: int, messages: int, every: int, out: Path, seed: int = 5) -> Path:
    if out.exists():
        return out
    src = FIXTURES / ("hermes-v31-fresh.db" if schema == 31 else "hermes-v26-fresh.db")
    tmp = out.with_suffix(".part")
    shutil.copyfile(src, tmp)
    rnd = random.Random(seed)
    conn = sqlite3.connect(tmp)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    t0 = 1_780_000_000.0
    conn.execute(
        "INSERT INTO sessions (id, source, model, started_at, title, message_count) "
        "VALUES (?, 'cli', 'anthropic/claude-sonnet-4.6', ?, 'A very long conversation', 0)",
        (SID, t0),
    )
    ts = t0
    live: list[dict] = []
    written = 0
    n_call = 0

    def insert(row: dict) -> int:
        row = {"session_id": SID, "active": 1, "compacted": 0, **row}
        if "display_identity" in cols:
            row["display_identity"] = _identity(row)
        keys = [k for k in row if k in cols]
        cur = conn.execute(
            f"INSERT INTO messages ({', '.join(keys)}) VALUES ({', '.join('?' * len(keys))})",
            [row[k] for k in keys],
        )
        row["id"] = cur.lastrowid
        return row

    def turn() -> list[dict]:
        nonlocal ts, n_call
        out = []
        ts += rnd.uniform(5, 60)
        out.append(
            {
                "role": "user",
                "content": f"Question {written}: " + "why " * rnd.randint(3, 60),
                "timestamp": ts,
            }
        )
        for _ in range(rnd.randint(0, 3)):
            n_call += 1
            call = json.dumps(
                [
                    {
                        "id": f"call_{n_call}",
                        "type": "function",
                        "function": {
                            "name": "terminal",
                            "arguments": json.dumps({"command": f"ls {n_call}"}),
                        },
                    }
                ]
            )
            ts += rnd.uniform(1, 10)
            out.append({"role": "assistant", "content": None, "tool_calls": call, "timestamp": ts})
            size = rnd.choice([200, 800, 2_000, 4_000, 8_000] * 9 + [50_000])
            ts += rnd.uniform(1, 5)
            out.append(
                {
                    "role": "tool",
                    "content": ("x" * 79 + "\n") * (size // 80),
                    "tool_call_id": f"call_{n_call}",
                    "tool_name": "terminal",
                    "timestamp": ts,
                }
            )
        ts += rnd.uniform(2, 30)
        out.append(
            {
                "role": "assistant",
                "content": "Answer: " + "because " * rnd.randint(5, 200),
                "timestamp": ts,
            }
        )
        if rnd.random() < 0.01:
            ts += 1
            out.append(
                {
                    "role": "user",
                    "content": "[delegation result delivered to the model only]",
                    "timestamp": ts,
                    "display_kind": "hidden",
                }
            )
        return out

    next_compaction = every
    while written < messages:
        for row in turn():
            live.append(insert(row))
            written += 1
        if written >= next_compaction and messages - written > every // 2:
            next_compaction += every
            tail = live[-4:]
            conn.execute(
                "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ? AND active = 1",
                (SID,),
            )
            ts += 30
            summary = {
                "role": "user",
                "content": f"{SUMMARY}\n\nSummary of {written} messages.",
                "timestamp": ts,
            }
            if "_compressed_summary" in cols:
                summary["_compressed_summary"] = 1
            live = [insert(summary)]
            for old in tail:
                copy = {
                    k: old[k]
                    for k in (
                        "role",
                        "content",
                        "timestamp",
                        "tool_call_id",
                        "tool_calls",
                        "tool_name",
                    )
                    if k in old
                }
                live.append(insert(copy))
            written += 1 + len(tail)
            if schema >= 27:
                # 0.22: the carried originals leave the display set (neither shown nor found
                # twice), and a model-only merge of the two newest user turns.
                conn.execute(
                    f"UPDATE messages SET active = 0, compacted = 0 WHERE id IN "
                    f"({', '.join(str(r['id']) for r in tail)})"
                )
                users = [r for r in live if r["role"] == "user"][-2:]
                if len(users) == 2:
                    live.append(
                        insert(
                            {
                                "role": "user",
                                "timestamp": ts + 1e-6,
                                "content": "\n\n".join(u["content"] for u in users),
                                "display_metadata": '{"model_only": true}',
                            }
                        )
                    )
                    written += 1
    conn.execute(
        "UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE session_id = ? "
        "AND active = 1) WHERE id = ?",
        (SID, SID),
    )
    conn.commit()
    conn.close()
    tmp.rename(out)
    return out


def _time(client, url: str, repeat: int) -> tuple[float, int]:
    times = []
    status = 0
    for _ in range(repeat):
        t = time.perf_counter()
        # A redirect (go to message n, a row Hermes does not show) is followed: its page counts.
        r = client.get(url, follow_redirects=True)
        times.append((time.perf_counter() - t) * 1000)
        status = r.status_code
        assert status == 200, (url, status)
    return statistics.median(times), status


def measure(db: Path, repeat: int) -> list[tuple[str, float, float]]:
    inst = Path(tempfile.mkdtemp(prefix="long-conv-"))
    app = create_app({"LOGBOOK_DB": str(db), "TESTING": True}, instance_path=str(inst))
    client = app.test_client()
    conn = sqlite3.connect(db)
    ids = [
        r[0]
        for r in conn.execute("SELECT id FROM messages WHERE session_id = ? ORDER BY id", (SID,))
    ]
    conn.close()
    mid, late = ids[len(ids) // 2], ids[-len(ids) // 10]
    base = f"/sessions/{SID}"
    rows = []
    pages = [
        ("first page (cold census)", base),
        ("first page", base),
        ("page at the middle (?at=)", f"{base}?at={mid}"),
        ("page near the end (?at=)", f"{base}?at={late}"),
        ("last page (end=1)", f"{base}?end=1"),
        ("go to message n (and its page)", f"{base}?n={len(ids) // 3}"),
        ("every stored row, middle (rewound=1)", f"{base}?rewound=1&at={mid}"),
        ("JSON, first page", f"{base}?format=json"),
        ("JSON, Hermes's rows only (rewound=0)", f"{base}?format=json&rewound=0&at={mid}"),
    ]
    for name, url in pages:
        first, _ = _time(client, url, 1)
        warm, _ = _time(client, url, repeat)
        rows.append((name, first, warm))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--every", type=int, default=5_000, help="compact in place every N rows")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    DATA.mkdir(parents=True, exist_ok=True)
    print(
        f"| page ({args.messages:,} messages, compacted every {args.every:,}) | "
        "schema 31: first ms | warm ms | schema 26: first ms | warm ms |"
    )
    print("|---|---:|---:|---:|---:|")
    results = {}
    for schema in (31, 26):
        out = DATA / f"long-{schema}-{args.messages}-{args.every}.db"
        t = time.perf_counter()
        build(schema, args.messages, args.every, out)
        print(
            f"<!-- schema {schema}: {out.name} ready in {time.perf_counter() - t:.0f} s, "
            f"{out.stat().st_size / 1e6:.0f} MB -->"
        )
        results[schema] = measure(out, args.repeat)
    for (name, f31, w31), (_n, f26, w26) in zip(results[31], results[26], strict=True):
        print(f"| {name} | {f31:.0f} | {w31:.0f} | {f26:.0f} | {w26:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
