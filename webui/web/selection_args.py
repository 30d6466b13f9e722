"""The selection a prune, archive or cold-storage page asks for (its URL, its form or its
confirmation), read with the meaning every filter has for the Hermes that wrote the file
(webui.hermes.selection, webui.hermes.rules)."""

from __future__ import annotations

import math
import time
from dataclasses import replace

from flask import abort

from webui.db import BadRequest
from webui.hermes.selection import (
    PARAMS,
    TIME_PARAMS,
    Selection,
    SelectionError,
    selection_from_args,
)
from webui.web.logbooks import get_logbook


def selection(args, command: str) -> Selection:
    """The selection of a prune or archive, with the meaning every filter has for the Hermes
    that wrote the file. A ``cutoff`` (Logbook 0.2's preview) is one more "older than"
    bound, never later than the "older than" it came with allows."""
    args = form_filled(args)
    try:
        sel = selection_from_args(
            args, command=command, inactivity=get_logbook().actions.rules.age_is_inactivity
        )
    except SelectionError as exc:
        raise BadRequest(str(exc)) from None
    raw = args.get("cutoff")
    if raw:
        try:
            cutoff = float(raw)
        except ValueError:
            cutoff = float("nan")
        days = args.get("older_than") or "90"
        try:
            latest = time.time() - float(days) * 86400
        except ValueError:
            latest = time.time()
        if not math.isfinite(cutoff) or cutoff > latest + 60:
            abort(
                400,
                description="cutoff must be a timestamp no later than the “older than” days allow.",
            )
        before = cutoff if sel.active_before is None else min(cutoff, sel.active_before)
        sel = replace(sel, active_before=before)
    return sel


# A filter form sends every box, the empty ones as "": there an empty box means "not filled"
# (a bare prune keeps its 90 days). A URL or script means what it says: `title=` is Hermes's
# `--title ""` (matches everything, and a filter was given). The forms say which they are.
FROM_FORM = "from_form"


def form_filled(args):
    """The filters a form filled in (``from_form=1``), the empty boxes left out; a URL's
    parameters as they came."""
    if args.get(FROM_FORM) in (None, ""):
        return args
    kept = args.copy()
    for key in list(kept.keys()):
        if key == FROM_FORM or all(v == "" for v in kept.getlist(key)):
            kept.poplist(key)
    return kept


def chosen(args) -> bool:
    """Has the user chosen anything yet? (The page opens with nothing armed.) A filter a URL
    gives empty counts, as on Hermes's command line."""
    args = form_filled(args)
    names = (*TIME_PARAMS, *PARAMS, "session", "cutoff")
    return any(args.get(k) not in (None, "") for k in names) or any(
        args.get(k) == "" and PARAMS[k][1] is str for k in PARAMS
    )


def spared_json(preview: dict) -> dict:
    return dict(preview.get("spared") or {})


def cutoff(sel: Selection) -> float | None:
    """The preview's upper time bound (the earlier of "older than" and "before")."""
    bounds = [b for b in (sel.active_before, sel.started_before) if b is not None]
    return min(bounds) if bounds else None
