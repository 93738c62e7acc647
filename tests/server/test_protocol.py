"""One protocol test body, run over every transport: memory, stdio, HTTP."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import pytest
from fastmcp import Client

from openenv_mcp.codecs import png_from_b64
from tests.servers import TRANSPORTS, open_client

pytestmark = pytest.mark.anyio


async def call(client: Client, tool: str, **args: object) -> dict:
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content


async def call_error(client: Client, tool: str, **args: object) -> str:
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert result.is_error, f"{tool}({args}) should fail, got {result.structured_content}"
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_initialize_and_list_tools(transport: str) -> None:
    with anyio.fail_after(90):
        async with open_client(transport) as client:
            # the handshake (initialize, or server/discover in the sessionless era)
            assert client.protocol_version
            assert client.server_info is not None
            assert client.server_info.name == "openenv-echo"
            assert "reset" in (client.instructions or "")
            assert client.server_capabilities is not None
            assert client.server_capabilities.tools is not None
            tools = {t.name: t for t in await client.list_tools()}
            for name in ("reset", "step", "state", "close", "snapshot", "history"):
                assert name in tools
            for name in ("reset", "step", "state"):
                assert tools[name].input_schema["type"] == "object"
                assert tools[name].output_schema is not None
                assert "episode_id" in tools[name].output_schema["properties"]
                assert tools[name].description
            assert tools["step"].input_schema["properties"]["action"]["type"] == "string"
            assert "action" in tools["step"].input_schema["required"]
            assert tools["state"].annotations is not None


async def test_full_episode_flow(transport: str) -> None:
    with anyio.fail_after(90):
        async with open_client(transport, "echo", "--max-steps", "3") as client:
            first = await call(client, "reset", seed=7, options={"greeting": "hi"})
            eid = first["episode_id"]
            assert eid.startswith("ep_") and len(eid) > 20
            assert first["step"] == 0 and first["observation"] == "hi"
            assert first["status"] == "running"
            step = await call(client, "step", episode_id=eid, action="hello")
            assert step["reward"] == pytest.approx(0.5)
            assert step["observation"] == "hello" and step["step"] == 1
            assert not step["terminated"] and not step["truncated"]
            state = await call(client, "state", episode_id=eid)
            assert state["step"] == 1 and state["episode_return"] == pytest.approx(0.5)
            await call(client, "step", episode_id=eid, action="abc")
            last = await call(client, "step", episode_id=eid, action="xyz")
            # truncation (time limit) is never reported as termination
            assert last["truncated"] and not last["terminated"] and last["status"] == "ended"
            error = await call_error(client, "step", episode_id=eid, action="again")
            assert error.startswith("ResetNeeded:") and "ended" in error
            # reset the same handle: a new episode in the same slot
            again = await call(client, "reset", episode_id=eid)
            assert again["episode_id"] == eid and again["step"] == 0
            bye = await call(client, "step", episode_id=eid, action="bye")
            assert bye["terminated"] and not bye["truncated"]
            closed = await call(client, "close", episode_id=eid)
            assert closed == {"episode_id": eid, "closed": True}
            assert (await call_error(client, "state", episode_id=eid)).startswith("UnknownEpisode:")


async def test_seeds_reproduce(transport: str) -> None:
    with anyio.fail_after(90):
        async with open_client(transport) as client:
            runs = []
            for seed in (3, 3, 4):
                r = await call(client, "reset", seed=seed, new_episode=True)
                nonces = [r["info"]["nonce"]]
                for _ in range(3):
                    s = await call(client, "step", episode_id=r["episode_id"], action="a")
                    nonces.append(s["info"]["nonce"])
                runs.append(nonces)
            assert runs[0] == runs[1] != runs[2]


async def test_concurrent_episodes_are_isolated(transport: str) -> None:
    with anyio.fail_after(90):
        async with open_client(transport) as client:
            a = (await call(client, "reset", new_episode=True))["episode_id"]
            b = (await call(client, "reset", new_episode=True))["episode_id"]
            assert a != b
            results: dict[str, list[dict]] = {a: [], b: []}

            async def play(eid: str, word: str, n: int) -> None:
                for _ in range(n):
                    results[eid].append(await call(client, "step", episode_id=eid, action=word))

            async with anyio.create_task_group() as tg:
                tg.start_soon(play, a, "aa", 8)
                tg.start_soon(play, b, "bbbb", 5)
            sa = await call(client, "state", episode_id=a)
            sb = await call(client, "state", episode_id=b)
            assert (sa["step"], sa["observation"]) == (8, "aa")
            assert (sb["step"], sb["observation"]) == (5, "bbbb")
            assert sa["episode_return"] == pytest.approx(8 * 0.2)
            assert sb["episode_return"] == pytest.approx(5 * 0.4)
            assert [r["step"] for r in results[a]] == list(range(1, 9))


async def test_bad_input_is_a_clear_error(transport: str) -> None:
    with anyio.fail_after(90):
        async with open_client(transport) as client:
            # step before reset: over stdio/memory there is no default episode yet
            if transport != "http":
                assert (await call_error(client, "step", action="x")).startswith("ResetNeeded:")
            eid = (await call(client, "reset"))["episode_id"]
            text = await call_error(client, "step", episode_id=eid, action=42)
            assert text.startswith("InvalidAction:") and "got int 42" in text
            text = await call_error(client, "step", episode_id=eid)
            assert "ArgumentError" in text and "'action' is required" in text
            text = await call_error(client, "step", episode_id=eid, action="x", bogus=1)
            assert "unknown argument 'bogus'" in text
            text = await call_error(client, "reset", seed="seven")
            assert "ArgumentError" in text and "'seed'" in text and "'seven'" in text
            text = await call_error(client, "reset", seed=-1)
            assert "'seed'" in text
            text = await call_error(client, "reset", options={"greting": "x"})
            assert "UnsupportedOption" in text and "Did you mean 'greeting'" in text
            text = await call_error(client, "step", episode_id="ep_nope", action="x")
            assert text.startswith("UnknownEpisode:") and "ep_nope" in text
            text = await call_error(client, "reset", from_snapshot="snap_nope")
            assert text.startswith("UnknownSnapshot:")
            text = await call_error(client, "no_such_tool")
            assert "no_such_tool" in text
            if transport == "http":
                text = await call_error(client, "step", action="x")
                assert text.startswith("EpisodeRequired:") and "HTTP" in text
            # the episode is untouched by all of that and the server still serves
            state = await call(client, "state", episode_id=eid)
            assert state["step"] == 0 and state["status"] == "running"
            assert (await call(client, "step", episode_id=eid, action="ok"))["step"] == 1


async def test_snapshots_fork_identically(transport: str) -> None:
    with anyio.fail_after(90):
        async with open_client(transport) as client:
            eid = (await call(client, "reset", seed=11))["episode_id"]
            await call(client, "step", episode_id=eid, action="one")
            snap = await call(client, "snapshot", episode_id=eid)
            assert snap["step"] == 1 and snap["snapshot_id"].startswith("snap_")
            forks = []
            for _ in range(2):
                fork = await call(
                    client, "reset", from_snapshot=snap["snapshot_id"], new_episode=True
                )
                assert fork["step"] == 1 and fork["observation"] == "one"
                step = await call(client, "step", episode_id=fork["episode_id"], action="two")
                forks.append((step["info"]["nonce"], step["episode_return"]))
            assert forks[0] == forks[1]
            text = await call_error(client, "reset", from_snapshot=snap["snapshot_id"], seed=1)
            assert "cannot be combined" in text
            await call(client, "release_snapshot", snapshot_id=snap["snapshot_id"])
            assert (
                await call_error(client, "reset", from_snapshot=snap["snapshot_id"])
            ).startswith("UnknownSnapshot:")


async def test_frames_and_resources(transport: str) -> None:
    with anyio.fail_after(90):
        async with open_client(transport, "echo", "--frame") as client:
            result = await client.call_tool("reset", {"options": {"greeting": "abc"}})
            images = [c for c in result.content if c.type == "image"]
            assert len(images) == 1 and images[0].mime_type == "image/png"
            frame = png_from_b64(images[0].data)
            assert frame.shape == (16, 16, 3)
            eid = result.structured_content["episode_id"]  # type: ignore[index]
            none = await client.call_tool("state", {"episode_id": eid, "frames": "none"})
            assert [c.type for c in none.content] == ["text"]
            resources = {str(r.uri) for r in await client.list_resources()}
            assert {"openenv://echo/spec", "openenv://echo/metadata"} <= resources
            spec = json.loads((await client.read_resource("openenv://echo/spec"))[0].text)
            assert spec["has_frame"] is True and spec["supports_snapshots"] is True
            assert spec["observation_space"] == {
                "type": "Text",
                "min_length": 0,
                "max_length": 4096,
                "charset": None,
            }


async def test_static_and_episode_env_tools(transport: str) -> None:
    with anyio.fail_after(90):
        async with open_client(transport) as client:
            rule = await call(client, "reward_rule")
            assert rule["ends_on"] == "bye"
            eid = (await call(client, "reset", options={"greeting": "g"}))["episode_id"]
            await call(client, "step", episode_id=eid, action="m")
            assert (await call(client, "history", episode_id=eid))["messages"] == ["g", "m"]


async def test_step_batch(transport: str) -> None:
    with anyio.fail_after(90):
        async with open_client(transport, "echo", "--max-steps", "2") as client:
            ids = [(await call(client, "reset", new_episode=True))["episode_id"] for _ in range(3)]
            out = await call(
                client,
                "step_batch",
                steps=[
                    {"episode_id": ids[0], "action": "aa"},
                    {"episode_id": ids[1], "action": 7},
                    {"episode_id": ids[2], "action": "bye"},
                ],
            )
            first, bad, bye = out["results"]
            assert (first["episode_id"], first["step"], first["observation"]) == (ids[0], 1, "aa")
            assert bad["episode_id"] == ids[1] and bad["error"].startswith("InvalidAction:")
            assert bye["terminated"] and bye["status"] == "ended"
            again = await call(
                client,
                "step_batch",
                steps=[
                    {"episode_id": ids[2], "action": "x"},
                    {"episode_id": ids[0], "action": "b"},
                ],
            )
            ended, second = again["results"]
            assert ended["error"].startswith("ResetNeeded:")
            assert second["step"] == 2 and second["truncated"]
            text = await call_error(
                client,
                "step_batch",
                steps=[
                    {"episode_id": ids[0], "action": "a"},
                    {"episode_id": ids[0], "action": "b"},
                ],
            )
            assert "once per batch" in text
            assert "ArgumentError" in await call_error(client, "step_batch", steps=[])
            # the failed item's episode was not stepped
            assert (await call(client, "state", episode_id=ids[1]))["step"] == 0


@pytest.mark.integration
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_direct_path_answers_like_the_standard_stack(transport: str) -> None:
    """The same calls, with and without the direct path, give the same wire results."""
    from openenv_mcp.client._transports import HttpTransport, StdioTransport
    from tests.servers import CLI, http_server

    def normalise(result: dict) -> dict:
        out = json.loads(json.dumps(result))
        if out.get("structuredContent"):
            out["structuredContent"]["episode_id"] = "ep"
            out["structuredContent"]["summary"] = "the text's"  # it holds the handle too
        for block in out["content"]:
            if block["type"] == "text":
                block["text"] = block["text"].split("episode ")[0]
        return out

    async def session(*flags: str) -> list[dict]:
        if transport == "stdio":
            lean: Any = StdioTransport(
                [*CLI, "serve", "echo", "--stdio", *flags], dict(os.environ), None
            )
            await lean.connect()
            return await calls(lean)
        with http_server("echo", *flags) as url:
            lean = HttpTransport(url)
            await lean.connect()
            return await calls(lean)

    async def calls(lean: Any) -> list[dict]:
        try:
            first = await lean.request("tools/call", {"name": "reset", "arguments": {"seed": 4}})
            eid = first["structuredContent"]["episode_id"]
            results = [first]
            for args in ({"action": "hey"}, {"action": 5}, {"bogus": 1}):
                results.append(
                    await lean.request(
                        "tools/call", {"name": "step", "arguments": {**args, "episode_id": eid}}
                    )
                )
            return [normalise(r) for r in results]
        finally:
            await lean.close()

    with anyio.fail_after(120):
        assert await session() == await session("--no-fast-path")
