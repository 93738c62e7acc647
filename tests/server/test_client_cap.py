"""One client cannot take every episode slot (issue 25, item 4: the per-client cap), by
any route (issue 32: OpenEnv's socket and HTTP routes too), nor every snapshot.

A client is the address the HTTP guard sees (``current_client``); over stdio and
in memory there is one client, and the cap does not apply. The table's rule is
tested in memory, with the client set as the guard sets it; the transports with
real servers: two loopback addresses over HTTP, one stdio client.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

from openenv_mcp.errors import ServerFull
from openenv_mcp.server import EnvApp, ServerSettings, build_server, get_app
from openenv_mcp.server.episodes._episodes import current_client
from tests.server.http_attacks import TOKEN, call, limited_server
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


# -- every route that makes an episode counts against the same cap (issue 32, item 1) --------

#: OpenEnv's routes beside /mcp, with a cap of 4 of 16 episodes per client.
CAPPED = ("--openenv", "--max-episodes", "16", "--max-episodes-per-client", "4")


@contextlib.contextmanager
def socket_from(port: int, source: str) -> Iterator[ClientConnection]:
    """An OpenEnv WebSocket session (``/openenv/ws``) from loopback address ``source``."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with ws_connect(
        f"ws://127.0.0.1:{port}/openenv/ws", sock=sock, additional_headers=auth, open_timeout=30
    ) as ws:
        yield ws


def socket_reset(ws: ClientConnection) -> dict[str, Any]:
    ws.send(json.dumps({"type": "reset", "data": {}}))
    answer: dict[str, Any] = json.loads(ws.recv(timeout=30))
    return answer


def openenv_post(port: int, path: str, body: Any, source: str = "127.0.0.1") -> tuple[int, Any]:
    """A POST to OpenEnv's HTTP routes from ``source``: the status and the JSON answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    headers = {"content-type": "application/json", "authorization": f"Bearer {TOKEN}"}
    try:
        conn.request("POST", path, json.dumps(body), headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


@pytest.mark.integration
def test_openenv_sockets_count_against_the_client_cap(tmp_path: Path) -> None:
    # Before: the guard named no client for a socket, so one address held 12 of 16.
    with limited_server(tmp_path / "log", *CAPPED) as server, contextlib.ExitStack() as held:
        for _ in range(4):
            ws = held.enter_context(socket_from(server.port, "127.0.0.1"))
            assert socket_reset(ws)["type"] == "observation"
        fifth = held.enter_context(socket_from(server.port, "127.0.0.1"))
        refused = socket_reset(fifth)
        assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"
        assert "address 127.0.0.1" in refused["data"]["message"]
        assert "max_episodes_per_client=4" in refused["data"]["message"]
        # The same cap over /mcp and /openenv's HTTP routes: this client holds its four.
        assert call(server.port, "reset", {"new_episode": True})["isError"] is True
        assert openenv_post(server.port, "/openenv/reset", {})[0] == 503
        # Another address is another client, on every route.
        other = held.enter_context(socket_from(server.port, "127.0.0.2"))
        assert socket_reset(other)["type"] == "observation"
        assert (
            call(server.port, "reset", {"new_episode": True}, source="127.0.0.2")["isError"]
            is False
        )
        assert openenv_post(server.port, "/openenv/reset", {}, source="127.0.0.2")[0] == 200


@pytest.mark.integration
def test_openenv_http_episodes_make_room_for_their_clients_next(tmp_path: Path) -> None:
    # Before: OpenEnv's HTTP clients never close, and an address was locked out at its cap.
    with limited_server(tmp_path / "log", *CAPPED) as server:
        made = []
        for _ in range(4 * 3):  # three times the cap, never closing one
            status, answer = openenv_post(server.port, "/openenv/reset", {})
            assert status == 200, answer
            made.append(answer["observation"]["episode_id"])
        step = {"action": {"action": "hi"}}
        for gone in made[:-4]:  # the least recently used made room
            status, answer = openenv_post(
                server.port, "/openenv/step", {**step, "episode_id": gone}
            )
            assert status == 404 and answer["code"] == "UnknownEpisode"
        for live in made[-4:]:
            status, answer = openenv_post(
                server.port, "/openenv/step", {**step, "episode_id": live}
            )
            assert status == 200, answer
        # An episode this client holds over /mcp is never taken to make room.
        for episode in made[-4:]:
            openenv_post(server.port, "/openenv/step", {**step, "episode_id": episode})
        mcp = call(server.port, "reset", {"new_episode": True})
        assert mcp["isError"] is False
        mcp_id = mcp["structuredContent"]["episode_id"]
        for _ in range(8):
            assert openenv_post(server.port, "/openenv/reset", {})[0] == 200
        assert call(server.port, "state", {"episode_id": mcp_id})["isError"] is False


@pytest.mark.integration
def test_the_snapshot_budget_is_shared_per_client(tmp_path: Path) -> None:
    # A client's share of max_snapshots is its cap's share of max_episodes: 8 * 4/16 = 2.
    with limited_server(tmp_path / "log", *CAPPED, "--max-snapshots", "8") as server:
        episode = call(server.port, "reset", {"new_episode": True})["structuredContent"]
        for _ in range(2):
            taken = call(server.port, "snapshot", {"episode_id": episode["episode_id"]})
            assert taken["isError"] is False, taken
        refused = call(server.port, "snapshot", {"episode_id": episode["episode_id"]})
        text = refused["content"][0]["text"]
        assert refused["isError"] is True and "address 127.0.0.1" in text
        assert "share of max_snapshots (2)" in text
        # Another client still has its own share.
        other = call(server.port, "reset", {"new_episode": True}, source="127.0.0.3")
        other_id = other["structuredContent"]["episode_id"]
        taken = call(server.port, "snapshot", {"episode_id": other_id}, source="127.0.0.3")
        assert taken["isError"] is False, taken
