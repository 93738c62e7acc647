"""A server that dies, hangs or never starts gives ServerDied within the timeout, never a hang."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import ServerDied
from tests.servers import ROOT, child_pids, free_port, serve_args, stdio_command, stop

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

WAIT = 90


def start_http(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        serve_args("echo", "--http", "--port", str(port), "--log-level", "WARNING"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, "the HTTP server exited at start"
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc
        except OSError:
            assert time.monotonic() < deadline, "the HTTP server did not listen"
            time.sleep(0.05)


async def test_stdio_server_killed_mid_episode() -> None:
    before = child_pids()
    with anyio.fail_after(WAIT):
        async with MCPEnvClient(stdio_command("echo"), timeout=30) as env:
            (server,) = child_pids() - before
            await env.reset()
            await env.step("alive")
            os.kill(server, signal.SIGKILL)
            started = time.monotonic()
            with pytest.raises(ServerDied, match=r"lost .*serve echo.* during step"):
                await env.step("dead?")
            assert time.monotonic() - started < 5  # noticed at once, not after the timeout
            # and it stays dead, at once, for every later call
            with pytest.raises(ServerDied):
                await env.state()
    assert server not in child_pids()  # reaped


async def test_http_server_killed_mid_episode() -> None:
    proc = start_http(port := free_port())
    try:
        with anyio.fail_after(WAIT):
            async with MCPEnvClient(f"http://127.0.0.1:{port}/mcp", timeout=30) as env:
                await env.reset()
                await env.step("alive")
                proc.kill()
                proc.wait(10)
                started = time.monotonic()
                with pytest.raises(ServerDied, match=r"127\.0\.0\.1"):
                    await env.step("dead?")
                assert time.monotonic() - started < 5
    finally:
        stop(proc)


async def test_hung_server_times_out() -> None:
    before = child_pids()
    with anyio.fail_after(WAIT):
        env = MCPEnvClient(stdio_command("echo"), timeout=2)
        await env.connect()
        (server,) = child_pids() - before
        try:
            await env.reset()
            os.kill(server, signal.SIGSTOP)
            started = time.monotonic()
            with pytest.raises(ServerDied, match="did not answer step within 2s"):
                await env.step("hello?")
            assert 1.5 < time.monotonic() - started < 10
        finally:
            os.kill(server, signal.SIGCONT)
            await env.close()  # bounded even after the hang
    assert server not in child_pids()


async def test_a_server_that_cannot_start_says_why() -> None:
    with anyio.fail_after(WAIT):
        with pytest.raises(ServerDied) as caught:
            await MCPEnvClient(stdio_command("no-such-env")).connect()
        # the server's own stderr is quoted
        assert "no-such-env" in str(caught.value) and "server stderr" in str(caught.value)


@pytest.mark.parametrize("as_type", [str, Path])
async def test_server_log_takes_a_path_and_is_quoted_when_the_server_dies(
    tmp_path: Path, as_type: type
) -> None:
    log = tmp_path / "server.log"
    log.write_text("earlier run\n")
    with anyio.fail_after(WAIT):
        with pytest.raises(ServerDied) as caught:
            await MCPEnvClient(stdio_command("no-such-env"), server_log=as_type(log)).connect()
    assert log.read_text().startswith("earlier run\n")  # appended to
    assert "no-such-env" in log.read_text()
    assert "no-such-env" in str(caught.value) and "server stderr" in str(caught.value)


async def test_nothing_listening_is_a_clear_error() -> None:
    with anyio.fail_after(WAIT), pytest.raises(ServerDied, match="could not connect"):
        await MCPEnvClient(f"http://127.0.0.1:{free_port()}/mcp", connect_timeout=20).connect()


async def test_a_server_slow_to_start_hits_the_connect_timeout() -> None:
    before = child_pids()
    never = [sys.executable, "-c", "import time; time.sleep(60)"]
    with anyio.fail_after(WAIT), pytest.raises(ServerDied, match="within 1s"):
        await MCPEnvClient(never, connect_timeout=1).connect()
    assert child_pids() <= before  # the would-be server was stopped and reaped
