"""The one registry of background changes (prune, backed-up prune, cold storage out and back):
what each job has done so far, for its page and its JSON twin. Jobs live as long as the
server; their work is in the journal, not here, so a restart loses a page, never a change."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TypeVar


@dataclass
class Job:
    """What every job reports: its transactions (each under the writer's budget), how long it
    waited for the database's lock or for another change, and how it ended."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    kind: str = "job"
    done: bool = False
    error: str | None = None
    started: float = field(default_factory=time.time)
    finished: float | None = None
    transactions: int = 0
    longest_txn_s: float = 0.0
    txn_times: list[float] = field(default_factory=list, repr=False)
    abandoned: int = 0  # transactions rolled back as too slow and tried again smaller
    # Seconds spent waiting for the gateway's write lock (Hermes merges its search index
    # every thousand writes, holding the lock for seconds to minutes on a large file), and
    # whether it is waiting right now (for the gateway, or for another change's unit).
    lock_waited_s: float = 0.0
    waiting_since: float | None = None
    waiting_for: str | None = None

    def note(self, took: float, abandoned: bool = False) -> None:
        self.abandoned += abandoned
        self.transactions += 1
        self.longest_txn_s = max(self.longest_txn_s, took)
        self.txn_times.append(took)

    def wait(self, what: str | None) -> None:
        """Now waiting for ``what`` (None: no longer waiting)."""
        self.waiting_for = what
        self.waiting_since = (self.waiting_since or time.time()) if what else None

    def end(self) -> None:
        self.done = True
        self.finished = time.time()


J = TypeVar("J", bound=Job)


class Registry:
    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def add(self, job: J) -> J:
        with self._lock:
            self._jobs[job.id] = job
        return job

    def get(self, job_id: str, kind: type[J]) -> J | None:
        with self._lock:
            found = self._jobs.get(job_id)
        return found if isinstance(found, kind) else None


JOBS = Registry()  # one per server process
