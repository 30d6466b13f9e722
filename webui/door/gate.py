"""The server's door: who gets a connection, and for how long, so that no client can keep the
others out.

Waitress closes a connection only after ``channel_timeout`` of silence, and stops accepting
altogether once ``connection_limit`` connections are open. A client that sends a header line
every few seconds is never silent, so a few hundred such sockets (or idle ones re-opened as fast
as they are reaped) used to fill the limit and leave every real request waiting in the listen
queue. Here:

- a request must arrive whole (its headers and body) within ``REQUEST_DEADLINE_S`` of its
  first byte, or the connection is closed;
- one address holds at most ``PER_ADDRESS`` connections;
- the server never stops accepting: when the limit (or an address's share) is reached, the
  newcomer takes the place of the longest-waiting connection that has nothing to show for it
  (a request still being read, or an idle keep-alive). Connections whose request is complete,
  being answered or being sent are never displaced: capacity is kept for work that is real;
- a newcomer for whom no place can be made is told so (a 503 written without waiting) and
  closed, before a byte is read: a refusal costs one accept, one send and one close;
- requests pipelined on one connection wait for its reader: waitress would service the next
  one and then hold its worker until the client had read the last response; a client that
  reads nothing held a worker for good (issue 49, N-7). Here a connection whose unread output
  (waitress's buffers and what the kernel holds unacknowledged: on loopback that alone took
  twenty-odd pages) passes ``PARK_ABOVE`` is parked: its next request is handed to the workers
  only when the client has read it down (the event loop looks as it sends, and on each pass),
  and a parked connection whose reader takes nothing for ``channel_timeout`` is closed;
- running out of descriptors never stops the loop: an accept that fails for want of one pauses
  accepting for a moment and makes room (the loop itself polls, so no descriptor number is
  too high for it: webui.door.serve);
- a request line holding raw non-ASCII bytes (``curl 'http://…/search?q=数据库迁移'``, as
  scripts send it) is read as if they were percent-encoded, as browsers send them; a request
  line waitress cannot read at all is answered with its 400 (it was dropped unanswered: the
  dispatcher looked for a path such a request does not have).
"""

from __future__ import annotations

import errno
import re
import socket
import struct
import threading
import time

try:  # POSIX: how much a socket's peer has not acknowledged
    import fcntl
    import termios
except ImportError:  # pragma: no cover - elsewhere that is not known, and counts as 0
    fcntl = termios = None  # type: ignore[assignment]

from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer

REQUEST_DEADLINE_S = 10.0
PER_ADDRESS = 32
PARK_ABOVE = 64 * 1024
# After an accept failed for want of a descriptor, accepting waits this long (the listening
# socket stays readable, and polling it at once again would spin).
NO_DESCRIPTOR_PAUSE_S = 0.1
REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 56\r\nConnection: close\r\n\r\n"
    b"Logbook has too many connections open: try again soon.\r\n"
)


_RAW_BYTE = re.compile(rb"[\x80-\xff]")


class RequestParser(HTTPRequestParser):
    # What a request waitress could not parse reads as (it answers it with a 400): the
    # dispatcher classes every request by its path and query before it is answered.
    path = ""
    query = ""

    def parse_header(self, header_plus):
        """The request line's raw bytes above 0x7f percent-encoded (UTF-8 stays UTF-8 once
        decoded: ``%E6%95%B0``…), before waitress reads it; header lines are left alone."""
        end = header_plus.find(b"\r\n")
        line = header_plus if end < 0 else header_plus[:end]
        if _RAW_BYTE.search(line):
            line = _RAW_BYTE.sub(lambda m: b"%%%02X" % m.group()[0], line)
            header_plus = line if end < 0 else line + header_plus[end:]
        return super().parse_header(header_plus)


class GatedChannel(HTTPChannel):
    parser_class = RequestParser
    began: float | None = None  # when the first byte of the request being read arrived

    def received(self, data):
        if data and self.request is None:
            self.began = time.time()
        done = super().received(data)
        if self.request is None:  # nothing half read
            self.began = None
        return done

    @property
    def idle_since(self) -> float | None:
        """When this connection last did anything useful, if it has nothing to show now: a
        request still arriving (since its first byte) or an idle keep-alive (since its last
        activity), or pipelined requests parked for a reader that does not read (since it
        last took a byte). None while a request is answered or a response is sent."""
        if self.parked_at is not None:
            return self.last_activity
        if self.requests or self.total_outbufs_len or self.will_close or self.close_when_flushed:
            return None
        return self.began if self.began is not None else self.last_activity

    # -- pipelined requests wait for their reader ----------------------------------------
    writing = False  # the worker is writing a response (waitress's write_soon)
    parked_at: float | None = None  # its next request waits for the client to read

    def write_soon(self, data):
        self.writing = True
        try:
            return super().write_soon(data)
        finally:
            self.writing = False

    def _flush_outbufs_below_high_watermark(self):
        # Within a response, as waitress: a response larger than the spool waits for its
        # reader (exports: their watchdog cuts a reader that stalls, webui.web.streams).
        # Between two pipelined requests waitress would wait here too, holding the worker
        # until the client reads; instead the next request is parked (GatedServer.add_task).
        if self.writing:
            super()._flush_outbufs_below_high_watermark()

    def handle_write(self):
        super().handle_write()
        # Asked every time, under the server's lock: a worker may be parking this connection
        # while the loop sends its last bytes.
        self.server.unpark(self)

    def handle_close(self):
        self.server.forget(self)
        super().handle_close()


