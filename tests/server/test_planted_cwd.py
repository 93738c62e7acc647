"""No process openenv-mcp starts imports from the directory it runs in.

A harness starts its MCP server in the project it opened, and anything that directory
holds is the project's, not ours: ``python -m`` would put it first on ``sys.path`` (and
``python -c`` its empty entry), so an ``anyio.py`` or ``json.py`` there would run in the
child before a line of ours. Each child here (the episode host, a worker process, the
server the client starts for ``openenv-mcp serve ...``, ``collect``'s servers and the
configs it writes for harnesses, ``check``'s server, the coding sandbox's boot program)
runs for real, from a directory holding such modules, each of which writes a marker file
when imported (then stands aside for the real module, so a child that did import it still
works and the marker alone tells): the child works and the marker never appears.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from openenv_mcp._util.interpreter import python_command
from openenv_mcp.server.transports._host import HOST_DIR_ENV
from tests.servers import ensure_installed, episode_host_dir, episode_hosts

WAIT = 120
#: Modules the children import early (anyio: every server; json: the sandbox's boot).
PLANTED_MODULES = ("anyio", "json")
MARKER = "planted-module-ran"
#: A module that notes it ran, then puts the real one in its place.
PLANTED = f"""
import importlib, os, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, {MARKER!r}), "a") as marker:
    marker.write(__name__ + " ran in pid " + str(os.getpid()) + ": " + repr(sys.argv) + "\\n")
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
del sys.modules[__name__]
sys.modules[__name__] = importlib.import_module(__name__)
"""


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A project directory holding modules that would run if a child imported from it."""
    project = tmp_path / "project"
    project.mkdir()
    for name in PLANTED_MODULES:
        (project / f"{name}.py").write_text(PLANTED)
    return project


def ran(directory: Path) -> str:
    """What the planted modules wrote when they ran ("" when none did)."""
    marker = directory / MARKER
    return marker.read_text() if marker.exists() else ""


def openenv_mcp() -> list[str]:
    """The ``openenv-mcp`` command a harness runs (this venv's console script); a process
    that imports nothing from its working directory itself, so what is tested is its
    children."""
    script = Path(sys.executable).with_name("openenv-mcp")
    return [str(script)] if script.exists() else python_command("-m", "openenv_mcp")


def stdio(
    planted: Path, *args: str, env: dict[str, str] | None = None, **options: Any
) -> StdioTransport:
    """``openenv-mcp ARGS`` started in ``planted`` by an MCP client, with this process's
    environment (the SDK's default would pass only a few variables)."""
    command = openenv_mcp()
    return StdioTransport(
        command=command[0],
        args=[*command[1:], *args],
        env=dict(os.environ) if env is None else env,
        cwd=str(planted),
        keep_alive=False,
        **options,
    )


def text(result: Any) -> str:
    return str(result.content[0].text)


# -- the helper ---------------------------------------------------------------------------------


def test_the_helper_starts_this_interpreter_with_a_safe_path() -> None:
    assert python_command("-m", "x") == [sys.executable, "-P", "-m", "x"]


