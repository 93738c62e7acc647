"""The harness run an episode host's connection comes from (server/transports/_harness.py), and what
a call without an episode_id means within one (EpisodeTable.joined): a harness that
starts a server per tool call plays its last reset episode; connections at once make
such calls ambiguous, so they are refused rather than sent to another sample's game.

The front's and the host's wiring (server/transports/_host.py) is played end to end by Inspect AI's
``basic_agent()`` in tests/test_inspect_ai.py; here the parts, in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from openenv_mcp.server import EnvApp, ServerSettings, build_server, get_app
from openenv_mcp.server.episodes._episodes import Caller, Run, current_caller, current_run
from openenv_mcp.server.tools._direct import DirectCalls
from openenv_mcp.server.transports._harness import HARNESS_RUN_ENV, harness_run, hello, read_hello

pytestmark = pytest.mark.anyio


async def lines(*items: bytes) -> AsyncIterator[bytes]:
    for item in items:
        yield item


async def collect(stream: AsyncIterator[bytes]) -> list[bytes]:
    return [line async for line in stream]


# -- the hello --------------------------------------------------------------------------------


async def test_the_hello_names_the_run_and_is_not_served() -> None:
    call = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n'
    run, rest = await read_hello(lines(hello("pid:42:1234"), call))
    assert run == "pid:42:1234" and await collect(rest) == [call]
    run, rest = await read_hello(lines(hello(None), call))  # a front that could not tell
    assert run is None and await collect(rest) == [call]


async def test_a_client_without_a_hello_is_served_all_it_sent() -> None:
    call = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n'
    for first in (call, b"not json\n", b'{"method": "notifications/openenv_mcp/front"}\n'):
        run, rest = await read_hello(lines(first, call))
        assert run is None and await collect(rest) == [first, call]
    run, rest = await read_hello(lines())
    assert run is None and await collect(rest) == []


def test_the_hello_is_a_notification_an_older_host_ignores() -> None:
    message = json.loads(hello("x"))
    assert message["jsonrpc"] == "2.0" and "id" not in message
    assert message["method"].startswith("notifications/")


@pytest.mark.integration
def test_the_run_is_the_process_that_started_the_front() -> None:
    """Its pid and start time: a pid reused by a later process names another run."""
    code = "from openenv_mcp.server.transports._harness import harness_run; print(harness_run())"
    env = {k: v for k, v in os.environ.items() if k != HARNESS_RUN_ENV}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    with open(f"/proc/{os.getpid()}/stat") as stat:
        started = stat.read().rsplit(")", 1)[1].split()[19]
    assert out.stdout.strip() == f"pid:{os.getpid()}:{started}", out.stderr
    named = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, HARNESS_RUN_ENV: "eval-7"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert named.stdout.strip() == "named:eval-7"


def test_this_process_has_a_run() -> None:
    assert (harness_run() or "").startswith(("pid:", "named:"))


# -- calls without an episode_id within a run ----------------------------------------------


@pytest.fixture
async def app() -> AsyncIterator[EnvApp]:
    app = get_app(build_server("echo", settings=ServerSettings(idle_timeout=60)))
    try:
        yield app
    finally:
        await app.aclose()


@dataclass
class Connection:
    """One connection to the host, as its line connection serves it: a caller of its own
    (``current_caller``), within its run (``current_run``, which ``joined`` sets)."""

    direct: DirectCalls
    caller: Caller
    run: Run | None


@contextlib.contextmanager
def connection(app: EnvApp, run: str | None) -> Iterator[Connection]:
    with app.table.joined(run) as joined:
        yield Connection(app.direct_calls(build_server("echo"), "stdio"), Caller(), joined)


async def call(conn: Connection, tool: str, **arguments: Any) -> str:
    """A call on ``conn``'s direct path (each connection's calls run in its own context)."""
    caller, run = current_caller.set(conn.caller), current_run.set(conn.run)
    try:
        reply = await conn.direct.run(1, {"name": tool, "arguments": arguments})
    finally:
        current_run.reset(run)
        current_caller.reset(caller)
    return str(reply["result"]["content"][0]["text"])


async def test_a_server_per_call_plays_the_runs_last_reset_episode(app: EnvApp) -> None:
    with connection(app, "pid:1:1") as direct:
        opened = await call(direct, "reset", seed=0)
    with connection(app, "pid:1:1") as direct:
        assert (await call(direct, "step", action="hi")).startswith("Step 1 (hi)")
    with connection(app, "pid:1:1") as direct:
        assert (await call(direct, "step", action="yo")).startswith("Step 2 (yo)")
        again = await call(direct, "reset", seed=0)  # restarts the run's episode
    assert again.split("(episode ")[1][:20] == opened.split("(episode ")[1][:20]
    with connection(app, "pid:2:1") as direct:  # another harness has none
        told = await call(direct, "step", action="x")
    assert told.startswith("ResetNeeded: no episode yet") and "OPENENV_MCP_HARNESS_RUN" in told
    with connection(app, None) as direct:  # a front that could not tell its run
        told = await call(direct, "step", action="x")
    assert "start a new server for each call" in told and "--episode-host" in told


async def test_connections_at_once_make_calls_without_a_handle_ambiguous(app: EnvApp) -> None:
    with connection(app, "pid:3:1") as held, connection(app, "pid:3:1") as other:
        await call(held, "reset", seed=0)
        # the connection held open keeps its own default...
        assert (await call(held, "step", action="a")).startswith("Step 1 (a)")
        # ...one with none of its own cannot be told whose game it means
        told = await call(other, "step", action="b")
        assert told.startswith("EpisodeRequired:") and "several server processes" in told
        await call(other, "reset", seed=1)  # a new episode: never the held one restarted
        assert (await call(held, "step", action="c")).startswith("Step 2 (c)")
    with connection(app, "pid:3:1") as later:  # the run stays crowded
        told = await call(later, "state")
        assert told.startswith("EpisodeRequired:")


async def test_runs_are_forgotten_once_idle(app: EnvApp) -> None:
    now = [0.0]
    app.table.clock = lambda: now[0]
    with connection(app, "pid:4:1"), connection(app, "pid:4:1"):
        pass
    assert app.table.runs["pid:4:1"].crowded
    now[0] += 61
    with connection(app, "pid:5:1"):
        assert set(app.table.runs) == {"pid:5:1"}
