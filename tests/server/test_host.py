"""Episodes that outlive a stdio process (``serve ENV --stdio --episode-host``): a server
per call, as LangChain's and LlamaIndex's MCP adapters start them, plays one game."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from openenv_mcp.server._host import HOST_DIR_ENV
from tests.servers import CLI, ROOT, episode_host_dir, episode_hosts

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

WAIT = 120
#: The README's harness command, with the episode host (and a short idle time here).
SERVE = ["serve", "atari", "--game", "breakout", "--profile", "agent", "--stdio", "--episode-host"]


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A private directory for this test's hosts; every host started in it is stopped."""
    with episode_host_dir() as path:
        yield path


def front(host_dir: Path, *extra: str) -> StdioTransport:
    """A fresh stdio server process, started by the MCP client the way per-call
    frameworks do (the official SDK's stdio transport, through FastMCP's client)."""
    return StdioTransport(
        command=CLI[0],
        args=[*CLI[1:], *SERVE, *extra],
        env={**os.environ, HOST_DIR_ENV: str(host_dir)},
        cwd=str(ROOT),
        keep_alive=False,
    )


async def call_once(host_dir: Path, tool: str, args: dict[str, Any], *extra: str) -> str:
    """Start a server, call one tool, stop the server: one framework tool call."""
    async with Client(front(host_dir, *extra), timeout=WAIT) as client:
        result = await client.call_tool(tool, args, raise_on_error=False)
        return str(result.content[0].text)  # type: ignore[union-attr]


def handle(text: str) -> str:
    found = re.search(r"episode (ep_[A-Za-z0-9_-]+)", text)
    assert found, text
    return found.group(1)


async def test_a_server_per_call_plays_one_game(host_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        opened = await call_once(host_dir, "reset", {"seed": 0})
        episode = handle(opened)
        assert opened.startswith("New episode of Atari Breakout")
        first = await call_once(host_dir, "step", {"action": "FIRE", "episode_id": episode})
        second = await call_once(host_dir, "right", {"repeat": 3, "episode_id": episode})
        assert first.startswith("Step 1 (FIRE)") and second.startswith("Step 4 (RIGHT x3)")
        looked = await call_once(host_dir, "state", {"episode_id": episode})
        assert looked.startswith(f"Episode {episode} of Atari Breakout at step 4")
    assert len(episode_hosts(host_dir)) == 1  # one host served all four processes


async def test_sessions_never_see_each_others_episodes(host_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        async with (
            Client(front(host_dir), timeout=WAIT) as first,
            Client(front(host_dir), timeout=WAIT) as second,
        ):
            mine = handle((await first.call_tool("reset", {"seed": 1})).content[0].text)  # type: ignore[union-attr]
            await second.call_tool("reset", {"seed": 2})
            for _ in range(2):  # each session's calls without a handle mean its own episode
                await second.call_tool("fire", {})
            step = (await first.call_tool("step", {"action": "NOOP"})).content[0].text  # type: ignore[union-attr]
            assert step.startswith("Step 1 (NOOP)")
        alone = await call_once(host_dir, "step", {"action": "NOOP"})
        assert alone.startswith("ResetNeeded: no episode yet")
        again = await call_once(host_dir, "step", {"action": "NOOP", "episode_id": mine})
        assert again.startswith("Step 2 (NOOP)")  # the handle, given, still works


async def test_the_host_is_private_and_leaves_when_idle(host_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        await call_once(host_dir, "reset", {}, "--episode-host-idle", "1")
        (sock,) = host_dir.glob("*.sock")
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600
        assert stat.S_IMODE(host_dir.stat().st_mode) == 0o700
        while episode_hosts(host_dir):  # no caller for a second: the host exits
            await anyio.sleep(0.1)
        assert not list(host_dir.glob("*.sock"))


def test_a_directory_others_may_enter_is_refused_and_a_bad_start_is_quoted(
    host_dir: Path,
) -> None:
    env = {**os.environ, HOST_DIR_ENV: str(host_dir)}
    host_dir.chmod(0o755)
    done = subprocess.run(
        [*CLI, *SERVE], input=b"", capture_output=True, env=env, cwd=ROOT, timeout=WAIT
    )
    assert done.returncode == 1 and b"chmod 700" in done.stderr, done.stderr
    host_dir.chmod(0o700)
    done = subprocess.run(
        [*CLI, *SERVE, "--gmae", "pong"],
        input=b"",
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=WAIT,
    )
    assert done.returncode == 1 and b"the host exited at start" in done.stderr
    assert b"--game" in done.stderr  # the host's own "did you mean"
    started = time.monotonic()
    while episode_hosts(host_dir) and time.monotonic() - started < 10:
        time.sleep(0.1)
