"""fastmcp-tasks' own client against an openenv-mcp server over Streamable HTTP.

Run by the ``fastmcp-tasks-4.1`` side venv's Python (scripts/setup_venv.py ``SIDE``), not
ours: fastmcp-tasks 4.1.4 pins its own fastmcp. One action a run, its answer as one JSON
line on stdout (logs go to stderr):

    python fastmcp_tasks_client.py URL evaluate  TOOL ARGS_JSON
    python fastmcp_tasks_client.py URL cancel    TOOL ARGS_JSON
    python fastmcp_tasks_client.py URL reconnect TOOL ARGS_JSON
    python fastmcp_tasks_client.py URL unknown   TOOL '{"taskId": "..."}'

* ``evaluate``: ``call_tool_task`` then ``ToolTask.result()``: the created task, the
  result's ``structuredContent`` and the seconds from the call to the result.
* ``cancel``: ``call_tool_task``, ``ToolTask.wait(state="working")``, ``ToolTask.cancel()``
  then ``ToolTask.wait()``: the final status and the seconds from the cancel to it.
* ``reconnect``: ``call_tool_task`` on one client, which then disconnects; a NEW client
  reads the task by its id alone (``ToolTask`` over the new connection, ``wait`` then
  ``result``).
* ``unknown``: ``tasks/get`` and ``tasks/cancel`` of a task id the server never made: the
  JSON-RPC error each is answered with.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from fastmcp import Client
from fastmcp_tasks.client import ToolTask, call_tool_task
from fastmcp_tasks.client_models import ClientCreateTaskResult
from mcp.shared.exceptions import MCPError

#: One bound on every wait: a task that never ends fails the run, it never hangs it.
TIMEOUT = 120.0


def _task_fields(task: Any) -> dict[str, Any]:
    """A task result's wire fields (camelCase, as the server sent them)."""
    return dict(task.model_dump(by_alias=True, mode="json", exclude_none=True))


def _client(url: str) -> Client:
    return Client(url, timeout=TIMEOUT)


async def evaluate(url: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    async with _client(url) as client:
        began = time.monotonic()
        task = await call_tool_task(client, tool, args, timeout=TIMEOUT)
        created = _task_fields(task.create_result)
        result = await asyncio.wait_for(task.result(), TIMEOUT)
        seconds = time.monotonic() - began
        final = _task_fields(await task.status())
    return {
        "created": created,
        "final": {k: v for k, v in final.items() if k != "result"},
        "structured": result.structured_content,
        "is_error": result.is_error,
        "seconds": seconds,
    }


async def cancel(url: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    async with _client(url) as client:
        task = await call_tool_task(client, tool, args, timeout=TIMEOUT)
        created = _task_fields(task.create_result)
        working = _task_fields(await task.wait(state="working", timeout=TIMEOUT))
        await asyncio.sleep(1.0)  # the work is under way: a step or more in
        before = _task_fields(await task.status())
        began = time.monotonic()
        await task.cancel()
        final = _task_fields(await task.wait(timeout=TIMEOUT))
        seconds = time.monotonic() - began
    return {
        "created": created,
        "working": working,
        "before_cancel": before,
        "final": final,
        "cancel_to_cancelled_s": seconds,
    }


async def reconnect(url: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    async with _client(url) as first:
        task = await call_tool_task(first, tool, args, timeout=TIMEOUT)
        created = _task_fields(task.create_result)
    # The first client is gone; a new one knows nothing but the task's id.
    known = ClientCreateTaskResult.model_validate(
        {**created, "resultType": "task", "status": created["status"]}
    )
    async with _client(url) as second:
        again = ToolTask(second, tool, known)
        final = _task_fields(await again.wait(timeout=TIMEOUT))
        result = await asyncio.wait_for(again.result(), TIMEOUT)
    return {
        "created": created,
        "final": {k: v for k, v in final.items() if k != "result"},
        "structured": result.structured_content,
        "is_error": result.is_error,
    }


async def unknown(url: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """``tasks/get`` and ``tasks/cancel`` of a task id the server never made
    (``args["taskId"]``): the error each is answered with."""
    fake = ClientCreateTaskResult.model_validate(
        {
            "taskId": args["taskId"],
            "status": "working",
            "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:00Z",
            "resultType": "task",
        }
    )
    answer: dict[str, Any] = {}
    async with _client(url) as client:
        task = ToolTask(client, tool, fake)
        for name, request in (("get", task.status), ("cancel", task.cancel)):
            try:
                await request()
            except MCPError as exc:
                answer[name] = {"code": exc.error.code, "message": exc.error.message}
            else:
                answer[name] = None
    return answer


ACTIONS = {"evaluate": evaluate, "cancel": cancel, "reconnect": reconnect, "unknown": unknown}


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[1] not in ACTIONS:
        print(
            f"usage: fastmcp_tasks_client.py URL {{{','.join(ACTIONS)}}} TOOL ARGS_JSON; "
            f"got {argv}",
            file=sys.stderr,
        )
        return 2
    url, action, tool, raw = argv
    args = json.loads(raw)
    if not isinstance(args, dict):
        print(f"ARGS_JSON must be a JSON object, got {raw!r}", file=sys.stderr)
        return 2
    answer = asyncio.run(ACTIONS[action](url, tool, args))
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
