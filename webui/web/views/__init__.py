"""Blueprints. Views parse the request, call the database layer's named queries, and pick a
template (or one of its blocks for an htmx request, or JSON for ?format=json)."""

from __future__ import annotations

from typing import Any, NoReturn

from flask import abort, render_template
from htmx_flask import request
from jinja2_fragments.flask import render_block


def wants_json() -> bool:
    return request.args.get("format") == "json"


def render_page(template: str, fragments: dict[str, str], **context: Any) -> str:
    """The whole page, or for an htmx request the block its target names ("template
    fragments": one template per page, each swappable part a named block)."""
    target = request.htmx.target if request.htmx else None
    block = fragments.get(target or "")
    if block:
        return render_block(template, block, **context)
    return render_template(template, **context)


def query_args() -> dict[str, list[str]]:
    """The request's query as url_for arguments, without url_for's own reserved names
    (_anchor, _external, _scheme, _method): a visitor's query must not steer those."""
    return {k: v for k, v in request.args.to_dict(flat=False).items() if not k.startswith("_")}


# Read on every page: the output format and the chosen profile (webui.web.profiles).
EVERY_PAGE_PARAMS = frozenset({"format", "profile"})


def refuse_unknown(allowed: frozenset[str] | set[str]) -> None:
    """A parameter this route does not read is an error the user sees (400, naming it),
    never a filter silently dropped."""
    unknown = sorted(
        k for k in request.args if k not in allowed and k not in EVERY_PAGE_PARAMS and k[:1] != "_"
    )
    if unknown:
        from webui.db import BadRequest

        names = ", ".join(repr(k) for k in unknown[:5])
        raise BadRequest(
            f"This page has no option {names}, so nothing was filtered by it. The options "
            "every list and export shares are in the README's “Selection” section."
        )


def no_session(session_id: str) -> NoReturn:
    """The one answer to an id no store holds: 404, naming it."""
    abort(404, description=f"No session has the id “{session_id}”.")
