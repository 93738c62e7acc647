"""The MCP tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) on FastMCP's
extension API, with the tasks held in the server's memory (no queue, no Redis).

When a ``tools/call`` request declares the extension in its ``_meta`` client
capabilities and the call is a long one (the server's ``long_call`` says which), the
call is answered at once with a task (``resultType: "task"``, ``taskId``, ``status``,
``ttlMs``, ``pollIntervalMs``) while the tool runs on in the server; the client polls
``tasks/get`` (the result inlined when done), may ``tasks/cancel`` it, and may read it
from another connection until ``ttlMs`` after it ended. Any other call, and every call
of a client without the extension, runs in the call as it always did.

Cancelling asks the work to stop at its next step (:func:`~openenv_mcp.server.jobs.job_check`)
and cancels its awaits at once; an environment call in flight finishes first (they are
shielded), and the tool's own cleanup (closing its episodes, ending their recordings)
runs before the task reads ``cancelled``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types
from fastmcp.server.extensions import MethodBinding, ServerExtension, read_client_extension_settings
from fastmcp.tools.base import ToolResult
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, INTERNAL_ERROR, INVALID_PARAMS, RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.errors import OpenEnvError
from openenv_mcp.server.episodes._episodes import current_client
from openenv_mcp.server.jobs._control import JobCancelled, running
from openenv_mcp.server.jobs._store import Job, JobStore, UnknownJob

if TYPE_CHECKING:
    from fastmcp.server.context import Context
    from fastmcp.server.extensions import ToolCallContinuation, ToolCallOutcome

__all__ = ["TASKS_EXTENSION_ID", "LongCall", "McpTasksExtension"]

log = logging.getLogger("openenv_mcp.server")

#: Says whether a call (tool name, arguments) is long enough to run as a task.
LongCall = Callable[[str, dict[str, Any]], bool]
#: How often a client is asked to poll, in ms: a cancel is seen within about this.
POLL_MS = 500
#: Seconds a server's end waits for cancelled tasks to close what they opened.
SHUTDOWN_GRACE = 10.0
_VERSIONS = frozenset(MODERN_PROTOCOL_VERSIONS)


class _TaskIdParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    task_id: str = Field(alias="taskId", max_length=200)


class _UpdateParams(_TaskIdParams):
    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


class _Wire(BaseModel):
    """A result whose fields are already the wire's (``taskId``, ``resultType``...)."""

    model_config = ConfigDict(extra="allow")


def declares_tasks(meta: Any) -> bool:
    """Whether a request's ``_meta`` declares the tasks extension in its client
    capabilities (SEP-2133: a client repeats them in every request)."""
    caps = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    declared = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(declared, dict) and isinstance(declared.get(TASKS_EXTENSION_ID), dict)


def _owner() -> str:
    return current_client.get() or "local"


