"""The waitress server Logbook runs in, with the settings that keep it answering under abuse
(the command line and the tests' live server both build it here)."""

from __future__ import annotations

from waitress import create_server

from webui.web.streams import SPOOL_BYTES


def make_server(app, host: str, port: int, threads: int = 8, **overrides):
    settings = {
        "threads": threads,
        "ident": "",  # no Server header (no version disclosure)
        # Idle keep-alive connections must not lock others out: they are closed after 15 s of
        # silence (checked every 5 s), and up to 500 may be open at once.
        "connection_limit": 500,
        "channel_timeout": 15,
        "cleanup_interval": 5,
        # A response is spooled (to a temporary file past 1 MB) up to this size before its
        # worker waits for the client: most exports are produced whole and the worker is free.
        "outbuf_high_watermark": SPOOL_BYTES,
    }
    settings.update(overrides)
    return create_server(app, host=host, port=port, **settings)
