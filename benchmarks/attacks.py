"""The attacks of issue 37, one after another, against the real server on a copy of the 1M
database while Hermes 0.19.0's own SessionDB appends 50 messages a second (hostile.py's
writer). For each: the cheap pages' p50/p95 while idle and under attack (three probes: the
list, a viewer page, a JSON twin), what the attack's own requests got (refused, cut), Hermes's
writer failures and its worst wait for the lock. Run by hostile.py (``--attacks``), which
writes its table into RESULTS.md.

The server runs in remote mode with an admin token (``--insecure`` on 127.0.0.1), as a server
reachable from a network would: the login flood needs it, and viewing needs no login there.
Attackers connect from their own loopback addresses (127.0.0.2 …), the probes from 127.0.0.1;
127.0.0.250 plays a reverse proxy the server trusts (``--trusted-proxy``). The server's process
holds 1,100 other descriptors (benchmarks/crowded.py), so every connection is numbered past
1,024, and its database holds a 10 MB tool result repeating one word a million times.
"""

from __future__ import annotations

import http.client
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

HOST = "127.0.0.1"
TOKEN = "attack-benchmark-token-0123456789"


def request(
    port: int,
    method: str,
    path: str,
    body: str | None = None,
    headers: dict | None = None,
    source: str = HOST,
    timeout: float = 30.0,
) -> tuple[int, float, bytes, dict]:
    t0 = time.perf_counter()
    c = http.client.HTTPConnection(HOST, port, timeout=timeout, source_address=(source, 0))
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, time.perf_counter() - t0, data, dict(r.getheaders())
    except (OSError, http.client.HTTPException) as exc:
        return 0, time.perf_counter() - t0, str(exc).encode(), {}
    finally:
        c.close()


@dataclass
class Probes:
    port: int
    paths: list[str]
    times: list[float] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)

    def run_for(self, seconds: float) -> None:
        stop = time.monotonic() + seconds
        i = 0
        while time.monotonic() < stop:
            status, took, _b, _h = request(self.port, "GET", self.paths[i % len(self.paths)])
            self.times.append(took)
            if status != 200:
                self.failed.append(status)
            i += 1
            time.sleep(0.05)


