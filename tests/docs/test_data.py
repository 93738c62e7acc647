"""docs/data.md quotes what the server sends."""

from __future__ import annotations

import anyio

from openenv_mcp import MCPEnvClient
from openenv_mcp.server import ServerSettings, build_server
from tests.servers import ROOT

PAGE = (ROOT / "docs" / "data.md").read_text()


def test_the_reward_breakdown_quoted_is_what_a_step_carries() -> None:
    async def first_step() -> tuple[float, dict[str, float]]:
        settings = ServerSettings(reward=["harness_examples.rewards:breakout_with_trajectory"])
        async with MCPEnvClient(build_server("atari", game="breakout", settings=settings)) as env:
            await env.reset(seed=0)
            _, reward, _, _, info = await env.step("FIRE")
            return reward, info["rewards"]

    reward, rewards = anyio.run(first_step)
    assert f'# reward {reward:g}; info["rewards"] ==\n    # {rewards}' in PAGE


def test_the_reading_functions_named_are_the_recording_packages_own() -> None:
    import openenv_mcp.recording as recording

    assert "In Python, `openenv_mcp.recording` reads them" in PAGE
    for name in ("read_recording", "iter_recordings", "replay"):
        assert f"`{name}(" in PAGE and name in recording.__all__
