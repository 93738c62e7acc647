"""ToolCalls (an OpenEnv MCP environment's actions) and schemas made to stand alone:
calls checked naming the tool and the argument, sampled, written and read back."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import InvalidAction
from openenv_mcp.spaces import (
    JsonSpace,
    ToolCall,
    ToolCalls,
    decode,
    space_from_json,
    space_to_json,
    value_schema,
)
from openenv_mcp.wire.schemas import inline_refs

ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
MOVE = {
    "type": "object",
    "properties": {"piece": {"$ref": "#/$defs/Piece"}, "square": {"type": "string"}},
    "required": ["piece", "square"],
    "$defs": {"Piece": {"type": "string", "enum": ["pawn", "knight", "queen"]}},
}
TOOLS = [
    ToolCall("add", "Add two integers.", ADD),
    ToolCall("move", "Move a piece.", MOVE),
    ToolCall("look", "Look around.", {"type": "object", "properties": {}}),
]


def test_refs_are_inlined_so_a_schema_stands_alone() -> None:
    inlined = inline_refs(MOVE)
    assert "$defs" not in inlined
    assert inlined["properties"]["piece"] == {"type": "string", "enum": ["pawn", "knight", "queen"]}
    node = {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}
    recursive = {"$ref": "#/$defs/N", "$defs": {"N": node}}
    assert "$ref" not in str(inline_refs(recursive))  # cut off, not endless
    assert ToolCalls(TOOLS).tools["move"].schema == inlined


def test_calls_are_checked_naming_the_tool_and_the_argument() -> None:
    space = ToolCalls(TOOLS)
    call = {"tool": "add", "arguments": {"a": 1, "b": 2}}
    assert decode(space, call) == call
    with pytest.raises(InvalidAction, match=r"no tool 'ad'\. Did you mean 'add'\?"):
        decode(space, {"tool": "ad", "arguments": {}})
    with pytest.raises(InvalidAction, match="add: b: 'x' is not of type 'integer'"):
        decode(space, {"tool": "add", "arguments": {"a": 1, "b": "x"}})
    with pytest.raises(InvalidAction, match="move: piece: 'king' is not one of"):
        decode(space, {"tool": "move", "arguments": {"piece": "king", "square": "e4"}})
    with pytest.raises(InvalidAction, match="got also"):
        decode(space, {"tool": "look", "args": {}})
    with pytest.raises(InvalidAction, match="expected a tool call"):
        decode(space, "add")


def test_the_schema_types_each_tool_and_samples_are_calls() -> None:
    space = ToolCalls(TOOLS)
    schema = value_schema(space)
    assert [b["properties"]["tool"]["const"] for b in schema["anyOf"]] == ["add", "move", "look"]
    assert schema["anyOf"][0]["properties"]["arguments"] == ADD
    space.seed(3)
    first = [space.sample() for _ in range(6)]
    space.seed(3)
    assert [space.sample() for _ in range(6)] == first
    assert all(space.contains(call) for call in first)


def test_round_trips_as_json() -> None:
    space = ToolCalls(TOOLS)
    assert space_from_json(space_to_json(space)) == space
    assert space_from_json(space_to_json(JsonSpace("a move", inline_refs(MOVE)))).schema
