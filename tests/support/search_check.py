"""Logbook's search hits against Hermes's for one query, shared by tests/test_search.py (the
recorded answers) and the oracle tier's test_oracle_hermes.py (Hermes asked live)."""

from __future__ import annotations

from urllib.parse import quote

from support import sql
from support.http import follow


def search_matches_hermes(client, db, q: str, theirs: list[int]) -> str:
    """Logbook's hits for ``q`` equal Hermes's, in Hermes's order; or Hermes finds nothing
    because FTS5 cannot read the query, Logbook says so in words and every hit it offers
    instead holds each typed word. Returns which of the two held."""
    body = client.get("/search", query_string={"q": q, "format": "json"}).get_json()
    ours = [r["message_id"] for r in follow(client, f"/search?format=json&q={quote(q)}", "results")]
    if ours == theirs:
        return "equal"
    assert theirs == [], (q, len(ours), len(theirs))
    assert "Hermes 0.19 finds nothing" in (body["notice"] or ""), (q, body["notice"])
    words = [w.lower() for w in q.split() if any(ch.isalnum() for ch in w)]
    for (text,) in sql(
        db,
        f"SELECT lower(COALESCE(content,'') || ' ' || COALESCE(tool_name,'') || ' ' || "
        f"COALESCE(tool_calls,'')) FROM messages WHERE id IN ({','.join('?' * len(ours))})",
        tuple(ours),
    ):
        assert all(w in text for w in words), (q, text[:200])
    return "more"
