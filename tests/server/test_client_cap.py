"""One client cannot take every episode slot (issue 25, item 4: the per-client cap).

A client is the address the HTTP guard sees (``current_client``); over stdio and
in memory there is one client, and the cap does not apply. The table's rule is
tested in memory, with the client set as the guard sets it; the transports with
real servers: two loopback addresses over HTTP, one stdio client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastmcp import Client

from openenv_mcp.errors import ServerFull
from openenv_mcp.server import EnvApp, ServerSettings, build_server, get_app
from openenv_mcp.server._episodes import current_client
from tests.server.http_attacks import call, limited_server
from tests.servers import stdio_transport

pytestmark = pytest.mark.anyio


@pytest.fixture
async def app() -> AsyncIterator[EnvApp]:
    settings = ServerSettings(max_episodes=10, max_episodes_per_client=2, idle_timeout=60)
    app = get_app(build_server("echo", settings=settings))
    try:
        yield app
    finally:
        await app.aclose()


def as_client(address: str | None) -> None:
    current_client.set(address)  # this test's own task: the guard sets it per request


async def test_each_client_holds_at_most_its_cap(app: EnvApp) -> None:
    as_client("10.0.0.1")
    first = [await app.table.create() for _ in range(2)]
    with pytest.raises(ServerFull) as refused:
        await app.table.create()
    message = str(refused.value)
    assert "address 10.0.0.1" in message and "max_episodes_per_client=2" in message
    assert "close" in message and "--max-episodes-per-client" in message
    as_client("10.0.0.2")  # another client is not held back by the first
    await app.table.create()
    as_client("10.0.0.1")  # closing one makes room again
    await app.table.close(first[0].id)
    await app.table.create()
    as_client(None)  # stdio / memory: one client, bounded by max_episodes only
    for _ in range(5):
        await app.table.create()
    assert len(app.table.episodes) == 8


async def test_a_client_at_its_cap_loses_its_own_idle_episodes_first(app: EnvApp) -> None:
    now = [0.0]
    app.table.clock = lambda: now[0]
    as_client("10.0.0.2")
    other = await app.table.create()
    as_client("10.0.0.1")
    mine = [await app.table.create() for _ in range(2)]
    now[0] = 61.0  # all three idle past idle_timeout
    await app.table.create()
    assert other.id in app.table.episodes  # another client's idle episode stays
    assert sum(e.id in app.table.episodes for e in mine) == 0


async def test_the_default_cap_is_a_quarter_of_max_episodes() -> None:
    app = get_app(build_server("echo", settings=ServerSettings(max_episodes=1024)))
    try:
        assert app.table.client_cap == 256
    finally:
        await app.aclose()


@pytest.mark.integration
def test_over_http_a_client_is_an_address(tmp_path: Path) -> None:
    options = ("--max-episodes-per-client", "2")
    with limited_server(tmp_path / "log", *options) as server:
        for _ in range(2):
            assert call(server.port, "reset", {"new_episode": True})["isError"] is False
        refused = call(server.port, "reset", {"new_episode": True})
        assert refused["isError"] is True
        assert "max_episodes_per_client=2" in refused["content"][0]["text"]
        # Another address (loopback is a whole /8) is another client.
        other = call(server.port, "reset", {"new_episode": True}, source="127.0.0.2")
        assert other["isError"] is False


@pytest.mark.integration
async def test_over_stdio_the_one_client_is_not_capped() -> None:
    async with Client(stdio_transport("echo", "--max-episodes-per-client", "1")) as client:
        for _ in range(3):
            result = await client.call_tool("reset", {"new_episode": True})
            assert result.is_error is False
