"""Requests waiting for a worker, taken in turns by client.

First come, first served lets one client with many connections (or many requests pipelined on
one) put a hundred requests ahead of everyone else: two addresses with 32 connections each
kept every other page waiting 4-5 s (issue 49, N-7). Here each client has its own line, and
the lines take turns: a client's next request waits for one request of each other waiting
client at most, however many it sent. Within one client, oldest first.

The client is the peer's address (an IPv6 address by its /64, as the login throttle counts
them), or, when the peer is the reverse proxy the user named (``--trusted-proxy``), the
address that proxy says it forwards for (the last entry of X-Forwarded-For, the one the proxy
itself wrote)."""

from __future__ import annotations

import ipaddress
from collections import deque
from collections.abc import Callable
from typing import Any


def address_key(remote: str | None) -> str:
    """The address a client is counted by: itself, an IPv4 address inside IPv6 as the IPv4
    one, other IPv6 addresses by their /64 (one machine may hold all of it)."""
    try:
        ip = ipaddress.ip_address((remote or "").split("%")[0])
    except ValueError:
        return remote or "?"
    if ip.version == 4:
        return str(ip)
    if ip.ipv4_mapped:
        return str(ip.ipv4_mapped)
    if ip.is_loopback:
        return str(ip)
    return str(ipaddress.ip_network(f"{ip}/64", strict=False))


def forwarded_client(peer: str, forwarded_for: str | None, trusted_proxy: str | None) -> str:
    """Who a request is from: the peer, or for a request through the trusted proxy the
    address that proxy appended to X-Forwarded-For (read from the right: entries further
    left were written by the client and prove nothing). What waitress's own proxy handling
    gives the application as REMOTE_ADDR, so the door and the app count the same clients."""
    if not trusted_proxy or peer != trusted_proxy or not forwarded_for:
        return peer
    last = forwarded_for.split(",")[-1].strip().strip('"')
    if last.startswith("["):
        last = last[1:].split("]")[0]
    elif last.count(":") == 1:  # an IPv4 address with a port
        last = last.split(":")[0]
    try:
        return str(ipaddress.ip_address(last))
    except ValueError:
        return peer


class Turns:
    """Items waiting, in one line per client; ``take`` serves the lines in turn."""

    def __init__(self) -> None:
        self._lines: dict[str, deque[Any]] = {}
        self._order: deque[str] = deque()  # clients with something waiting, next first
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def clients(self) -> set[str]:
        """The clients with something waiting."""
        return set(self._lines)

    def put(self, client: str, item: Any) -> None:
        line = self._lines.get(client)
        if line is None:
            line = self._lines[client] = deque()
            self._order.append(client)
        line.append(item)
        self._count += 1

    def take(self, allowed: Callable[[Any], bool] | None = None) -> Any | None:
        """The oldest item of the first client in turn whose oldest item is allowed (that
        client then goes to the back), or None."""
        for i, client in enumerate(self._order):
            line = self._lines[client]
            if allowed is None or allowed(line[0]):
                item = line.popleft()
                self._count -= 1
                del self._order[i]
                if line:
                    self._order.append(client)
                else:
                    del self._lines[client]
                return item
        return None

    def oldest(self, key: Callable[[Any], float]) -> Any | None:
        """The item that has waited longest of all (the head of some line)."""
        heads = [line[0] for line in self._lines.values()]
        return min(heads, key=key) if heads else None

    def remove(self, item: Any) -> None:
        for client, line in self._lines.items():
            if line and line[0] is item:
                line.popleft()
                self._count -= 1
                if not line:
                    del self._lines[client]
                    self._order.remove(client)
                return
        raise ValueError("not a line's head")

    def drain(self) -> list[Any]:
        """Everything waiting, lines one after another (shutdown)."""
        items = [item for line in self._lines.values() for item in line]
        self._lines.clear()
        self._order.clear()
        self._count = 0
        return items
