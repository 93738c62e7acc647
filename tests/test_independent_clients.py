"""Our server driven by MCP clients nobody here wrote: the MCP Inspector CLI (v2)
and the official TypeScript SDK, over stdio and over Streamable HTTP.

Node 22 and both packages come from npm (scripts/ensure_node_tools.sh). These
tests skip only when that install fails, and say why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.servers import ROOT, ensure_installed, http_server

pytestmark = pytest.mark.integration

SDK_CLIENT = Path(__file__).parent / "node" / "mcp_sdk_client.cjs"


@pytest.fixture(scope="session")
def node_tools() -> dict[str, str]:
    out = ensure_installed("ensure_node_tools.sh", "Node 22 / the MCP Inspector (from npm)")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def server_command(env: str, *options: str) -> list[str]:
    return [sys.executable, "-m", "openenv_mcp", "serve", env, "--stdio", *options]


def inspector(
    tools: dict[str, str], target: list[str], method: str, *args: str, ok: bool = True
) -> dict[str, Any]:
    """One Inspector CLI call; returns its parsed ``result`` (or error) object."""
    proc = subprocess.run(
        [tools["INSPECTOR"], "--cli", "--format", "json", "-q", "--method", method, *args, *target],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "MCP_STORAGE_DIR": str(ROOT / ".pytest_cache" / "inspector")},
    )
    if ok:
        assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    else:
        # the Inspector exits 5 when the tool answered isError
        assert proc.returncode == 5, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    out: dict[str, Any] = json.loads(proc.stdout)["result"]
    return out


def stdio_target(env: str = "echo", *options: str) -> list[str]:
    return ["--", *server_command(env, *options)]


def http_target(url: str) -> list[str]:
    return ["--transport", "http", "--server-url", url]


def call(tool: str, arguments: dict[str, Any]) -> list[str]:
    return ["--tool-name", tool, "--tool-args-json", json.dumps(arguments)]


def test_inspector_cli_over_stdio(node_tools: dict[str, str]) -> None:
    target = stdio_target("echo", "--frame")
    tools = inspector(node_tools, target, "tools/list")["tools"]
    names = {t["name"] for t in tools}
    assert {"reset", "step", "state"} <= names
    assert all("outputSchema" in t for t in tools if t["name"] in ("reset", "step", "state"))
    reset = inspector(node_tools, target, "tools/call", *call("reset", {"seed": 1}))
    assert reset["structuredContent"]["step"] == 0
    assert [c["type"] for c in reset["content"]] == ["text", "image"]
    # each Inspector CLI call is a new stdio server process: step there has no
    # episode, and says so
    step = inspector(node_tools, target, "tools/call", *call("step", {"action": "x"}), ok=False)
    assert step["isError"] and step["content"][0]["text"].startswith("ResetNeeded:")
    spec = inspector(node_tools, target, "resources/read", "--uri", "openenv://echo/spec")
    assert json.loads(spec["contents"][0]["text"])["name"] == "echo"


def test_inspector_cli_over_http(node_tools: dict[str, str]) -> None:
    with http_server("echo") as url:
        target = http_target(url)
        names = {t["name"] for t in inspector(node_tools, target, "tools/list")["tools"]}
        assert {"reset", "step", "state"} <= names
        reset = inspector(node_tools, target, "tools/call", *call("reset", {"seed": 2}))
        eid = reset["structuredContent"]["episode_id"]
        step = inspector(
            node_tools, target, "tools/call", *call("step", {"episode_id": eid, "action": "hey"})
        )
        assert step["structuredContent"]["step"] == 1
        assert step["structuredContent"]["reward"] == pytest.approx(0.3)
        state = inspector(node_tools, target, "tools/call", *call("state", {"episode_id": eid}))
        assert state["structuredContent"]["observation"] == "hey"
        missing = inspector(
            node_tools, target, "tools/call", *call("step", {"action": "x"}), ok=False
        )
        # each CLI call is a new MCP session, which has no default episode: it is told so
        told = missing["content"][0]["text"]
        assert told.startswith("ResetNeeded:") and "episode_id from reset's answer" in told


def sdk_session(
    tools: dict[str, str], target: list[str], ops: list[dict[str, Any]]
) -> dict[str, Any]:
    """Run a list of operations in one session of the official TypeScript SDK client."""
    proc = subprocess.run(
        [tools["NODE"], str(SDK_CLIENT), *target],
        input=json.dumps(ops),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "NODE_PATH": tools["NODE_MODULES"]},
    )
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def test_typescript_sdk_over_stdio(node_tools: dict[str, str]) -> None:
    ops = [
        {"method": "tools/list"},
        {"method": "tools/call", "name": "reset", "arguments": {"seed": 5}},
        {"method": "tools/call", "name": "step", "arguments": {"action": "hello"}},
        {"method": "tools/call", "name": "state", "arguments": {}},
        {"method": "tools/call", "name": "step", "arguments": {"action": 3}},
        {"method": "resources/read", "uri": "openenv://echo/spec"},
    ]
    out = sdk_session(node_tools, ["--stdio", "--", *server_command("echo")], ops)
    assert out["serverInfo"]["name"] == "openenv-echo"
    listed, reset, step, state, bad, spec = (r["result"] for r in out["results"])
    assert "step" in {t["name"] for t in listed["tools"]}
    assert reset["structuredContent"]["episode_id"] == step["structuredContent"]["episode_id"]
    assert step["structuredContent"]["reward"] == pytest.approx(0.5)
    assert state["structuredContent"]["step"] == 1
    assert bad["isError"] and bad["content"][0]["text"].startswith("InvalidAction:")
    assert json.loads(spec["contents"][0]["text"])["name"] == "echo"


def test_typescript_sdk_over_http(node_tools: dict[str, str]) -> None:
    ops = [
        {"method": "tools/call", "name": "reset", "arguments": {"seed": 5}},
        {"method": "tools/call", "name": "step", "arguments": {"action": "hello"}},
    ]
    with http_server("echo") as url:
        out = sdk_session(node_tools, ["--http", url], ops)
    reset, step = (r["result"] for r in out["results"])
    assert reset["structuredContent"]["step"] == 0
    # the SDK holds one MCP session: a call without episode_id means its default episode
    assert not step.get("isError") and step["structuredContent"]["step"] == 1
    assert step["structuredContent"]["episode_id"] == reset["structuredContent"]["episode_id"]


def test_inspector_cli_plays_atari(node_tools: dict[str, str]) -> None:
    """The README's first command's server, as the Inspector sees it."""
    target = stdio_target("atari", "--game", "breakout")
    names = {t["name"] for t in inspector(node_tools, target, "tools/list")["tools"]}
    assert {"reset", "step", "state", "legal_actions", "fire", "noop"} <= names
    reset = inspector(node_tools, target, "tools/call", *call("reset", {"seed": 0}))
    assert [c["type"] for c in reset["content"]] == ["text", "image"]
    with http_server("atari", "--game", "breakout") as url:
        target = http_target(url)
        eid = inspector(node_tools, target, "tools/call", *call("reset", {"seed": 0}))[
            "structuredContent"
        ]["episode_id"]
        step = inspector(
            node_tools, target, "tools/call", *call("step", {"episode_id": eid, "action": "FIRE"})
        )
        assert step["structuredContent"]["step"] == 1
        assert step["content"][1]["mimeType"] == "image/png"
        fire = inspector(node_tools, target, "tools/call", *call("fire", {"episode_id": eid}))
        assert fire["structuredContent"]["step"] == 2
