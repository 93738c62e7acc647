"""glibc's malloc, set once for a server whose replies are megabytes.

A ``step_batch`` of 16 raw Atari frames makes about 6 MB of short-lived buffers a call
(16 base64 strings of 134 KB, the 2.1 MB reply, the reply with its newline). glibc
serves a block over its mmap threshold with a fresh ``mmap`` (every page then faults
in on first touch), and that threshold starts at 128 KiB and rises only as such blocks
are freed: whether the buffers came from the heap or from 1,500 page faults a call
depended on the process's history. The same server, started again, ran 9.0 or 11.5 ms a
call, 0.4 or 3.2 ms of it in the kernel. Fixed thresholds make the fast case the only
one: blocks under 32 MiB come from the heap, and the heap keeps up to 64 MiB free at
its top instead of returning it to the system and faulting it back in.

What someone set through glibc's own environment variables is left as it is, and on
a libc without ``mallopt`` (musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

__all__ = ["tune_malloc"]

log = logging.getLogger("openenv_mcp.server")

#: glibc's ``mallopt`` parameters (``malloc.h``).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20
_OWN_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")


def tune_malloc() -> bool:
    """Fix glibc's mmap and trim thresholds for this process; whether they were set."""
    if not sys.platform.startswith("linux") or any(name in os.environ for name in _OWN_SETTINGS):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    done = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
    if not done:
        log.debug("mallopt refused the thresholds; malloc left as it is")
    return done
