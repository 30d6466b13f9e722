"""Hostile clients against the real server (waitress, real sockets): exports that are never
read must not take the workers, and a cut export must look cut (issue 15, points 1 and 10)."""

from __future__ import annotations

import os
import socket
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from support import WAIT_BOUND_S, copy_fixture, make_app
from support.browser import LiveServer
from webui.web.logbooks import get_logbook

SPOOL = 256 * 1024  # a small spool, so that an export of a few MB waits for its client


@pytest.fixture(scope="module")
def big_db(tmp_path_factory):
    """About 12 MB of JSONL: more than the spool and the loopback socket buffers together."""
    from webui.demo import generate

    path = tmp_path_factory.mktemp("big") / "state.db"
    generate(path, sessions=600, seed=5)
    return path


def _server(db, tmp_path, **config):
    app = make_app(
        db,
        tmp_path / "inst",
        **{"LOGBOOK_THREADS": 8, "LOGBOOK_EXPORT_STALL_SECONDS": 1.0, **config},
    )
    return app, LiveServer(app, threads=8, outbuf_high_watermark=SPOOL)


def _stalled(url: str, path: str, source: str = "127.0.0.1") -> socket.socket:
    """A client that asks for ``path`` and then reads nothing (tiny receive buffer)."""
    host, port = url.removeprefix("http://").split(":")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((source, 0))
    s.connect((host, int(port)))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    return s


def _get(url: str, timeout: float = 5.0) -> tuple[int, float, dict]:
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            r.read()
            return r.status, time.monotonic() - t0, dict(r.headers)
    except urllib.error.HTTPError as exc:
        exc.read()
        return exc.code, time.monotonic() - t0, dict(exc.headers)


def _read_all(s: socket.socket, timeout: float = 10.0) -> bytes:
    s.settimeout(timeout)
    data = bytearray()
    while True:
        try:
            chunk = s.recv(1 << 16)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _status(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1])


def test_stalled_export_readers_leave_the_pages_answering(big_db, tmp_path):
    app, srv = _server(big_db, tmp_path)
    slots = app.extensions["logbook_export_slots"]
    readers = [_stalled(srv.url, "/export.jsonl", source=f"127.0.0.{2 + i}") for i in range(8)]
    try:
        time.sleep(0.5)
        # The pages stay quick while eight exports are asked for and never read.
        for _ in range(5):
            # Answered at all while eight readers hold their exports unread (they do until
            # the test lets go): a page waiting for them would never answer.
            assert _get(srv.url + "/sessions", WAIT_BOUND_S)[0] == 200
        # Only `total` exports run at once (a quarter of the 8 workers); the others were
        # refused at once with a message and Retry-After, not queued behind the stalled ones.
        refused = []
        for s in readers:
            s.settimeout(WAIT_BOUND_S)  # each gets its answer's head: an export's or a refusal
            head = s.recv(4096)
            if head.startswith(b"HTTP/1.1 503"):
                refused.append(head)
        assert len(refused) == 8 - slots.total
        assert all(b"Retry-After: 2" in h for h in refused)
        # The running ones are abandoned when their readers stall past the budget, and their
        # slots come back: a new export then runs to its end.
        deadline = time.monotonic() + WAIT_BOUND_S
        while slots.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert slots.running() == 0
        assert slots.abandoned == slots.total
        status, _took, _h = _get(srv.url + "/export.jsonl?source=cli", timeout=30)
        assert status == 200
    finally:
        for s in readers:
            s.close()
        srv.close()


