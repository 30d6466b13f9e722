"""Runs of tool calls and the work nobody watched: pure rules for the Reliability section.

* A **retry loop** is three or more calls of the same tool in a row within a session (its
  calls in the order Hermes wrote them: by message, then by place in the message's
  ``tool_calls``), each with the same or near-same arguments as the call before it. Arguments
  are compared by their first SIGNATURE_CHARS characters (their **signature**). Two signatures
  are **near-same** when they are equal; when both are JSON objects, when they hold the same
  keys and values (in any order: the same call, as Hermes's own guardrail sees it), or the same
  keys with exactly one value differing where the two values are both numbers or two texts
  that are *alike*; otherwise (text that is not a JSON object, or was cut) when the whole texts
  are alike. Two texts are alike when their words (runs of letters, digits and ``_``,
  lower-cased, every run of digits read as ``0``) agree on at least NEAR_SAME of the words
  either has (Jaccard index over the sets). So a retry that changed a timeout, an offset or a
  number in a command counts; the same content written to another path, a different command
  or another search query does not.
* **Unattended** work is what no person started: sessions from ``cron`` and from webhooks
  (``webhook``, ``msgraph_webhook``, any source naming a webhook).
* A **cron job** is named by its sessions: Hermes 0.19–0.22 give a cron run the id
  ``cron_<job id>_<YYYYmmdd>_<HHMMSS>`` and the title ``<job name> · <Mon DD HH:MM>`` (a
  ``#N`` after it when the title was taken); the job's name is the title without that tail.
"""

from __future__ import annotations

import json
import re

SIGNATURE_CHARS = 2_000
NEAR_SAME = 0.8
LOOP_MIN = 3

_WORD = re.compile(r"\w+", re.UNICODE)
_DIGIT = re.compile(r"\d+")


def signature(args_text: str | None) -> str:
    """The arguments compared between calls: their first SIGNATURE_CHARS characters."""
    return "" if args_text is None else str(args_text)[:SIGNATURE_CHARS]


def signature_of(head: str | None, length: int | None) -> str:
    """The signature of arguments read as their first SIGNATURE_CHARS characters (``length``:
    their whole length, kept for the callers that know it)."""
    return signature(head)


def words(sig: str) -> frozenset[str]:
    return frozenset(_DIGIT.sub("0", w.lower()) for w in _WORD.findall(sig))


def alike(a: str, b: str) -> bool:
    """Do two texts share at least NEAR_SAME of their words (digits read as 0)?"""
    if a == b:
        return True
    wa, wb = words(a), words(b)
    if not wa and not wb:
        return False
    return len(wa & wb) / len(wa | wb) >= NEAR_SAME


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def near_same(a: str, b: str) -> bool:
    """Are two signatures the same or near-same? (see the module's docstring)"""
    if a == b:
        return True
    try:
        ja, jb = json.loads(a), json.loads(b)
    except (ValueError, RecursionError):
        return alike(a, b)
    if not (isinstance(ja, dict) and isinstance(jb, dict)):
        return alike(a, b)
    if ja.keys() != jb.keys():
        return False
    differ = [k for k in ja if ja[k] != jb[k]]
    if len(differ) != 1:
        return not differ
    x, y = ja[differ[0]], jb[differ[0]]
    if _number(x) and _number(y):
        return True
    return isinstance(x, str) and isinstance(y, str) and alike(x, y)


def loops(calls: list[tuple[str, str]], minimum: int = LOOP_MIN) -> list[tuple[int, int]]:
    """The retry loops in one session's calls [(tool, signature)] in order, as (first index,
    length) pairs. (The digest finds the same runs incrementally, call by call.)"""
    out, start = [], 0
    for i in range(1, len(calls) + 1):
        if (
            i < len(calls)
            and calls[i][0] == calls[i - 1][0]
            and near_same(calls[i][1], calls[i - 1][1])
        ):
            continue
        if i - start >= minimum:
            out.append((start, i - start))
        start = i
    return out


UNATTENDED_SOURCES = ("cron", "webhook", "msgraph_webhook")


def unattended(source: str | None) -> bool:
    s = (source or "").lower()
    return s in UNATTENDED_SOURCES or "webhook" in s


_CRON_ID = re.compile(r"^cron_(.+)_(\d{8})_(\d{6})$")
_CRON_TITLE_TAIL = re.compile(r"\s·\s[A-Z][a-z]{2} \d{1,2} \d{2}:\d{2}(?:\s+#\d+)?$")


def cron_job_id(session_id: str | None) -> str | None:
    """The job a cron session ran, from its id; None for another id."""
    m = _CRON_ID.match(session_id or "")
    return m.group(1) if m else None


def cron_job_name(title: str | None, job_id: str) -> str:
    """The job's name from one of its sessions' titles (else "cron <job id>", as Hermes
    titles a nameless job)."""
    name = _CRON_TITLE_TAIL.sub("", (title or "").strip()).strip()
    return name or f"cron {job_id}"
