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
- a newcomer for whom no place can be made is closed at once, before a byte is read: a refusal
  costs one accept and one close;
- a request line holding raw non-ASCII bytes (``curl 'http://…/search?q=数据库迁移'``, as
  scripts send it) is read as if they were percent-encoded, as browsers send them; a request
  line waitress cannot read at all is answered with its 400 (it was dropped unanswered: the
  dispatcher looked for a path such a request does not have).
"""

from __future__ import annotations

import re
import time

from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer

REQUEST_DEADLINE_S = 10.0
PER_ADDRESS = 32


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
        activity). None while a request is answered or a response is sent."""
        if self.requests or self.total_outbufs_len or self.will_close or self.close_when_flushed:
            return None
        return self.began if self.began is not None else self.last_activity


class GatedServer(TcpWSGIServer):
    channel_class = GatedChannel
    per_address = PER_ADDRESS
    request_deadline_s = REQUEST_DEADLINE_S
    # What the door did (tests and benchmarks read these).
    displaced = 0
    refused = 0
    overdue = 0

    def readable(self):
        # As waitress, but never "no longer accepting": a place is made at the door instead.
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)
        return self.accepting

    def handle_accept(self):
        try:
            accepted = self.accept()
            if accepted is None:
                return
            conn, addr = accepted
            self.set_socket_options(conn)
        except OSError:
            return
        addr = self.fix_addr(addr)
        peer = addr[0] if isinstance(addr, tuple) else addr
        channels = list(self.active_channels.values())
        mine = [c for c in channels if _peer(c) == peer]
        if len(mine) >= self.per_address:
            room = self._make_room(mine)
        elif len(channels) >= self.adj.connection_limit:
            room = self._make_room(channels)
        else:
            room = True
        if not room:
            self.refused += 1
            try:
                conn.close()
            except OSError:
                pass
            return
        self.channel_class(self, conn, addr, self.adj, map=self._map)

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
        for channel in list(self.active_channels.values()):
            began = getattr(channel, "began", None)
            if began is not None and began < cutoff and not channel.will_close:
                self.overdue += 1
                channel.will_close = True


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
