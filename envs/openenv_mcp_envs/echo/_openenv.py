"""OpenEnv's ``echo_env`` (an MCP environment: ``EchoEnv``, its ``MCPToolClient``), as
``--openenv`` speaks it: its two tools, each one step of the episode here."""

from __future__ import annotations

from typing import Any

from openenv_mcp.openenv import OpenEnvModels, OpenEnvTool

_MESSAGE = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "The message to echo."}},
    "required": ["message"],
}


def _message(arguments: dict[str, Any]) -> Any:
    return str(arguments["message"])


class EchoModels(OpenEnvModels):
    package = "echo_env"
    tools = (
        OpenEnvTool(
            "echo_message",
            "Echo back the provided message.",
            _MESSAGE,
            _message,
            lambda view: view.get("observation"),
        ),
        OpenEnvTool(
            "echo_with_length",
            "Echo back the message with its length.",
            _MESSAGE,
            _message,
            lambda view: {
                "message": view.get("observation"),
                "length": len(view.get("observation") or ""),
            },
        ),
    )
