"""What agent frameworks nobody here wrote show a model, from their own MCP clients.

pydantic-ai (``MCPToolset``) and LlamaIndex (``McpToolSpec``) share the test venv with
mcp 2.x (the [test] extra installs both); each connects to ``serve atari --profile agent
--game breakout --stdio`` over stdio, lists the tools and calls ``reset`` through the
very function the framework hands its agent, and the test reads what that function
returns: what the framework passes to the model. Google ADK pins opentelemetry-api
<= 1.44, below what FastMCP 4.2.3 needs, and langchain-mcp-adapters 0.3.2 and
smolagents' mcpadapt need mcp < 2: none can share this venv (docs/agents.md has
what they show, measured by hand).
"""

from __future__ import annotations

import base64
import os
import re
import sys

import anyio
import pytest

from openenv_mcp.server.transports._host import HOST_DIR_ENV
from tests.figures import record_figure
from tests.servers import ROOT, episode_host_dir

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

SERVER = [
    sys.executable,
    "-m",
    "openenv_mcp",
    "serve",
    "atari",
    "--profile",
    "agent",
    "--game",
    "breakout",
    "--stdio",
]
#: What the text alone must carry: the game, the lives, the goal, how to start, and every
#: legal action's meaning (no framework here shows a model the server's instructions).
MUST_SAY = (
    "New episode of Atari Breakout",
    "5 lives left",
    "Goal: Move the paddle",
    "How to start: Press FIRE",
    "FIRE = launch the ball",
    "LEFT",
)


def says_everything(text: str) -> None:
    for words in MUST_SAY:
        assert words in text, (words, text)


async def test_pydantic_ai_passes_the_text_then_the_image() -> None:
    mcp = pytest.importorskip("pydantic_ai.mcp", reason="the [test] extra installs pydantic-ai")
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.messages import BinaryContent

    transport = StdioTransport(command=SERVER[0], args=SERVER[1:], cwd=str(ROOT))
    toolset = mcp.MCPToolset(transport, init_timeout=60)
    with anyio.fail_after(120):
        async with toolset:
            names = {t.name for t in await toolset.list_tools()}
            assert {"reset", "step", "state", "fire"} <= names
            shown = await toolset.direct_call_tool("reset", {"seed": 0})
    text, image = shown  # the model gets both, text first
    assert isinstance(text, str) and isinstance(image, BinaryContent)
    says_everything(text)
    assert image.media_type == "image/png" and len(image.data) <= 3000
    record_figure(
        f"pydantic-ai MCPToolset, Breakout reset: text {len(text)} chars + a PNG image "
        f"of {len(image.data)} bytes"
    )


async def test_llamaindex_passes_text_with_the_image_inside() -> None:
    pytest.importorskip("llama_index.tools.mcp", reason="the [test] extra installs it")
    from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

    client = BasicMCPClient(SERVER[0], args=SERVER[1:], timeout=60)
    with anyio.fail_after(180):
        tools = {t.metadata.name: t for t in await McpToolSpec(client).to_tool_list_async()}
        assert {"reset", "step", "state", "fire"} <= set(tools)
        output = await tools["reset"].acall(seed=0)
    content = output.content  # what the agent adds to the model's messages: one string
    says_everything(content)
    # The image travels inside that text, as base64: the model pays for it in tokens.
    raw = output.raw_output
    image = next(c for c in raw.content if c.type == "image")
    assert image.data in content and len(base64.b64decode(image.data)) <= 3000
    assert content.index("New episode of Atari Breakout") < content.index(image.data)
    record_figure(
        f"LlamaIndex McpToolSpec, Breakout reset: one text of {len(content)} chars, "
        f"{len(image.data)} of them the PNG in base64"
    )


async def test_llamaindex_plays_a_game_though_it_starts_a_server_per_call() -> None:
    """McpToolSpec starts a fresh server for every call: with --episode-host (as the
    README's harness configs run it) the episode outlives each one."""
    pytest.importorskip("llama_index.tools.mcp", reason="the [test] extra installs it")
    from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

    with episode_host_dir() as hosts, anyio.fail_after(240):
        env = {**os.environ, HOST_DIR_ENV: str(hosts)}
        client = BasicMCPClient(
            SERVER[0], args=[*SERVER[1:], "--episode-host"], env=env, timeout=60
        )
        tools = {t.metadata.name: t for t in await McpToolSpec(client).to_tool_list_async()}
        opened = (await tools["reset"].acall(seed=0)).content
        found = re.search(r"episode (ep_[A-Za-z0-9_-]+)", opened)
        assert found, opened
        episode = found.group(1)
        fired = (await tools["fire"].acall(episode_id=episode)).content
        moved = (await tools["step"].acall(action="RIGHT", repeat=4, episode_id=episode)).content
    # what the model reads: the tool result as one string, the summary inside it
    assert "Step 1 (FIRE)" in fired and "Step 5 (RIGHT x4)" in moved
