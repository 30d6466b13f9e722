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