class Attack(threading.Thread):
    """Runs ``step`` over and over from ``clients`` threads until stopped; counts outcomes."""

    def __init__(self, clients: int, step: Callable[[int, Attack], None]):
        super().__init__(daemon=True)
        self.clients, self.step = clients, step
        self.stop = threading.Event()
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self.counts[what] = self.counts.get(what, 0) + n

    def run(self) -> None:
        workers = [
            threading.Thread(target=self._loop, args=(n,), daemon=True) for n in range(self.clients)
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    def _loop(self, n: int) -> None:
        while not self.stop.is_set():
            try:
                self.step(n, self)
            except OSError:
                self.count("connect failed")
                time.sleep(0.05)


def _source(n: int, addresses: int) -> str:
    return f"127.0.0.{2 + n % addresses}"


def slow_headers(port: int, addresses: int, sockets: int = 520) -> Attack:
    """Each client holds sockets that send a request line, then a header line every 3 s."""

    per = max(1, sockets // 26)

    def step(n: int, a: Attack) -> None:
        held = []
        for _ in range(per):
            s = socket.socket()
            try:
                s.bind((_source(n, addresses), 0))
                s.settimeout(2)
                s.connect((HOST, port))
                s.sendall(b"GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                held.append(s)
                a.count("opened")
            except OSError:
                s.close()
                a.count("refused")
        while held and not a.stop.is_set():
            time.sleep(3)
            alive = []
            for s in held:
                try:
                    s.sendall(b"X-Slow: 1\r\n")
                    alive.append(s)
                except OSError:
                    a.count("closed by the server")
                    s.close()
            held = alive
        for s in held:
            s.close()

    return Attack(26, step)


def idle_sockets(port: int, addresses: int, sockets: int = 520) -> Attack:
    """Sockets opened and left silent, re-opened as soon as the server closes them."""

    per = max(1, sockets // 26)

    def step(n: int, a: Attack) -> None:
        held = []
        for _ in range(per):
            s = socket.socket()
            try:
                s.bind((_source(n, addresses), 0))
                s.settimeout(2)
                s.connect((HOST, port))
                held.append(s)
                a.count("opened")
            except OSError:
                s.close()
                a.count("refused")
        deadline = time.monotonic() + 1.0
        while held and not a.stop.is_set() and time.monotonic() < deadline + 60:
            time.sleep(0.2)
            alive = []
            for s in held:
                s.setblocking(False)
                try:
                    if s.recv(1) == b"":
                        raise OSError
                    alive.append(s)
                except BlockingIOError:
                    alive.append(s)
                except OSError:
                    a.count("closed by the server")
                    s.close()
            if len(alive) < len(held):  # re-open as fast as they are reaped
                for s in alive:
                    s.close()
                return
            held = alive
        for s in held:
            s.close()

    return Attack(26, step)


def get_flood(port: int, clients: int, path: str, addresses: int = 20) -> Attack:
    def step(n: int, a: Attack) -> None:
        status, _t, _b, _h = request(port, "GET", path, source=_source(n, addresses), timeout=60)
        a.count(str(status))

    return Attack(clients, step)


def pipelined(port: int, connections: int = 20, depth: int = 40, path: str = "/sessions") -> Attack:
    """Each client sends ``depth`` requests at once on one connection and never reads a byte;
    when the server closes it (15 s without reading), it does it again."""

    one = f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()

    def step(n: int, a: Attack) -> None:
        import select

        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            s.bind((_source(n, connections), 0))
            s.settimeout(5)
            s.connect((HOST, port))
            s.sendall(one * depth)
            a.count("requests sent", depth)
            hangup = select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0x2000)
            watch = select.poll()
            watch.register(s, hangup)
            while not a.stop.is_set():
                if watch.poll(1000):
                    a.count("closed by the server")
                    break
        finally:
            s.close()

    return Attack(connections, step)


def proxy_guesses(port: int, proxy: str, clients: int = 8) -> Attack:
    """Wrong tokens through the reverse proxy the server trusts (--trusted-proxy): every
    guesser has the proxy's address, each its own forwarded one."""

    def step(n: int, a: Attack) -> None:
        forwarded = {"X-Forwarded-For": f"203.0.113.{1 + n}"}
        status, _t, body, headers = request(port, "GET", "/login", headers=forwarded, source=proxy)
        m = re.search(rb'name="csrf_token" value="([^"]+)"', body)
        cookie = (headers.get("Set-Cookie") or "").split(";")[0]
        if not m:
            a.count("no form")
            return
        form = urlencode({"token": f"guess-{n}-{time.monotonic()}", "csrf_token": m.group(1)})
        status, _t, _b, _h = request(
            port,
            "POST",
            "/login",
            form,
            {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie, **forwarded},
            source=proxy,
        )
        a.count(str(status))

    return Attack(clients, step)


def correct_login_via(port: int, proxy: str) -> int:
    """The admin's login through the proxy, from a forwarded address that never guessed."""
    forwarded = {"X-Forwarded-For": "198.51.100.9"}
    _s, _t, body, headers = request(port, "GET", "/login", headers=forwarded, source=proxy)
    m = re.search(rb'name="csrf_token" value="([^"]+)"', body)
    cookie = (headers.get("Set-Cookie") or "").split(";")[0]
    status, _t, _b, _h = request(
        port,
        "POST",
        "/login",
        urlencode({"token": TOKEN, "csrf_token": m.group(1)}),
        {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie, **forwarded},
        source=proxy,
    )
    return status


def slow_export_readers(port: int, session_id: str, rate: int = 100 * 1024) -> Attack:
    """Two clients read the whole export at 100 KB/s (above the floor that cuts a trickle),
    reconnecting when cut; four others ask for one session's export every second."""

    def step(n: int, a: Attack) -> None:
        if n >= 2:
            status, _t, _b, _h = request(
                port, "GET", f"/export.jsonl?session={quote(session_id)}", source=_source(n, 20)
            )
            a.count(f"other exports {status}")
            a.stop.wait(1.0)
            return
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        s.bind((_source(n, 20), 0))
        s.connect((HOST, port))
        s.sendall(b"GET /export.jsonl HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        s.settimeout(10)
        a.count("slow readers started")
        try:
            while not a.stop.is_set():
                chunk = s.recv(rate // 10)
                if not chunk:
                    a.count("slow readers cut")
                    break
                time.sleep(0.1)
        except (TimeoutError, ConnectionResetError):
            a.count("slow readers cut")
        finally:
            s.close()

    return Attack(6, step)


def plant_repetitive(db, session_id: str, word: str, times: int) -> int:
    """A tool result holding ``word`` ``times`` times (a log, a JSON dump), indexed by the
    file's own FTS triggers, in a copy of the database (for search)."""
    text = f"{word} " * times + "lorem ipsum dolor sit amet " * 1000
    conn = sqlite3.connect(db)
    with conn:
        ts = conn.execute(
            "SELECT MAX(timestamp) FROM messages WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        mid = conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_name, timestamp) "
            "VALUES (?, 'tool', ?, 'terminal', ?)",
            (session_id, text, (ts or 0) + 2),
        ).lastrowid
    conn.close()
    return mid


def trickle_readers(port: int, clients: int = 4) -> Attack:
    """Ask for the whole export and read 4 KB every 8 s."""

    def step(n: int, a: Attack) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind((_source(n, 20), 0))
        s.connect((HOST, port))
        s.sendall(b"GET /export.jsonl HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        s.settimeout(10)
        head = s.recv(64)
        if not head.startswith(b"HTTP/1.1 200"):
            a.count("refused")
            s.close()
            time.sleep(2)
            return
        a.count("started")
        while not a.stop.is_set():
            try:
                if s.recv(4096) == b"":
                    a.count("cut by the server")
                    break
            except (TimeoutError, ConnectionResetError):
                a.count("cut by the server")
                break
            a.stop.wait(8)
        s.close()

    return Attack(clients, step)


def login_guesses(port: int, clients: int = 8) -> Attack:
    """Wrong tokens from rotating addresses, as fast as a GET for a CSRF token allows."""

    def step(n: int, a: Attack) -> None:
        source = f"127.0.{1 + (n * 7 + a.counts.get('sent', 0)) % 200}.{2 + n}"
        status, _t, body, headers = request(port, "GET", "/login", source=source)
        m = re.search(rb'name="csrf_token" value="([^"]+)"', body)
        cookie = (headers.get("Set-Cookie") or "").split(";")[0]
        if not m:
            a.count("no form")
            return
        form = urlencode({"token": f"guess-{n}-{time.monotonic()}", "csrf_token": m.group(1)})
        status, _t, _b, _h = request(
            port,
            "POST",
            "/login",
            form,
            {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie},
            source=source,
        )
        a.count("sent")
        a.count(str(status))

    return Attack(clients, step)


def correct_login(port: int) -> int:
    """The admin's own login from an address that never guessed: its status."""
    source = "127.0.250.9"
    status, _t, body, headers = request(port, "GET", "/login", source=source)
    m = re.search(rb'name="csrf_token" value="([^"]+)"', body)
    cookie = (headers.get("Set-Cookie") or "").split(";")[0]
    status, _t, _b, _h = request(
        port,
        "POST",
        "/login",
        urlencode({"token": TOKEN, "csrf_token": m.group(1)}),
        {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie},
        source=source,
    )
    return status


def plant_huge_message(db, session_id: str) -> int:
    """A 0.8 MB Markdown table in a copy of the database (for "render it anyway")."""
    head = "| " + " | ".join(f"c{i}" for i in range(8)) + " |\n" + "|---" * 8 + "|\n"
    table = head + "".join(
        "| " + " | ".join(f"**v{r}-{i}** `x`" for i in range(8)) + " |\n" for r in range(9000)
    )
    conn = sqlite3.connect(db)
    with conn:
        ts = conn.execute(
            "SELECT MAX(timestamp) FROM messages WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        mid = conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'assistant', ?, ?)",
            (session_id, table, (ts or 0) + 1),
        ).lastrowid
    conn.close()
    return mid


PROXY = "127.0.0.250"  # the reverse proxy the attacked server trusts (--trusted-proxy)
HUGE_WORD = "zetawarn"  # the word the planted 10 MB tool result holds a million times


def scenarios(
    port: int, longest: str, viewer: str, huge: int
) -> list[tuple[str, Callable[[], Attack]]]:
    return [
        ("slow headers, 520 sockets from 1 address", lambda: slow_headers(port, 1)),
        ("slow headers, 520 sockets from 20 addresses", lambda: slow_headers(port, 20)),
        ("idle sockets re-opened, 520 from 1 address", lambda: idle_sockets(port, 1)),
        ("idle sockets re-opened, 520 from 20 addresses", lambda: idle_sockets(port, 20)),
        (
            "in-session prefix search the*, 16 clients",
            lambda: get_flood(port, 16, f"/search?q={quote('the*')}&session={quote(longest)}"),
        ),
        (
            "render it anyway (0.8 MB table), 4 clients looping",
            lambda: get_flood(port, 4, f"/sessions/{quote(viewer)}?at={huge}&render={huge}"),
        ),
        # Longer: a reader is judged over a 20 s window once the kernel's buffers are full.
        (
            "trickling export readers (4 KB every 8 s), 4 clients, 45 s",
            lambda: trickle_readers(port),
        ),
        ("login guesses from rotating addresses, 8 clients", lambda: login_guesses(port)),
        # Issue 49's attacks on the door.
        (
            "N-7: /sessions?limit=500 (0.9 MB), 64 clients from 2 addresses",
            lambda: get_flood(port, 64, "/sessions?limit=500", addresses=2),
        ),
        (
            "pipelined and never read: 20 connections × 40 × /sessions",
            lambda: pipelined(port),
        ),
        (
            "login guesses through the trusted proxy, 8 clients",
            lambda: proxy_guesses(port, PROXY),
        ),
        (
            "slow export readers (2 × 100 KB/s) beside 4 other exporters",
            lambda: slow_export_readers(port, viewer),
        ),
        (
            f"search hitting a 10 MB tool result ({HUGE_WORD} × 1,000,000), 4 clients",
            lambda: get_flood(port, 4, f"/search?q={HUGE_WORD}"),
        ),
    ]
