"""JSON schemas as values travel: ``$ref`` inlined, and values checked against them.

Used by :class:`openenv_mcp.spaces.ToolCalls` and the openenv env: a schema from
elsewhere (a pydantic model's ``model_json_schema()``, an MCP tool's ``inputSchema``)
becomes a tool argument's schema, so it must stand alone (no ``$ref`` into
``$defs`` the tool does not have), and what a client sends is checked against it
with ``jsonschema``, naming the first thing wrong.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["first_error", "inline_refs", "make_validator"]

#: How deep ``$ref`` chains are followed: a recursive model stops here as any object.
_MAX_DEPTH = 12
_QUOTE = 80


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) replaced
    by what it names, and the definitions dropped.

    A reference to itself past a few levels (a recursive model) becomes ``{}``
    there: a tool argument's schema must be finite.
    """
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        for name, value in (schema.get(key) or {}).items():
            defs[f"#/{key}/{name}"] = value

    def walk(node: Any, depth: int) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref in defs:
                if depth >= _MAX_DEPTH:
                    return {}
                target = walk(defs[ref], depth + 1)
                rest = {k: walk(v, depth) for k, v in node.items() if k != "$ref"}
                return {**target, **rest}
            return {k: walk(v, depth) for k, v in node.items() if k not in ("$defs", "definitions")}
        if isinstance(node, list):
            return [walk(v, depth) for v in node]
        return node

    inlined: dict[str, Any] = walk(copy.deepcopy(schema), 0)
    return inlined


def _quote(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _QUOTE else f"{text[: _QUOTE - 3]}... ({len(text)} chars)"


def first_error(validator: Any, value: Any) -> str | None:
    """What is wrong with ``value`` for ``validator`` (a ``jsonschema`` validator), in one
    line naming where (``message: ...``) and what came; ``None`` when it is valid."""
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the value"
    message = error.message
    if len(message) > 300:
        message = message[:297] + "..."
    if error.validator == "required" or error.validator == "additionalProperties":
        return f"{where}: {message}"
    return f"{where}: {message} (got {_quote(error.instance)})"


def make_validator(schema: dict[str, Any]) -> Any:
    """A ``jsonschema`` validator of ``schema`` (the draft it names, else 2020-12)."""
    from jsonschema.validators import validator_for

    cls = validator_for(schema, default=_default())
    return cls(schema)


def _default() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator
