"""Gymnasium spaces on the wire: JSON schemas, action parsing, JSON observations.

Discrete actions become an :class:`~openenv_mcp.environment.ActionSet` (see
``env.py``); everything else (``Box``, ``MultiDiscrete``, ``MultiBinary``,
``Tuple``, ``Dict``, ``Text``) is described here by a JSON schema and parsed
back with errors that say what was expected and what came.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_mcp.errors import InvalidAction

__all__ = ["parse_value", "space_schema"]


def _bound(value: float) -> float | None:
    """A finite bound as a float; infinite bounds are no bound at all."""
    return float(value) if math.isfinite(float(value)) else None


def _uniform(array: np.ndarray) -> float | None:
    """The single finite value of an array of bounds, or ``None`` when they differ."""
    flat = np.asarray(array).ravel()
    if flat.size and np.all(flat == flat[0]):
        return _bound(flat[0])
    return None


def _nested_array(shape: tuple[int, ...], item: dict[str, Any]) -> dict[str, Any]:
    schema = item
    for size in reversed(shape):
        schema = {"type": "array", "items": schema, "minItems": size, "maxItems": size}
    return schema


def space_schema(space: spaces.Space[Any]) -> dict[str, Any]:
    """JSON schema of a value of ``space`` (an action, as a tool argument)."""
    if isinstance(space, spaces.Discrete):
        first = int(space.start)
        return {"type": "integer", "minimum": first, "maximum": first + int(space.n) - 1}
    if isinstance(space, spaces.Box):
        number: dict[str, Any] = {
            "type": "integer" if np.issubdtype(space.dtype, np.integer) else "number"
        }
        low, high = _uniform(space.low), _uniform(space.high)
        if low is not None:
            number["minimum"] = low
        if high is not None:
            number["maximum"] = high
        schema = _nested_array(space.shape, number)
        schema["description"] = (
            f"{space} (bounds: low {_short(space.low)}, high {_short(space.high)})"
        )
        return schema
    if isinstance(space, spaces.MultiBinary):
        shape = (space.n,) if isinstance(space.n, (int, np.integer)) else tuple(space.n)
        return _nested_array(tuple(int(s) for s in shape), {"type": "integer", "enum": [0, 1]})
    if isinstance(space, spaces.MultiDiscrete):
        if space.nvec.ndim == 1:
            return {
                "type": "array",
                "prefixItems": [
                    {"type": "integer", "minimum": int(s), "maximum": int(s) + int(n) - 1}
                    for n, s in zip(space.nvec, space.start, strict=True)
                ],
                "minItems": len(space.nvec),
                "maxItems": len(space.nvec),
                "description": str(space),
            }
        return {**_nested_array(space.shape, {"type": "integer"}), "description": str(space)}
    if isinstance(space, spaces.Tuple):
        parts = [space_schema(s) for s in space.spaces]
        return {
            "type": "array",
            "prefixItems": parts,
            "minItems": len(parts),
            "maxItems": len(parts),
        }
    if isinstance(space, spaces.Dict):
        return {
            "type": "object",
            "properties": {k: space_schema(s) for k, s in space.spaces.items()},
            "required": list(space.spaces),
            "additionalProperties": False,
        }
    if isinstance(space, spaces.Text):
        return {
            "type": "string",
            "minLength": int(space.min_length),
            "maxLength": int(space.max_length),
            "description": f"Characters from: {space.characters!r}"
            if len(space.characters) <= 100
            else "A text.",
        }
    return {"description": f"A value of {space}."}


def _short(array: np.ndarray) -> str:
    flat = np.asarray(array).ravel()
    if flat.size and np.all(flat == flat[0]):
        return f"{flat[0]:g}"
    return "[" + ", ".join(f"{v:g}" for v in flat[:8]) + (", ...]" if flat.size > 8 else "]")


def _array(space: spaces.Space[Any], value: Any, where: str) -> np.ndarray:
    assert space.shape is not None
    if isinstance(value, bool) or not isinstance(value, (int, float, list, tuple, np.ndarray)):
        raise InvalidAction(
            f"{where}expected an array of shape {list(space.shape)} for {space}, "
            f"got {type(value).__name__} {value!r}"
        )
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidAction(
            f"{where}expected an array of numbers of shape {list(space.shape)} for {space}, "
            f"got {value!r}"
        ) from None
    if array.shape != space.shape and array.size == math.prod(space.shape) and array.ndim <= 1:
        array = array.reshape(space.shape)  # a bare number for a one-element space
    if array.shape != space.shape:
        raise InvalidAction(
            f"{where}expected an array of shape {list(space.shape)} for {space}, "
            f"got shape {list(array.shape)}"
        )
    if not np.all(np.isfinite(array)):
        raise InvalidAction(f"{where}expected finite numbers for {space}, got {value!r}")
    return array


def parse_value(space: spaces.Space[Any], value: Any, where: str = "") -> Any:
    """Turn a JSON value into a member of ``space``.

    Raises:
        InvalidAction: naming the space, what came, and the bounds it broke.
    """
    if isinstance(space, spaces.Discrete):
        first, last = int(space.start), int(space.start) + int(space.n) - 1
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise InvalidAction(
                f"{where}expected an integer {first}..{last}, got {type(value).__name__} {value!r}"
            )
        if not first <= int(value) <= last:
            raise InvalidAction(f"{where}{value} is out of range; legal: {first}..{last}")
        return np.int64(value)
    if isinstance(space, spaces.Box):
        array = _array(space, value, where)
        if np.issubdtype(space.dtype, np.integer) and not np.all(array == np.round(array)):
            raise InvalidAction(f"{where}expected integers for {space}, got {value!r}")
        if np.any(array < space.low) or np.any(array > space.high):
            raise InvalidAction(
                f"{where}{_short(array)} is out of bounds for {space}: "
                f"low {_short(space.low)}, high {_short(space.high)}"
            )
        return array.astype(space.dtype)
    if isinstance(space, (spaces.MultiDiscrete, spaces.MultiBinary)):
        array = _array(space, value, where)
        if not np.all(array == np.round(array)):
            raise InvalidAction(f"{where}expected integers for {space}, got {value!r}")
        result = array.astype(space.dtype)
        if not space.contains(result):
            raise InvalidAction(f"{where}{result.tolist()} is not in {space}")
        return result
    if isinstance(space, spaces.Tuple):
        if not isinstance(value, (list, tuple)) or len(value) != len(space.spaces):
            raise InvalidAction(
                f"{where}expected a list of {len(space.spaces)} values for {space}, got {value!r}"
            )
        return tuple(
            parse_value(s, v, f"{where}[{i}]: ")
            for i, (s, v) in enumerate(zip(space.spaces, value, strict=True))
        )
    if isinstance(space, spaces.Dict):
        if not isinstance(value, dict) or set(value) != set(space.spaces):
            raise InvalidAction(
                f"{where}expected an object with keys {sorted(space.spaces)} for {space}, "
                f"got {value!r}"
            )
        return {k: parse_value(s, value[k], f"{where}{k}: ") for k, s in space.spaces.items()}
    if isinstance(space, spaces.Text):
        if not isinstance(value, str) or not space.contains(value):
            raise InvalidAction(
                f"{where}expected a text of {space.min_length}..{space.max_length} allowed "
                f"characters for {space}, got {value!r}"
            )
        return value
    try:
        parsed = space.from_jsonable([value])[0]
    except Exception as exc:  # any space's own parser: report what it said
        raise InvalidAction(
            f"{where}could not read {value!r} as a value of {space}: {exc}"
        ) from None
    if not space.contains(parsed):
        raise InvalidAction(f"{where}{value!r} is not in {space}")
    return parsed