def test_trickling_readers_are_dropped_by_their_rate_not_only_by_silence(big_db, tmp_path):
    """A reader taking 4 KB every half second is never silent for the stall budget, yet it
    would keep an export slot for hours: under the minimum rate over the window, it is
    dropped and its slot comes back (issue 37, point 7)."""
    app, srv = _server(
        big_db,
        tmp_path,
        LOGBOOK_EXPORT_STALL_SECONDS=30.0,  # silence alone would not cut it in this test
        LOGBOOK_EXPORT_MIN_RATE=64 * 1024,
        LOGBOOK_EXPORT_RATE_WINDOW=2.0,
    )
    slots = app.extensions["logbook_export_slots"]
    s = _stalled(srv.url, "/export.jsonl", source="127.0.0.7")
    stop = time.monotonic() + 20
    cut = False
    try:
        s.settimeout(1.0)
        while time.monotonic() < stop:
            try:
                if s.recv(4096) == b"":
                    cut = True
                    break
            except (TimeoutError, ConnectionResetError):
                if slots.abandoned:
                    cut = True
                    break
            time.sleep(0.5)
        assert cut and slots.abandoned == 1
        deadline = time.monotonic() + 5
        while slots.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert slots.running() == 0
    finally:
        s.close()
        srv.close()


def test_one_export_at_a_time_per_client(big_db, tmp_path):
    app, srv = _server(big_db, tmp_path)
    slots = app.extensions["logbook_export_slots"]
    first = _stalled(srv.url, "/export.jsonl")
    try:
        end = time.monotonic() + WAIT_BOUND_S
        while not slots.running() and time.monotonic() < end:  # the first export has begun
            time.sleep(0.01)
        # Refused while the first export is still held unread (it is until the test lets go).
        status, _took, headers = _get(srv.url + "/export.jsonl?source=cli", WAIT_BOUND_S)
        assert status == 429
        assert headers.get("Retry-After") == "2"
        # Cheap pages are not counted: the same client still reads the list.
        assert _get(srv.url + "/sessions")[0] == 200
    finally:
        first.close()
        srv.close()


def test_an_abandoned_export_ends_cut_not_complete(big_db, tmp_path):
    """The stalled reader that finally reads gets a chunked body without its last chunk: any
    HTTP client reports the transfer as incomplete."""
    app, srv = _server(big_db, tmp_path)
    slots = app.extensions["logbook_export_slots"]
    s = _stalled(srv.url, "/export.jsonl")
    try:
        # Read only once the export was given up (its 1 s stall budget passed): waiting for
        # that, not for a fixed time a busy machine can outrun.
        end = time.monotonic() + WAIT_BOUND_S
        while not slots.abandoned and time.monotonic() < end:
            time.sleep(0.05)
        raw = _read_all(s)
    finally:
        s.close()
        srv.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"Transfer-Encoding: chunked" in head
    assert not body.endswith(b"0\r\n\r\n")
    assert app.extensions["logbook_export_slots"].abandoned == 1


