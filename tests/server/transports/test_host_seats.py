"""Two agent harnesses at one game over stdio: each starts its own stdio server (as
Claude Code and Codex do), and the episode host behind both holds the game, so one
resets, the other joins, and they play each other, each reading only its own seat."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from openenv_mcp.server.transports._host import HOST_DIR_ENV
from tests.servers import CLI, ROOT, episode_host_dir, episode_hosts

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

WAIT = 120
#: What each harness's config runs: the agent profile, every player a seat, the host.
SERVE = [
    "serve", "openspiel", "--game", "tic_tac_toe", "--seats", "all",
    "--profile", "agent", "--stdio", "--episode-host",
]  # fmt: skip
LEGAL = re.compile(r"Your legal actions: (\d+)=")


@pytest.fixture
def host_dir() -> Iterator[Path]:
    with episode_host_dir() as path:
        yield path


def harness(host_dir: Path) -> StdioTransport:
    """A harness's own stdio server process."""
    return StdioTransport(
        command=CLI[0],
        args=[*CLI[1:], *SERVE],
        env={**os.environ, HOST_DIR_ENV: str(host_dir)},
        cwd=str(ROOT),
        keep_alive=False,
    )


async def play(client: Client, first: str, said: list[str]) -> str:
    """Play the first legal action each turn, naming no seat (the connection's own: its
    reset's or join's), until the game ends; what the seat read last."""
    text = first
    while "Episode over" not in text:
        found = LEGAL.search(text)
        if found is None:  # not its turn yet: look, waiting for it
            result = await client.call_tool("state", {"wait": True}, raise_on_error=False)
        else:
            result = await client.call_tool("step", {"action": int(found[1])})
        text = str(result.content[0].text)  # type: ignore[union-attr]
        said.append(text)
    return text


async def test_two_harnesses_over_stdio_play_one_game_through_the_episode_host(
    host_dir: Path,
) -> None:
    said: dict[str, list[str]] = {"a": [], "b": []}
    ends: dict[str, str] = {}
    with anyio.fail_after(WAIT):
        async with (
            Client(harness(host_dir), timeout=WAIT) as a,
            Client(harness(host_dir), timeout=WAIT) as b,
        ):
            opened = str((await a.call_tool("reset", {"seed": 3})).content[0].text)  # type: ignore[union-attr]
            joined = str((await b.call_tool("join", {})).content[0].text)  # type: ignore[union-attr]
            assert "You hold seat player_0" in opened and "Open seats (player_1)" in opened
            assert "You hold seat player_1" in joined and "(player_0 to move)" in joined

            async def run(name: str, client: Client, first: str) -> None:
                ends[name] = await play(client, first, said[name])

            async with anyio.create_task_group() as group:
                group.start_soon(run, "a", a, opened)
                group.start_soon(run, "b", b, joined)
    assert len(episode_hosts(host_dir)) == 1  # both harnesses' servers relayed to one host
    returns = [float(re.search(r"return (-?[\d.]+)", ends[n])[1]) for n in "ab"]  # type: ignore[index]
    assert sum(returns) == 0 and sorted(returns) in ([-1.0, 1.0], [0.0, 0.0]), ends
    # Each read the other's moves, never as its own: player_0's text names player_1's.
    assert any("player_1 played o(" in t for t in said["a"])
    assert any("player_0 played x(" in t for t in said["b"])
    assert not any("player_0 played" in t for t in said["a"])
