"""An env's random generator on the wire: exact round trips, and bad states refused."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from openenv_mcp.errors import ArgumentError
from openenv_mcp.wire.rng import generator_from_wire, rng_to_wire, set_rng_from_wire


def test_a_generator_crosses_json_and_draws_the_same() -> None:
    local = np.random.default_rng(2**100 + 3)
    local.integers(10, size=5)
    local.random()  # a draw that leaves a cached uint32 half
    wire = orjson.loads(orjson.dumps(rng_to_wire(local)))  # 128-bit words survive JSON
    copy = generator_from_wire(wire)
    assert copy.integers(1, 31, size=20).tolist() == local.integers(1, 31, size=20).tolist()
    target = np.random.default_rng(0)
    set_rng_from_wire(target, rng_to_wire(local))
    assert target.random() == local.random()


def test_what_is_not_a_pcg64_state_is_refused_saying_what_was_expected() -> None:
    assert rng_to_wire(None) is None
    assert rng_to_wire(np.random.Generator(np.random.MT19937(0))) is None
    good = rng_to_wire(np.random.default_rng(1))
    assert good is not None
    for bad in [
        None,
        {**good, "bit_generator": "MT19937"},
        {**good, "state": "zz"},
        {**good, "inc": hex(2**128)},
        {**good, "has_uint32": 2},
        {k: v for k, v in good.items() if k != "uinteger"},
    ]:
        with pytest.raises(ArgumentError, match="expected a PCG64 state"):
            generator_from_wire(bad)
    with pytest.raises(ArgumentError, match="not a PCG64 one"):
        set_rng_from_wire(np.random.Generator(np.random.MT19937(0)), good)
