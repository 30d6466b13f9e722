"""The server fixes glibc's mmap threshold (webui/door/serve.py): multi-megabyte buffers (an
export's batches) are then given back when freed instead of staying resident. Measured in a
fresh interpreter each way; on a libc without glibc's sliding threshold there is nothing to
show and the test is skipped."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support import ROOT

SCRIPT = r"""
import sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
if sys.argv[1] == "fixed":
    from webui.door.serve import _fixed_mmap_threshold
    _fixed_mmap_threshold()
a = b"x" * (8 << 20); del a   # one large block freed: glibc would raise its threshold
base = rss()
keep = []
for i in range(6):
    big = [b"y" * (4 << 20) for _ in range(3)]
    keep.append(b"z" * 100)   # small live objects allocated between the big ones
    del big
print(rss() - base)
"""


def _kept_kb(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


@pytest.mark.slow  # a server process filling and freeing large buffers
def test_freed_large_buffers_are_given_back():
    sliding = _kept_kb("dynamic")
    if sliding < 4096:
        pytest.skip("this libc gives large blocks back anyway")
    assert _kept_kb("fixed") < 1024 < sliding
