from __future__ import annotations


def follow(client, url: str, key: str, max_pages: int = 2000) -> list:
    """Every item of a paged JSON twin, following `next` to the end."""
    items: list = []
    for _ in range(max_pages):
        r = client.get(url)
        assert r.status_code == 200, (url, r.status_code, r.data[:300])
        body = r.get_json()
        items.extend(body[key])
        url = body["next"]
        if not url:
            return items
    raise AssertionError(f"more than {max_pages} pages from {url}")


def csrf_token(client) -> str:
    """The CSRF token every page carries in <meta name="csrf-token">."""
    import re

    html = client.get("/sessions").get_data(as_text=True)
    return re.search(r'<meta name="csrf-token" content="([^"]+)"', html).group(1)


def post(
    client, url: str, data: dict | None = None, htmx: bool = False, browser_form: bool = False, **kw
):
    """A POST as a script sends it (token in X-CSRFToken), as htmx does (htmx=True), or as a
    plain HTML form without JavaScript (browser_form=True: token in the form)."""
    token = csrf_token(client)
    headers = dict(kw.pop("headers", {}))
    data = dict(data or {})
    if browser_form:
        data["csrf_token"] = token
    else:
        headers["X-CSRFToken"] = token
    if htmx:
        headers["HX-Request"] = "true"
    return client.post(url, data=data, headers=headers, **kw)


def fts_consistent(db) -> None:
    """FTS5 integrity-check on every FTS table, and row counts equal to messages."""
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE name IN ('messages_fts', 'messages_fts_trigram')"
            )
        ]
        for t in tables:
            conn.execute(f"INSERT INTO {t}({t}) VALUES ('integrity-check')")
        n = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        for t in tables:
            external = "content=messages" in (
                conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (t,)).fetchone()[0]
                or ""
            ).replace(" ", "")
            if not external:
                assert conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] == n, t
        dangling = conn.execute(
            "SELECT COUNT(*) FROM sessions WHERE parent_session_id IS NOT NULL "
            "AND parent_session_id NOT IN (SELECT id FROM sessions)"
        ).fetchone()[0]
        orphans = conn.execute(
            "SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)"
        ).fetchone()[0]
        assert orphans == 0
        return dangling
    finally:
        conn.close()
