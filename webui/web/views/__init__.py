"""Blueprints. Views parse the request, call the database layer's named queries, and pick a
template (or one of its blocks for an htmx request, or JSON for ?format=json)."""

from __future__ import annotations

from typing import Any

from flask import render_template
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
