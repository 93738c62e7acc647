"""Codex CLI with no episode host running: its first model request lists our tools.

Codex sends its first request to the model a fraction of a second after it spawns the
MCP servers, without waiting for a server that is not ``required``. With
``--episode-host`` and no host running (the first use of the day, or after the host's
idle exit) the host takes seconds to start; the front answers ``initialize`` and
``tools/list`` itself meanwhile, from the host's answers an earlier front kept
(openenv_mcp/server/transports/_host.py). Here the real CLI (tests/harnesses/test_codex.py) runs
the README's server, command and arguments only, with every host stopped before each
run: the first request offers the tools in every cold run, and the game is played.
"""

from __future__ import annotations

import json
import os
import signal
import time
import tomllib
from pathlib import Path

import pytest

from openenv_mcp.server.transports._host import HOST_DIR_ENV
from tests.harnesses.test_codex import (  # noqa: F401 (fixtures)
    SCRIPT,
    Codex,
    assert_played,
    cli,
    codex,
    dev_env,
    example,
    our_variables,
    play,
    server_tools,
)
from tests.servers import episode_hosts

pytestmark = pytest.mark.integration

COLD_RUNS = 3


def stop_hosts(hosts: Path) -> None:
    """Stop every episode host in ``hosts`` and remove its socket: the next front finds
    no host and starts one."""
    for pid in episode_hosts(hosts):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while episode_hosts(hosts):
        assert time.monotonic() < deadline, "an episode host would not stop"
        time.sleep(0.05)
    for sock in hosts.glob("*.sock"):
        sock.unlink()


def test_every_cold_start_offers_the_tools_on_the_first_turn(
    cli: Codex,  # noqa: F811
    dev_env: dict[str, str],  # noqa: F811
) -> None:
    hosts = Path(dev_env[HOST_DIR_ENV])
    ours = tomllib.loads(example())["mcp_servers"]["atari"]
    variables = our_variables(dev_env)
    table = f"[mcp_servers.atari.env]\n{variables}"
    # As the issue had it: command and arguments only; Codex waits a second for it.
    bare = (
        f"[mcp_servers.atari]\ncommand = {json.dumps(ours['command'])}\n"
        f"args = {json.dumps(ours['args'])}\n{table}"
    )
    # The first use ever keeps nothing yet: the example (required) waits for the host.
    assert_played(cli.run(example() + variables, play("atari", SCRIPT)))
    for _ in range(COLD_RUNS):
        stop_hosts(hosts)
        run = cli.run(bare, play("atari", SCRIPT))
        assert {"reset", "fire", "step"} <= set(server_tools(run.bodies[0], "atari")), run
        assert_played(run)
