"""Blueprints. Views parse the request, call the database layer's named queries (or, over
several stores or profiles, its services in webui.db.history), and pick a template (or one of
its blocks for an htmx request, or JSON for ?format=json). An unknown session has one answer
here: no_session, or elsewhere_or_404 where another store may hold it."""

from __future__ import annotations

from typing import Any, NoReturn

from flask import abort, g, redirect, render_template, url_for
from htmx_flask import request
from jinja2_fragments.flask import render_block

from webui.db.stores.store_set import LIVE
from webui.web.logbooks import live_logbook
from webui.web.stores import find_session


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


def no_session(session_id: str, description: str | None = None) -> NoReturn:
    """The one answer to an id no store holds: 404, naming it."""
    abort(404, description=description or f"No session has the id “{session_id}”.")


def elsewhere_or_404(endpoint: str, session_id: str, description: str | None = None):
    """A session the store a page reads does not hold: the same page in the store that holds
    it (an archive, another machine's replica), unless ``store=`` pins the request; else 404
    naming it (``description``: the page's own words)."""
    if not g.get("store_pin"):
        holder = find_session(live_logbook(), session_id)
        if holder is not None and holder.name != LIVE:
            return redirect(
                url_for(endpoint, session_id=session_id, **{**query_args(), "store": holder.name})
            )
    no_session(session_id, description)
