"""The sync face: in a plain script (no loop) and inside a running event loop."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import anyio
import pytest

from openenv_mcp.client import MCPEnvClient, SyncEnvClient
from openenv_mcp.errors import InvalidAction, ResetNeeded, ServerDied
from tests.servers import ROOT, child_pids, memory_server, stdio_command


def play(env: SyncEnvClient) -> list[int]:
    """A short seeded episode; its nonces."""
    _, info = env.reset(seed=9, options={"greeting": "hi"})
    nonces = [info["nonce"]]
    for word in ("a", "bb"):
        obs, reward, _, _, info = env.step(word)
        assert obs == word and reward == pytest.approx(0.1 * len(word))
        nonces.append(info["nonce"])
    return nonces


def test_sync_in_plain_code() -> None:
    with MCPEnvClient(memory_server("echo")).sync() as env:
        assert env.env_name == "echo" and env.connected
        first = play(env)
        assert play(env) == first
        with pytest.raises(InvalidAction):
            env.step(1)
        assert env.call("history")["messages"] == ["hi", "a", "bb"]
        other = env.spawn()
        snapshot = env.snapshot()
        assert other.reset(from_snapshot=snapshot)[0] == "bb"
        other.close()
        env.release_snapshot(snapshot)
        assert env.state()[1]["step"] == 2
    assert not env.connected
    with pytest.raises(ResetNeeded):
        env.step("closed")


@pytest.mark.anyio
async def test_sync_inside_a_running_event_loop() -> None:
    # What a Jupyter cell or an async trainer does: blocking calls on the loop's thread.
    asyncio.get_running_loop()
    with anyio.fail_after(90):
        env = MCPEnvClient(memory_server("echo")).sync()
        try:
            assert play(env) == play(env)
            gym_env = MCPEnvClient(memory_server("echo")).as_gym()
            try:
                assert gym_env.reset(seed=1)[0] == ""
                assert gym_env.step("x")[0] == "x"
            finally:
                gym_env.close()
        finally:
            env.close()


@pytest.mark.anyio
async def test_sync_needs_an_unconnected_client() -> None:
    async with MCPEnvClient(memory_server("echo")) as env:
        with pytest.raises(RuntimeError, match="not connected yet"):
            env.sync()


@pytest.mark.integration
def test_sync_script_with_a_stdio_server() -> None:
    # A real script, run as users run one: no event loop anywhere in it.
    script = textwrap.dedent(
        f"""
        from openenv_mcp.client import MCPEnvClient
        with MCPEnvClient({stdio_command("echo", "--max-steps", "2")!r}).sync() as env:
            env.reset(seed=0)
            env.step("a")
            print(env.step("b")[3])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"  # truncated at max_steps


@pytest.mark.integration
def test_sync_server_death_is_an_error_not_a_hang() -> None:
    before = child_pids()
    env = MCPEnvClient(stdio_command("echo"), timeout=10).sync()
    try:
        (server,) = child_pids() - before
        env.reset()
        os.kill(server, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(ServerDied, match="lost"):
            env.step("x")
        assert time.monotonic() - started < 5
    finally:
        env.close()
    assert server not in child_pids()
