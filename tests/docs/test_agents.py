"""docs/agents.md's "What the model sees" (and the README's quick start) is what the
server sends: its summaries word for word, and its image pixel for pixel."""

from __future__ import annotations

import re

import anyio
import numpy as np
import pytest
from fastmcp import Client

from openenv_mcp.codecs import decode_png, png_from_b64
from openenv_mcp.server import ServerSettings, build_server
from tests.servers import ROOT

pytestmark = pytest.mark.anyio

PAGE = (ROOT / "docs" / "agents.md").read_text()
README = (ROOT / "README.md").read_text()


def quoted(text: str) -> str:
    """A quote as one line, the episode handle elided as the docs do."""
    return re.sub(r"ep_[A-Za-z0-9_-]+", "ep_...", " ".join(text.split()))


async def test_the_docs_show_what_the_agent_profile_sends() -> None:
    server = build_server("atari", game="breakout", settings=ServerSettings(profile="agent"))
    page = " ".join(PAGE.split())
    with anyio.fail_after(60):
        async with Client(server) as client:
            reset = await client.call_tool("reset", {"seed": 0})
            assert quoted(reset.content[0].text) in page
            assert quoted(reset.content[0].text) in " ".join(README.split())
            await client.call_tool("fire", {})
            step = await client.call_tool("step", {"action": "RIGHT", "repeat": 12})
            assert quoted(step.content[0].text) in page
            frame = png_from_b64(step.content[1].data)
            shown = decode_png((ROOT / "docs" / "agent-frame-breakout.png").read_bytes())
            assert np.array_equal(frame, shown) and frame.shape == (630, 480, 3)
            for _ in range(4):
                lost = await client.call_tool("noop", {"repeat": 32})
                if "Lost a life" in lost.content[0].text:
                    break
            assert quoted(lost.content[0].text) in page
