"""The write discipline every removal shares (delete, prune, cold storage): how many messages
may go with their sessions' rows in one transaction, how batches grow and shrink to stay
short, how long a batch that cannot be cut smaller is still tried under the time limit, and
how long a job waits out a gateway that holds the write lock."""

from __future__ import annotations

from webui.db.writer import STATEMENTS_BUDGET_S, TARGET_TXN_S

# At most this many messages go in the same transaction as their sessions' rows (Hermes's
# one-transaction delete); longer transcripts are trimmed to it first, in batches. A message
# costs ~0.15 ms to delete on the 1M-message file (both FTS indexes' triggers): 150 take
# ~25 ms alone. (60 was tried: the hostile benchmark's longest transactions did not shrink.)
ONE_TXN_MESSAGES = 150

# A prune waits this long in a row for a gateway that holds the write lock before it stops,
# pausing up to LOCK_PAUSE_MAX_S between tries.
LOCK_PATIENCE_S = 600.0
LOCK_PAUSE_MAX_S = 5.0

# A batch that cannot be cut smaller is still tried this many times under the time limit (a
# busy core or a merge passes) before it runs to the end: the work must make progress.
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