class GatedServer(TcpWSGIServer):
    channel_class = GatedChannel
    per_address = PER_ADDRESS
    request_deadline_s = REQUEST_DEADLINE_S
    # What the door did (tests and benchmarks read these).
    displaced = 0
    refused = 0
    overdue = 0
    parked_total = 0  # pipelined requests that waited for their reader
    out_of_descriptors = 0  # accepts that failed for want of a descriptor
    paused_until = 0.0

    def readable(self):
        # As waitress, but never "no longer accepting": a place is made at the door instead.
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)
        if self._parked:  # their readers may have drained the kernel's share meanwhile
            for channel in list(self._parked):
                self.unpark(channel)
        return self.accepting and now >= self.paused_until

    def handle_accept(self):
        try:
            accepted = self.accept()
            if accepted is None:
                return
            conn, addr = accepted
            self.set_socket_options(conn)
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                # No descriptor for the newcomer: wait a moment (the socket stays readable)
                # and free one, the connection that has waited longest with nothing to show.
                self.out_of_descriptors += 1
                self.paused_until = time.time() + NO_DESCRIPTOR_PAUSE_S
                self._make_room(list(self.active_channels.values()))
            return
        addr = self.fix_addr(addr)
        peer = addr[0] if isinstance(addr, tuple) else addr
        channels = list(self.active_channels.values())
        # A reverse proxy the user trusts carries everyone's connections: no per-address share.
        mine = [] if peer == self.adj.trusted_proxy else [c for c in channels if _peer(c) == peer]
        if len(mine) >= self.per_address:
            room = self._make_room(mine)
        elif len(channels) >= self.adj.connection_limit:
            room = self._make_room(channels)
        else:
            room = True
        if not room:
            self.refused += 1
            _refuse(conn)
            return
        self.channel_class(self, conn, addr, self.adj, map=self._map)

    # -- pipelined requests wait for their reader (GatedChannel) --------------------------
    @property
    def _park_lock(self) -> threading.Lock:
        lock = self.__dict__.get("_park_lock_")
        if lock is None:
            lock = self.__dict__.setdefault("_park_lock_", threading.Lock())
        return lock

    @property
    def _parked(self) -> set:
        parked = self.__dict__.get("_parked_")
        if parked is None:
            parked = self.__dict__.setdefault("_parked_", set())
        return parked

    def add_task(self, channel):
        """A connection's next request: to the workers, or parked while the client has more
        than PARK_ABOVE of earlier responses still to read (a worker thread asks, after
        servicing the one before; the loop unparks, as it sends)."""
        with self._park_lock:
            if channel.connected and unsent(channel) > PARK_ABOVE:
                channel.parked_at = time.time()
                self._parked.add(channel)
                self.parked_total += 1
                return True
        return super().add_task(channel)

    def unpark(self, channel) -> None:
        with self._park_lock:
            if channel.parked_at is None or unsent(channel) > PARK_ABOVE:
                return
            channel.parked_at = None
            self._parked.discard(channel)
        if channel.connected and channel.requests:
            self.task_dispatcher.add_task(channel)

    def forget(self, channel) -> None:
        with self._park_lock:
            channel.parked_at = None
            self._parked.discard(channel)

    def _make_room(self, among: list[HTTPChannel]) -> bool:
        """Close the connection among these that has waited longest with nothing to show."""
        waiting = [(c.idle_since, c) for c in among if getattr(c, "idle_since", None) is not None]
        if not waiting:
            return False
        _since, oldest = min(waiting, key=lambda pair: pair[0])
        self.displaced += 1
        oldest.handle_close()
        return True

    def maintenance(self, now):
        super().maintenance(now)  # idle keep-alives past channel_timeout
        cutoff = now - self.request_deadline_s
        silent = now - self.adj.channel_timeout
        for channel in list(self.active_channels.values()):
            began = getattr(channel, "began", None)
            if began is not None and began < cutoff and not channel.will_close:
                self.overdue += 1
                channel.will_close = True
            # A parked connection whose reader took nothing for as long as an idle one may
            # stay (waitress keeps every connection with requests waiting).
            parked = getattr(channel, "parked_at", None)
            if parked is not None and channel.last_activity < silent:
                channel.will_close = True


def unsent(channel) -> int:
    """What a connection's client has not taken yet: waitress's buffers and the kernel's."""
    return channel.total_outbufs_len + unacknowledged(getattr(channel, "socket", None))


def unacknowledged(sock) -> int:
    """Bytes sent into a TCP socket that its peer has not acknowledged yet (Linux's
    SIOCOUTQ), or 0 where that cannot be told."""
    if sock is None:
        return 0
    try:
        buf = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
        return max(0, struct.unpack("i", buf)[0])
    except (AttributeError, OSError, ValueError):
        return 0


def _refuse(conn: socket.socket) -> None:
    """Say "busy" to a connection there is no room for, without waiting, and close it."""
    try:
        conn.setblocking(False)
        conn.send(REFUSAL)
    except OSError:
        pass
    try:
        conn.close()
    except OSError:
        pass


def _peer(channel: HTTPChannel) -> str:
    addr = channel.addr
    return addr[0] if isinstance(addr, tuple) else str(addr)


def install(server) -> None:
    """Put the door on every listening socket of a server create_server built (one, or a
    MultiSocketServer's several): they become GatedServers, their new connections
    GatedChannels. The classes add behaviour, no state of their own to set up."""
    for dispatcher in list(server._map.values()):
        if type(dispatcher) is TcpWSGIServer:
            dispatcher.__class__ = GatedServer
