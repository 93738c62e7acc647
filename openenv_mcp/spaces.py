"""Gymnasium spaces on the wire: the space itself, its JSON schema, and its values, both ways.

One module, used by the server and the client alike, for every space
Gymnasium has (``Discrete``, ``Box``, ``MultiBinary``, ``MultiDiscrete``,
``Text``, ``Tuple``, ``Dict``, ``Sequence``, ``OneOf``, ``Graph``, nested
any way), plus :class:`AnyText`, :class:`JsonSpace` (JSON values, held to a schema
where one is given), :class:`NamedDiscrete` and :class:`ToolCalls` (calls of named
tools, each with its argument schema):

* :func:`space_to_json` / :func:`space_from_json`: the space as JSON, exactly,
  so a client rebuilds the server's space before the first reset (the
  ``openenv://ENV/spec`` resource carries it);
* :func:`value_schema`: the JSON schema of a value of the space (the ``action``
  argument of ``step``);
* :func:`encode` / :func:`decode`: a value as JSON and back. Array leaves
  (``Box``, ``MultiBinary``, ``MultiDiscrete``) travel as nested lists, or for
  trainers as compact raw arrays (:func:`openenv_mcp.codecs.encode_raw`);
  :func:`decode` accepts either. It checks what came against the space and
  says what was expected (``check=False`` trusts it: a client reading the
  server's own observations).
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from openenv_mcp.codecs import ArrayForm, decode_raw, encode_raw, is_raw, to_jsonable
from openenv_mcp.errors import ArgumentError, InvalidAction, did_you_mean
from openenv_mcp.wire.schemas import first_error, inline_refs, make_validator

__all__ = [
    "RAW_ARRAY_SCHEMA",
    "AnyText",
    "JsonSpace",
    "NamedDiscrete",
    "ToolCall",
    "ToolCalls",
    "decode",
    "encode",
    "is_array_space",
    "space_from_json",
    "space_to_json",
    "value_schema",
]

_PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "
#: Longest value text quoted in an error: the message names what came without echoing megabytes.
_QUOTE = 80


class AnyText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` of any characters, within its lengths.

    Gymnasium's ``Text`` holds only strings over its charset; a free-form
    message (a model's reply, source code) may hold any character. The charset
    here only shapes :meth:`sample` (printable ASCII).
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=_PRINTABLE, seed=seed)

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a string of an allowed length (any characters)."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyText) and (self.min_length, self.max_length) == (
            other.min_length,
            other.max_length,
        )

    def __hash__(self) -> int:
        return hash((AnyText, self.min_length, self.max_length))

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"


class JsonSpace(spaces.Space[Any]):
    """JSON values: for values no Gymnasium space describes (a free-form report, a
    command object), optionally held to a JSON schema.

    Args:
        description: what a value is, for a model reading the tool.
        schema: a JSON schema the values follow (its ``description`` is set from
            ``description``); ``None``: any JSON value.

    :meth:`sample` draws from the schema's simple forms (strings, numbers, booleans,
    null, ``anyOf`` branches, arrays and objects of those), checked against it.
    """

    def __init__(self, description: str = "", schema: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.description = description
        self.schema: dict[str, Any] | None = None if schema is None else dict(schema)

    @property
    def is_np_flattenable(self) -> bool:
        """JSON values have no fixed flat form."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        """A value of the schema (any JSON value: a short string where there is none).

        Raises:
            NotImplementedError: the schema has no simple form this draws from.
        """
        schema = self.schema or {"type": "string", "maxLength": 16}
        for _ in range(16):
            value = _sample_schema(schema, self.np_random)
            if value is not _NO_SAMPLE and self.contains(value):
                return value
        raise NotImplementedError(f"cannot draw a value of this JSON schema: {_quote(schema)}")

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a JSON value (None, bool, number, string, list, dict) that
        follows the schema, if there is one."""
        if not _is_json(x):
            return False
        if self.schema is None:
            return True
        import jsonschema

        return bool(jsonschema.Draft202012Validator(self.schema).is_valid(x))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonSpace) and self.schema == other.schema

    def __hash__(self) -> int:
        return hash((JsonSpace, repr(self.schema)))

    def __repr__(self) -> str:
        return "JsonSpace()" if self.schema is None else "JsonSpace(schema)"


