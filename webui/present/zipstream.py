"""A zip archive written as it is downloaded: each member is compressed and handed on chunk by
chunk, so neither a thousand-file export nor one long conversation sits whole in memory.
zipfile writes to a stream it cannot seek (sizes then follow each member in a data
descriptor), which every unzip tool reads."""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Iterable, Iterator


class _Sink(io.RawIOBase):
    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        self._chunks.append(bytes(b))
        return len(b)

    def take(self) -> bytes:
        out = b"".join(self._chunks)
        self._chunks.clear()
        return out


def zip_stream(members: Iterable[tuple[str, bytes | Iterable[bytes]]]) -> Iterator[bytes]:
    """(name, data) pairs in, where data is bytes or an iterable of byte chunks; the archive's
    bytes out as they are made. Member names must already be safe (no ``/``, no ``..``)."""
    sink = _Sink()
    stamp = time.localtime()[:6]
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with archive.open(info, "w", force_zip64=True) as member:
                for chunk in [data] if isinstance(data, bytes) else data:
                    member.write(chunk)
                    out = sink.take()
                    if out:
                        yield out
            out = sink.take()
            if out:
                yield out
    yield sink.take()
