"""A FastMCP tool whose arguments are a pydantic model, validated with clear errors.

FastMCP validates arguments only for function tools; ours have schemas built at
run time (the legal action names of the game being served), so each tool
validates its own arguments here, and every error leaves as a tool error
through :func:`error_result`, never as a crash.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

import mcp_types
from fastmcp.exceptions import NotFoundError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from pydantic import BaseModel, Field, ValidationError
from pydantic.json_schema import SkipJsonSchema

from openenv_mcp.errors import ArgumentError, OpenEnvError, UnknownTool, did_you_mean
from openenv_mcp.server._results import Reply, error_result

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = ["ModelTool", "UnknownToolErrors", "format_validation_error"]

log = logging.getLogger("openenv_mcp.server")

Handler = Callable[[Any], Awaitable[Reply]]


def _describe_input(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def format_validation_error(tool: str, exc: ValidationError) -> str:
    """One readable sentence per problem: which argument, what was expected, what came."""
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        kind = err["type"]
        if kind == "missing":
            problems.append(f"argument {where!r} is required")
        elif kind == "extra_forbidden":
            problems.append(f"unexpected argument {where!r}")
        else:
            problems.append(
                f"argument {where!r}: {err['msg'].lower()}, got {_describe_input(err['input'])}"
            )
    return f"{tool}: " + "; ".join(problems)


class ModelTool(Tool):
    """A tool with a pydantic argument model and an async handler."""

    args_model: Annotated[SkipJsonSchema[type[BaseModel]], Field(exclude=True)]
    handler: Annotated[SkipJsonSchema[Handler], Field(exclude=True)]

    @classmethod
    def build(
        cls,
        name: str,
        description: str,
        args_model: type[BaseModel],
        handler: Handler,
        output_schema: dict[str, Any] | None,
        *,
        schema_patch: dict[str, dict[str, Any]] | None = None,
        read_only: bool = False,
    ) -> ModelTool:
        """Make a tool; ``schema_patch`` replaces property schemas (run-time enums)."""
        from mcp_types import ToolAnnotations

        parameters = args_model.model_json_schema()
        parameters.pop("title", None)
        for prop, schema in (schema_patch or {}).items():
            parameters["properties"][prop] = schema
        return cls(
            name=name,
            description=description,
            parameters=parameters,
            output_schema=output_schema,
            annotations=ToolAnnotations(read_only_hint=read_only, open_world_hint=False),
            args_model=args_model,
            handler=handler,
        )

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        """FastMCP's entry point: :meth:`reply` as a :class:`ToolResult`."""
        return (await self.reply(arguments)).tool_result()

    async def reply(self, arguments: dict[str, Any] | None) -> Reply:
        """Validate ``arguments`` and run the handler; every failure is a tool error."""
        try:
            args = self.args_model.model_validate(arguments or {})
        except ValidationError as exc:
            return error_result(ArgumentError(format_validation_error(self.name, exc)))
        try:
            return await self.handler(args)
        except OpenEnvError as exc:
            return error_result(exc)
        except Exception:
            # The details go to the server log, never to a client.
            log.exception("tool %s failed", self.name)
            return error_result(OpenEnvError(f"internal error in {self.name}; see the server log"))


class UnknownToolErrors(Middleware):
    """Answer a call of a tool the server lacks with :class:`UnknownTool`, naming its tools.

    FastMCP's own answer (``"Unknown tool: 'fire'"``) names no error class, so a
    client could not tell it from other failures, and it says nothing of what
    the server does have (a harness asking the echo server for Atari's ``fire``).
    """

    def __init__(self, server: FastMCP) -> None:
        self.server = server

    async def on_call_tool(
        self,
        context: MiddlewareContext[mcp_types.CallToolRequestParams],
        call_next: CallNext[mcp_types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        try:
            return await call_next(context)
        except NotFoundError:
            name = context.message.name
            names = sorted(t.name for t in await self.server.list_tools())
            error = UnknownTool(
                f"no tool {name!r} on this server ({self.server.name}).{did_you_mean(name, names)}"
                f" Tools: {', '.join(names)}"
            )
            return error_result(error).tool_result()
