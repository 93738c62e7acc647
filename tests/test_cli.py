"""The CLI through typer's runner, plus one real subprocess smoke test."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest
from typer.testing import CliRunner

from openenv_mcp.cli import app, parse_env_options
from openenv_mcp.errors import ArgumentError
from openenv_mcp.registry import get_env_class
from tests.servers import CLI, ROOT, stop

runner = CliRunner()


def test_serve_help() -> None:
    result = runner.invoke(app, ["serve", "--help"])
    assert result.exit_code == 0
    for flag in ("--stdio", "--http", "--host", "--port", "--max-episodes", "--no-action-tools"):
        assert flag in result.output


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


@pytest.mark.slow
def test_subprocess_smoke_stdio_roundtrip() -> None:
    """The real command answers raw JSON-RPC on stdout and logs only to stderr."""
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "smoke", "version": "0"},
            },
        },
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
    assert by_id[1]["result"]["serverInfo"]["name"] == "openenv-echo"
    assert "reset" in {t["name"] for t in by_id[2]["result"]["tools"]}
    assert "serving echo over stdio" in stderr