class McpTasksExtension(ServerExtension):
    """Long tool calls as MCP tasks (see the module)."""

    identifier = TASKS_EXTENSION_ID

    def __init__(self, store: JobStore, long_call: LongCall) -> None:
        self.store = store
        self.long_call = long_call
        #: The running tasks' asyncio tasks (held, so none is collected mid-run).
        self._workers: set[asyncio.Task[None]] = set()
        self._serving = False

    def clone(self) -> McpTasksExtension:
        return McpTasksExtension(self.store, self.long_call)

    def methods(self) -> Sequence[MethodBinding]:
        return [
            MethodBinding("tasks/get", _TaskIdParams, self._get, _VERSIONS),
            MethodBinding("tasks/cancel", _TaskIdParams, self._cancel, _VERSIONS),
            MethodBinding("tasks/update", _UpdateParams, self._update, _VERSIONS),
        ]

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Tasks run while the server does; at its end the running ones are cancelled
        and their cleanup awaited (a bounded while)."""
        self._serving = True
        try:
            yield
        finally:
            self._serving = False
            for job in self.store.running():
                job.cancel()
            with anyio.move_on_after(SHUTDOWN_GRACE, shield=True):
                for job in self.store.running():
                    await job.ended.wait()
                await self.store.aclose()

    async def intercept_tool_call(
        self,
        params: mcp_types.CallToolRequestParams,
        context: Context,
        call_next: ToolCallContinuation,
    ) -> ToolCallOutcome:
        rc = context.request_context
        arguments = dict(params.arguments or {})
        if (
            not self._serving
            or rc is None
            or rc.protocol_version not in MODERN_PROTOCOL_VERSIONS
            or not declares_tasks(rc.meta)
            or not self.long_call(params.name, arguments)
        ):
            return await call_next()
        try:
            job = self.store.create(params.name, _owner())
        except OpenEnvError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        # Other replicas answer it from the mirror as soon as the client knows its id.
        await self.store.published(job)
        # A task of its own, in this request's context, outliving the request.
        worker = asyncio.get_running_loop().create_task(self._run(job, call_next))
        self._workers.add(worker)
        worker.add_done_callback(self._workers.discard)
        log.info("task %s: %s started for %s", job.id, params.name, job.owner)
        return _Wire.model_validate(
            {"resultType": "task", **job.wire(self.store.ttl_ms, self.store.poll_ms)}
        )

    async def _run(self, job: Job, call_next: ToolCallContinuation) -> None:
        """Run the call as ``job``'s work and keep how it ended."""
        outcome: Any = None
        status = "failed"
        error: dict[str, Any] | None = None
        with anyio.CancelScope() as scope, running(job.control):
            job.scope = scope
            try:
                outcome = await call_next()
                status = "completed"
            except JobCancelled:
                status = "cancelled"
            except Exception:
                log.exception("task %s (%s) failed", job.id, job.tool)
                error = {
                    "code": INTERNAL_ERROR,
                    "message": f"internal error in {job.tool}; see the server log",
                }
        if scope.cancelled_caught or job.control.cancelled:
            status, outcome, error = "cancelled", None, None
        result = _result_dict(outcome) if status == "completed" else None
        self.store.finish(job, status, result=result, error=error)  # type: ignore[arg-type]
        log.info("task %s: %s %s", job.id, job.tool, status)
        with anyio.CancelScope(shield=True):
            await self.store.published(job)

    def _check_declared(self, ctx: ServerRequestContext[Any, Any]) -> None:
        if read_client_extension_settings(ctx, TASKS_EXTENSION_ID) is None:
            raise MCPError(
                code=mcp_types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"tasks/* needs the tasks extension ({TASKS_EXTENSION_ID}) declared "
                "in the request's client capabilities",
                data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}}},
            )

    async def _find(
        self, ctx: ServerRequestContext[Any, Any], task_id: str
    ) -> tuple[str, dict[str, Any]]:
        """The tool and answer of this client's task, held here or by another replica."""
        self._check_declared(ctx)
        try:
            return await self.store.find(task_id, _owner())
        except UnknownJob as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: _TaskIdParams) -> _Wire:
        _, answer = await self._find(ctx, params.task_id)
        return _Wire.model_validate(answer)

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: _TaskIdParams) -> _Wire:
        """Stop a running task (a finished one stays as it ended)."""
        self._check_declared(ctx)
        try:
            await self.store.cancel(params.task_id, _owner())
        except UnknownJob as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        log.info("task %s: cancel asked", params.task_id[:100])
        return _Wire.model_validate({"resultType": "complete"})

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: _UpdateParams) -> _Wire:
        tool, answer = await self._find(ctx, params.task_id)
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"task {answer['taskId']} ({tool}) is {answer['status']}, not "
            "input_required: this server's tasks never ask for input",
        )


def _result_dict(outcome: Any) -> dict[str, Any]:
    """The wire dict of a tool's result (a ``CallToolResult``)."""
    if isinstance(outcome, ToolResult):
        converted: Any = outcome.to_mcp_result()
    else:
        converted = outcome
    if isinstance(converted, mcp_types.CallToolResult):
        result = converted
    elif isinstance(converted, tuple):
        content, structured = converted
        result = mcp_types.CallToolResult(content=content, structured_content=structured)
    elif isinstance(converted, list):
        result = mcp_types.CallToolResult(content=converted)
    elif isinstance(converted, BaseModel):
        return converted.model_dump(by_alias=True, mode="json", exclude_none=True)
    else:
        raise TypeError(f"a task's tool answered {type(converted).__name__}, not a tool result")
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)
