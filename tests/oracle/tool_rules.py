"""Asks a Hermes venv's own code about tool calls (run with that venv's Python; never imported
by Logbook or its tests): reads JSON from stdin, writes JSON to stdout.

    {"failures": [[tool, result], ...], "patches": [text, ...]}
    -> {"failures": [bool, ...], "patches": [{"ops": [[op, path, new_path, content]], "error"}]}

``failures``: ``agent.display._detect_tool_failure`` (the CLI's [error] tag and the loop
guardrail's classifier); ``patches``: ``tools.patch_parser.parse_v4a_patch``.
"""

import json
import sys

from agent.display import _detect_tool_failure
from tools.patch_parser import parse_v4a_patch

asked = json.load(sys.stdin)
out = {"failures": [bool(_detect_tool_failure(t, r)[0]) for t, r in asked.get("failures", [])]}
patches = []
for text in asked.get("patches", []):
    ops, err = parse_v4a_patch(text)
    rows = []
    for op in ops:
        content = None
        if op.operation.value == "add":
            content = "\n".join(ln.content for h in op.hunks for ln in h.lines if ln.prefix == "+")
        rows.append([op.operation.value, op.file_path, getattr(op, "new_path", None), content])
    patches.append({"ops": rows, "error": err})
out["patches"] = patches
print(json.dumps(out))
