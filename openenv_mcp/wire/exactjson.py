"""JSON messages on the wire: orjson's speed, with Python's exactness where orjson loses values.

orjson reads an integer past 64 bits as a float, silently dropping its low digits, and
refuses to write one at all. A seed is any non-negative integer (as Gymnasium takes), so
``2**70 + 1`` must arrive as itself, not as another seed. Requests are small, so the
server scans them for a long run of digits and reads those with Python's json; replies
(frames, megabytes of them) keep orjson's path.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["dumps", "loads_exact"]

#: Deepest nesting a message may have (orjson's own limit).
MAX_DEPTH = 1024

# 2**64 has 20 digits: any integer orjson cannot hold has at least that many.
_LONG_NUMBER = re.compile(rb"[0-9]{20}")


def loads_exact(data: bytes) -> Any:
    """Parse one message exactly: big integers as integers, NaN and Infinity as floats.

    Python's json writes NaN and Infinity (a diverged policy's float action), which
    orjson refuses: they are read too, rather than leaving a request unanswered.
    Nesting deeper than orjson's limit (1,024) is refused, never handed to Python's
    json to exhaust the interpreter's recursion.

    Raises:
        ValueError: the data is not JSON, or is nested too deep.
    """
    if _LONG_NUMBER.search(data) is None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            if "depth limit" in str(exc):
                raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None


def dumps(message: Any) -> bytes:
    """One compact JSON message; what orjson cannot write (integers past 64 bits) goes
    through Python's json, and what neither can, as its ``repr``."""
    try:
        return orjson.dumps(message)
    except TypeError:
        return json.dumps(message, separators=(",", ":"), default=repr).encode()
