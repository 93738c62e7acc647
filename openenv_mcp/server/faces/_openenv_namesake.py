"""An env's namesake among OpenEnv's, on the ``--openenv`` face: its models, both ways.

:mod:`._openenv` answers a session in the form its reset chose; where the served env
sets ``openenv_models`` (:mod:`openenv_mcp.openenv.models`) and the client asked no
``frames``, that form is the namesake's: actions are checked against its ``Action``
model, observations and states written as its models' fields. MCP tool calls (OpenEnv's
``MCPToolClient``: ``list_tools``/``call_tool`` steps) are answered in any form:
:class:`ToolCalls`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from openenv_mcp.codecs import decode_raw, is_raw
from openenv_mcp.errors import ArgumentError
from openenv_mcp.openenv import OpenEnvModels, OpenEnvTool

__all__ = ["TOOL_CALLS", "Namesake", "decoded", "done", "tool_error", "tool_result"]

#: The ``type`` of an action that is an MCP tool call (OpenEnv's MCP actions).
TOOL_CALLS = ("list_tools", "call_tool")


def decoded(view: dict[str, Any]) -> dict[str, Any]:
    """The view with a raw-array observation as its array."""
    value = view.get("observation")
    if value is None or not is_raw(value):
        return view
    return {**view, "observation": decode_raw(value)}


def done(view: dict[str, Any]) -> bool:
    """Whether the episode ended (terminated or truncated)."""
    return bool(view.get("terminated") or view.get("truncated"))


class Namesake:
    """The served env's OpenEnv models, as the face uses them."""

    def __init__(self, models: OpenEnvModels) -> None:
        self.models = models
        self.tools: dict[str, OpenEnvTool] = {t.name: t for t in models.tools}

    @property
    def speaks(self) -> bool:
        """Whether sessions speak its models by default (it has an ``Action`` model; an
        MCP environment of OpenEnv's has tools only, and our own form otherwise)."""
        return self.models.Action is not None

    def action(self, data: Any) -> Any:
        """The client's step payload, checked against the ``Action`` model, as this env's."""
        model = self.models.Action
        assert model is not None
        name = f"{self.models.package}'s {model.__name__}"
        if not isinstance(data, dict):
            raise ArgumentError(f"expected {name} as an object, got {type(data).__name__}")
        try:
            action = model.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'action'}: {e['msg']}" for e in exc.errors()
            )
            fields = ", ".join(f for f in model.model_fields if f != "metadata")
            raise ArgumentError(
                f"expected {name} ({fields}), got {str(data)[:120]}: {problems}"
            ) from None
        return self.models.action(action)

    def observation(self, view: dict[str, Any]) -> dict[str, Any]:
        """A reply as the ``{observation, reward, done}`` OpenEnv's server sends."""
        view = decoded(view)
        return {
            "observation": self.models.observation(view),
            "reward": view.get("reward"),
            "done": done(view),
        }

    def state(self, view: dict[str, Any] | None) -> dict[str, Any]:
        if view is None:
            return {"episode_id": None, "step_count": 0}
        view = decoded(view)
        base = {"episode_id": view.get("episode_id"), "step_count": self.models.step_count(view)}
        return base | self.models.state(view)

    def reset_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return self.models.reset_options(options)

    def schemas(self) -> dict[str, Any]:
        """``/schema``'s action, observation and state: the models' JSON schemas."""
        action = self.models.Action
        return {
            "action": action.model_json_schema() if action is not None else None,
            "observation": self.models.Observation.model_json_schema(),
            "state": self.models.State.model_json_schema(),
        }


def tool_result(
    name: str, data: Any, structured: Any = None, content: Any = None
) -> dict[str, Any]:
    """A ``call_tool`` observation, its result as FastMCP's ``CallToolResult`` dumps it
    (OpenEnv's client returns its ``data``)."""
    if content is None:
        text = data if isinstance(data, str) else json.dumps(data, default=str)
        content = [{"type": "text", "text": text}]
    result = {
        "content": content,
        "structured_content": structured
        if structured is not None
        else (data if isinstance(data, dict) else None),
        "meta": None,
        "data": data,
        "is_error": False,
    }
    return {"tool_name": name, "result": result, "error": None}


def tool_error(name: str, kind: str, message: str) -> dict[str, Any]:
    """A ``call_tool`` observation that failed: ``kind`` one of OpenEnv's error types
    (``tool_not_found``, ``invalid_args``, ``execution_error``)."""
    return {"tool_name": name, "result": None, "error": {"error_type": kind, "message": message}}
