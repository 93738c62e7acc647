"""Spaces on the wire (``openenv_mcp.spaces``): every Gymnasium space, both ways.

For each space: its JSON description rebuilds an equal space; its value schema
is a valid JSON schema that its samples meet; a sample survives encode/decode
exactly, with array leaves as lists, raw arrays or zstd arrays; and bad values
are refused with what was expected and what came.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_mcp.authoring.testing import values_equal
from openenv_mcp.errors import ArgumentError, InvalidAction
from openenv_mcp.spaces import (
    AnyText,
    JsonSpace,
    NamedDiscrete,
    decode,
    encode,
    space_from_json,
    space_to_json,
    value_schema,
)

SPACES: list[spaces.Space[Any]] = [
    spaces.Discrete(4, start=2),
    spaces.Discrete(3, start=-1, dtype=np.int32),
    spaces.Box(-1.0, 1.0, (2, 3), np.float32),
    spaces.Box(0, 255, (4, 4, 3), np.uint8),
    spaces.Box(0, 10, (3,), np.int64),
    spaces.Box(np.array([-1.0, 0.0, -np.inf]), np.array([1.0, 5.0, np.inf]), (3,), np.float64),
    spaces.Box(-np.inf, np.inf, (2,), np.float32),
    spaces.Box(-2.0, 2.0, (), np.float32),
    spaces.MultiDiscrete([3, 5], start=[1, 0]),
    spaces.MultiDiscrete([[2, 3], [4, 5]]),
    spaces.MultiBinary(4),
    spaces.MultiBinary([2, 3]),
    spaces.Text(8, charset="abc"),
    spaces.Text(5, min_length=2),
    AnyText(20),
    spaces.Tuple((spaces.Discrete(2), spaces.Box(-2.0, 2.0, (2,), np.float64))),
    spaces.Dict({"steer": spaces.Box(-1.0, 1.0, (1,), np.float32), "gear": spaces.Discrete(3)}),
    spaces.Dict(
        {
            "image": spaces.Box(0, 255, (3, 3, 3), np.uint8),
            "inner": spaces.Tuple((spaces.Text(4, charset="xy"), spaces.MultiBinary(2))),
        }
    ),
    spaces.Sequence(spaces.Discrete(5)),
    spaces.Sequence(spaces.Box(0.0, 1.0, (2,), np.float32), stack=True),
    spaces.OneOf((spaces.Discrete(3), spaces.Box(-1.0, 1.0, (2,), np.float32))),
    spaces.Graph(spaces.Box(0.0, 1.0, (2,), np.float32), spaces.Discrete(3)),
]

IDS = [f"{i}-{type(s).__name__}" for i, s in enumerate(SPACES)]


@pytest.mark.parametrize("space", SPACES, ids=IDS)
def test_the_space_itself_round_trips_through_strict_json(space: spaces.Space[Any]) -> None:
    text = json.dumps(space_to_json(space), allow_nan=False)  # standard JSON: no Infinity
    rebuilt = space_from_json(json.loads(text))
    assert rebuilt == space and type(rebuilt) is type(space)


@pytest.mark.parametrize("space", SPACES, ids=IDS)
@pytest.mark.parametrize("arrays", ["list", "raw", "zstd"])
def test_samples_survive_encode_and_decode(space: spaces.Space[Any], arrays: str) -> None:
    space.seed(0)
    for _ in range(10):
        value = space.sample()
        wire = json.loads(json.dumps(encode(space, value, arrays)))  # type: ignore[arg-type]
        for check in (True, False):
            back = decode(space, wire, check=check)
            assert space.contains(back), (value, wire, back)
            assert values_equal(back, value)


@pytest.mark.parametrize("space", SPACES, ids=IDS)
def test_value_schemas_are_valid_and_met_by_samples(space: spaces.Space[Any]) -> None:
    schema = value_schema(space)
    jsonschema.Draft202012Validator.check_schema(schema)
    raw = value_schema(space, raw=True)
    jsonschema.Draft202012Validator.check_schema(raw)
    space.seed(1)
    for _ in range(10):
        value = space.sample()
        jsonschema.validate(json.loads(json.dumps(encode(space, value))), schema)
        jsonschema.validate(json.loads(json.dumps(encode(space, value, "zstd"))), raw)


@pytest.mark.parametrize(
    ("space", "value", "message"),
    [
        (spaces.Discrete(4, start=2), 1, r"1 is out of range; legal: 2\.\.5"),
        (spaces.Discrete(2), True, "expected an integer 0..1, got bool True"),
        (spaces.Discrete(2), "1", "expected an integer 0..1, got str '1'"),
        (spaces.MultiDiscrete([3, 5]), [3, 0], "not in MultiDiscrete"),
        (spaces.MultiBinary(2), [0.5, 1], "integers"),
        (spaces.Box(-2.0, 2.0, (1,), np.float32), [5], r"out of bounds.*low -2, high 2"),
        (spaces.Box(-2.0, 2.0, (1,), np.float32), [0.1, 0.2], r"shape \[1\].*got shape \[2\]"),
        (spaces.Box(-2.0, 2.0, (1,), np.float32), "left", "got str 'left'"),
        (spaces.Box(-2.0, 2.0, (1,), np.float32), [float("nan")], "NaN"),
        (spaces.Box(0, 9, (2,), np.int64), [1.5, 2], "integers"),
        # numpy reads "0.5" and true as numbers; the schema says numbers (issue 32)
        (spaces.Box(-2.0, 2.0, (1,), np.float32), ["0.5"], r"got \['0\.5'\].*not numbers"),
        (spaces.Box(-2.0, 2.0, (2,), np.float32), [0.5, True], "booleans are not numbers"),
        (spaces.Box(-2.0, 2.0, (2, 1), np.float32), [[0.5], [True]], "not numbers"),
        (spaces.Box(0, 9, (2,), np.int64), [1, True], "not numbers"),
        (spaces.MultiBinary(2), [True, False], "not numbers"),
        (spaces.Tuple((spaces.Discrete(2), spaces.Discrete(2))), [0], "list of 2"),
        (spaces.Tuple((spaces.Discrete(2), spaces.Discrete(2))), [0, 7], r"\[1\]: 7 is out"),
        (spaces.Dict({"a": spaces.Discrete(2)}), {"b": 0}, r"keys \['a'\].*got keys \['b'\]"),
        (spaces.Dict({"a": spaces.Discrete(2)}), {"a": 5}, "a: 5 is out of range"),
        (spaces.Text(3, charset="ab"), "abc", "allowed characters"),
        (AnyText(3), "four", "expected a text of 0..3 characters"),
        (spaces.OneOf((spaces.Discrete(2),)), [3, 0], "subspace 3 is out of range"),
    ],
)
def test_bad_values_are_refused_with_reasons(
    space: spaces.Space[Any], value: Any, message: str
) -> None:
    with pytest.raises(InvalidAction, match=message):
        decode(space, value)


def test_a_boolean_box_takes_booleans() -> None:
    space = spaces.Box(0, 1, (2,), dtype=np.bool_)
    assert decode(space, [True, False]).tolist() == [True, False]


def test_a_bare_number_fills_a_one_element_box() -> None:
    space = spaces.Box(-2.0, 2.0, (1,), np.float32)
    assert decode(space, 0.5).shape == (1,)


def test_huge_values_are_quoted_short() -> None:
    with pytest.raises(InvalidAction) as caught:
        decode(spaces.Discrete(2), "x" * 100_000)
    assert len(str(caught.value)) < 300


def test_any_text_and_json_spaces() -> None:
    text = AnyText(10)
    assert text.contains("ünïcode ✓") and not text.contains("x" * 11) and not text.contains(3)
    text.seed(0)
    assert text.contains(text.sample())
    json_space = JsonSpace("a report")
    assert json_space.contains({"a": [1, 2.5, None, "x", True]}) and not json_space.contains(
        object()
    )
    json_space.seed(0)
    assert json_space.contains(json_space.sample())
    assert space_from_json(space_to_json(json_space)) == json_space
    held = JsonSpace("a move", {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 2}]})
    assert space_from_json(space_to_json(held)) == held and held != json_space
    named = NamedDiscrete(4)
    assert space_from_json(space_to_json(named)) == named
    assert value_schema(named)["anyOf"][1] == {"type": "string", "minLength": 1, "maxLength": 200}


def test_a_space_this_module_does_not_know_travels_as_json() -> None:
    class Odd(spaces.Space[Any]):
        def contains(self, x: Any) -> bool:
            return True

    described = space_to_json(Odd())
    assert described["type"] == "Json" and isinstance(space_from_json(described), JsonSpace)
    assert encode(Odd(), {"k": np.int64(3)}) == {"k": 3}


def test_bad_descriptions_are_refused() -> None:
    with pytest.raises(ArgumentError, match="not a space description"):
        space_from_json({"type": "Spiral"})
    with pytest.raises(ArgumentError, match="not a space description"):
        space_from_json({"type": "Box", "shape": [2]})


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple),
    dtype=st.sampled_from([np.uint8, np.int32, np.int64, np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
def test_any_box_round_trips(shape: tuple[int, ...], dtype: Any, seed: int) -> None:
    low, high = (0, 200) if np.issubdtype(dtype, np.integer) else (-3.5, 7.25)
    space = spaces.Box(low, high, shape, dtype)
    assert space_from_json(json.loads(json.dumps(space_to_json(space)))) == space
    space.seed(seed)
    value = space.sample()
    for arrays in ("list", "raw", "zstd"):
        back = decode(space, json.loads(json.dumps(encode(space, value, arrays))))  # type: ignore[arg-type]
        assert back.dtype == value.dtype and np.array_equal(back, value)


def test_a_boolean_box_travels_as_json_booleans() -> None:
    """PettingZoo's chess and go observe boolean planes: their schema says boolean, not
    a number between False and True."""
    space = spaces.Box(0, 1, (2, 3), np.bool_)
    schema = value_schema(space)
    assert schema["items"]["items"] == {"type": "boolean"}
    jsonschema.validate(space.sample().tolist(), schema)
