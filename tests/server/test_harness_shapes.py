"""What a real harness passes its model, with the OpenAI Agents SDK as the harness.

The Agents SDK is the one harness whose MCP-to-model conversion ships as a Python
package, so it runs here for real: its own stdio client spawns
``python -m openenv_mcp serve atari --stdio`` and its own ``MCPUtil.invoke_mcp_tool``
turns our result into what the model reads. With ``use_structured_content=True`` it
behaves like Claude Code, Codex and OpenCode (``structuredContent`` wins); with the
default it behaves like Gemini CLI (the content blocks). The agent profile must give
the model the summary and the frame either way.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import pytest

agents_mcp = pytest.importorskip("agents.mcp", reason="openai-agents is in the [test] extra")
from agents.run_context import RunContextWrapper  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


async def what_the_model_reads(profile: str, *, structured: bool) -> Any:
    args = f"-m openenv_mcp serve atari --stdio --profile {profile} --game breakout"
    params = {"command": sys.executable, "args": args.split()}
    server = agents_mcp.MCPServerStdio(
        params, use_structured_content=structured, client_session_timeout_seconds=60
    )
    async with server:
        tools = {tool.name: tool for tool in await server.list_tools()}
        return await agents_mcp.MCPUtil.invoke_mcp_tool(
            server, tools["reset"], RunContextWrapper(context=None), json.dumps({"seed": 0})
        )


@pytest.mark.parametrize("structured", [False, True], ids=["content", "structured"])
async def test_the_agent_profile_reaches_the_model_as_text_and_image(structured: bool) -> None:
    with anyio.fail_after(120):
        output = await what_the_model_reads("agent", structured=structured)
    assert [item["type"] for item in output] == ["text", "image"]
    assert output[0]["text"].startswith("New episode of Atari Breakout")
    assert "FIRE = launch the ball" in output[0]["text"]
    assert output[1]["image_url"].startswith("data:image/png;base64,")


async def test_a_structured_content_harness_loses_the_frame_of_the_full_profile() -> None:
    """Why the agent profile sends no ``structuredContent``: this is what it avoids."""
    with anyio.fail_after(120):
        output = await what_the_model_reads("full", structured=True)
    assert isinstance(output, str)  # one JSON string: no image reaches the model
    view = json.loads(output)
    assert view["summary"].startswith("New episode of Atari Breakout")