_NO_SAMPLE = object()


def _sample_schema(schema: Mapping[str, Any], rng: np.random.Generator) -> Any:
    """A random value of a simple JSON schema, or ``_NO_SAMPLE``."""
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return _sample_schema(branches[int(rng.integers(len(branches)))], rng)
    if "enum" in schema:
        return schema["enum"][int(rng.integers(len(schema["enum"])))]
    kind = schema.get("type")
    if kind == "string":
        low, high = int(schema.get("minLength", 0)), int(schema.get("maxLength", 16))
        size = int(rng.integers(low, max(low, min(high, low + 16)) + 1))
        return "".join(_PRINTABLE[int(i)] for i in rng.integers(len(_PRINTABLE), size=size))
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", -100), schema.get("maximum", 100)
        if kind == "integer":
            return int(rng.integers(int(low), int(high) + 1))
        return float(rng.uniform(float(low), float(high)))
    if kind == "boolean":
        return bool(rng.integers(2))
    if kind == "null":
        return None
    if kind == "array" and isinstance(schema.get("items"), dict):
        size = int(rng.integers(int(schema.get("minItems", 0)), int(schema.get("minItems", 0)) + 3))
        return [_sample_schema(schema["items"], rng) for _ in range(size)]
    if kind == "object":
        properties = schema.get("properties") or {}
        return {k: _sample_schema(properties[k], rng) for k in schema.get("required", [])}
    return _NO_SAMPLE


def _is_json(x: Any) -> bool:
    if x is None or isinstance(x, (bool, int, float, str)):
        return True
    if isinstance(x, (list, tuple)):
        return all(_is_json(v) for v in x)
    if isinstance(x, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in x.items())
    return False


class NamedDiscrete(spaces.Discrete):
    """A ``Discrete`` space whose values may also be given by name, where the names are
    the environment's to know and may change from state to state (a game's moves).

    To a trainer it is a ``Discrete`` like any other; on the wire an action is its
    integer or a name the environment's ``parse_action`` resolves.
    """

    def __repr__(self) -> str:
        return f"NamedDiscrete({int(self.n)}, start={int(self.start)})"


class ToolCall(NamedTuple):
    """One named tool an action may call: its name, what it does, its argument schema."""

    name: str
    description: str
    schema: dict[str, Any]


class ToolCalls(spaces.Space[Any]):
    """Actions that are calls of named tools, each with its own argument schema (an
    OpenEnv MCP environment's ``CallToolAction``): a value is
    ``{"tool": name, "arguments": {...}}``.

    The server lists each tool as an MCP tool of its own (its arguments typed by its
    schema, ``$ref`` inlined), as it lists one tool per named action of an
    ``ActionSet``; ``step`` takes a call of any of them. :meth:`sample` calls a random
    tool with arguments drawn from its schema's simple forms.
    """

    def __init__(self, tools: Sequence[ToolCall]) -> None:
        super().__init__()
        self.tools: dict[str, ToolCall] = {
            t.name: ToolCall(t.name, t.description, inline_refs(dict(t.schema))) for t in tools
        }
        self._validators: dict[str, Any] = {}

    @property
    def is_np_flattenable(self) -> bool:
        """Tool calls have no fixed flat form."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        """A call of a random tool, with arguments its schema accepts.

        Raises:
            NotImplementedError: no tools, or no simple form of the chosen one's schema.
        """
        names = sorted(self.tools)
        if not names:
            raise NotImplementedError("no tools to call")
        name = names[int(self.np_random.integers(len(names)))]
        arguments = JsonSpace(schema=self.tools[name].schema)
        arguments.seed(int(self.np_random.integers(2**31)))  # drawn from this space's stream
        return {"tool": name, "arguments": arguments.sample()}

    def problem(self, x: Any) -> str | None:
        """What is wrong with ``x`` as a call (which tool, which argument), or ``None``."""
        if not (isinstance(x, Mapping) and isinstance(x.get("tool"), str)):
            return (
                "expected a tool call {'tool': NAME, 'arguments': {...}} with NAME one of "
                f"{sorted(self.tools)}, got {_what(x)}"
            )
        extra = sorted(set(x) - {"tool", "arguments"})
        if extra:
            return f"a tool call has only 'tool' and 'arguments', got also {extra}"
        name = x["tool"]
        tool = self.tools.get(name)
        if tool is None:
            return (
                f"no tool {name!r}.{did_you_mean(name, self.tools)} Tools: "
                f"{', '.join(sorted(self.tools)) or 'none'}"
            )
        arguments = x.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            return f"arguments of {name!r} must be an object, got {_what(arguments)}"
        if name not in self._validators:
            self._validators[name] = make_validator(tool.schema)
        wrong = first_error(self._validators[name], dict(arguments))
        return None if wrong is None else f"{name}: {wrong}"

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a call of one of the tools with arguments its schema takes."""
        return self.problem(x) is None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCalls) and self.tools == other.tools

    def __hash__(self) -> int:
        return hash((ToolCalls, tuple(sorted(self.tools))))

    def __repr__(self) -> str:
        return f"ToolCalls({', '.join(self.tools)})"


