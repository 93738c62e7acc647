"""Sharded servers (``--shard``): handles that say where they live, the routing parameter
marked for the ``Mcp-Param-Route`` header, the header checked against the body, and a
handle of another shard answered with ``EpisodeLost``. No Ray here: this is what every
replica does, and what a gateway routing on the header relies on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from fastmcp import Client, FastMCP
from mcp.shared.inbound import find_invalid_x_mcp_header

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.client._session import Session
from openenv_mcp.errors import ArgumentError, EpisodeLost, UnknownEpisode
from openenv_mcp.server import build_server, get_app
from openenv_mcp.server._settings import ServerSettings
from openenv_mcp.server.transports._http import guarded_app
from openenv_mcp.sharding import ROUTE_HEADER, route_shard, shard_of, with_shard
from openenv_mcp.wire.sdk import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    LATEST_VERSION,
    VERSION_META,
)
from tests.servers import http_server

pytestmark = pytest.mark.anyio


@pytest.fixture
async def sharded() -> AsyncIterator[FastMCP]:
    server = build_server("echo", settings=ServerSettings(shard="s1"))
    yield server
    await get_app(server).aclose()


def test_handles_name_their_shard_and_routes_parse() -> None:
    assert with_shard("ep_abc", None) == "ep_abc"
    assert with_shard("ep_abc", "r-7") == "ep_abc@r-7"
    assert shard_of("ep_abc@r-7") == "r-7"
    assert shard_of("ep_abc") is None
    assert shard_of("ep_abc@") is None and shard_of("ep_abc@bad shard") is None
    assert route_shard("ep_abc@r-7") == "r-7"
    assert route_shard("r-7") == "r-7"
    assert route_shard("ep_x@") is None and route_shard("not a shard") is None
    with pytest.raises(ValueError, match="shard"):
        ServerSettings(shard="no spaces")


async def test_only_a_sharded_server_marks_routing_parameters() -> None:
    for shard, routed in ((None, {}), ("s1", None)):
        server = build_server("echo", settings=ServerSettings(shard=shard))
        async with Client(server) as client:
            tools = {t.name: t.inputSchema for t in await client.list_tools()}
        marked = {
            name: [p for p, s in schema["properties"].items() if "x-mcp-header" in s]
            for name, schema in tools.items()
        }
        if routed is not None:  # unsharded: nothing marked, no shard parameter
            assert all(not m for m in marked.values())
            assert all("shard" not in s["properties"] for s in tools.values())
            continue
        # Sharded: each tool's routing parameter, valid for conforming clients (an
        # invalid marking makes them drop the tool).
        assert marked["reset"] == ["shard"] and marked["step_batch"] == ["shard"]
        for name in ("step", "state", "close", "snapshot", "history"):
            assert marked[name] == ["episode_id"], name
        assert marked["release_snapshot"] == ["snapshot_id"]
        assert marked["reward_rule"] == []  # a static tool: any replica answers
        for name, schema in tools.items():
            assert find_invalid_x_mcp_header(schema) is None, name
        assert tools["step"]["properties"]["episode_id"]["type"] == "string"


async def test_another_shards_handles_are_lost_and_routes_are_checked(sharded: FastMCP) -> None:
    async with MCPEnvClient(sharded, frames="raw") as env:
        _, info = await env.reset(seed=1)
        handle = info["episode_id"]
        assert shard_of(handle) == "s1"
        snapshot = await env.snapshot()
        assert shard_of(snapshot) == "s1"
        session = env.session
        # A handle of a shard that is gone: the proxy sent it to a live one.
        elsewhere = handle.replace("@s1", "@s2")
        with pytest.raises(EpisodeLost, match=r"lived on shard 's2', which is gone"):
            await session.call("step", {"episode_id": elsewhere, "action": "hi"})
        with pytest.raises(EpisodeLost):
            await session.call("state", {"episode_id": elsewhere})
        with pytest.raises(EpisodeLost, match="snapshot"):
            await session.call("release_snapshot", {"snapshot_id": snapshot.replace("s1", "s2")})
        # reset and step_batch route on `shard`: asked for a gone shard, EpisodeLost ...
        with pytest.raises(EpisodeLost, match="shard 's2' is gone"):
            await session.call("reset", {"shard": "s2"})
        # ... given none with a foreign handle, a hint (the call was not routed) ...
        with pytest.raises(UnknownEpisode, match="pass shard='s2'") as caught:
            await session.call("reset", {"episode_id": elsewhere})
        assert not isinstance(caught.value, EpisodeLost)
        # ... and one call goes to one shard.
        with pytest.raises(ArgumentError, match="not on shard='s1'"):
            await session.call("reset", {"shard": "s1", "from_snapshot": elsewhere})
        answer = await session.call(
            "step_batch",
            {"shard": "s1", "steps": [{"episode_id": handle, "action": "a"}]},
        )
        assert answer.structured["results"][0]["step"] == 1
        answer = await session.call(
            "step_batch",
            {
                "steps": [
                    {"episode_id": handle, "action": "b"},
                    {"episode_id": elsewhere, "action": "c"},
                ]
            },
        )
        first, second = answer.structured["results"]
        assert first["step"] == 2 and "pass shard='s2'" in second["error"]
        # The client pins forks and restarts to their shard by itself.
        fork = env.spawn()
        await fork.reset(from_snapshot=snapshot)
        assert shard_of(fork.episode_id or "") == "s1"
        await env.reset()
        assert env.episode_id == handle  # restarted in place
    unsharded = build_server("echo")
    async with MCPEnvClient(unsharded) as env:
        await env.reset()
        assert "@" not in (env.episode_id or "")
        with pytest.raises(ArgumentError, match="not sharded"):
            await env.session.call("reset", {"shard": "s1"})


def _call(name: str, arguments: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {
                "name": name,
                "arguments": arguments,
                "_meta": {
                    VERSION_META: LATEST_VERSION,
                    CLIENT_INFO_META: {"name": "probe", "version": "0"},
                    CLIENT_CAPABILITIES_META: {},
                },
            },
        }
    )


async def test_the_route_header_must_mirror_the_body(sharded: FastMCP) -> None:
    app = get_app(sharded)
    asgi = guarded_app(sharded, "127.0.0.1", None, app.direct_calls(sharded, "streamable-http"))
    base = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": LATEST_VERSION,
        "mcp-method": "tools/call",
    }
    async with (
        asgi.router.lifespan_context(asgi),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=asgi), base_url="http://127.0.0.1:8765"
        ) as http,
    ):

        async def post(name: str, arguments: dict[str, Any], route: str | None) -> httpx.Response:
            headers = {**base, "mcp-name": name}
            if route is not None:
                headers[ROUTE_HEADER] = route
            return await http.post("/mcp", content=_call(name, arguments), headers=headers)

        reply = await post("reset", {"shard": "s1", "seed": 3}, "s1")
        assert reply.status_code == 200, reply.text
        handle = reply.json()["result"]["structuredContent"]["episode_id"]
        # The direct path answers a call whose header mirrors its body ...
        ok = await post("step", {"episode_id": handle, "action": "hi"}, handle)
        assert ok.status_code == 200 and ok.json()["result"]["structuredContent"]["step"] == 1
        # ... and the spec's 400 comes for a header that disagrees, is missing, or is extra.
        for arguments, route in (
            ({"episode_id": handle, "action": "x"}, handle.replace("@s1", "@s9")),
            ({"episode_id": handle, "action": "x"}, None),
            ({"action": "x"}, handle),
        ):
            bad = await post("step", arguments, route)
            assert bad.status_code == 400, (arguments, route, bad.text)
            assert "Mcp-Param-Route" in bad.text
        state = await post("state", {"episode_id": handle}, handle)
        assert state.json()["result"]["structuredContent"]["step"] == 1  # nothing else stepped


@pytest.mark.integration
async def test_lean_and_sdk_clients_send_the_route_header_over_http() -> None:
    """A real sharded HTTP server: its standard stack and its direct path both refuse a
    call without the header, so every call here working proves each client sends it."""
    with http_server("echo", "--shard", "pod-0") as url:
        async with Session(url, frames="raw") as session:
            group = [session.episode() for _ in range(3)]
            for seed, episode in enumerate(group):
                await episode.reset(seed=seed)
            assert {shard_of(e.episode_id or "") for e in group} == {"pod-0"}
            for _ in range(3):
                await session.step_batch(group, ["go"] * 3)
            snapshot = await group[0].snapshot()
            fork = session.episode()
            await fork.reset(from_snapshot=snapshot)
            _, _, _, _, info = await fork.step("more")
            assert info["step"] == 4
        async with Client(url) as sdk:  # the MCP SDK's client mirrors x-mcp-header itself
            result = await sdk.call_tool("reset", {"seed": 5})
            handle = result.structured_content["episode_id"]
            result = await sdk.call_tool("step", {"episode_id": handle, "action": "hey"})
            assert result.structured_content["step"] == 1
