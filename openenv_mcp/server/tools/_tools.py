"""Tools with a pydantic argument model and an async handler, and the one answer to a
call of a tool the server lacks.

FastMCP validates arguments only for function tools; ours have schemas built at
run time (the legal action names of the game being served), so each tool
validates its own arguments (:class:`ModelTool`), and every error leaves as a
tool error through :func:`~openenv_mcp.server.tools._results.error_result`, never as a crash.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import mcp_types
from fastmcp.exceptions import NotFoundError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from pydantic import BaseModel, Field, ValidationError
from pydantic.json_schema import SkipJsonSchema

from openenv_mcp.errors import ArgumentError, OpenEnvError, UnknownTool, did_you_mean
from openenv_mcp.options import format_validation_error
from openenv_mcp.server.faces._feed import current_tool
from openenv_mcp.server.jobs._control import JobCancelled
from openenv_mcp.server.tools._results import Reply, error_result
from openenv_mcp.wire.portability import portable

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = ["ACTS", "LOOKS", "TIDIES", "Handler", "Hints", "ModelTool", "UnknownToolErrors"]

log = logging.getLogger("openenv_mcp.server")

Handler = Callable[[Any], Awaitable[Reply]]


@dataclass(frozen=True)
class Hints:
    """What a tool does, as MCP's tool annotations tell clients: every hint is given.

    MCP's default for a hint left out is the cautious one (a tool not read-only is
    taken to be destructive and to reach an open world), and harnesses act on them:
    ``codex exec`` refuses every such tool under its default approval policy. An
    episode is the client's own: a tool that changes only episodes (its moves, its
    restarts, closing it) destroys nothing of the world around it.

    Attributes:
        read_only: it changes nothing (``readOnlyHint``).
        destructive: it may undo or overwrite something beyond the episodes it acts on
            (``destructiveHint``).
        idempotent: calling it again with the same arguments changes nothing more
            (``idempotentHint``).
        open_world: it reaches outside this process: a remote server, the network
            (``openWorldHint``).
    """

    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    def __post_init__(self) -> None:
        if self.read_only and (self.destructive or not self.idempotent):
            raise ValueError(
                "a read-only tool changes nothing: never destructive, always idempotent"
            )

    def annotations(self) -> mcp_types.ToolAnnotations:
        """The hints as MCP's ``ToolAnnotations`` (``readOnlyHint`` ... on the wire)."""
        return mcp_types.ToolAnnotations(
            read_only_hint=self.read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent,
            open_world_hint=self.open_world,
        )


#: Looks at episodes or the env, changing nothing (``state``, ``legal_actions``).
LOOKS = Hints(read_only=True, idempotent=True)
#: Changes an episode, every call anew (``reset``, ``step``, action tools, ``snapshot``).
ACTS = Hints(read_only=False)
#: Frees what a client holds; again, it is already gone (``close``, ``release_snapshot``).
TIDIES = Hints(read_only=False, idempotent=True)


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
        hints: Hints,
        schema_patch: dict[str, dict[str, Any]] | None = None,
    ) -> ModelTool:
        """Make a tool; ``hints`` say what it does (its MCP annotations);
        ``schema_patch`` replaces property schemas (run-time enums)."""
        parameters = args_model.model_json_schema()
        parameters.pop("title", None)
        for prop, schema in (schema_patch or {}).items():
            parameters["properties"][prop] = schema
        if "$defs" in parameters and '"$ref"' not in json.dumps(parameters["properties"]):
            del parameters["$defs"]  # what they defined was patched over
        return cls(
            name=name,
            description=description,
            parameters=portable(parameters),
            output_schema=None if output_schema is None else portable(output_schema),
            annotations=hints.annotations(),
            args_model=args_model,
            handler=handler,
        )

    def wire_annotations(self) -> dict[str, Any]:
        """The tool's annotations as ``tools/list`` sends them (``readOnlyHint`` ...)."""
        if self.annotations is None:
            return {}
        return self.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        """FastMCP's entry point: :meth:`reply` as a :class:`ToolResult`."""
        return (await self.reply(arguments)).tool_result()

    async def reply(self, arguments: dict[str, Any] | None) -> Reply:
        """Validate ``arguments`` and run the handler; every failure is a tool error."""
        try:
            args = self.args_model.model_validate(arguments or {})
        except ValidationError as exc:
            message = format_validation_error(self.name, exc, known=self.args_model.model_fields)
            return error_result(ArgumentError(message))
        token = current_tool.set(self.name)
        try:
            return await self.handler(args)
        except OpenEnvError as exc:
            return error_result(exc)
        except JobCancelled:
            raise  # the task running this call was cancelled: it ends as cancelled
        except Exception:
            # The details go to the server log, never to a client.
            log.exception("tool %s failed", self.name)
            return error_result(OpenEnvError(f"internal error in {self.name}; see the server log"))
        finally:
            current_tool.reset(token)


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
