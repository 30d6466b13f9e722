"""The waitress server Logbook runs in, with the settings that keep it answering under abuse
(the command line and the tests' live server both build it here).

Waitress hands requests to its workers first come, first served: twenty clients sending search
bombs would take every worker and the list page would wait behind them. ``FairDispatcher``
keeps two queues instead, and two sets of workers. Cheap requests (pages, fragments, JSON
twins, simple searches) have ``threads`` workers of their own and go first, always. Heavy ones
(exports, searches that may scan the whole index) and dear ones (pages of more than 100 rows,
deep search pages: webui.door.workclass) run on ``threads // 2`` more workers kept for them, dear
ones one at a time; a heavy request that waited longer than ``SHED_AFTER_S`` for a worker is
answered "busy" at once by the next free one (by waitress itself: no page is rendered for
it). Within each queue, clients take turns (webui.door.turns): one client's many waiting requests
go no sooner than another's one. The time a request waited counts against its deadline
(webui.web.limits), so a search bomb ends within its deadline from when it arrived, not from
when a worker took it. (How many heavy requests really work at once is capped further: one
search slot, a quarter of ``threads`` for exports.)

Pages take turns: at most one more than the machine's cores run at once, the others wait for
a turn (at most ``ADMIT_WAIT_S``, then they run anyway), so under load each page runs at full
speed after a short wait instead of all of them sharing the cores and a dear page (a ranked
search) taking eight times its own time.

The heavy workers run at a lower CPU priority (nice +10, where the system allows it): on a
machine whose cores a search bomb keeps busy, the pages, Logbook's own prune and Hermes's
gateway get the CPU first. A cheap request goes to a lowered worker only when every page worker
is busy (a thread cannot raise its priority again without privileges, so a page must be given
to the right thread: measured beside search bombs, pages on the lowered workers took 5-10x
longer; and under eight users with two page workers, the pages that landed on the six lowered
ones waited behind the others, which made the load benchmark's p95)."""

from __future__ import annotations

import os
import threading
import time

from waitress import create_server
from waitress.task import ThreadedTaskDispatcher
from waitress.utilities import Error

from webui import threads
from webui.door import gate
from webui.door.turns import Turns, address_key, forwarded_client
from webui.door.workclass import is_heavy, work_class  # noqa: F401 - is_heavy: named from here
from webui.threads import cores

SHED_AFTER_S = 1.0
HEAVY_NICE = 10
# Pages run this many at a time beyond the cores' count; the others wait their turn, at most
# ADMIT_WAIT_S (then they run anyway: a page that is slow for its own reasons must not hold
# the rest). Eight pages sharing two cores each take eight times their own time; taking
# turns, a page waits for those before it and then runs at full speed, so the dearer pages
# (a ranked search) stop paying for the cheap ones' concurrency. Measured with load.py (8
# users, 1M messages, 2 cores): 63 → 77-85 requests/s, all p95 407 → 220-241 ms.
ADMIT_EXTRA = 1
ADMIT_WAIT_S = 0.5
# Dear pages (a page of 500 sessions, a search page past the first thousand hits) run one at a
# time, on the heavy workers: a flood of them waits its turn there (and is answered "busy"
# after SHED_AFTER_S), while the pages' workers and the interpreter stay with the cheap pages.
DEAR_AT_ONCE = 1
# The header waitress passes on as environ HTTP_X_LOGBOOK_QUEUE: "<arrival time>[ shed]".
# Set for every request (a client's own value is overwritten), read by webui.web.limits.
QUEUE_HEADER = "X_LOGBOOK_QUEUE"


