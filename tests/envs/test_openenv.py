"""The openenv env in process: OpenEnv Environment classes (real openenv-core) served
over MCP with ``serve openenv --env module:Class``, driven by a real MCP client in
memory. The remote bridge (``--url``) and OpenEnv's protocol are in
``tests/server/faces/test_openenv.py`` (processes and sockets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastmcp import Client

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.codecs import decode_raw
from openenv_mcp.data.recording import replay
from openenv_mcp.errors import ArgumentError
from openenv_mcp.server import ServerSettings, build_server, get_app
from tests.servers import ROOT

COUNT = "tests.openenv_envs:CountEnvironment"
TOOLS = "tests.openenv_envs:ToolsEnvironment"

pytestmark = pytest.mark.anyio


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def test_the_action_model_types_step_and_its_fields_are_checked() -> None:
    async with Client(build_server("openenv", env=COUNT)) as client:
        tools = {t.name: t for t in await client.list_tools()}
        action = tools["step"].input_schema["properties"]["action"]
        assert action["properties"]["message"] == {
            "description": "What to say.",
            "maxLength": 64,
            "minLength": 1,
            "type": "string",
        }
        assert action["required"] == ["message"] and "metadata" not in action["properties"]
        await client.call_tool("reset", {"seed": 1})
        bad = await client.call_tool("step", {"action": {"message": ""}}, raise_on_error=False)
        assert bad.is_error
        assert _text(bad) == (
            "InvalidAction: action: {'message': ''} does not fit: ['message'] '' should be "
            "non-empty"
        )
        unknown = await client.call_tool(
            "step", {"action": {"message": "hi", "volume": 3}}, raise_on_error=False
        )
        assert unknown.is_error and "'volume' was unexpected" in _text(unknown)
        # a rule only the model's validator knows (in process, its error is named)
        forbidden = await client.call_tool(
            "step", {"action": {"message": "forbidden"}}, raise_on_error=False
        )
        assert _text(forbidden) == (
            "InvalidAction: the Action model refused the action: message: Value error, "
            "that word is not allowed"
        )
        # one field: its bare value will do
        ok = await client.call_tool("step", {"action": "hi"})
        assert ok.structured_content["observation"]["echoed"] == "hi"


async def test_rubric_scores_are_the_reward_breakdown() -> None:
    async with Client(build_server("openenv", env=COUNT)) as client:
        await client.call_tool("reset", {"seed": 1})
        polite = await client.call_tool("step", {"action": {"message": "please, a long one"}})
        view = polite.structured_content
        assert view["reward"] == 0.5
        assert view["rewards"] == {
            "env": 0.5,
            "rubric": 0.5,
            "rubric.polite": 1.0,
            "rubric.brief": 0.0,
        }
        assert view["info"]["rubric"] == {"polite": 1.0, "brief": 0.0}


async def test_pixels_become_the_frame_and_travel_compact() -> None:
    async with Client(build_server("openenv", env=COUNT)) as client:
        reset = await client.call_tool("reset", {"seed": 4})
        assert [c.type for c in reset.content] == ["text", "image"]
        # the same values, in the shape they came in (flat, beside screen_shape)
        screen = reset.structured_content["observation"]["screen"]
        assert screen["shape"] == [48] and screen["encoding"] == "zstd"
        assert "screen=<48 array>, screen_shape=[4, 4, 3]" in _text(reset)
    async with MCPEnvClient(build_server("openenv", env=COUNT)) as env:
        obs, _ = await env.reset(seed=4)
        pixels = decode_raw(obs["screen"])  # a raw array: openenv_mcp.codecs reads it
        assert pixels.dtype == np.uint8
        frame = pixels.reshape(obs["screen_shape"])
        assert frame[0, 0].tolist() == [0, 255, 7]


async def test_reset_parameters_are_the_options() -> None:
    async with Client(build_server("openenv", env=COUNT)) as client:
        tools = {t.name: t for t in await client.list_tools()}
        options = tools["reset"].input_schema["properties"]["options"]["anyOf"][0]
        assert options["properties"]["greeting"]["type"] == "string"
        hello = await client.call_tool("reset", {"options": {"greeting": "hello"}})
        assert hello.structured_content["observation"]["echoed"] == "hello"
        wrong = await client.call_tool("reset", {"options": {"colour": 1}}, raise_on_error=False)
        assert _text(wrong).startswith("UnsupportedOption: option 'colour' cannot be set")


async def test_seeds_done_and_truncation_from_metadata() -> None:
    async with MCPEnvClient(build_server("openenv", env=COUNT)) as env:
        first, _ = await env.reset(seed=9)
        again, _ = await env.reset(seed=9)
        assert first["nonce"] == again["nonce"]
        *_, terminated, truncated, _ = await env.step({"message": "bye"})
        assert (terminated, truncated) == (True, False)
        await env.reset(seed=9)
        for _ in range(5):
            _, _, terminated, truncated, info = await env.step({"message": "go"})
        # done at the step limit, and the environment's metadata says truncated
        assert (terminated, truncated) == (False, True)
        assert info["metadata"] == {"truncated": True}


async def test_an_mcp_environments_tools_are_mcp_tools_and_each_call_a_step() -> None:
    async with Client(build_server("openenv", env=TOOLS)) as client:
        tools = {t.name: t for t in await client.list_tools()}
        assert {"add", "picture", "finish"} <= set(tools)
        add = tools["add"].input_schema
        assert add["properties"]["a"] == {"type": "integer"} and add["required"] == ["a", "b"]
        await client.call_tool("reset", {})
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert "add returned '5'" in _text(added)
        assert added.structured_content["step"] == 1
        wrong = await client.call_tool("add", {"a": 2, "b": "x"}, raise_on_error=False)
        assert (
            _text(wrong) == "InvalidAction: action: add: b: 'x' is not of type 'integer' (got 'x')"
        )
        picture = await client.call_tool("picture", {})
        assert [c.type for c in picture.content] == ["text", "image"]
        # step takes the same calls
        missing = await client.call_tool(
            "step", {"action": {"tool": "ad", "arguments": {}}}, raise_on_error=False
        )
        assert "no tool 'ad'. Did you mean 'add'?" in _text(missing)
        done = await client.call_tool(
            "step", {"action": {"tool": "finish", "arguments": {"answer": "42"}}}
        )
        assert done.structured_content["terminated"] and done.structured_content["reward"] == 1.0


async def test_recorded_episodes_replay(tmp_path: Path) -> None:
    settings = ServerSettings(record=str(tmp_path))
    async with Client(build_server("openenv", settings=settings, env=COUNT)) as client:
        await client.call_tool("reset", {"seed": 2})
        await client.call_tool("step", {"action": {"message": "please"}})
        await client.call_tool("step", {"action": {"message": "bye"}})
    (recording,) = tmp_path.glob("*.jsonl")
    records = [json.loads(line) for line in recording.read_text().splitlines()]
    steps = [r for r in records if r["kind"] == "step"]
    assert [s["action"] for s in steps] == [{"message": "please"}, {"message": "bye"}]
    assert steps[0]["rewards"]["rubric.polite"] == 1.0
    assert records[-1]["kind"] == "end" and records[-1]["status"] == "terminated"
    report = replay(recording)
    assert report.ok and report.steps == 2, report.text()


async def test_models_given_or_found_where_step_names_none() -> None:
    unannotated = "tests.openenv_envs:Unannotated"
    given = build_server(
        "openenv",
        env=unannotated,
        action="tests.openenv_envs:CountAction",
        observation="tests.openenv_envs:CountObservation",
    )
    # not given: the step it overrides names them (an env that names none anywhere is
    # in tests/envs/test_openenv_games.py)
    for server in (given, build_server("openenv", env=unannotated)):
        async with Client(server) as client:
            await client.call_tool("reset", {"seed": 1})
            step = await client.call_tool("step", {"action": {"message": "hey"}})
            assert step.structured_content["observation"]["echoed"] == "hey"


def test_bad_sources_are_clear() -> None:
    with pytest.raises(ArgumentError, match="exactly one of --url URL"):
        build_server("openenv")
    with pytest.raises(ArgumentError, match="not a subclass of OpenEnv's Environment"):
        build_server("openenv", env="tests.openenv_envs:CountAction")
    with pytest.raises(ArgumentError, match="has no 'Nope'"):
        build_server("openenv", env="tests.openenv_envs:Nope")
    with pytest.raises(ArgumentError, match="takes an OpenEnv server's base URL"):
        build_server("openenv", url="ftp://example")
    with pytest.raises(ArgumentError, match="go with --env, not --url"):
        build_server("openenv", url="http://127.0.0.1:1", action="tests.openenv_envs:CountAction")


@pytest.mark.integration
def test_collect_then_replay(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    argv = [sys.executable, "-m", "openenv_mcp.cli", "collect", "openenv", "--out", str(out)]
    argv += ["--episodes", "2", "--env", COUNT]
    collected = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert collected.returncode == 0, collected.stderr[-2000:]
    assert "finished (terminated/truncated)  2" in collected.stdout
    # The recorded --env is a test module (not installed): allowed by name, as a
    # recording's references import nothing from the working directory otherwise.
    allow = ["--allow-module", "tests.openenv_envs"]
    replayed = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", "replay", str(out), *allow],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.count("all match exactly") == 2


@pytest.mark.integration
async def test_in_worker_processes() -> None:
    server = build_server("openenv", settings=ServerSettings(workers=1), env=COUNT)
    try:
        async with Client(server) as client:
            await client.call_tool("reset", {"seed": 1})
            step = await client.call_tool("step", {"action": {"message": "please"}})
            assert step.structured_content["rewards"]["rubric.polite"] == 1.0
            assert [c.type for c in step.content] == ["text", "image"]
    finally:
        await get_app(server).aclose()
