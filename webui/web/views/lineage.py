"""Lineage graphs, and resolving a title the way Hermes does (/t/<title>)."""

from __future__ import annotations

from flask import Blueprint, abort, g, jsonify, redirect, url_for

from webui.db.sessions.lineage import tree_across
from webui.db.sql import SESSION_FIGURES
from webui.db.stores.store_set import LIVE
from webui.present.lineage_layout import clip, layout
from webui.present.rows import session_label, with_origin
from webui.web.logbooks import get_logbook, live_logbook
from webui.web.stores import elsewhere
from webui.web.views import elsewhere_or_404, query_args, render_page, wants_json

bp = Blueprint("lineage", __name__)

NODE_KEYS = (
    "id",
    "parent_session_id",
    "title",
    "source",
    "model",
    "started_at",
    "ended_at",
    "end_reason",
    "message_count",
    "tool_call_count",
    "api_call_count",
    *SESSION_FIGURES,
    "last_active",
    "edge",
    "origin",
    "store",
)


def node_json(n: dict) -> dict:
    out = {k: n.get(k) for k in NODE_KEYS}
    out["tokens"] = sum(
        n.get(k) or 0
        for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    )
    out["cost"] = (
        n["actual_cost_usd"]
        if n.get("actual_cost_usd") is not None
        else (n.get("estimated_cost_usd") or 0)
    )
    return out


@bp.get("/sessions/<session_id>/lineage")
def lineage(session_id: str):
    lb = get_logbook()
    if lb.sessions.brief(session_id) is None:
        matches = lb.sessions.resolve_prefix(session_id)
        if len(matches) == 1:
            return redirect(url_for("lineage.lineage", session_id=matches[0]["id"], **query_args()))
        # Kept in an archive or a replica: its lineage opens there.
        return elsewhere_or_404("lineage.lineage", session_id)
    everywhere = elsewhere(live_logbook(), g.get("store_pin") or LIVE)
    if everywhere:
        # A family split across stores (an archive holds its older segments): followed into
        # every store, each node naming where it is kept.
        here = g.get("store_pin") or LIVE
        tree = tree_across(
            [(here, lb), *((s.name, s.logbook) for s in everywhere)], session_id, here
        )
    else:
        tree = lb.lineage.tree(session_id)
    for n in tree.nodes:
        n.setdefault("store", g.get("store_pin") or LIVE)
        with_origin(n)
    if wants_json():
        return jsonify(
            {
                "root": tree.root,
                "current": session_id,
                "nodes": [node_json(n) for n in tree.nodes],
                "totals": tree.totals,
                "dangling_parent": tree.dangling_parent,
                "cycle": tree.cycle,
                "truncated": tree.truncated,
            }
        )
    for n in tree.nodes:
        n["label"] = session_label(n)
        n["short"] = clip(n["label"])
    graph = layout(tree.nodes, tree.root, session_id)
    current = tree.by_id.get(session_id)
    return render_page(
        "lineage.html",
        {},
        tree=tree,
        graph=graph,
        current=current,
        session_id=session_id,
        label=current["label"] if current else session_id,
    )


@bp.get("/t/<path:title>")
def by_title(title: str):
    lb = get_logbook()
    sid = lb.lineage.resolve_title(title)
    if sid is None:
        abort(404, description=f"No session is titled “{title}” (or “{title} #N”).")
    return redirect(url_for("sessions.view_session", session_id=sid))
