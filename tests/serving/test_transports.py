"""``serve ENV --transport stdio|http|ray`` as a stranger meets it: what each transport
takes, what it refuses (naming what was expected and what came), the older spellings
(``--stdio``, ``--http``, ``--ray``) and ``--agent``; then real servers started through
the installed ``openenv-mcp`` script, answering a real MCP client."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from typer.testing import CliRunner

from openenv_mcp._launch import relays, serves_stdio
from openenv_mcp.cli import app
from openenv_mcp.server.transports._host import HOST_DIR_ENV
from openenv_mcp.transports import TRANSPORTS, host_argv, served_transport
from tests.servers import (
    CLI,
    INITIALIZE,
    ROOT,
    RawStdio,
    call,
    episode_host_dir,
    episode_hosts,
    free_port,
    request,
    stop,
)

runner = CliRunner()
#: The console script pip installed beside this interpreter: what a harness runs.
SCRIPT = str(Path(CLI[0]).with_name("openenv-mcp"))
WAIT = 120


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--transport", "bogus"], "'bogus' is not one of 'stdio', 'http', 'ray'"),
        (
            ["--transport", "http", "--web-port", "3"],
            "--web-port needs --transport stdio (it serves the page beside a stdio server; "
            "over HTTP use --web), got --transport http",
        ),
        (["--web"], "--web needs --transport http (it serves the page beside /mcp over HTTP"),
        (["--transport=ray", "--web"], "--web needs --transport http"),
        (["--transport=ray", "--openenv"], "--openenv needs --transport http"),
        (["--transport", "http", "--episode-host"], "--episode-host needs --transport stdio"),
        (["--transport", "http", "--replicas", "3"], "--replicas needs --transport ray"),
        (
            ["--stdio", "--transport", "http"],
            "choose one transport: --transport http and --stdio were given; expected one of "
            "--transport stdio|http|ray",
        ),
        (["--http", "--ray"], "choose one transport: --http and --ray were given"),
        (["--agent", "--profile", "full"], "--agent means --profile agent, but --profile full"),
    ],
)
def test_a_refusal_names_what_was_expected_and_what_came(args: list[str], says: str) -> None:
    result = runner.invoke(app, ["serve", "echo", *args])
    assert result.exit_code == 2, result.output
    assert says in " ".join(result.output.replace("│", " ").split()), result.output


def test_a_transport_named_twice_the_same_way_is_no_conflict() -> None:
    result = runner.invoke(app, ["serve", "echo", "--stdio", "--transport", "stdio", "--web"])
    assert "--web needs --transport http" in result.output  # got past the choice


def test_the_launcher_reads_the_choice_from_the_transports_table() -> None:
    assert served_transport([]) == "stdio"
    assert served_transport(["echo", "--transport", "http"]) == "http"
    assert served_transport(["echo", "--transport=ray"]) == "ray"
    assert served_transport(["echo", "--http"]) == "http"
    assert served_transport(["echo", "--stdio", "--transport", "stdio"]) == "stdio"
    assert served_transport(["echo", "--stdio", "--transport", "http"]) is None
    assert served_transport(["echo", "--transport", "bogus"]) is None
    assert served_transport(["echo", "--transport"]) is None
    assert serves_stdio(["serve", "echo", "--transport", "stdio"])
    assert not serves_stdio(["serve", "echo", "--transport", "http"])
    assert not serves_stdio(["serve", "echo", "--transport=ray"])
    assert not serves_stdio(["serve", "echo", "--stdio", "--transport", "http"])
    assert relays(["serve", "echo", "--transport", "stdio", "--agent"])
    assert not relays(["serve", "echo", "--transport", "http", "--agent"])
    # the front's own flags never reach the host, so every spelling shares one host
    assert (
        host_argv(["serve", "atari", "--transport", "stdio", "--agent", "--game", "pong"])
        == host_argv(["serve", "atari", "--agent", "--transport=stdio", "--game", "pong"])
        == host_argv(["serve", "atari", "--stdio", "--profile", "agent", "--game", "pong"])
        == ["atari", "--profile", "agent", "--game", "pong"]
    )


def test_help_shows_a_panel_per_transport_and_the_agent_line() -> None:
    result = runner.invoke(app, ["serve", "--help"], terminal_width=100)
    assert result.exit_code == 0
    shown = " ".join(result.output.replace("│", " ").split())
    for name in ("stdio", "http", "ray"):
        assert TRANSPORTS[name].panel in shown
    assert "--profile agent and, over stdio, --episode-host" in shown


@pytest.fixture
def host_dir() -> Iterator[Path]:
    with episode_host_dir() as path:
        yield path


def script_stdio(host_dir: Path, *args: str) -> tuple[set[str], str]:
    """Start ``openenv-mcp serve echo ARGS`` as a harness does; answer initialize, list the
    tools, reset; then end it (stdin closed): its tool names and the reset's text."""
    server = RawStdio(
        [SCRIPT, "serve", "echo", *args], env={**os.environ, HOST_DIR_ENV: str(host_dir)}
    )
    try:
        server.send(INITIALIZE)
        initialized = server.receive(WAIT)
        assert initialized is not None, server.stderr()
        assert initialized["result"]["serverInfo"]["name"] == "openenv-echo"
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        server.send(request("tools/list", request_id="list"))
        server.send(call("reset", "reset", {"seed": 0}))
        by_id = {m["id"]: m for m in server.until(lambda seen: len(seen) == 2)}
        server.proc.stdin.close()  # type: ignore[union-attr]
        assert server.proc.wait(WAIT) == 0
    finally:
        stop(server.proc)  # type: ignore[arg-type]
    tools = {t["name"] for t in by_id["list"]["result"]["tools"]}
    return tools, by_id["reset"]["result"]["content"][0]["text"]


