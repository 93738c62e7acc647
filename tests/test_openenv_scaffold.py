"""An environment scaffolded by OpenEnv's own ``openenv init`` (unmodified), served over
MCP both ways: its own server mounted (``serve openenv --url``) and its class in process
(``serve openenv --env``), each played through the official MCP Python SDK client,
``MCPEnvClient`` and the MCP Inspector CLI."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from openenv_mcp.client import MCPEnvClient
from tests.openenv_procs import openenv_cli, openenv_server
from tests.servers import ensure_installed, http_server
from tests.test_independent_clients import call, http_target, inspector

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ENV_CLASS = "server.demo_env_environment:DemoEnvironment"


@pytest.fixture(scope="module")
def node_tools() -> dict[str, str]:
    out = ensure_installed("ensure_node_tools.sh", "Node 22 / the MCP Inspector (from npm)")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``openenv init demo_env``, exactly as it writes it."""
    where = tmp_path_factory.mktemp("scaffold")
    proc = openenv_cli("init", "demo_env", "--output-dir", str(where), cwd=where)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    root = where / "demo_env"
    assert (root / "server" / "demo_env_environment.py").is_file()
    assert "max_concurrent_envs=1" in (root / "server" / "app.py").read_text()
    return root


@pytest.fixture(scope="module")
def scaffold_url(scaffold: Path) -> Iterator[str]:
    """The scaffold's own server (its ``server/app.py``, OpenEnv's ``create_app``)."""
    with openenv_server("server.app:app", cwd=scaffold) as url:
        yield url


def remote_command(url: str) -> list[str]:
    return [sys.executable, "-m", "openenv_mcp.cli", "serve", "openenv", "--url", url, "--stdio"]


def local_command(scaffold: Path) -> list[str]:
    # where its author runs it: in its directory (its modules import each other from there)
    return [
        "env",
        "-C",
        str(scaffold),
        sys.executable,
        "-m",
        "openenv_mcp.cli",
        "serve",
        "openenv",
        "--env",
        ENV_CLASS,
        "--stdio",
    ]


async def play_with_the_sdk(command: list[str]) -> dict[str, Any]:
    """Reset and step with the official MCP Python SDK client; the step's result."""
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        action = tools["step"].input_schema["properties"]["action"]
        assert action["properties"]["message"]["type"] == "string"
        reset = await session.call_tool("reset", {})
        assert not reset.is_error, reset
        assert reset.structured_content["observation"]["echoed_message"] == (
            "Demo Env environment ready!"
        )
        step = await session.call_tool("step", {"action": {"message": "hello"}})
        assert not step.is_error, step
        result: dict[str, Any] = step.structured_content
        return result


async def play_with_our_client(command: list[str]) -> None:
    async with MCPEnvClient(command) as env:
        await env.reset(seed=1)
        obs, reward, terminated, truncated, _ = await env.step({"message": "hi there"})
        assert obs["echoed_message"] == "hi there" and obs["message_length"] == 8
        assert reward == pytest.approx(0.8) and not (terminated or truncated)


async def test_its_own_server_mounted_over_mcp(scaffold_url: str) -> None:
    step = await play_with_the_sdk(remote_command(scaffold_url))
    assert step["reward"] == pytest.approx(0.5) and step["observation"]["message_length"] == 5
    await play_with_our_client(remote_command(scaffold_url))


async def test_its_class_served_in_process(scaffold: Path) -> None:
    step = await play_with_the_sdk(local_command(scaffold))
    assert step["reward"] == pytest.approx(0.5) and step["observation"]["echoed_message"] == "hello"
    await play_with_our_client(local_command(scaffold))


#: The bridge starts slowly where OpenEnv is imported on a busy machine (the Inspector's
#: default wait is 10 s).
PATIENT = ("--connect-timeout", "120000")


def test_the_inspector_plays_it_both_ways(
    scaffold: Path, scaffold_url: str, node_tools: dict[str, str]
) -> None:
    for command in (remote_command(scaffold_url), local_command(scaffold)):
        target = ["--", *command]
        listed = inspector(node_tools, target, "tools/list", *PATIENT)["tools"]
        assert {"reset", "step", "state"} <= {t["name"] for t in listed}
        reset = inspector(node_tools, target, "tools/call", *PATIENT, *call("reset", {}))
        assert reset["structuredContent"]["step"] == 0
    # over HTTP one server keeps the episode between the Inspector's calls
    with http_server("openenv", "--url", scaffold_url) as url:
        target = http_target(url)
        reset = inspector(node_tools, target, "tools/call", *call("reset", {}))
        episode = reset["structuredContent"]["episode_id"]
        args = {"episode_id": episode, "action": {"message": "inspected"}}
        step = inspector(node_tools, target, "tools/call", *call("step", args))
        assert step["structuredContent"]["observation"]["echoed_message"] == "inspected"
        closed = inspector(
            node_tools, target, "tools/call", *call("close", {"episode_id": episode})
        )
        assert json.loads(closed["content"][0]["text"])["closed"] is True
