"""glibc's malloc thresholds, fixed for a server of megabyte replies
(server/transports/_malloc.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's, on Linux"),
]

#: A server's reply pattern: three 2 MB buffers made and freed per call, 200 calls;
#: prints the minor page faults those calls took.
CALLS = textwrap.dedent(
    """
    import resource, sys
    from openenv_mcp.server.transports._malloc import tune_malloc
    print(tune_malloc())
    def call():
        a = bytearray(2_100_000); b = bytes(a) + b"\\n"; c = bytes(b)
        del a, b, c
    call()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(200):
        call()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    """
)


def run(env: dict[str, str]) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", CALLS], capture_output=True, text=True, env=env, check=True
    )
    tuned, faults = done.stdout.split()
    return tuned, int(faults)


def test_megabyte_buffers_come_from_the_heap_without_faulting_in_each_call() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_"))}
    tuned, faults = run(env)
    assert tuned == "True"
    # Fresh mmaps would fault ~1,500 pages a call (300,000 here); the heap's are reused.
    assert faults < 2_000, faults


def test_what_the_user_set_through_glibc_is_left_alone() -> None:
    tuned, _ = run({**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"})
    assert tuned == "False"