@pytest.mark.integration
def test_a_python_command_sees_nothing_of_its_working_directory(planted: Path) -> None:
    proc = subprocess.run(
        python_command("-c", "import sys, json; print(json.dumps(sys.path))"),
        cwd=planted,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    path = json.loads(proc.stdout)
    assert "" not in path and str(planted) not in path
    assert ran(planted) == ""


def test_commands_built_for_servers_start_with_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv_mcp.bench import _openenv as _bench_openenv
    from openenv_mcp.bench import _run as bench
    from openenv_mcp.client._transports.inference import _command
    from openenv_mcp.data.collect import CollectConfig, _serve_command

    safe = python_command()
    assert bench._serve_command("echo", "stdio", ())[:2] == safe
    assert _bench_openenv._uvicorn("x:app", 1)[:2] == safe
    assert _serve_command(CollectConfig("echo", "/nowhere"), Path("/nowhere"))[:2] == safe
    monkeypatch.setenv("PATH", "/nonexistent")  # no openenv-mcp on PATH: this one is meant
    assert _command("openenv-mcp serve echo --stdio") == python_command(
        "-m", "openenv_mcp", "serve", "echo", "--stdio"
    )


# -- the children -------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.anyio
async def test_the_episode_host(planted: Path) -> None:
    with episode_host_dir() as hosts:
        env = {**os.environ, HOST_DIR_ENV: str(hosts)}
        front = stdio(planted, "serve", "echo", "--stdio", "--episode-host", env=env)
        with anyio.fail_after(WAIT):
            async with Client(front, timeout=WAIT) as client:
                reset = await client.call_tool("reset", {"seed": 0})
                step = await client.call_tool("step", {"action": "hi"})
        assert not reset.is_error and not step.is_error, (text(reset), text(step))
        assert len(episode_hosts(hosts)) == 1  # a host served it
        log = "".join(p.read_text() for p in hosts.glob("*.log"))
    assert ran(planted) == "", log


@pytest.mark.integration
@pytest.mark.anyio
async def test_a_worker_process(planted: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = stdio(
        planted, "serve", "echo", "--stdio", "--workers", "1", "--log-level", "INFO", log_file=log
    )
    with anyio.fail_after(WAIT):
        async with Client(server, timeout=WAIT) as client:
            reset = await client.call_tool("reset", {"seed": 0})
            step = await client.call_tool("step", {"action": "hi"})
    assert not reset.is_error and not step.is_error, (text(reset), text(step))
    assert "worker 0 (pid" in log.read_text()  # the episode was in a worker
    assert ran(planted) == "", log.read_text()[-2000:]


@pytest.mark.integration
@pytest.mark.anyio
async def test_the_server_the_client_starts(planted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv_mcp.client import MCPEnvClient

    # No openenv-mcp on PATH (a notebook kernel's): the client starts this interpreter's.
    path = os.environ.get("PATH", "").split(os.pathsep)
    monkeypatch.setenv(
        "PATH", os.pathsep.join(d for d in path if not Path(d, "openenv-mcp").exists())
    )
    assert shutil.which("openenv-mcp") is None
    monkeypatch.chdir(planted)
    with anyio.fail_after(WAIT):
        async with MCPEnvClient("openenv-mcp serve echo --stdio") as client:
            obs, _ = await client.reset(seed=0)
            await client.step("hi")
    assert obs is not None
    assert ran(planted) == ""


AGENT = """
import json, sys

import anyio
from fastmcp import Client


async def play():
    async with Client(json.load(open(sys.argv[1]))) as client:
        await client.call_tool("reset", {})
        await client.call_tool("step", {"action": "hi"})


anyio.run(play)
"""


@pytest.mark.integration
def test_collects_servers_and_the_configs_it_writes_for_harnesses(
    planted: Path, tmp_path: Path
) -> None:
    agent = tmp_path / "agent.py"  # a harness started in the project: it runs the config
    agent.write_text(AGENT)
    policy, harness = tmp_path / "policy", tmp_path / "harness"
    for out, how in (
        (policy, ["--max-steps", "3"]),
        (harness, ["--agent", f"{sys.executable} {agent} {{mcp_config}}"]),
    ):
        proc = subprocess.run(
            [*openenv_mcp(), "collect", "echo", "--out", str(out), "--episodes", "1", *how],
            cwd=planted,
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
        assert "episodes (this run)              1" in proc.stdout, proc.stdout
    (config,) = (harness / "mcp").glob("*.json")
    server = json.loads(config.read_text())["mcpServers"]["openenv"]
    assert [server["command"], *server["args"][:1]] == python_command()
    for out in (policy, harness):
        (entry,) = [json.loads(line) for line in (out / "collect.jsonl").open()]
        assert entry["steps"] >= 1, entry
    assert ran(planted) == ""


@pytest.mark.integration
def test_checks_server(planted: Path) -> None:
    proc = subprocess.run(
        [*openenv_mcp(), "check", "echo"],
        cwd=planted,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "stdio round trip: serve echo --stdio" in proc.stdout, proc.stdout
    assert ran(planted) == ""


# -- the coding sandbox's boot --------------------------------------------------------------------

#: The agent's first run leaves modules in its work dir (the next run's working directory),
#: where the boot program runs before the agent's code, before the limits are set.
PLANT_IN_WORKDIR = f"""
for name in {PLANTED_MODULES!r}:
    open(name + ".py", "w").write({PLANTED!r})
"""
LOOK = f"import os; print(os.path.exists({MARKER!r}))"


@pytest.fixture(params=["unsafe-rlimits", "bwrap"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[Any]:
    from openenv_mcp_envs.coding import CodingConfig, CodingEnv

    if request.param == "bwrap":
        ensure_installed("ensure_debian.sh", "bubblewrap", "bubblewrap", "bwrap")
    env = CodingEnv(CodingConfig(sandbox=request.param, wall_seconds=10.0))
    try:
        yield env
    finally:
        env.close()


@pytest.mark.integration
def test_the_sandbox_boot(sandbox: Any) -> None:
    sandbox.reset(options={"task": "fizzbuzz"})
    planted = sandbox.step(sandbox.parse_action(PLANT_IN_WORKDIR))
    assert planted.observation["exit_code"] == 0, planted.observation
    assert {"anyio.py", "json.py"} <= set(planted.info["files"])
    looked = sandbox.step(sandbox.parse_action(LOOK))  # a second run: a second boot
    assert looked.observation["exit_code"] == 0, looked.observation
    assert looked.observation["stdout"] == "False\n", looked.observation
