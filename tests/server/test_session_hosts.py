"""The test session's episode hosts are its own: ``tests/conftest.py`` points
``OPENENV_MCP_HOST_DIR`` at a private directory for the whole run, so a host a test starts
without a directory of its own lands there (never in the user's real one, where their own
hosts live), and the session stops every host there when it ends."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from openenv_mcp.server.transports._host import HOST_DIR_ENV, host_dir, host_socket
from tests.conftest import stop_hosts
from tests.servers import CLI, ROOT, episode_hosts

WAIT = 120


def users_own_dir() -> Path:
    """Where hosts go without ``OPENENV_MCP_HOST_DIR`` (as ``host_dir`` picks it; made
    nothing here)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime, "openenv-mcp") if runtime else Path("/tmp", f"openenv-mcp-{os.getuid()}")


def test_the_session_has_a_private_host_directory() -> None:
    configured = os.environ.get(HOST_DIR_ENV)
    assert configured, "tests/conftest.py sets it for the whole session"
    assert host_dir() == Path(configured) != users_own_dir()
    info = Path(configured).stat()
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
    assert len(os.fsencode(host_socket(["echo"]))) <= 107  # host_socket checks the length


@pytest.mark.integration
@pytest.mark.anyio
async def test_a_host_started_without_a_directory_of_its_own_is_the_sessions() -> None:
    session = Path(os.environ[HOST_DIR_ENV])
    options = ["--max-steps", "7", "--episode-host-idle", "60"]  # a host of this test's own
    socket = host_socket(["echo", *options])
    assert socket.parent == session
    front = StdioTransport(
        command=CLI[0],
        args=[*CLI[1:], "serve", "echo", "--stdio", "--episode-host", *options],
        env=dict(os.environ),  # what any test's server inherits: nothing said of hosts
        cwd=str(ROOT),
        keep_alive=False,
    )
    try:
        with anyio.fail_after(WAIT):
            async with Client(front, timeout=WAIT) as client:
                reset = await client.call_tool("reset", {"seed": 0})
        assert not reset.is_error
        assert socket.exists() and not (users_own_dir() / socket.name).exists()
        assert len(episode_hosts(socket)) == 1  # its host, serving in the session's directory
    finally:
        stop_hosts(socket)
    assert episode_hosts(socket) == []
