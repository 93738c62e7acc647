"""``serve openenv --url``: a running OpenEnv server (openenv-core's own ``create_app``
under uvicorn) mounted as an MCP server, driven by real MCP clients; and what goes
wrong: an unreachable URL, a server that is not OpenEnv, a full server, a refused
action, a socket that dies mid-episode. No part of OpenEnv's protocol is mocked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from fastmcp import Client

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import ArgumentError
from openenv_mcp.server import ServerSettings, build_server
from tests.openenv_procs import Restartable, openenv_server
from tests.servers import free_port, http_server, stdio_transport

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture(scope="module")
def count_url() -> Iterator[str]:
    with openenv_server("tests.openenv_apps:count") as url:
        yield url


@pytest.fixture(scope="module")
def tools_url() -> Iterator[str]:
    with openenv_server("tests.openenv_apps:tools") as url:
        yield url


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def test_an_openenv_server_over_stdio_typed_seeded_and_pictured(count_url: str) -> None:
    async with Client(stdio_transport("openenv", "--url", count_url), timeout=120) as client:
        tools = {t.name: t for t in await client.list_tools()}
        action = tools["step"].input_schema["properties"]["action"]
        assert action["properties"]["message"]["maxLength"] == 64
        first = await client.call_tool("reset", {"seed": 7})
        assert [c.type for c in first.content] == ["text", "image"]
        again = await client.call_tool("reset", {"seed": 7})
        nonce = first.structured_content["observation"]["nonce"]
        assert again.structured_content["observation"]["nonce"] == nonce
        step = await client.call_tool("step", {"action": {"message": "please"}})
        assert step.structured_content["reward"] == 1.0 and step.structured_content["step"] == 1
        refused = await client.call_tool(
            "step", {"action": {"message": "x" * 65}}, raise_on_error=False
        )
        assert _text(refused).startswith("InvalidAction: action: {'message': 'xxxxx")
        assert "does not fit: ['message'] 'xxxxx" in _text(refused) and "is too long" in _text(
            refused
        )
        state = await client.call_tool("state", {})
        assert state.structured_content["info"]["openenv_state"]["step_count"] == 1
        # A rule only the Action model's validator knows. OpenEnv 0.3.0's socket cannot
        # send that validator's error (its ValueError does not serialize): it answers
        # SESSION_ERROR and ends the session; the bridge says so, naming the server.
        forbidden = await client.call_tool(
            "step", {"action": {"message": "forbidden"}}, raise_on_error=False
        )
        assert _text(forbidden).startswith(
            f"EnvCrashed: the OpenEnv server at {count_url} failed action: SESSION_ERROR"
        )
        assert (await client.call_tool("reset", {"seed": 7})).structured_content["step"] == 0


async def test_each_mcp_episode_is_its_own_openenv_session(count_url: str) -> None:
    async with MCPEnvClient(build_server("openenv", url=count_url)) as env:
        one, two = env.spawn(), env.spawn()
        await one.reset(seed=1)
        await two.reset(seed=1)
        await one.step({"message": "a"})
        await one.step({"message": "b"})
        await two.step({"message": "c"})
        states = [await e.state() for e in (one, two)]
        sessions = [s[-1]["openenv_state"] for s in states]
        assert [s["step_count"] for s in sessions] == [2, 1]
        assert sessions[0]["episode_id"] != sessions[1]["episode_id"]


async def test_an_mcp_environments_tools_are_mcp_tools(tools_url: str) -> None:
    async with Client(build_server("openenv", url=tools_url)) as client:
        names = {t.name for t in await client.list_tools()}
        assert {"add", "picture", "finish"} <= names
        await client.call_tool("reset", {})
        assert "add returned '5'" in _text(await client.call_tool("add", {"a": 2, "b": 3}))
        picture = await client.call_tool("picture", {})
        assert [c.type for c in picture.content] == ["text", "image"]
        done = await client.call_tool("finish", {"answer": "42"})
        view = done.structured_content
        assert (view["terminated"], view["reward"], view["step"]) == (True, 1.0, 3)


async def test_unreachable_and_not_openenv_are_clear() -> None:
    port = free_port()
    with pytest.raises(
        ArgumentError, match=f"no OpenEnv server answered at http://127.0.0.1:{port}"
    ):
        build_server("openenv", url=f"127.0.0.1:{port}")
    with http_server("echo") as mcp_url:
        base = mcp_url.removesuffix("/mcp")
        with pytest.raises(
            ArgumentError, match=r"is not an OpenEnv server: GET .*/schema answered HTTP 404"
        ):
            build_server("openenv", url=base)


async def test_a_full_server_refuses_one_episode_and_the_other_plays_on() -> None:
    with openenv_server("tests.openenv_apps:count_single") as url:
        async with Client(build_server("openenv", url=url)) as client:
            first = await client.call_tool("reset", {"new_episode": True})
            held = first.structured_content["episode_id"]
            refused = await client.call_tool("reset", {"new_episode": True}, raise_on_error=False)
            assert _text(refused) == (
                f"ServerFull: the OpenEnv server at {url} has all its sessions taken (1/1, its "
                "max_concurrent_envs): close another episode, or start it with more"
            )
            step = await client.call_tool(
                "step", {"episode_id": held, "action": {"message": "still here"}}
            )
            assert step.structured_content["step"] == 1


async def test_a_dropped_session_names_the_url_and_reset_starts_over() -> None:
    server = Restartable("tests.openenv_apps:count")
    server.start()
    try:
        async with Client(build_server("openenv", url=server.url)) as client:
            await client.call_tool("reset", {"seed": 1})
            await client.call_tool("step", {"action": {"message": "one"}})
            server.kill()
            lost = await client.call_tool(
                "step", {"action": {"message": "two"}}, raise_on_error=False
            )
            assert lost.is_error
            assert f"the OpenEnv session at ws://127.0.0.1:{server.port}/ws" in _text(lost)
            broken = await client.call_tool("state", {})
            assert broken.structured_content["status"] == "broken"
            server.start()
            with anyio.fail_after(60):
                again = await client.call_tool("reset", {"seed": 1})
            assert again.structured_content["status"] == "running"
            step = await client.call_tool("step", {"action": {"message": "two"}})
            assert step.structured_content["step"] == 1
    finally:
        server.kill()


async def test_reset_options_reach_the_server_as_its_own_client_passes_them() -> None:
    # OpenEnv's client: env.reset(dataset_name="mini_sudoku", seed=7, size=5). A server
    # publishes no reset schema: its options pass on as they are, under kwargs.
    with openenv_server("tests.openenv_games.server.app:reasoning_gym") as url:
        async with Client(
            build_server("openenv", settings=ServerSettings(profile="agent"), url=url)
        ) as client:
            tools = {t.name: t for t in await client.list_tools()}
            options = tools["reset"].input_schema["properties"]["options"]["anyOf"][0]
            assert list(options["properties"]) == ["kwargs"]
            kwargs = {"dataset_name": "mini_sudoku", "size": 5}
            sudoku = _text(
                await client.call_tool("reset", {"seed": 7, "options": {"kwargs": kwargs}})
            )
            assert "question:\nIn 4x4 Mini Sudoku:" in sudoku
            # nothing says whether its reset takes the seed: the text says it may not
            assert "Seed 7 was passed on; this environment may ignore seeds (its server " in sudoku
            refused = await client.call_tool(
                "reset", {"options": {"kwargs": {"seed": 1}}}, raise_on_error=False
            )
            assert _text(refused) == (
                "UnsupportedOption: openenv reset: option 'kwargs': seed goes as reset's own "
                "seed argument, not inside kwargs."
            )
            top = await client.call_tool(
                "reset", {"options": {"dataset_name": "x"}}, raise_on_error=False
            )
            assert "Per-episode options: kwargs" in _text(top)


async def test_reset_options_typed_from_a_published_reset_schema() -> None:
    with openenv_server("tests.openenv_games.server.app:reasoning_gym_published") as url:
        async with Client(
            build_server("openenv", settings=ServerSettings(profile="agent"), url=url)
        ) as client:
            tools = {t.name: t for t in await client.list_tools()}
            options = tools["reset"].input_schema["properties"]["options"]["anyOf"][0]
            assert options["properties"]["size"] == {
                "anyOf": [{"type": "integer"}, {"type": "null"}]
            }
            assert "kwargs" not in options["properties"]  # it takes no others
            wrong = await client.call_tool(
                "reset",
                {"options": {"dataset_name": "mini_sudoku", "size": "five"}},
                raise_on_error=False,
            )
            assert _text(wrong).startswith("UnsupportedOption: openenv reset: option 'size': ")
            typed = {"dataset_name": "mini_sudoku", "size": 5}
            text = _text(await client.call_tool("reset", {"seed": 7, "options": typed}))
            assert "question:\nIn 4x4 Mini Sudoku:" in text
            assert "Seed 7" not in text  # its schema names seed: it takes one