# What the dispatcher knows of the database when it classes a search: its indexes and the
# search rules of its Hermes (the app's own, set by make_server; Hermes 0.19's until then).
class FairDispatcher(ThreadedTaskDispatcher):
    def __init__(
        self,
        threads: int,
        shed_after_s: float = SHED_AFTER_S,
        facts: dict | None = None,
        trusted_proxy: str | None = None,
    ):
        super().__init__()
        self.facts = facts  # the database's search facts (work_class)
        self.trusted_proxy = trusted_proxy  # whose X-Forwarded-For names the client
        # Workers 0 .. heavy_max-1 are the lowered heavy ones, the next ``threads`` the pages'.
        self.heavy_max = max(1, threads // 2)
        self.total = threads + self.heavy_max
        self.shed_after_s = shed_after_s
        # Waiting requests, (arrived, task, kind), in one line per client (webui.door.turns).
        self.cheap = Turns()
        self.heavy = Turns()
        self.heavy_running = 0
        self.dear_running = 0
        self.idle_full = 0  # full-priority workers waiting for a task (under self.lock)
        self.admit = threading.BoundedSemaphore(cores() + ADMIT_EXTRA)
        self.shed = 0  # heavy requests answered "busy" without waiting longer (tests, logs)

    def client_of(self, task) -> str:
        """The client a task is from (webui.door.turns), for taking turns."""
        addr = getattr(task, "addr", None)
        peer = addr[0] if isinstance(addr, tuple) else str(addr)
        requests = getattr(task, "requests", None)
        if self.trusted_proxy and requests:
            forwarded = requests[0].headers.get("X_FORWARDED_FOR")
            peer = forwarded_client(peer, forwarded, self.trusted_proxy)
        return address_key(peer)

    def add_task(self, task) -> None:
        requests = getattr(task, "requests", None)
        request = requests[0] if requests else None
        now = time.time()
        kind = "cheap"
        if request is not None:
            request.headers[QUEUE_HEADER] = f"{now:.6f}"
            kind = work_class(request.path or "", request.query or "", self.facts)
        client = self.client_of(task)
        with self.lock:
            (self.cheap if kind == "cheap" else self.heavy).put(client, (now, task, kind))
            # Every waiting worker looks (eight at most): only some may take a heavy task,
            # and a lowered one passes a cheap task on when a full-priority one is waiting.
            self.queue_cv.notify_all()

    def _dear_allowed(self, item) -> bool:
        return item[2] != "dear" or self.dear_running < DEAR_AT_ONCE

    def _next(self, thread_no: int = 0):
        """(task, kind) to run now, or (None, seconds to wait at most). Under self.lock."""
        if self.cheap and (thread_no >= self.heavy_max or not self.idle_full):
            if len(self.cheap) > 1:
                self.queue_cv.notify_all()  # more than this one: wake the rest to look
            return self.cheap.take()[1], "cheap"
        if self.heavy and thread_no < self.heavy_max and self.heavy_running < self.heavy_max:
            item = self.heavy.take(self._dear_allowed)
            if item is not None:
                self.heavy_running += 1
                self.dear_running += item[2] == "dear"
                return item[1], item[2]
        if self.heavy:
            oldest = self.heavy.oldest(key=lambda item: item[0])
            arrived, task, _kind = oldest
            waited = time.time() - arrived
            if waited >= self.shed_after_s:
                self.heavy.remove(oldest)
                request = task.requests[0] if getattr(task, "requests", None) else None
                if request is not None:
                    request.headers[QUEUE_HEADER] = f"{arrived:.6f} shed"
                    # Answered by waitress itself, without the application: a flood of dear
                    # pages is shed at 60 a second, and an HTML error page each took the
                    # interpreter from the pages (webui.web.limits answers any other way in).
                    request.error = Busy()
                self.shed += 1
                return task, "shed"
            return None, self.shed_after_s - waited
        return None, None

    def handler_thread(self, thread_no):
        if thread_no < self.heavy_max:
            _lower_priority(HEAVY_NICE)
        while True:
            with self.lock:
                while True:
                    if self.stop_count > 0:
                        self.active_count -= 1
                        self.stop_count -= 1
                        self.threads.discard(thread_no)
                        self.thread_exit_cv.notify()
                        return
                    task, kind = self._next(thread_no)
                    if task is not None:
                        break
                    full = thread_no >= self.heavy_max
                    self.active_count -= 1
                    self.idle_full += full
                    self.queue_cv.wait(timeout=kind)
                    self.idle_full -= full
                    self.active_count += 1
            admitted = False
            if kind == "cheap":
                admitted = self.admit.acquire(timeout=ADMIT_WAIT_S)
                threads.page_started()
            try:
                task.service()
            except BaseException:
                self.logger.exception("Exception when servicing %r", task)
            finally:
                if kind == "cheap":
                    threads.page_ended()
                if admitted:
                    self.admit.release()
                if kind in ("heavy", "dear"):
                    with self.lock:
                        self.heavy_running -= 1
                        self.dear_running -= kind == "dear"
                        self.queue_cv.notify_all()

    def shutdown(self, cancel_pending=True, timeout=5):
        with self.lock:
            for item in self.cheap.drain() + self.heavy.drain():
                self.queue.append(item[1])
        return super().shutdown(cancel_pending=cancel_pending, timeout=timeout)


class Busy(Error):
    """The answer to a heavy request that waited too long for a worker: 503, Retry-After."""

    code = 503
    reason = "Service Unavailable"
    text = (
        "Logbook is busy with other searches, exports and large pages right now (this one "
        "waited too long for its turn). Try again in a moment.\r\n"
    )

    def __init__(self):
        super().__init__(self.text)

    def to_response(self, ident=None):
        headers = [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Retry-After", "2"),
            ("X-Content-Type-Options", "nosniff"),
        ]
        return f"{self.code} {self.reason}", headers, self.text.encode()


def _lower_priority(by: int) -> None:
    """Raise this thread's nice value (Linux: each thread has its own). Raising needs no
    privilege; where it is not possible the thread simply keeps its priority."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + by))
    except (AttributeError, OSError):
        pass


def _fixed_mmap_threshold(size: int = 1 << 20) -> None:
    """glibc raises its mmap threshold each time a large block is freed, so the export's
    multi-megabyte buffers then come from the heap and their pages stay resident after use;
    a fixed threshold keeps them mmapped and gives them back when freed. No-op off glibc."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-3, size)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


# A response is spooled (to a temporary file past 1 MB) up to this size before its worker waits
# for the client: most exports are produced whole and the worker is free (webui.web.streams
# decides by it which exports stream while produced).
SPOOL_BYTES = 32 * 1024 * 1024


def make_server(
    app, host: str, port: int, threads: int = 8, *, facts: dict | None = None, **overrides
):
    """waitress for ``app``. ``facts``: the served database's indexes and search rules, by
    which searches are classed before they run (webui.web.views.search.app_search_facts);
    None: Hermes 0.19's rules, every index assumed."""
    _fixed_mmap_threshold()
    descriptors = _raise_descriptor_limit()
    proxy = app.config.get("LOGBOOK_TRUSTED_PROXY") or None
    dispatcher = FairDispatcher(threads, facts=facts, trusted_proxy=proxy)
    dispatcher.set_thread_count(dispatcher.total)
    settings = {
        "threads": dispatcher.total,
        "ident": "",  # no Server header (no version disclosure)
        # Idle keep-alive connections are closed after 15 s of silence (checked every 5 s), a
        # request must arrive whole within 10 s, one address holds 32 connections at most, and
        # a newcomer takes the place of the longest-waiting idle one once 500 are open
        # (webui/door/gate.py). Fewer where the process may hold few descriptors.
        "connection_limit": max(16, min(CONNECTION_LIMIT, descriptors // 4)),
        "channel_timeout": 15,
        "cleanup_interval": 5,
        "outbuf_high_watermark": SPOOL_BYTES,
        # The loop polls: select() cannot watch a descriptor numbered 1024 or more, and an
        # archive folder's stores plus the connections reach that (issue 49, B-2).
        "asyncore_use_poll": True,
        # The loop keeps reading a connection while its request is answered, so it sees the
        # client leave, and the request's queries stop (webui.db.deadline.client_gone).
        "channel_request_lookahead": 1,
    }
    if proxy:
        # Behind the reverse proxy the user named (--trusted-proxy), the client is the address
        # it appends to X-Forwarded-For (waitress's own proxy handling: the login throttle and
        # the export slots then count people, not the proxy); from anyone else the header is
        # dropped.
        settings |= {
            "trusted_proxy": proxy,
            "trusted_proxy_count": 1,
            "trusted_proxy_headers": {"x-forwarded-for"},
            "clear_untrusted_proxy_headers": True,
        }
    settings.update(overrides)
    server = create_server(app, host=host, port=port, _dispatcher=dispatcher, **settings)
    # Slow or idle sockets can neither fill the server nor stop it accepting (webui/door/gate.py).
    gate.install(server)
    return server


CONNECTION_LIMIT = 500
DESCRIPTORS_WANTED = 65536


def _raise_descriptor_limit(wanted: int = DESCRIPTORS_WANTED) -> int:
    """Let the process hold as many descriptors as it is allowed to (the soft limit is often
    1024, the hard one far more): connections, archive stores and their journals all count.
    Returns the limit now in force."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        return wanted if soft == resource.RLIM_INFINITY else soft
    except (ImportError, ValueError, OSError):
        return 1024
