"""How the session store keeps what it computed: values shared between requests while no
session appears or goes (SQLite's data_version and the sessions token), served stale for a
few seconds while one background refresh runs, dropped by Logbook's own changes. A mixin of
SessionStore; its state is set up in SessionStore.__init__."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Any

from flask import current_app, g, has_app_context, has_request_context

from webui import threads
from webui.db import deadline as request_deadline
from webui.db.session_query import (
    AGED_MAX_S,
    REFRESHERS,
    SHARED_TTL_S,
    SOFT_S,
    STALE_MAX_S,
)
from webui.db.sql import SESSION_FIGURES, decode_cursor, encode_cursor, is_cursor  # noqa: F401 - the list's cursor

# Slots kept across restarts (see Keeping._from_disk): Hermes's chains and every shared
# whole-table figure (menus, counts), each written at most once a minute, DISK_SLOTS a run.
PERSISTED = frozenset({"chains", "models", "sources"})
DISK_EVERY_S = 60.0
DISK_SLOTS = 48


class Keeping:
    """Kept values of a SessionStore (``self.r``: its Reader)."""

    def invalidate(self, soft: bool = False) -> None:
        """After one of Logbook's own writes: nothing cached may outlive it. ``soft``: one
        batch of a prune still running. Its rows are read fresh as always, but the figures
        that scan every session (counts, facets, compression chains: a third of a second on a
        million messages) are not recomputed by every request after every batch: for
        SOFT_S after the last batch, requests get the previous figures while one background
        thread works out the new ones."""
        self._order_cache.clear()
        self._token_kept = None
        if soft:
            self._soft_until = time.monotonic() + SOFT_S
            return
        self._soft_until = 0.0
        self._cache.clear()

    def _fresh_or_stale(self, slot: str, key: Any, compute, ttl: float, keep=None):
        """``compute()``, kept in ``slot`` while the key stays ``key`` (for ``ttl`` s).

        Served as it is, while one background thread works out the new value:
        * a value past its ``ttl`` whose key has not moved (no session appeared or went), up
          to AGED_MAX_S old: the ttl only bounds how late in-place edits by others show, and
          a crowd of requests must not each rescan every session row when it runs out;
        * during a prune (soft changes), a value whose key moved, up to STALE_MAX_S old.
        Otherwise the request computes it itself; requests that find the same slot already
        being computed get the previous value if there is one (else wait for that one
        answer), instead of rescanning alongside it."""
        now = time.monotonic()
        hit = self._cache.get(slot) or self._from_disk(slot, key, ttl)
        if hit:
            age, same = now - hit[0], hit[1] == key
            if same and age < ttl:
                return hit[2]
            if (same and age < AGED_MAX_S) or (now < self._soft_until and age < STALE_MAX_S):
                self._refresh_later(slot, key, compute, keep)
                return hit[2]
        with self._refresh_lock:
            if len(self._flights) > 512:
                self._flights = {k: v for k, v in self._flights.items() if v.locked()}
            flight = self._flights.setdefault(slot, threading.Lock())
        if hit and flight.locked() and now - hit[0] < AGED_MAX_S:
            # Another request is already working out the new value: answer with the
            # previous one rather than queue behind it (the one computing pays, not a crowd).
            return hit[2]
        left = request_deadline.remaining()
        # Waiting is bounded by this request's own deadline; past it, compute regardless
        # (its queries then stop at once with "took too long").
        waited = time.monotonic()
        got = flight.acquire(timeout=max(left, 0.0) if left is not None else -1)
        waited = time.monotonic() - waited
        if waited > 1.0 and has_app_context():
            current_app.logger.warning(
                "waited %.1f s for another request to work out %s", waited, slot[:60]
            )
        try:
            hit = self._cache.get(slot)
            if got and hit and hit[1] == key and hit[0] >= now:
                return hit[2]  # computed by the request this one waited for
            value = compute()
            self._store(slot, key, value, keep)
            return value
        finally:
            if got:
                flight.release()

    def _store(self, slot: str, key: Any, value: Any, keep) -> None:
        if keep is not None and not keep(value):
            return
        if len(self._cache) > 256:
            self._cache.clear()
        self._cache[slot] = (time.monotonic(), key, value)
        self._to_disk(slot, key, value)

    # -- across restarts ------------------------------------------------------------------
    # The few values a first page waits for that read every session row (Hermes's chains,
    # the origin menus: 3-4 s on a 16 GB file whose pages are not in the cache) are also
    # written to the instance folder. After a restart, for the same sessions token, the
    # saved value is served as an aged one (while a fresh one is worked out behind it), as a
    # value a few seconds old is served between requests.

    def _disk_path(self, slot: str):
        folder = getattr(self, "disk_dir", None)
        if folder is None or not (slot in PERSISTED or slot.startswith("shared:")):
            return None
        # Shared counts are named by their statement and its parameters (the chains' tips
        # among them): a digest names their file.
        return folder / (hashlib.sha1(slot.encode()).hexdigest()[:20] + ".json")

    def _from_disk(self, slot: str, key: Any, ttl: float):
        path = self._disk_path(slot)
        if path is None or slot in self._disk_read:
            return None
        self._disk_read.add(slot)  # once per slot and run: later ones are in memory
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("key") != json.loads(json.dumps(key)):
            return None
        return (time.monotonic() - ttl - 0.001, key, saved.get("value"))

    def _to_disk(self, slot: str, key: Any, value: Any) -> None:
        path = self._disk_path(slot)
        now = time.monotonic()
        if path is None or now - self._disk_written.get(slot, -DISK_EVERY_S) < DISK_EVERY_S:
            return
        if slot not in self._disk_written and len(self._disk_written) >= DISK_SLOTS:
            return  # the first few dozen of a run: a page's own, not every filter ever asked
        self._disk_written[slot] = now
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".part")
            tmp.write_text(json.dumps({"key": key, "value": value}), encoding="utf-8")
            tmp.replace(path)
        except (OSError, TypeError, ValueError):
            pass  # a full disk or a value JSON cannot hold: kept in memory only

    def _refresh_later(self, slot: str, key: Any, compute, keep) -> None:
        """One thread per slot, and at most REFRESHERS at once: when all are busy the old
        value is served again and a later request asks anew."""
        with self._refresh_lock:
            if slot in self._refreshing or len(self._refreshing) >= REFRESHERS:
                return
            self._refreshing.add(slot)

        def work() -> None:
            try:
                self._store(slot, key, compute(), keep)
            except Exception:  # noqa: BLE001 - the next request computes it itself
                self._cache.pop(slot, None)
                if has_app_context():
                    current_app.logger.exception("refreshing %s failed", slot)
            finally:
                with self._refresh_lock:
                    self._refreshing.discard(slot)

        # In the app's context: without it every refresh failed, the slot was dropped and
        # the next request recounted in line (what the pages under a prune waited for).
        threads.start_in_app(work, f"refresh-{slot[:20]}")

    def order_marks(self) -> tuple[Any, Any, Any]:
        """(newest message id, number of sessions, newest start): moves whenever a message is
        added or a session appears or goes; cheap (a rowid maximum, and the sessions token
        this request has already read)."""
        token = self._sessions_token()
        return (self.r.scalar("SELECT MAX(id) FROM messages"), token.get("n"), token.get("s"))

    def _shared(self, statement: str, params: list[Any], run):
        """A count over the whole table (Hermes's rows read every row's parent link and
        markers), shared by the requests of the next seconds while no session appears or
        goes. Counts are a guide; the rows themselves are always read fresh."""
        return self.shared(f"{statement}:{params!r}", lambda: run(statement, params))

    def recall(self, key: str) -> Any:
        """A value kept by ``keep_value`` (None when absent or dropped by one of Logbook's own
        changes): for callers that decide themselves how old is too old."""
        hit = self._cache.get(f"kept:{key}")
        return hit[2] if hit else None

    def keep_value(self, key: str, value: Any) -> None:
        if len(self._cache) > 256:
            self._cache.clear()
        self._cache[f"kept:{key}"] = (time.monotonic(), None, value)

    def _sessions_token(self) -> dict[str, Any]:
        """How many sessions there are and the newest start: read once per request (a page
        asks for several shared figures; on schema 22 each read costs over a millisecond)."""
        holder = g if has_request_context() else None
        key = f"_sessions_token_{id(self)}"
        if holder is not None and key in holder:
            return holder.get(key)
        # One reader at a time: a page's queries run side by side (threads.Beside) and would
        # each count after a commit.
        with self._token_lock:
            if holder is not None and key in holder:
                return holder.get(key)
            # Nobody has committed since it was last read (data_version reads no page): the
            # same token, without counting every session's index entry again.
            version = self.r.data_version()
            kept = self._token_kept
            if kept is not None and kept[0] == version:
                token = kept[1]
            else:
                token = self.r.one("SELECT COUNT(*) AS n, MAX(started_at) AS s FROM sessions") or {}
                self._token_kept = (version, token)
            if holder is not None:
                setattr(holder, key, token)
        return token

    def shared(self, name: str, compute, ttl: float = SHARED_TTL_S, keep=None):
        """``compute()``, shared by the requests of the next ``ttl`` seconds while no session
        appears or goes (and until Logbook's own next change): for figures that scan every
        session row, which a gateway's steady appends hardly move. ``keep(value)`` false:
        not shared (a partial answer)."""
        token = self._sessions_token()
        return self._fresh_or_stale(
            f"shared:{name}", (token.get("n"), token.get("s")), compute, ttl, keep
        )

    def _cached(self, key: str, compute, ttl: float = 10.0):
        return self._fresh_or_stale(key, None, compute, ttl)

    def change_token(self) -> str:
        """Cheap: MAX over two rowid/index orders and a count of live sessions."""
        row = (
            self.r.one(
                "SELECT (SELECT MAX(id) FROM messages) AS m, (SELECT MAX(started_at) FROM sessions) "
                f"AS s, (SELECT COUNT(*) FROM sessions WHERE {self.col('ended_at', 'sessions')} IS NULL) "
                "AS live"
            )
            or {}
        )
        return f"{row.get('m')}-{row.get('s')}-{row.get('live')}"