_ARRAY_SPACES = (spaces.Box, spaces.MultiBinary, spaces.MultiDiscrete)
#: Every JSON type, one anyOf branch each (a schema that names no type is refused by some clients).
_JSON_TYPES = ("object", "array", "string", "number", "boolean", "null")


def is_array_space(space: spaces.Space[Any]) -> bool:
    """Whether values of ``space`` are numpy arrays (Box, MultiBinary, MultiDiscrete)."""
    return isinstance(space, _ARRAY_SPACES)


# -- the space as JSON ----------------------------------------------------------------------


def _number(value: Any) -> Any:
    """A bound as JSON: numbers as they are, infinities and NaN as strings."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _bounds(array: np.ndarray) -> Any:
    """One number for a uniform array of bounds, else nested lists."""
    flat = np.asarray(array).ravel()
    if flat.size and np.all(flat == flat[0]):
        return _number(flat[0])
    if flat.dtype.kind == "f" and not np.all(np.isfinite(flat)):
        return [_number(v) for v in flat.tolist()] if array.ndim <= 1 else _nest(array)
    return np.asarray(array).tolist()


def _nest(array: np.ndarray) -> Any:
    if array.ndim == 0:
        return _number(array.item())
    return [_nest(a) for a in array]


def _unbound(value: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    def read(v: Any) -> Any:
        if isinstance(v, list):
            return [read(x) for x in v]
        return float(v) if isinstance(v, str) else v

    return np.broadcast_to(np.asarray(read(value), dtype=dtype), shape).copy()


def space_to_json(space: spaces.Space[Any]) -> dict[str, Any]:
    """The space as JSON; :func:`space_from_json` rebuilds an equal space.

    A space this module does not know (a custom subclass) is described as
    ``{"type": "Json"}``: its values still travel, as JSON.
    """
    if isinstance(space, spaces.Discrete):
        described = {
            "type": "Discrete",
            "n": int(space.n),
            "start": int(space.start),
            "dtype": str(space.dtype),
        }
        if isinstance(space, NamedDiscrete):
            described["named"] = True
        return described
    if isinstance(space, spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": str(space.dtype),
            "low": _bounds(space.low),
            "high": _bounds(space.high),
        }
    if isinstance(space, spaces.MultiBinary):
        n = space.n
        return {
            "type": "MultiBinary",
            "n": int(n) if isinstance(n, (int, np.integer)) else [int(x) for x in n],
        }
    if isinstance(space, spaces.MultiDiscrete):
        return {
            "type": "MultiDiscrete",
            "nvec": space.nvec.tolist(),
            "start": space.start.tolist(),
            "dtype": str(space.dtype),
        }
    if isinstance(space, spaces.Text):
        return {
            "type": "Text",
            "min_length": space.min_length,
            "max_length": space.max_length,
            # AnyText holds any character: no charset to name.
            "charset": None if isinstance(space, AnyText) else "".join(space.character_list),
        }
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_to_json(s) for s in space.spaces]}
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: space_to_json(s) for k, s in space.spaces.items()}}
    if isinstance(space, spaces.Sequence):
        return {
            "type": "Sequence",
            "space": space_to_json(space.feature_space),
            "stack": space.stack,
        }
    if isinstance(space, spaces.OneOf):
        return {"type": "OneOf", "spaces": [space_to_json(s) for s in space.spaces]}
    if isinstance(space, spaces.Graph):
        edge = space.edge_space
        return {
            "type": "Graph",
            "node_space": space_to_json(space.node_space),
            "edge_space": None if edge is None else space_to_json(edge),
        }
    if isinstance(space, ToolCalls):
        return {"type": "ToolCalls", "tools": [t._asdict() for t in space.tools.values()]}
    if isinstance(space, JsonSpace):
        json_form: dict[str, Any] = {"type": "Json", "description": space.description}
        if space.schema is not None:
            json_form["schema"] = space.schema
        return json_form
    return {"type": "Json", "description": repr(space)}


def space_from_json(data: Mapping[str, Any]) -> spaces.Space[Any]:
    """Rebuild a space from :func:`space_to_json` output.

    Raises:
        ArgumentError: for a description that names no known space or lacks a field.
    """
    try:
        return _space_from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ArgumentError(f"not a space description: {_quote(data)} ({exc!r})") from None


def _space_from_json(data: Mapping[str, Any]) -> spaces.Space[Any]:
    kind = data["type"]
    if kind == "Discrete":
        cls = NamedDiscrete if data.get("named") else spaces.Discrete
        return cls(
            int(data["n"]), start=int(data.get("start", 0)), dtype=data.get("dtype", "int64")
        )
    if kind == "Box":
        shape = tuple(int(s) for s in data["shape"])
        dtype = np.dtype(data["dtype"])
        low = _unbound(data["low"], shape, dtype)
        high = _unbound(data["high"], shape, dtype)
        return spaces.Box(low=low, high=high, shape=shape, dtype=dtype.type)
    if kind == "MultiBinary":
        return spaces.MultiBinary(data["n"])
    if kind == "MultiDiscrete":
        dtype = np.dtype(data.get("dtype", "int64"))
        return spaces.MultiDiscrete(
            np.asarray(data["nvec"], dtype=dtype),
            dtype=dtype.type,
            start=np.asarray(data["start"], dtype=dtype),
        )
    if kind == "Text":
        if data.get("charset") is None:
            return AnyText(int(data["max_length"]), min_length=int(data["min_length"]))
        return spaces.Text(
            int(data["max_length"]), min_length=int(data["min_length"]), charset=data["charset"]
        )
    if kind == "Tuple":
        return spaces.Tuple([_space_from_json(s) for s in data["spaces"]])
    if kind == "Dict":
        return spaces.Dict({k: _space_from_json(s) for k, s in data["spaces"].items()})
    if kind == "Sequence":
        return spaces.Sequence(_space_from_json(data["space"]), stack=bool(data.get("stack")))
    if kind == "OneOf":
        return spaces.OneOf([_space_from_json(s) for s in data["spaces"]])
    if kind == "Graph":
        edge = data.get("edge_space")
        return spaces.Graph(
            _space_from_json(data["node_space"]), None if edge is None else _space_from_json(edge)
        )
    if kind == "Json":
        return JsonSpace(str(data.get("description", "")), data.get("schema"))
    if kind == "ToolCalls":
        return ToolCalls([ToolCall(**t) for t in data["tools"]])
    raise ValueError(f"unknown space type {kind!r}")


# -- JSON schema of a value -----------------------------------------------------------------


def _uniform(array: np.ndarray) -> float | None:
    """The single finite value of an array of bounds, or ``None`` where they differ."""
    flat = np.asarray(array).ravel()
    if flat.size and np.all(flat == flat[0]) and np.isfinite(flat[0]):
        value = flat[0].item()
        return value if isinstance(value, int) else float(value)
    return None


def _ranged(kind: str, low: Any, high: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": kind}
    if low is not None:
        schema["minimum"] = low
    if high is not None:
        schema["maximum"] = high
    return schema


def _nested_array(shape: tuple[int, ...], item: dict[str, Any]) -> dict[str, Any]:
    schema = item
    for size in reversed(shape):
        schema = {"type": "array", "items": schema, "minItems": size, "maxItems": size}
    return schema


def _array_schema(space: spaces.Space[Any]) -> dict[str, Any]:
    """Nested lists of numbers, each within its bounds where JSON schema can say so."""
    if isinstance(space, spaces.MultiBinary):
        shape = tuple(int(s) for s in np.atleast_1d(space.n))
        return _nested_array(shape, {"type": "integer", "minimum": 0, "maximum": 1})
    if isinstance(space, spaces.MultiDiscrete):
        low, high = space.start, space.start + space.nvec - 1
    else:
        assert isinstance(space, spaces.Box)
        if space.dtype == np.bool_:  # travels as JSON booleans (PettingZoo's chess planes)
            return _nested_array(tuple(space.shape or ()), {"type": "boolean"})
        low, high = space.low, space.high
    kind = "integer" if np.issubdtype(space.dtype, np.integer) else "number"
    shape = tuple(space.shape or ())
    lo, hi = _uniform(low), _uniform(high)
    if len(shape) == 1 and (lo is None or hi is None):
        # Bounds that differ per element: one schema per position.
        items = [
            _ranged(kind, _uniform(np.asarray(a)), _uniform(np.asarray(b)))
            for a, b in zip(np.ravel(low), np.ravel(high), strict=True)
        ]
        return {"type": "array", "prefixItems": items, "minItems": shape[0], "maxItems": shape[0]}
    return _nested_array(shape, _ranged(kind, lo, hi))


#: JSON schema of a raw array (:func:`openenv_mcp.codecs.encode_raw`).
RAW_ARRAY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A raw array: base64 of its C-order bytes (with encoding 'zstd': of one "
    "zstd frame holding them), its shape and numpy dtype.",
    "properties": {
        "data": {"type": "string"},
        "shape": {"type": "array", "items": {"type": "integer"}},
        "dtype": {"type": "string", "description": "numpy dtype string, e.g. '|u1'"},
        "encoding": {"type": "string", "enum": ["zstd"], "description": "absent: plain"},
    },
    "required": ["data", "shape", "dtype"],
}


def value_schema(space: spaces.Space[Any], *, raw: bool = False) -> dict[str, Any]:
    """JSON schema of one value of ``space``, as :func:`encode` writes it.

    Array leaves are nested lists, or with ``raw`` either lists or raw arrays
    (the schema of an observation that may travel in compact form).
    """
    if isinstance(space, spaces.Discrete):
        first = int(space.start)
        number = {"type": "integer", "minimum": first, "maximum": first + int(space.n) - 1}
        if isinstance(space, NamedDiscrete):
            name = {"type": "string", "minLength": 1, "maxLength": 200}
            return {"anyOf": [number, name], "description": "An action by number or by name."}
        return number
    if is_array_space(space):
        schema = _array_schema(space)
        schema["description"] = _space_text(space)
        return {"anyOf": [schema, RAW_ARRAY_SCHEMA]} if raw else schema
    if isinstance(space, spaces.Text):
        schema = {"type": "string", "minLength": space.min_length, "maxLength": space.max_length}
        if not isinstance(space, AnyText) and len(space.character_set) <= 100:
            schema["description"] = f"Characters from: {''.join(space.character_list)!r}"
        return schema
    if isinstance(space, spaces.Tuple):
        parts = [value_schema(s, raw=raw) for s in space.spaces]
        return {
            "type": "array",
            "prefixItems": parts,
            "minItems": len(parts),
            "maxItems": len(parts),
        }
    if isinstance(space, spaces.Dict):
        return {
            "type": "object",
            "properties": {k: value_schema(s, raw=raw) for k, s in space.spaces.items()},
            "required": list(space.spaces),
            "additionalProperties": False,
        }
    if isinstance(space, spaces.Sequence):
        return {"type": "array", "items": value_schema(space.feature_space, raw=raw)}
    if isinstance(space, spaces.OneOf):
        last = len(space.spaces) - 1
        return {
            "type": "array",
            "prefixItems": [
                {"type": "integer", "minimum": 0, "maximum": last},
                {"anyOf": [value_schema(s, raw=raw) for s in space.spaces]},
            ],
            "minItems": 2,
            "maxItems": 2,
            "description": "[which, value]: the index of the subspace, then a value of it.",
        }
    if isinstance(space, spaces.Graph):
        return {
            "type": "object",
            "properties": {
                "nodes": {"anyOf": [{"type": "array"}, {"type": "object"}]},
                "edges": {"anyOf": [{"type": "array"}, {"type": "null"}]},
                "edge_links": {"type": "array", "items": {"type": "array"}},
            },
            "required": ["nodes", "edge_links"],
        }
    if isinstance(space, ToolCalls):
        return _tool_calls_schema(space)
    if isinstance(space, JsonSpace) and space.schema is not None:
        described = dict(space.schema)
        if space.description:
            described["description"] = space.description
        return described
    description = space.description if isinstance(space, JsonSpace) else f"A value of {space}."
    return {
        "anyOf": [{"type": t} for t in _JSON_TYPES],
        "description": description or "Any JSON value.",
    }


def _tool_calls_schema(space: ToolCalls) -> dict[str, Any]:
    """One branch per tool: its name as a constant, its arguments typed by its schema."""
    branches = [
        {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "const": t.name, "description": t.description},
                "arguments": t.schema,
            },
            "required": ["tool"],
            "additionalProperties": False,
        }
        for t in space.tools.values()
    ]
    return {
        "anyOf": branches,
        "description": "A tool call: {'tool': NAME, 'arguments': {...}}, NAME one of "
        + ", ".join(space.tools),
    }


def _space_text(space: spaces.Space[Any]) -> str:
    if isinstance(space, spaces.Box):
        return f"{space} (bounds: low {_short(space.low)}, high {_short(space.high)})"
    return str(space)


def _short(array: Any) -> str:
    flat = np.asarray(array).ravel()
    if flat.size and np.all(flat == flat[0]):
        return f"{flat[0]:g}"
    return "[" + ", ".join(f"{v:g}" for v in flat[:8]) + (", ...]" if flat.size > 8 else "]")


# -- values ---------------------------------------------------------------------------------


def encode(space: spaces.Space[Any], value: Any, arrays: ArrayForm = "list") -> Any:
    """A value of ``space`` as JSON; array leaves as ``arrays`` says."""
    if is_array_space(space):
        if arrays == "list":
            return np.asarray(value).tolist()
        return encode_raw(np.asarray(value, dtype=space.dtype), compress=arrays == "zstd")
    if isinstance(space, spaces.Discrete):
        return int(value)
    if isinstance(space, spaces.Text):
        return str(value)
    if isinstance(space, spaces.Tuple):
        return [encode(s, v, arrays) for s, v in zip(space.spaces, value, strict=True)]
    if isinstance(space, spaces.Dict):
        return {k: encode(s, value[k], arrays) for k, s in space.spaces.items()}
    if isinstance(space, spaces.Sequence):
        items = _iterate(space, value)
        return [encode(space.feature_space, v, arrays) for v in items]
    if isinstance(space, spaces.OneOf):
        which, inner = value
        return [int(which), encode(space.spaces[int(which)], inner, arrays)]
    if isinstance(space, spaces.Graph):
        edges = value.edges
        return {
            "nodes": encode_raw(np.asarray(value.nodes))
            if arrays != "list"
            else np.asarray(value.nodes).tolist(),
            "edges": None if edges is None else np.asarray(edges).tolist(),
            "edge_links": np.asarray(value.edge_links).tolist(),
        }
    return to_jsonable(value)


def _iterate(space: spaces.Sequence, value: Any) -> list[Any]:
    if space.stack:
        from gymnasium.vector.utils import iterate

        return list(iterate(space.stacked_feature_space, value))
    return list(value)


def _quote(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _QUOTE else f"{text[: _QUOTE - 3]}... ({len(text)} chars)"


def _what(value: Any) -> str:
    return f"{type(value).__name__} {_quote(value)}"


def decode(space: spaces.Space[Any], data: Any, *, check: bool = True, where: str = "") -> Any:
    """A member of ``space`` from its JSON form (:func:`encode` output, lists or raw arrays).

    Args:
        space: the space the value belongs to.
        data: the JSON value.
        check: validate against the space (bounds, lengths, keys); ``False``
            only converts (the client reading its server's observations).
        where: a prefix naming the value in error messages (``"action: "``).

    Raises:
        InvalidAction: naming the space, what was expected and what came.
    """
    if is_array_space(space):
        return _decode_array(space, data, check, where)
    if isinstance(space, spaces.Discrete):
        first, last = int(space.start), int(space.start) + int(space.n) - 1
        not_integer = isinstance(data, bool) or not isinstance(data, (int, np.integer))
        if not_integer and (check or not isinstance(data, (int, float, np.number))):
            raise InvalidAction(f"{where}expected an integer {first}..{last}, got {_what(data)}")
        if check and not first <= int(data) <= last:
            raise InvalidAction(f"{where}{int(data)} is out of range; legal: {first}..{last}")
        return space.dtype.type(int(data))
    if isinstance(space, spaces.Text):
        if not isinstance(data, str):
            raise InvalidAction(f"{where}expected a string for {space}, got {_what(data)}")
        if check and not space.contains(data):
            size = f"{space.min_length}..{space.max_length}"
            chars = "" if isinstance(space, AnyText) else " allowed"
            raise InvalidAction(
                f"{where}expected a text of {size}{chars} characters for {space}, "
                f"got {len(data)} characters: {_quote(data)}"
            )
        return data
    if isinstance(space, spaces.Tuple):
        if not isinstance(data, (list, tuple)) or len(data) != len(space.spaces):
            raise InvalidAction(
                f"{where}expected a list of {len(space.spaces)} values for {space}, "
                f"got {_what(data)}"
            )
        return tuple(
            decode(s, v, check=check, where=f"{where}[{i}]: ")
            for i, (s, v) in enumerate(zip(space.spaces, data, strict=True))
        )
    if isinstance(space, spaces.Dict):
        if not isinstance(data, dict) or set(data) != set(space.spaces):
            keys = sorted(data) if isinstance(data, dict) else None
            raise InvalidAction(
                f"{where}expected an object with keys {sorted(space.spaces)} for {space}, "
                + (f"got keys {keys}" if keys is not None else f"got {_what(data)}")
            )
        return {
            k: decode(s, data[k], check=check, where=f"{where}{k}: ")
            for k, s in space.spaces.items()
        }
    if isinstance(space, spaces.Sequence):
        if not isinstance(data, (list, tuple)):
            raise InvalidAction(f"{where}expected a list for {space}, got {_what(data)}")
        items = tuple(
            decode(space.feature_space, v, check=check, where=f"{where}[{i}]: ")
            for i, v in enumerate(data)
        )
        if space.stack:
            from gymnasium.vector.utils import concatenate, create_empty_array

            out: Any = create_empty_array(space.feature_space, len(items))
            return concatenate(space.feature_space, items, out)
        return items
    if isinstance(space, spaces.OneOf):
        if not (isinstance(data, (list, tuple)) and len(data) == 2 and isinstance(data[0], int)):
            raise InvalidAction(f"{where}expected [which, value] for {space}, got {_what(data)}")
        which = int(data[0])
        if not 0 <= which < len(space.spaces):
            raise InvalidAction(
                f"{where}subspace {which} is out of range; {space} has {len(space.spaces)}"
            )
        return (which, decode(space.spaces[which], data[1], check=check, where=f"{where}[1]: "))
    if isinstance(space, spaces.Graph):
        return _decode_graph(space, data, check, where)
    if isinstance(space, ToolCalls):
        wrong = space.problem(data) if check else None
        if wrong is not None:
            raise InvalidAction(f"{where}{wrong}")
        return data
    if isinstance(space, JsonSpace) and check:
        return _decode_json(space, data, where)
    if isinstance(space, JsonSpace) or not check:
        return data
    try:
        (value,) = space.from_jsonable([data])
    except Exception as exc:  # any space's own parser: report what it said
        raise InvalidAction(f"{where}could not read {_quote(data)} as {space}: {exc}") from None
    if not space.contains(value):
        raise InvalidAction(f"{where}{_quote(data)} is not in {space}")
    return value


def _decode_json(space: JsonSpace, data: Any, where: str) -> Any:
    """A JSON value held to the space's schema: the first problem named, with where it is."""
    if not _is_json(data):
        raise InvalidAction(f"{where}expected a JSON value, got {_what(data)}")
    if space.schema is None:
        return data
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(space.schema).iter_errors(data)
    )
    if error is not None:
        at = "".join(f"[{p!r}]" for p in error.absolute_path)
        raise InvalidAction(
            f"{where}{_quote(data)} does not fit: {at + ' ' if at else ''}{error.message}"
        )
    return data


