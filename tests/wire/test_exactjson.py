"""JSON on the wire: integers of any size arrive as themselves; NaN is read."""

from __future__ import annotations

import math

import pytest

from openenv_mcp.wire.exactjson import dumps, loads_exact


@pytest.mark.parametrize("seed", [0, 2**63 - 1, 2**64 - 1, 2**64, 2**100 + 7])
def test_integers_of_any_size_round_trip_exactly(seed: int) -> None:
    message = {"params": {"arguments": {"seed": seed}}}
    assert loads_exact(dumps(message)) == message


def test_what_only_pythons_json_reads_is_read() -> None:
    value = loads_exact(b'{"action": [NaN, Infinity]}')["action"]
    assert math.isnan(value[0]) and value[1] == math.inf
    with pytest.raises(ValueError):
        loads_exact(b'{"cut": ')
    assert dumps({"odd": {1, 2}}) in (b'{"odd":"{1, 2}"}', b'{"odd":"{2, 1}"}')


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
        b"[" * 3_000 + b"1" * 30 + b"]" * 3_000,  # a long number: Python's json reads it
    ],
)
def test_nesting_too_deep_is_a_value_error(data: bytes) -> None:
    # Before (issue 32): RecursionError, a 500 with a traceback on OpenEnv's routes.
    with pytest.raises(ValueError, match="nested deeper than 1024 levels"):
        loads_exact(data)
