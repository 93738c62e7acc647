"""The CLI through typer's runner, plus one real subprocess smoke test."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading

import pytest
from typer.testing import CliRunner

from openenv_mcp.cli import app, parse_env_options
from openenv_mcp.errors import ArgumentError
from openenv_mcp.registry import get_env_class
from tests.envs.unprivileged import unprivileged_user
from tests.servers import CLI, INITIALIZE, ROOT, stop

runner = CliRunner()


def test_serve_help_lists_every_server_setting() -> None:
    from openenv_mcp.server._settings import flat_fields

    result = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for flag in (
        "--transport",
        "--agent",
        "--host",
        "--port",
        "--no-action-tools",
        "--no-fast-path",
    ):
        assert flag in result.output
    for alias in ("--stdio", "--http", "--ray"):  # the older spellings still work, unlisted
        assert not re.search(rf"{alias}(?![\w-])", result.output)
    for name, (field, _) in flat_fields().items():  # generated from the model
        assert f"--{name.replace('_', '-')}" in result.output
        assert str(field.description)[:30] in " ".join(result.output.split())


def test_serve_takes_settings_and_env_options_in_any_order() -> None:
    result = runner.invoke(app, ["serve", "echo", "--max-steps", "3", "--workers", "-1"])
    assert result.exit_code == 2
    assert "server settings: option 'workers'" in result.output and "'-1'" in result.output
    result = runner.invoke(app, ["serve", "echo", "--max-episodez", "3"])
    assert "Did you mean '--max-episodes'?" in result.output


def test_list_names_every_env() -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0
    assert "echo" in result.output and "Echo:" in result.output


def test_describe_shows_options_and_tools() -> None:
    result = runner.invoke(app, ["describe", "echo"])
    assert result.exit_code == 0, result.output
    assert "--max-steps" in result.output and "reset(" in result.output
    as_json = runner.invoke(app, ["describe", "echo", "--json", "--max-steps", "5"])
    info = json.loads(as_json.output)
    assert info["spec"]["config"]["max_steps"] == 5
    assert {"reset", "step", "state"} <= {t["name"] for t in info["tools"]}


@pytest.mark.parametrize("command", ["serve", "describe"])
def test_unknown_env_says_did_you_mean(command: str) -> None:
    result = runner.invoke(app, [command, "ecoh"])
    assert result.exit_code == 2
    assert "Did you mean 'echo'?" in result.output


def test_unknown_option_says_did_you_mean() -> None:
    result = runner.invoke(app, ["serve", "echo", "--max-step", "3"])
    assert result.exit_code == 2
    assert "Did you mean '--max-steps'?" in result.output


def test_bad_option_value_names_expected_and_got() -> None:
    result = runner.invoke(app, ["describe", "echo", "--max-steps", "many"])
    assert result.exit_code == 2
    assert "max_steps" in result.output and "'many'" in result.output


def test_parse_env_options_flags() -> None:
    echo = get_env_class("echo")
    assert parse_env_options(echo, ["--frame", "--max-steps=4"]) == {
        "frame": True,
        "max_steps": "4",
    }
    assert parse_env_options(echo, ["--no-frame"]) == {"frame": False}
    with pytest.raises(ArgumentError, match="needs a value"):
        parse_env_options(echo, ["--max-steps"])
    with pytest.raises(ArgumentError, match="unexpected argument"):
        parse_env_options(echo, ["loose"])


def test_an_env_class_is_served_and_described_by_reference() -> None:
    """`serve package.module:Class`: no entry point, no reinstall."""
    result = runner.invoke(app, ["describe", "tests.door_env:DoorEnv", "--legality", "parse"])
    assert result.exit_code == 0, result.output
    assert "door: Test env" in result.output and "UNLOCK" in result.output
    bad = runner.invoke(app, ["describe", "tests.door_env:DorEnv"])
    assert bad.exit_code == 2 and "has no 'DorEnv'. Did you mean 'DoorEnv'?" in bad.output
    missing = runner.invoke(app, ["describe", "tests.no_such_module:Env"])
    assert missing.exit_code == 2 and "could not be imported" in missing.output
    not_env = runner.invoke(app, ["describe", "tests.door_env:register"])
    assert not_env.exit_code == 2 and "not a subclass of openenv_mcp.Environment" in not_env.output


@pytest.mark.integration
def test_serve_by_reference_over_stdio() -> None:
    from openenv_mcp.client import MCPEnvClient

    with MCPEnvClient([*CLI, "serve", "tests.door_env:DoorEnv", "--stdio"]).sync() as env:
        assert env.get_action_meanings() == ["UNLOCK", "OPEN", "WAIT"]
        env.reset()
        assert env.step("UNLOCK")[0] == 1


@pytest.mark.integration
def test_subprocess_smoke_stdio_roundtrip() -> None:
    """The real command answers raw JSON-RPC on stdout, and says nothing on stderr
    unless something is wrong (or --log-level asks for more)."""
    lines = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc = subprocess.Popen(
        [*CLI, "serve", "echo", "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    watchdog = threading.Timer(60, proc.kill)  # bounds every read below
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
        proc.stdin.close()  # EOF: the server shuts down cleanly
        assert proc.wait() == 0
        stderr = proc.stderr.read() if proc.stderr else ""
    finally:
        watchdog.cancel()
        stop(proc)
    assert all(r["jsonrpc"] == "2.0" for r in replies)  # nothing but protocol on stdout
    by_id = {r["id"]: r for r in replies}
    assert by_id[INITIALIZE["id"]]["result"]["serverInfo"]["name"] == "openenv-echo"
    assert "reset" in {t["name"] for t in by_id[2]["result"]["tools"]}
    assert stderr == ""  # quiet by default over stdio: a harness may show any line as an error


@pytest.mark.integration
def test_log_level_info_says_what_is_served() -> None:
    proc = subprocess.run(
        [*CLI, "serve", "echo", "--stdio", "--log-level", "INFO"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0 and "serving echo over stdio" in proc.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--ray", "--stdio"], "choose one transport: --stdio and --ray were given"),
        (["--ray", "--web"], "--web needs --transport http"),
        (["--ray-address", "auto"], "--ray-address needs --transport ray"),
        (["--ray", "--max-steps", "zero"], "max_steps"),
        (["--ray", "--shard", "x"], "each replica's shard is its Ray replica id"),
    ],
)
def test_serve_ray_refuses_what_cannot_work_before_starting_a_cluster(
    args: list[str], says: str
) -> None:
    result = runner.invoke(app, ["serve", "echo", *args])
    assert result.exit_code != 0
    assert says in result.output, result.output


@pytest.mark.integration
def test_a_server_started_where_its_user_cannot_look_serves() -> None:
    """A working directory its user may not search (a service manager's, ``sudo -u``
    from root's home): FastMCP's settings stat ``.env`` there at import, which killed
    the server with a PermissionError before it answered anything."""
    with unprivileged_user() as user:
        shut = os.path.join(user.home, "shut")
        os.mkdir(shut)
        if os.geteuid() == 0:
            os.chown(shut, user.uid, user.gid)
        python, bootstrap = user.cli
        # As the user: enter the directory, then take away its own right to search it.
        script = f"cd {shut} && chmod 000 {shut} && exec {python} {bootstrap} serve echo --stdio"
        done = subprocess.run(
            user.wrap(["sh", "-c", script]),
            input=json.dumps(INITIALIZE) + "\n",
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        os.chmod(shut, 0o700)  # so the home can be removed
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["result"]["serverInfo"]["name"] == "openenv-echo"


def test_agent_with_another_profile_is_a_conflict() -> None:
    result = runner.invoke(app, ["serve", "echo", "--agent", "--profile", "full"])
    assert result.exit_code == 2
    assert "--agent means --profile agent, but --profile full was given too" in result.output
