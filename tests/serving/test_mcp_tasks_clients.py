"""Long calls as MCP tasks (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663),
driven by two clients nobody here wrote, each a process of its own over Streamable HTTP:
fastmcp-tasks' client (``call_tool_task``, ``ToolTask``; its own venv, as it pins its own
fastmcp) and a requester on ``@modelcontextprotocol/ext-tasks`` (npm) with the 2.x
TypeScript client.

Each runs ``evaluate`` as a task to completion (the report the same as the same call
answered in the call), cancels a long ``collect`` (cancelled within 3 s of the cancel, the
server's episodes closed and their recordings whole), and reads a task's result from a
new connection after the first one went away. The stock ``mcp`` client, which does not
negotiate the extension, gets the same ``evaluate`` answered in the call.

Run with ``-s`` to see the figures: the seconds from cancel to cancelled, and a tasked
``evaluate`` against a direct one on the same server.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client

from openenv_mcp.recording import iter_recordings
from tests.servers import http_server
from tests.tasks_clients import run as clients

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TASKS = "io.modelcontextprotocol/tasks"
#: An eval of echo's test split: 4 tasks x 3 samples, each run to echo's 100-step end.
EVALUATE = {"split": "test", "samples": 3, "k": [1, 3], "max_steps": 200, "seed": 7}
#: A collect far longer than any test: it ends only by being cancelled.
LONG_COLLECT = {"episodes": 10_000, "max_steps": 100, "seed": 1}
#: The issue's bound on cancel -> cancelled.
CANCEL_BOUND_S = 3.0
WAIT = 120


class Server:
    """One ``openenv-mcp serve echo --http --record DIR``: its MCP URL and its records."""

    def __init__(self, url: str, records: Path) -> None:
        self.url = url
        self.records = records
        self.base = url.removesuffix("/mcp")

    def live_episodes(self) -> int:
        """The server's own count of its live episodes (``/healthz``)."""
        with urllib.request.urlopen(f"{self.base}/healthz", timeout=30) as reply:
            return int(json.load(reply)["episodes"])


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with (
        tempfile.TemporaryDirectory(prefix="tasks-rec-") as records,
        http_server("echo", "--record", records, timeout=WAIT) as url,
    ):
        yield Server(url, Path(records))


async def direct(url: str, tool: str, args: dict[str, Any]) -> tuple[Any, float]:
    """``tool`` called by the stock ``mcp`` client (no tasks extension): its result and
    the seconds the call took."""
    with anyio.fail_after(WAIT):
        async with Client(url) as client:
            began = time.monotonic()
            result = await client.call_tool(tool, args)
            return result, time.monotonic() - began


def figures(report: dict[str, Any]) -> dict[str, Any]:
    """What an eval report says of the policy: its scores and what was evaluated."""
    config = report["config"]
    return {
        "scores": report["scores"],
        "dataset": config["dataset"],
        "eval_parameters": config["eval_parameters"],
    }


def say(line: str) -> None:
    print(f"\n[mcp tasks] {line}", file=sys.stderr, flush=True)


