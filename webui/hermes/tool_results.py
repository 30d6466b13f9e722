"""When a tool result counts as a failure, by the rule of the Hermes that wrote the file.

Hermes marks a failed tool call in its own display (the CLI's ``[error]`` / ``[exit 1]`` tags,
the same classifier its loop guardrail uses). The facts, as Hermes 0.19.0 – 0.22.2 have them:

* a write that landed is never a failure: ``write_file`` whose JSON result has no truthy
  ``error`` and a ``bytes_written`` key, ``patch`` whose result has ``success: true``;
* (0.22) a harness refusal of a redundant call (``guardrail_refusal: true``) is not a failure;
  a result carrying a truthy ``user_summary`` (a denied or timed-out approval) is one;
* ``terminal``: the JSON result's ``exit_code`` present, not null and not 0 — and nothing else
  (a terminal result is never judged by its words);
* any other JSON object: a truthy ``error`` (or, failing that, ``message``) when the object has
  an ``error`` key or says ``success: false``;
* otherwise the words: ``"error"`` or ``"failed"`` (with their quotes) in the first 500
  characters, lower-cased, or a result that starts with ``Error``.

A failure is a **timeout** when the terminal's exit code is 124 (what its runner gives a
command that ran out of time) or its error says it timed out, an **exit** when the terminal
exited non-zero otherwise, else an **error**.

The database layer reads these facts out of each result with SQLite's JSON functions (so a
100 KB tool output never travels to Python); :func:`facts_from_text` reads the same facts from
a string, for tests and for a single result shown on a page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MULTIMODAL_PREFIX = "\x00json:"  # webui.hermes.content: a list of parts, never a failure
HEAD_CHARS = 500  # Hermes looks at this much of a result's text for its words
TIMEOUT_EXIT = 124
FILE_MUTATING = frozenset({"write_file", "patch"})

# Which Hermes's classifier: "0.19" (0.19.0 and 0.20.1 are the same) or "0.22".
GEN_019, GEN_022 = "0.19", "0.22"


def generation(schema_version: int | None) -> str:
    """The classifier of the Hermes that wrote a file of this schema (27 and newer: 0.22's;
    23–26 follow 0.20.1, which has 0.19's)."""
    return GEN_022 if schema_version is not None and schema_version >= 27 else GEN_019


@dataclass(frozen=True)
class JsonValue:
    """One key of a JSON object as SQLite's json_type / json_extract give it: ``kind`` is
    json_type's word ('null', 'true', 'false', 'integer', 'real', 'text', 'array', 'object')
    or None when the key is absent; ``value`` json_extract's value (JSON text for an array or
    an object)."""

    kind: str | None = None
    value: Any = None

    @property
    def present(self) -> bool:
        return self.kind is not None

    @property
    def truthy(self) -> bool:
        """Python's truth of the decoded value."""
        if self.kind in (None, "null", "false"):
            return False
        if self.kind == "true":
            return True
        if self.kind in ("integer", "real"):
            return bool(self.value)
        if self.kind == "text":
            return bool(self.value)
        if self.kind in ("array", "object"):
            return str(self.value).strip() not in ("[]", "{}")
        return bool(self.value)

    def equals_zero(self) -> bool:
        """``value == 0`` in Python (False == 0 too)."""
        return self.kind == "false" or (self.kind in ("integer", "real") and self.value == 0)

    @property
    def text(self) -> str:
        return "" if self.value is None else str(self.value)


KEYS = ("error", "message", "success", "exit_code", "bytes_written", "guardrail_refusal")
KEYS_TEXT = ("user_summary",)


@dataclass(frozen=True)
class ResultFacts:
    """What the rule reads of one tool result."""

    is_null: bool = False  # no content at all
    is_object: bool = False  # the whole text is one JSON object
    head: str = ""  # the first HEAD_CHARS characters
    keys: tuple[tuple[str, JsonValue], ...] = ()

    def key(self, name: str) -> JsonValue:
        for k, v in self.keys:
            if k == name:
                return v
        return JsonValue()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "real"
    if isinstance(value, str):
        return "text"
    return "array" if isinstance(value, list) else "object"


def facts_from_text(text: Any) -> ResultFacts:
    """The facts of a result string (what the SQL in webui.db.digest reads in the database)."""
    if text is None:
        return ResultFacts(is_null=True)
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "replace")
    text = str(text)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    keys: list[tuple[str, JsonValue]] = []
    if isinstance(data, dict):
        for name in (*KEYS, *KEYS_TEXT):
            if name in data:
                v = data[name]
                kind = _kind(v)
                shown = json.dumps(v) if kind in ("array", "object") else v
                keys.append((name, JsonValue(kind, shown)))
    return ResultFacts(is_object=isinstance(data, dict), head=text[:HEAD_CHARS], keys=tuple(keys))


@dataclass(frozen=True)
class Outcome:
    failed: bool
    kind: str = "ok"  # ok / error / exit / timeout

    @property
    def timeout(self) -> bool:
        return self.kind == "timeout"


OK = Outcome(False)


def _landed(tool: str, f: ResultFacts) -> bool:
    """A write_file or patch result that proves the write happened."""
    if tool not in FILE_MUTATING or not f.is_object or f.key("error").truthy:
        return False
    if tool == "write_file":
        return f.key("bytes_written").present
    return f.key("success").kind == "true"


def _says_timed_out(*values: JsonValue) -> bool:
    return any(v.kind == "text" and "timed out" in v.text.lower() for v in values)


def classify(tool: str | None, f: ResultFacts, gen: str = GEN_019) -> Outcome:
    """Did this tool call fail, by the rule of Hermes ``gen`` (see the module's docstring)?"""
    tool = tool or ""
    if f.is_null or _landed(tool, f):
        return OK
    if f.head.startswith(MULTIMODAL_PREFIX):
        return OK  # Hermes saw a list of parts here, never a failure
    error, message = f.key("error"), f.key("message")
    if gen == GEN_022 and f.is_object:
        if f.key("guardrail_refusal").kind == "true":
            return OK
        summary = f.key("user_summary")
        if summary.truthy:
            return Outcome(True, "timeout" if _says_timed_out(summary, error) else "error")
    if tool == "terminal":
        code = f.key("exit_code") if f.is_object else JsonValue()
        if not code.present or code.kind == "null" or code.equals_zero():
            return OK
        timed_out = (code.kind == "integer" and code.value == TIMEOUT_EXIT) or _says_timed_out(
            error
        )
        return Outcome(True, "timeout" if timed_out else "exit")
    if f.is_object:
        err = error if error.truthy else message
        if err.truthy and (f.key("success").kind == "false" or error.present):
            return Outcome(True, "timeout" if _says_timed_out(err) else "error")
    lower = f.head.lower()
    if '"error"' in lower or '"failed"' in lower or f.head.startswith("Error"):
        return Outcome(True, "error")
    return OK


def is_failure(tool: str | None, text: Any, gen: str = GEN_019) -> bool:
    """The rule on a result string (tests; one result on a page)."""
    return classify(tool, facts_from_text(text), gen).failed