def test_an_export_that_fails_midway_ends_cut(tmp_path):
    """A fault after the first records (here the exporter's batches raising, as a vanished
    database does) ends the body without HTTP's last chunk, so it cannot pass for complete;
    a whole export ends with it."""
    from support import copy_fixture

    db = copy_fixture("hermes-v22.db", tmp_path)
    app, srv = _server(db, tmp_path)
    host, port = srv.url.removeprefix("http://").split(":")

    def fetch() -> bytes:
        s = socket.create_connection((host, int(port)))
        s.sendall(f"GET /export.jsonl HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        try:
            return _read_all(s)
        finally:
            s.close()

    try:
        whole = fetch()
        assert whole.endswith(b"0\r\n\r\n")
        with app.app_context():
            exporter = get_logbook().exporter
        original = exporter.jsonl

        def failing(*args, **kwargs):
            for n, line in enumerate(original(*args, **kwargs)):
                if n == 3:
                    raise OSError("disk I/O error")
                yield line

        exporter.jsonl = failing
        try:
            cut = fetch()
        finally:
            exporter.jsonl = original
    finally:
        srv.close()
    assert _status(cut) == 200
    assert not cut.endswith(b"0\r\n\r\n")
    assert cut.count(b'"messages"') == 3


def test_is_heavy_names_exports_and_searches_that_may_scan_everything():
    """Classed by the plan the search will run, not by its text (issue 37, point 3)."""
    from webui.door.serve import is_heavy

    assert is_heavy("/export.jsonl", "")
    assert not is_heavy("/export", "")
    assert not is_heavy("/sessions", "q=a*+OR+b*")
    assert not is_heavy("/search", "q=deploy")
    assert not is_heavy("/search", 'q="docker+compose"')
    assert not is_heavy("/search", "q=deploy*")
    for q in ("a*", "deploy+OR+docker", "NEAR(a+b)", "one+two+three+four+five", "记忆"):
        assert is_heavy("/search", f"q={q}"), q
    # One long word is one index lookup; a prefix of five letters or more expands to few words.
    assert not is_heavy("/search", "q=" + "x" * 81)
    assert is_heavy("/search", "q=the*") and is_heavy("/search", "q=depl*")
    # Within one session a substring scan reads only the session's messages: cheap; but a
    # prefix is expanded over the whole vocabulary wherever the hits lie.
    scoped = "&session=20260101_000000_abc"
    for q in ("deploy*", "deploy", "记忆", "大别山项目"):
        assert not is_heavy("/search", f"q={q}{scoped}"), q
    for q in ("a*", "the*", "deploy+OR+docker"):
        assert is_heavy("/search", f"q={q}{scoped}"), q
    # "Render it anyway" is heavy work on purpose: never on the pages' workers.
    assert is_heavy("/sessions/abc", "render=12&at=12")
    assert not is_heavy("/sessions/abc", "at=12")
    # The database's own rules: "a_b" is a phrase on schema 11+, two words on schema 8.
    assert not is_heavy(
        "/search", "q=a_b_c", {"has_fts": True, "has_trigram": False, "dialect": "v8"}
    )
    # Three CJK characters or more: the trigram index answers (a substring scan only where a
    # database has no trigram table, and then the view takes a search slot itself).
    assert not is_heavy("/search", "q=大别山项目")
    assert is_heavy("/search", "q=大别山项目+通信")
    # Refused at once (too many words), yet on the heavy workers: a loop of refusals is a
    # flood, and the pages keep their turns.
    assert is_heavy("/search", "q=" + "+".join(["word"] * 70))


def test_a_substring_scan_takes_a_search_slot_whatever_the_dispatcher_thought(tmp_path):
    """On a database without a trigram table a long CJK word is a substring scan of every
    message: while the one search slot is held, it is answered 503 "busy" (not run beside
    it); on schema 22 the same word uses the trigram index and runs."""
    for name, expected in (("hermes-v8.db", 503), ("hermes-v22.db", 200)):
        app = make_app(copy_fixture(name, tmp_path / name), tmp_path / f"inst-{name}")
        client = app.test_client()
        slots = app.extensions["logbook_search_slots"]
        held = 0
        while slots.acquire(blocking=False):  # every slot busy with another search
            held += 1
        try:
            assert client.get("/search?q=大别山项目").status_code == expected, name
        finally:
            for _ in range(held):
                slots.release()
        assert client.get("/search?q=大别山项目").status_code == 200, name


def test_cheap_pages_keep_workers_while_heavy_requests_queue_and_are_shed(tmp_path):
    """Four workers: heavy requests (here a test route under /export., which the dispatcher
    counts as heavy, held until the test lets go) run on at most two; the list page is
    answered while six of them are under way; those that waited a second for a worker are
    answered 503 with Retry-After while the two still hold theirs, not left queued."""
    import threading

    from support import copy_fixture

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst", LOGBOOK_THREADS=4)
    ran_on: list[tuple[str, int]] = []
    release = threading.Event()

    def slow():
        # Which worker ran it, at which CPU priority (Linux: /proc/thread-self/stat's nice).
        with open("/proc/thread-self/stat") as f:
            nice = int(f.read().rsplit(")", 1)[1].split()[16])
        ran_on.append((threading.current_thread().name, nice))
        release.wait(WAIT_BOUND_S)
        return "done"

    app.add_url_rule("/export.slow", "slow", slow)
    srv = LiveServer(app, threads=4)
    results: list[tuple[int, float]] = []

    def heavy():
        status, took, _h = _get(srv.url + "/export.slow", timeout=WAIT_BOUND_S)
        results.append((status, took))

    try:
        threads = [threading.Thread(target=heavy) for _ in range(6)]
        for t in threads:
            t.start()
        end = time.monotonic() + WAIT_BOUND_S
        while len(ran_on) < 2 and time.monotonic() < end:
            time.sleep(0.01)
        for _ in range(5):  # answered while both heavy workers are held
            assert _get(srv.url + "/sessions", WAIT_BOUND_S)[0] == 200
        while len(results) < 4 and time.monotonic() < end:
            time.sleep(0.01)
        shed_while_held = sorted(s for s, _t in results)
        release.set()
        for t in threads:
            t.join()
        dispatcher = srv.server.task_dispatcher
    finally:
        release.set()
        srv.close()
    assert shed_while_held == [503, 503, 503, 503], shed_while_held
    assert sorted(s for s, _t in results) == [200, 200, 503, 503, 503, 503]
    assert dispatcher.shed == 4
    # Heavy work ran on the two heavy workers, at a lower CPU priority than the pages'.
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert {name for name, _ in ran_on} <= {"waitress-0", "waitress-1"}, ran_on
    assert all(nice == min(19, base + 10) for _, nice in ran_on), (base, ran_on)


def test_threads_a_lowered_worker_starts_run_at_the_servers_priority():
    """A prune started by a request on a lowered worker must not hold the write lock at that
    worker's priority (Linux threads inherit their creator's nice value): threads that hold
    the lock or keep time are started by the launcher, at the priority the server began with."""
    import threading

    from webui import threads
    from webui.door.serve import _lower_priority

    def nice() -> int:
        with open("/proc/thread-self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[16])

    seen: dict[str, int] = {}

    def worker():
        _lower_priority(5)
        seen["worker"] = nice()
        t = threads.start(lambda: seen.setdefault("launched", nice()), "t-launched")
        plain = threading.Thread(target=lambda: seen.setdefault("plain", nice()))
        plain.start()
        t.join(), plain.join()

    w = threading.Thread(target=worker)
    w.start()
    w.join()
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert seen["worker"] == seen["plain"] == min(19, base + 5), seen
    assert seen["launched"] == base, seen


def test_cheap_requests_go_to_a_full_priority_worker_when_one_is_free(tmp_path):
    """Eight page workers at the server's priority, four lowered ones for heavy work: pages
    asked one after another, then eight at a time, all run at the server's priority; a
    lowered worker takes a page only when all eight page workers are busy."""
    import threading

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    ran: list[int] = []
    lock = threading.Lock()

    def probe():
        with open("/proc/thread-self/stat") as f:
            nice = int(f.read().rsplit(")", 1)[1].split()[16])
        with lock:
            ran.append(nice)
        time.sleep(0.3)
        return "ok"

    app.add_url_rule("/probe-priority", "probe_priority", probe)
    srv = LiveServer(app, threads=8)
    dispatcher = srv.server.task_dispatcher

    def page_workers_idle() -> None:
        # Every page worker started and back waiting for a task: which worker takes the next
        # page then depends on the rule, not on how fast threads start or finish their last one.
        end = time.monotonic() + WAIT_BOUND_S
        while dispatcher.idle_full < 8 and time.monotonic() < end:
            time.sleep(0.01)
        assert dispatcher.idle_full == 8

    try:
        assert dispatcher.total == 12
        for _ in range(4):
            page_workers_idle()
            assert _get(srv.url + "/probe-priority")[0] == 200
        for n in (8, 9):  # eight at a time, then nine
            page_workers_idle()
            at_once = [
                threading.Thread(target=_get, args=(srv.url + "/probe-priority",)) for _ in range(n)
            ]
            for t in at_once:
                t.start()
            for t in at_once:
                t.join()
    finally:
        srv.close()
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert ran[:12] == [base] * 12, ran
    assert sorted(ran[12:]) == [base] * 8 + [min(19, base + 10)], ran


def test_background_work_steps_aside_while_pages_are_answered(tmp_path):
    """The dispatcher counts the pages it is answering; an export's or the rollup's batch loop
    calls make_way() between batches and sleeps (bounded) while any page is under way."""
    from webui import threads

    db = copy_fixture("hermes-v22.db", tmp_path)
    app = make_app(db, tmp_path / "inst")
    seen: list[int] = []
    app.add_url_rule(
        "/probe-pages", "probe_pages", lambda: seen.append(threads.pages_in_flight()) or "ok"
    )
    srv = LiveServer(app, threads=4)
    try:
        assert _get(srv.url + "/probe-pages")[0] == 200
    finally:
        srv.close()
    assert seen == [1] and threads.pages_in_flight() == 0
    assert threads.make_way(0.05) == 0.0  # nothing to make way for
    threads.page_started()
    try:
        assert 0.04 <= threads.make_way(0.05) < 0.5
    finally:
        threads.page_ended()


def _concurrency_probe(app, hold_s: float, release=None):
    """A route that holds its worker ``hold_s`` (or, given ``release``, an Event, until it is
    set) and records how many ran at once."""
    import threading

    state = {"now": 0, "most": 0}
    lock = threading.Lock()

    def probe():
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        if release is None:
            time.sleep(hold_s)
        else:
            release.wait(WAIT_BOUND_S)
        with lock:
            state["now"] -= 1
        return "ok"

    app.add_url_rule("/probe-turns", "probe_turns", probe)
    return state


def _at_once(url: str, n: int) -> list[tuple[int, float]]:
    import threading

    out: list[tuple[int, float]] = []
    ts = [threading.Thread(target=lambda: out.append(_get(url, timeout=10)[:2])) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def test_pages_take_turns_a_few_at_a_time():
    """Eight pages asked at once on eight page workers run at most cores + 1 at a time (each
    then runs at full speed instead of sharing the cores eight ways); all are answered."""
    from webui.door.serve import ADMIT_EXTRA
    from webui.threads import cores as _cores

    db = copy_fixture("hermes-v22.db", Path(tempfile.mkdtemp()))
    app = make_app(db, db.parent / "inst")
    state = _concurrency_probe(app, 0.15)
    srv = LiveServer(app, threads=8)
    try:
        results = _at_once(srv.url + "/probe-turns", 8)
    finally:
        srv.close()
    assert [s for s, _ in results] == [200] * 8
    assert state["most"] == min(8, _cores() + ADMIT_EXTRA), state


def test_a_page_slow_for_its_own_reasons_does_not_hold_the_others_beyond_their_wait():
    """When every turn is held by a page that takes long, the next page waits ADMIT_WAIT_S at
    most, then runs anyway: it answers while every turn is still held (the holders let go
    only once it has answered, so no machine's speed decides it)."""
    import threading

    from webui.door.serve import ADMIT_EXTRA, ADMIT_WAIT_S
    from webui.threads import cores as _cores

    db = copy_fixture("hermes-v22.db", Path(tempfile.mkdtemp()))
    app = make_app(db, db.parent / "inst")
    turns = _cores() + ADMIT_EXTRA
    release = threading.Event()
    state = _concurrency_probe(app, 0, release)
    srv = LiveServer(app, threads=8)
    try:
        holders = [
            threading.Thread(target=_get, args=(srv.url + "/probe-turns", WAIT_BOUND_S))
            for _ in range(turns)
        ]
        for t in holders:
            t.start()
        end = time.monotonic() + WAIT_BOUND_S
        while state["now"] < turns and time.monotonic() < end:
            time.sleep(0.01)
        assert state["now"] == turns, state  # every turn is held
        status, took, _h = _get(srv.url + "/sessions", WAIT_BOUND_S)
        held_meanwhile = state["now"]
        release.set()
        for t in holders:
            t.join()
    finally:
        release.set()
        srv.close()
    assert status == 200 and held_meanwhile == turns
    assert took > ADMIT_WAIT_S - 0.05, took  # it waited for a turn first
    assert state["most"] == turns