async def tools_and_reset(client: Client) -> tuple[set[str], str]:  # type: ignore[type-arg]
    tools = {t.name for t in await client.list_tools()}
    reset = await client.call_tool("reset", {"seed": 0})
    return tools, reset.content[0].text  # type: ignore[union-attr]


@pytest.mark.integration
@pytest.mark.parametrize("args", [["--transport", "stdio"], ["--stdio"], []])
def test_stdio_through_the_installed_script(host_dir: Path, args: list[str]) -> None:
    tools, text = script_stdio(host_dir, *args)
    assert "step_batch" in tools and text.startswith("New episode")
    assert not episode_hosts(host_dir)


@pytest.mark.integration
def test_agent_through_the_installed_script_uses_the_episode_host(host_dir: Path) -> None:
    tools, text = script_stdio(host_dir, "--agent")
    assert "step_batch" not in tools and text.startswith("New episode")  # the agent profile
    assert len(episode_hosts(host_dir)) == 1


@pytest.mark.integration
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "agent"),
    [
        (["--transport", "http"], False),
        (["--http"], False),
        (["--transport=http", "--agent"], True),
    ],
)
async def test_http_through_the_installed_script(
    host_dir: Path, args: list[str], agent: bool
) -> None:
    """Over HTTP ``--agent`` is the agent profile alone: no episode host starts."""
    port = free_port()
    proc = subprocess.Popen(
        [SCRIPT, "serve", "echo", *args, "--port", str(port), "--log-level", "WARNING"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        env={**os.environ, HOST_DIR_ENV: str(host_dir)},
        cwd=ROOT,
    )
    try:
        with anyio.fail_after(WAIT):
            while True:
                try:
                    async with Client(f"http://127.0.0.1:{port}/mcp", timeout=WAIT) as client:
                        tools, text = await tools_and_reset(client)
                    break
                except Exception:
                    assert proc.poll() is None, "the server exited"
                    await anyio.sleep(0.1)
    finally:
        stop(proc)
    assert ("step_batch" not in tools) == agent and text.startswith("New episode")
    assert not episode_hosts(host_dir)


@pytest.mark.integration
@pytest.mark.parametrize(
    "args", [["--agent"], ["--transport", "stdio", "--profile", "agent", "--episode-host"]]
)
def test_an_agent_front_relays_without_the_cli(host_dir: Path, args: list[str]) -> None:
    """The thin front decides from the transports table alone: neither the CLI nor
    typer, click, pydantic or FastMCP load in it."""
    done = subprocess.run(
        [CLI[0], "-X", "importtime", *CLI[1:], "serve", "echo", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, HOST_DIR_ENV: str(host_dir)},
        cwd=ROOT,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "openenv_mcp.transports" in loaded
    assert not loaded & {"openenv_mcp.cli", "typer", "click", "pydantic", "fastmcp"}
