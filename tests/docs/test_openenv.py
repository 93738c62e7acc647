"""docs/openenv.md's "Coming from OpenEnv" runs as written: its three commands, and
the Python block that drives our Atari with OpenEnv's own client (ports aside)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.openenv_procs import BIN, openenv_server
from tests.servers import ROOT, http_server, with_pythonpath

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

DOC = ROOT / "docs" / "openenv.md"
MARKER = "<!-- tested: tests/docs/test_openenv.py runs"


def blocks() -> tuple[list[list[str]], str]:
    """The three commands (as argv) and the Python block, from the doc."""
    text = DOC.read_text()
    found = re.findall(re.escape(MARKER) + r"[^\n]*\n\s*```(\w+)\n(.*?)```", text, re.DOTALL)
    assert [kind for kind, _ in found] == ["bash", "python"], found
    commands = [shlex.split(line.split("#")[0]) for line in found[0][1].strip().splitlines()]
    python = "\n".join(line.removeprefix("   ") for line in found[1][1].splitlines())
    return commands, python


def test_the_doc_has_three_commands() -> None:
    commands, _ = blocks()
    assert [c[:3] for c in commands] == [
        ["openenv-mcp", "serve", "openenv"],
        ["openenv-mcp", "serve", "atari"],
        ["openenv", "validate", "--url"],
    ]


async def test_mount_your_server() -> None:
    (mount, _, _), _ = blocks()
    with openenv_server("tests.openenv_apps:count") as url:
        argv = [arg.replace("http://127.0.0.1:8000", url) for arg in mount]
        transport = StdioTransport(
            command=sys.executable, args=["-m", "openenv_mcp.cli", *argv[1:]], cwd=str(ROOT)
        )
        async with Client(transport, timeout=120) as client:
            await client.call_tool("reset", {"seed": 1})
            step = await client.call_tool("step", {"action": {"message": "please"}})
            assert step.structured_content["reward"] == 1.0


def test_drive_ours_with_your_client_then_validate(tmp_path: Path) -> None:
    (_, serve, validate), python = blocks()
    assert serve[-3:] == ["--port", "8765", "--openenv"]
    assert serve[3:6] == ["--transport", "http", "--port"]
    with http_server("atari", *serve[6:-3], "--openenv") as url:
        port = url.split(":")[2].split("/")[0]
        script = tmp_path / "drive.py"
        script.write_text(python.replace("8765", port))
        ran = subprocess.run(  # OpenEnv's atari_env importable, as its repository installs it
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=300,
            env=with_pythonpath(ROOT / "tests" / "openenv_packages"),
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.startswith("(210, 160, 3) 0.0 False"), ran.stdout
        argv = [str(BIN / "openenv"), *(a.replace("8765", port) for a in validate[1:])]
        checked = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert '"passed": true' in checked.stdout
