"""An environment's random generator on the wire: its state, to mirror it across MCP.

Gymnasium envs draw from ``env.np_random``, and so do wrappers: Gymnasium's
``AtariPreprocessing`` and SB3's ``NoopResetEnv`` draw their no-op starts from
``env.unwrapped.np_random``. Through MCP the env's generator is on the server and the
wrapper's ``unwrapped`` is the client, so each reset's answer carries the generator's
state and the client draws from a copy; what the client drew is sent back with the
next unseeded reset, so the one stream goes on as it would in one process.

Only ``PCG64`` (what ``gymnasium.utils.seeding`` makes) travels; its 128-bit words go as
hexadecimal strings, which every JSON reader keeps exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from openenv_mcp.errors import ArgumentError

__all__ = ["RNG_STATE_SCHEMA", "generator_from_wire", "rng_to_wire", "set_rng_from_wire"]

_WORD = 2**128

#: JSON schema of a generator's state on the wire.
RNG_STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "bit_generator": {"type": "string", "enum": ["PCG64"]},
        "state": {"type": "string", "pattern": "^0x[0-9a-f]{1,32}$"},
        "inc": {"type": "string", "pattern": "^0x[0-9a-f]{1,32}$"},
        "has_uint32": {"type": "integer", "minimum": 0, "maximum": 1},
        "uinteger": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
    },
    "required": ["bit_generator", "state", "inc", "has_uint32", "uinteger"],
    "additionalProperties": False,
}


def rng_to_wire(generator: np.random.Generator | None) -> dict[str, Any] | None:
    """The state of ``generator`` as JSON, or ``None`` (no generator, or not a PCG64 one)."""
    if generator is None:
        return None
    state = generator.bit_generator.state
    if state.get("bit_generator") != "PCG64":
        return None
    words = state["state"]
    return {
        "bit_generator": "PCG64",
        "state": hex(int(words["state"])),
        "inc": hex(int(words["inc"])),
        "has_uint32": int(state["has_uint32"]),
        "uinteger": int(state["uinteger"]),
    }


def _numpy_state(wire: Any) -> dict[str, Any]:
    """NumPy's form of a wire state, checked.

    Raises:
        ArgumentError: naming what was expected and what came.
    """
    expected = (
        "a PCG64 state as a reset returned it: bit_generator 'PCG64', state and inc as "
        "hexadecimal strings, has_uint32 0 or 1, uinteger 0..2^32-1"
    )
    try:
        if not isinstance(wire, dict) or wire.get("bit_generator") != "PCG64":
            raise ValueError
        state, inc = int(str(wire["state"]), 16), int(str(wire["inc"]), 16)
        has_uint32, uinteger = wire["has_uint32"], wire["uinteger"]
        ok = (
            0 <= state < _WORD
            and 0 <= inc < _WORD
            and has_uint32 in (0, 1)
            and isinstance(uinteger, int)
            and 0 <= uinteger < 2**32
        )
        if not ok:
            raise ValueError
    except (KeyError, TypeError, ValueError):
        raise ArgumentError(f"np_random: expected {expected}; got {str(wire)[:200]}") from None
    return {
        "bit_generator": "PCG64",
        "state": {"state": state, "inc": inc},
        "has_uint32": int(has_uint32),
        "uinteger": uinteger,
    }


def generator_from_wire(wire: Any) -> np.random.Generator:
    """A new generator in the state ``wire`` describes.

    Raises:
        ArgumentError: ``wire`` is not a state :func:`rng_to_wire` writes.
    """
    generator = np.random.Generator(np.random.PCG64())
    generator.bit_generator.state = _numpy_state(wire)
    return generator


def set_rng_from_wire(generator: np.random.Generator, wire: Any) -> None:
    """Put ``generator`` (a PCG64 one) in the state ``wire`` describes.

    Raises:
        ArgumentError: ``wire`` is not a state :func:`rng_to_wire` writes, or
            ``generator`` is not a PCG64 generator.
    """
    state = _numpy_state(wire)
    if generator.bit_generator.state.get("bit_generator") != "PCG64":
        raise ArgumentError("np_random: this environment's generator is not a PCG64 one")
    generator.bit_generator.state = state
