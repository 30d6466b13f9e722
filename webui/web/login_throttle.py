"""Failed logins slow guessing down without locking the admin out.

A minute's window. An address that failed ``PER_ADDRESS`` times is refused before its token is
checked; so is every address that failed at all once ``OVERALL`` failures were counted from
everyone together (guessers rotating addresses). An address that has not failed in the window
is always checked, so the right token gets in during a flood: a guesser gets one try per
address per minute once the overall budget is spent, and a new address must be found for
each. IPv6 addresses count by their /64 (one machine can rotate inside it freely). Only
failures count; logging in never uses up an allowance. A browser that logged in with the
token before counts apart from its address (webui.web.access: a signed mark it keeps), so
guessers sharing the admin's address (a NAT, a proxy) cannot lock that browser out; behind a
reverse proxy named with ``--trusted-proxy`` the address is the one the proxy forwards for.
"""

from __future__ import annotations

import threading
import time
from collections import deque

from webui.door.turns import address_key  # noqa: F401 - the key the throttle counts by (access.py)

WINDOW_S = 60.0
PER_ADDRESS = 5
OVERALL = 20


class LoginThrottle:
    def __init__(
        self, window_s: float = WINDOW_S, per_address: int = PER_ADDRESS, overall: int = OVERALL
    ):
        self.window_s, self.per_address, self.overall = window_s, per_address, overall
        self._by_address: dict[str, deque[float]] = {}
        self._all: deque[float] = deque()
        self._lock = threading.Lock()

    def _forget_old(self, now: float) -> None:
        cutoff = now - self.window_s
        while self._all and self._all[0] < cutoff:
            self._all.popleft()
        for key in [k for k, q in self._by_address.items() if not q or q[-1] < cutoff]:
            del self._by_address[key]
        for q in self._by_address.values():
            while q and q[0] < cutoff:
                q.popleft()

    def refusal(self, key: str, everyone: bool = True) -> str | None:
        """Why this address may not try now (before any check), or None. ``everyone``
        False: only its own failures count (a browser that logged in before)."""
        with self._lock:
            now = time.monotonic()
            self._forget_old(now)
            mine = self._by_address.get(key)
            if mine and len(mine) >= self.per_address:
                return "Too many wrong tokens from your address: wait a minute and try again."
            if everyone and mine and len(self._all) >= self.overall:
                return (
                    "Too many wrong tokens from several addresses in the last minute: wait a "
                    "minute and try again."
                )
            return None

    def failed(self, key: str) -> None:
        with self._lock:
            now = time.monotonic()
            self._by_address.setdefault(key, deque()).append(now)
            self._all.append(now)

    def reset(self) -> None:
        with self._lock:
            self._by_address.clear()
            self._all.clear()
