"""Tool schemas every client takes: the Anthropic tool rules, the OpenAI Agents SDK's
strict-schema converter, and the MCP Inspector's ``--strict`` portability check (0 errors,
0 warnings), for echo, Atari (minimal and full action space) and the gymnasium env
(Blackjack, CartPole, Pendulum), in both profiles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import anyio
import pytest
from fastmcp import Client

from openenv_mcp.server import ServerSettings, build_server
from openenv_mcp.wire.portability import schema_problems
from tests.servers import ROOT
from tests.test_independent_clients import node_tools  # noqa: F401  (a shared fixture)

pytestmark = pytest.mark.anyio

SERVERS: list[tuple[str, list[str]]] = [
    ("echo", []),
    ("atari", ["--game", "pong"]),
    ("atari", ["--game", "pong", "--full-action-space"]),
    ("gymnasium", ["--id", "Blackjack-v1"]),
    ("gymnasium", ["--id", "CartPole-v1"]),
    ("gymnasium", ["--id", "Pendulum-v1"]),
]
PROFILES = ["full", "agent"]
IDS = [" ".join([env, *options]) for env, options in SERVERS]


def options_of(args: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        name = args[i][2:].replace("-", "_")
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            out[name], i = args[i + 1], i + 2
        else:
            out[name], i = True, i + 1
    return out


async def listed_tools(env: str, options: list[str], profile: str) -> list[dict[str, Any]]:
    server = build_server(env, settings=ServerSettings(profile=profile), **options_of(options))
    async with Client(server) as client:
        tools = await client.list_tools()
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(("env", "options"), SERVERS, ids=IDS)
async def test_tools_meet_the_anthropic_rules_and_the_openai_converter(
    env: str, options: list[str], profile: str
) -> None:
    import agents.strict_schema  # noqa: F401  (schema_problems runs its converter)

    with anyio.fail_after(60):
        tools = await listed_tools(env, options, profile)
    for tool in tools:
        assert schema_problems(tool) == [], tool["name"]
    # The rules bite: each one finds what it is for.
    bad = {
        "name": "bad name!",
        "inputSchema": {"anyOf": [{"type": "object"}], "properties": {"x": {}}},
    }
    found = "\n".join(schema_problems(bad, strict_converter=False))
    for words in ("Anthropic's rule", "an object at the top", "no anyOf", "constrain nothing"):
        assert words in found, words


async def test_the_agent_profile_is_lean() -> None:
    for env, options in SERVERS:
        tools = await listed_tools(env, options, "agent")
        names = {t["name"] for t in tools}
        assert len(tools) <= 12 and {"reset", "step", "state"} <= names, (env, names)
        assert not names & {"step_batch", "snapshot", "release_snapshot", "close"}
        for tool in tools:
            assert "frames" not in tool["inputSchema"]["properties"], tool["name"]
            assert "outputSchema" not in tool, tool["name"]


@pytest.mark.integration
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(("env", "options"), SERVERS, ids=IDS)
def test_the_inspector_strict_check_finds_nothing(
    node_tools: dict[str, str],  # noqa: F811
    env: str,
    options: list[str],
    profile: str,
) -> None:
    server = [sys.executable, "-m", "openenv_mcp", "serve", env, "--stdio", *options]
    proc = subprocess.run(
        [
            node_tools["INSPECTOR"],
            "--cli",
            "--format",
            "json",
            "--strict",
            "--method",
            "tools/list",
            *server,
            "--profile",
            profile,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "MCP_STORAGE_DIR": str(ROOT / ".pytest_cache" / "inspector")},
    )
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stderr[-3000:]}"
    envelope = json.loads(proc.stdout)
    assert envelope["result"]["tools"]
    assert not envelope.get("schemaFindings"), json.dumps(envelope["schemaFindings"], indent=1)
