"""Whether a tool's schema travels to every client: Anthropic's tool rules, OpenAI's
strict mode (the Agents SDK's converter, where installed), and no node that
constrains nothing. Used by ``openenv-mcp check`` and by the tests."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

__all__ = ["TOOL_NAME", "portable", "schema_problems", "untyped_nodes"]

#: Anthropic's tool name rule.
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def portable(schema: Any) -> Any:
    """A schema every client takes: no ``default: null`` (a null default is what an
    absent optional argument means anyway, and some clients' schema subsets refuse
    it), and pydantic's titles dropped (noise a model reads)."""
    if isinstance(schema, dict):
        return {
            k: portable(v)
            for k, v in schema.items()
            if not (k == "default" and v is None) and not (k == "title" and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [portable(v) for v in schema]
    return schema


def untyped_nodes(schema: Any, path: str = "") -> list[str]:
    """Schema nodes that constrain nothing (no type, no typed anyOf): some clients
    (OpenAI's strict mode) refuse them."""
    found: list[str] = []
    if not isinstance(schema, dict):
        return found
    keys = set(schema) - {"description", "title", "default", "examples"}
    if not keys:
        found.append(path or "/")
    for key in ("properties", "$defs"):
        for name, sub in (schema.get(key) or {}).items():
            found += untyped_nodes(sub, f"{path}/{key}/{name}")
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for i, sub in enumerate(schema.get(key) or []):
            found += untyped_nodes(sub, f"{path}/{key}/{i}")
    if isinstance(schema.get("items"), dict):
        found += untyped_nodes(schema["items"], f"{path}/items")
    return found


def schema_problems(tool: dict[str, Any], strict_converter: bool = True) -> list[str]:
    """What keeps ``tool`` (as ``tools/list`` lists it) from every client; empty: nothing.

    Args:
        strict_converter: also run the OpenAI Agents SDK's strict-schema converter,
            where the ``openai-agents`` package is installed.
    """
    name = str(tool.get("name"))
    schema = tool.get("inputSchema") or {}
    problems = []
    if not TOOL_NAME.fullmatch(name):
        problems.append(f"tool name {name!r} breaks Anthropic's rule {TOOL_NAME.pattern}")
    if schema.get("type") != "object":
        problems.append(f"{name}: the input schema must be an object at the top")
    top = sorted({"anyOf", "oneOf", "allOf"} & set(schema))
    if top:
        problems.append(f"{name}: no {'/'.join(top)} at the top of the input schema")
    for kind in ("inputSchema", "outputSchema"):
        loose = untyped_nodes(tool.get(kind))
        if loose:
            problems.append(f"{name}: {kind} nodes that constrain nothing: {', '.join(loose)}")
    if "null" in json.dumps(schema).replace('"type": "null"', ""):
        problems.append(f"{name}: a null default or constant (strict clients refuse it)")
    if strict_converter:
        try:
            from agents.strict_schema import ensure_strict_json_schema
        except ImportError:
            return problems
        try:
            ensure_strict_json_schema(copy.deepcopy(schema), _reject_open_objects=True)
        except Exception as exc:  # the converter's own error, as it words it
            problems.append(f"{name}: OpenAI's strict-schema converter refuses it: {exc}")
    return problems
