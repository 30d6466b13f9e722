"""The one batch loop: every change that needs more than one transaction (a long transcript's
messages, a prune's batches, a conversation moved back message by message) runs here, in
short ``BEGIN IMMEDIATE`` transactions through the Writer (``webui.db.changes.writer``), which leaves
the lock free after each commit at least as long as it held it: the one pause policy.

A batch grows while its transactions stay fast and shrinks when one gets slow; one whose
statements outrun STATEMENTS_BUDGET_S is rolled back whole and tried again at half its size; at
its smallest it is tried SMALLEST_TRIES times under the limit, then without (the work must make
progress). A job waits out a gateway that holds the write lock for long (Hermes merges its
search index every thousand writes), up to ``patience_s`` in a row, saying so on its page; a
request's change does not wait (its caller says what went)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

from webui.db.changes.writer import STATEMENTS_BUDGET_S, TARGET_TXN_S, TooSlow, Writer
from webui.db.errors import DatabaseBusy

T = TypeVar("T")

# At most this many messages go in the same transaction as their sessions' rows (Hermes's
# one-transaction delete); longer transcripts are trimmed to it first, in batches. A message
# costs ~0.15 ms to delete on the 1M-message file (both FTS indexes' triggers): 150 take
# ~25 ms alone. (60 was tried: the hostile benchmark's longest transactions did not shrink.)
ONE_TXN_MESSAGES = 150

# A job waits this long in a row for a gateway that holds the write lock before it stops,
# pausing up to LOCK_PAUSE_MAX_S between tries.
LOCK_PATIENCE_S = 600.0
LOCK_PAUSE_MAX_S = 5.0

# A batch that cannot be cut smaller is still tried this many times under the time limit (a
# busy core or a merge passes) before it runs to the end.
SMALLEST_TRIES = 3


def limit(cut: bool, slow: int) -> float | None:
    """The statements' time limit for a batch that can still be cut smaller, or whose
    smallest size has not yet been rolled back SMALLEST_TRIES times in a row."""
    return STATEMENTS_BUDGET_S if cut or slow < SMALLEST_TRIES else None


def adapt(size: int, took: float, lo: int, hi: int) -> int:
    """Grow a batch while transactions stay fast, shrink it when one gets slow."""
    if took < TARGET_TXN_S / 2:
        return min(hi, max(size + 1, size * 3 // 2))
    if took > TARGET_TXN_S:
        return max(lo, size // 2)
    return size


class Batches:
    """Transactions of one unit of work. ``job``: told of every transaction and of every
    wait; ``patience_s``: how long a DatabaseBusy is waited out (0: raised at once)."""

    def __init__(self, writer: Writer, job=None, patience_s: float = 0.0):
        self.w = writer
        self.job = job
        self.patience_s = patience_s

    def once(
        self,
        fn: Callable[[sqlite3.Connection], T],
        *,
        give_up_after: float | None = None,
        foreign_keys: bool = True,
    ) -> T:
        """``fn`` in one transaction (TooSlow when its statements outran ``give_up_after``)."""
        pause = 0.5
        began = None
        while True:
            try:
                result = self.w.run(fn, give_up_after=give_up_after, foreign_keys=foreign_keys)
            except TooSlow:
                self._note(abandoned=True)
                raise
            except DatabaseBusy:
                now = time.monotonic()
                began = began if began is not None else now
                if self.patience_s <= 0 or now - began > self.patience_s:
                    self._wait(None)
                    raise
                self._wait("the database's write lock (the gateway holds it)")
                time.sleep(pause)
                if self.job is not None:
                    self.job.lock_waited_s += pause
                pause = min(LOCK_PAUSE_MAX_S, pause * 2)
                continue
            self._wait(None)
            self._note()
            return result

    def repeat(
        self,
        step: Callable[[sqlite3.Connection, int], int],
        *,
        size: int,
        lo: int,
        hi: int,
        foreign_keys: bool = True,
        counter: list[int] | None = None,
        committed: Callable[[], None] | None = None,
    ) -> int:
        """``step(conn, n)`` (does at most ``n`` rows' work, returns how many) in one
        transaction after another until it returns 0. Returns the rows done; ``counter[0]``
        counts them as they commit (a failure part way still says how many); ``committed()``
        is called after each transaction that did some (a step that reads ahead moves on)."""
        total = 0
        slow = 0  # transactions at the smallest size rolled back in a row
        while True:
            used = size
            try:
                done = self.once(
                    lambda c, n=used: step(c, n),
                    give_up_after=limit(used > lo, slow),
                    foreign_keys=foreign_keys,
                )
            except TooSlow:
                slow += used <= lo
                size = max(lo, used // 2)
                continue
            slow = 0
            if not done:
                return total
            if committed is not None:
                committed()
            total += done
            if counter is not None:
                counter[0] += done
            size = adapt(used, self.w.last_transaction_s, lo, hi)

    def _note(self, abandoned: bool = False) -> None:
        if self.job is not None:
            self.job.note(self.w.last_transaction_s, abandoned=abandoned)

    def _wait(self, what: str | None) -> None:
        if self.job is not None and self.job.waiting_for != what:
            self.job.wait(what)