def _created_task(client: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The created task (fastmcp-tasks' CreateTaskResult) or, for ext-tasks, its id."""
    if client == "fastmcp-tasks":
        created: dict[str, Any] = answer["created"]
        assert created["resultType"] == "task" and created["status"] == "working"
        assert isinstance(created["ttlMs"], int) and created["ttlMs"] > 0
        assert isinstance(created["pollIntervalMs"], int) and created["pollIntervalMs"] > 0
        assert created["createdAt"] and created["lastUpdatedAt"]
        return created
    assert answer["era"] == "modern" and answer["extension"] == {}
    return {"taskId": answer["taskId"]}


def _result(client: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The finished task's structuredContent, from either client's answer."""
    if client == "fastmcp-tasks":
        assert answer["final"]["status"] == "completed", answer["final"]
        assert answer["is_error"] is False
        structured: dict[str, Any] = answer["structured"]
        return structured
    assert answer["status"] == "completed", answer
    assert answer["lastTask"]["status"] == "completed"
    result = answer["result"]
    assert result["isError"] is False and result["content"][0]["type"] == "text"
    return dict(result["structuredContent"])


@pytest.mark.parametrize("client", clients.CLIENTS)
async def test_evaluate_runs_as_a_task_to_the_report_it_answers_in_the_call(
    server: Server, client: str
) -> None:
    answer = await anyio.to_thread.run_sync(
        clients.run, client, server.url, "evaluate", "evaluate", EVALUATE
    )
    task = _created_task(client, answer)
    assert len(task["taskId"]) >= 16
    tasked = _result(client, answer)
    result, direct_s = await direct(server.url, "evaluate", EVALUATE)
    assert result.is_error is False and result.structured_content is not None
    assert figures(tasked) == figures(result.structured_content)
    assert tasked["scores"]["error_rate"] == 0.0  # every run played to its end
    say(
        f"evaluate {EVALUATE} via {client}: tasked {answer['seconds']:.2f} s "
        f"(call to result, polling), direct {direct_s:.2f} s (stock mcp client, in the call)"
    )


@pytest.mark.parametrize("client", clients.CLIENTS)
async def test_cancelling_a_long_collect_stops_it_and_closes_its_episodes(
    server: Server, client: str
) -> None:
    proc = clients.start(client, server.url, "cancel", "collect", LONG_COLLECT)
    try:
        seen = 0
        with anyio.fail_after(WAIT):
            while proc.poll() is None and seen == 0:  # the work under way: an episode live
                seen = await anyio.to_thread.run_sync(server.live_episodes)
                await anyio.sleep(0.05)
        answer = await anyio.to_thread.run_sync(clients.finish, proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert seen >= 1, "no episode of the collect was ever live"
    final = answer["final"]
    assert final["status"] == "cancelled", final
    if client == "ext-tasks":
        assert answer["localOutcome"] == "cancelled"
        assert answer["before"]["status"] == "working"
    else:
        assert answer["before_cancel"]["status"] == "working"
    seconds = answer["cancel_to_cancelled_s"]
    say(f"collect {LONG_COLLECT} via {client}: cancel -> cancelled in {seconds:.3f} s")
    assert seconds <= CANCEL_BOUND_S
    # Cancelled is the end: its episode is closed, none starts after.
    with anyio.fail_after(CANCEL_BOUND_S):
        while await anyio.to_thread.run_sync(server.live_episodes):
            await anyio.sleep(0.05)
    await anyio.sleep(0.5)
    assert await anyio.to_thread.run_sync(server.live_episodes) == 0
    recordings = list(iter_recordings(server.records))
    assert recordings, "the collect's episodes were not recorded"
    unfinished = [r.path for r in recordings if r.end is None or r.problem]
    assert not unfinished, f"recordings left half-written: {unfinished}"


@pytest.mark.parametrize("client", clients.CLIENTS)
async def test_a_task_is_read_from_a_new_connection_after_the_first_went_away(
    server: Server, client: str
) -> None:
    answer = await anyio.to_thread.run_sync(
        clients.run, client, server.url, "reconnect", "evaluate", EVALUATE
    )
    if client == "ext-tasks":
        assert answer["reference"]["taskId"] == answer["taskId"]
        assert answer["reference"]["generation"] == "v2"
    tasked = _result(client, answer)
    result, _ = await direct(server.url, "evaluate", EVALUATE)
    assert figures(tasked) == figures(result.structured_content or {})


async def test_without_the_extension_evaluate_answers_in_the_call(server: Server) -> None:
    """The stock client negotiates no tasks: a CallToolResult, as before tasks existed;
    the same request on the wire with the extension announced is answered with a task."""
    result, _ = await direct(server.url, "evaluate", EVALUATE)
    assert type(result).__name__ == "CallToolResult"
    assert result.is_error is False and result.structured_content is not None
    assert result.structured_content["config"]["eval_parameters"]["samples"] == 3
    plain = await raw_call(server.url, "evaluate", EVALUATE, extensions={})
    assert plain["resultType"] == "complete" and "taskId" not in plain
    assert plain["structuredContent"]["scores"] == result.structured_content["scores"]
    tasked = await raw_call(server.url, "evaluate", EVALUATE, extensions={TASKS: {}})
    assert tasked["resultType"] == "task" and tasked["status"] in ("working", "completed")


async def raw_call(
    url: str, tool: str, args: dict[str, Any], *, extensions: dict[str, Any]
) -> dict[str, Any]:
    """One ``tools/call`` as the 2026-07-28 wire carries it, announcing ``extensions``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": args, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    async with httpx.AsyncClient(timeout=WAIT) as http:
        reply = await http.post(url, json=body, headers=headers)
    text = reply.text
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1]
    message = json.loads(text)
    assert "result" in message, message
    return dict(message["result"])


@pytest.mark.parametrize("client", clients.CLIENTS)
def test_the_clients_refuse_what_they_cannot_run(client: str) -> None:
    """A usage mistake is told (what was expected, what came) and exits 2, before any
    connection is tried."""
    argv = clients.command(client, "http://127.0.0.1:9/mcp", "evaluate", "evaluate", {})
    for bad in (argv[:-1], [*argv[:-3], "explode", *argv[-2:]], [*argv[:-1], "[1, 2]"]):
        proc = subprocess.run(
            bad, capture_output=True, text=True, timeout=120, env=clients.environ(client)
        )
        assert proc.returncode == 2, (bad, proc.stderr)
        assert "usage" in proc.stderr or "must be a JSON object" in proc.stderr, proc.stderr
        assert proc.stdout == ""


@pytest.mark.parametrize("client", clients.CLIENTS)
async def test_a_task_id_the_server_never_made_is_refused_by_name(
    server: Server, client: str
) -> None:
    """A stranger's guess (or an expired id): ``tasks/get`` and ``tasks/cancel`` each answer
    a JSON-RPC error naming the id, as the client reads it."""
    made_up = "no-such-task-" + "0" * 22
    answer = await anyio.to_thread.run_sync(
        clients.run, client, server.url, "unknown", "evaluate", {"taskId": made_up}
    )
    for method in ("get", "cancel"):
        error = answer[method]
        assert error is not None, f"tasks/{method} of {made_up} answered no error"
        assert error["code"] == -32602, error  # invalid params
        assert made_up in error["message"], error


def test_fastmcp_tasks_lives_in_its_own_venv_with_its_own_fastmcp() -> None:
    """The side venv holds fastmcp-tasks 4.1.4 and the fastmcp it pins, consistent; ours
    keeps its own fastmcp and has no fastmcp-tasks (its pin would downgrade ours)."""
    python = clients.fastmcp_tasks_python()
    probe = (
        "import json, importlib.metadata as m; print(json.dumps("
        "{p: m.version(p) for p in ('fastmcp-tasks', 'fastmcp-slim', 'mcp')}))"
    )
    env = clients.environ("fastmcp-tasks")
    side = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, timeout=120, env=env
    )
    assert side.returncode == 0, side.stderr
    versions = json.loads(side.stdout)
    assert versions["fastmcp-tasks"] == "4.1.4" and versions["fastmcp-slim"] == "4.1.4"
    check = subprocess.run(
        [str(python), "-m", "pip", "check"], capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stdout
    assert importlib.util.find_spec("fastmcp_tasks") is None
    assert importlib.metadata.version("fastmcp").startswith("4.2.")