def _decode_array(space: spaces.Space[Any], data: Any, check: bool, where: str) -> np.ndarray:
    shape = tuple(space.shape or ())
    dtype = np.dtype(space.dtype)
    if is_raw(data):
        try:
            array = decode_raw(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidAction(f"{where}bad raw array for {space}: {exc}") from None
        if not check:
            return array
        if array.dtype != dtype:
            array = array.astype(dtype)
    else:
        if isinstance(data, bool) or not isinstance(data, (int, float, list, tuple, np.ndarray)):
            raise InvalidAction(
                f"{where}expected an array of shape {list(shape)} for {_space_text(space)}, "
                f"got {_what(data)}"
            )
        if check and not isinstance(data, np.ndarray) and not _numbers_only(data, dtype):
            raise InvalidAction(
                f"{where}expected an array of numbers of shape {list(shape)} for {space}, "
                f"got {_quote(data)} (strings and booleans are not numbers here)"
            )
        try:
            values = np.asarray(data, dtype=np.float64 if check else dtype)
        except (TypeError, ValueError):
            raise InvalidAction(
                f"{where}expected an array of numbers of shape {list(shape)} for {space}, "
                f"got {_quote(data)}"
            ) from None
        if not check:
            return values
        if values.shape != shape and values.size == math.prod(shape) and values.ndim <= 1:
            values = values.reshape(shape)  # a bare number for a one-element space
        if values.shape != shape:
            raise InvalidAction(
                f"{where}expected an array of shape {list(shape)} for {space}, "
                f"got shape {list(values.shape)}"
            )
        if np.isnan(values).any():
            raise InvalidAction(f"{where}expected numbers for {space}, got NaN in {_quote(data)}")
        if dtype.kind in "iub" and not np.all(values == np.round(values)):
            raise InvalidAction(f"{where}expected integers for {space}, got {_quote(data)}")
        array = values.astype(dtype)
    if array.shape != shape:
        raise InvalidAction(
            f"{where}expected an array of shape {list(shape)} for {space}, "
            f"got shape {list(array.shape)}"
        )
    if not space.contains(array):
        if isinstance(space, spaces.Box):
            raise InvalidAction(
                f"{where}{_short(array)} is out of bounds for {space}: "
                f"low {_short(space.low)}, high {_short(space.high)}"
            )
        raise InvalidAction(f"{where}{_short(array)} is not in {space}")
    return array


def _numbers_only(data: Any, dtype: np.dtype[Any]) -> bool:
    """Whether ``data`` is a number or nested lists of numbers, as the schema says:
    numpy would read ``"0.5"`` and ``true`` as numbers. Booleans only for a boolean
    array. Walked without recursion: a list may be nested a thousand deep."""
    allowed: tuple[type, ...] = (int, float, np.number)
    if dtype.kind == "b":
        allowed = (*allowed, np.bool_)
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, (list, tuple)):
            pending.extend(item)
        elif not isinstance(item, allowed) or (isinstance(item, bool) and dtype.kind != "b"):
            return False
    return True


def _decode_graph(space: spaces.Graph, data: Any, check: bool, where: str) -> spaces.GraphInstance:
    if not (isinstance(data, dict) and "nodes" in data and "edge_links" in data):
        raise InvalidAction(
            f"{where}expected an object with nodes, edges and edge_links for {space}, "
            f"got {_what(data)}"
        )
    nodes = decode_raw(data["nodes"]) if is_raw(data["nodes"]) else np.asarray(data["nodes"])
    edges = data.get("edges")
    value = spaces.GraphInstance(
        nodes=nodes.astype(space.node_space.dtype),
        edges=None
        if edges is None or space.edge_space is None
        else np.asarray(edges, dtype=space.edge_space.dtype),
        edge_links=np.asarray(data["edge_links"], dtype=np.int32).reshape(-1, 2),
    )
    if check and not space.contains(value):
        raise InvalidAction(f"{where}{_quote(data)} is not in {space}")
    return value
