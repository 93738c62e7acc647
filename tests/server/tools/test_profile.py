"""What reaches the model: summaries, events, legible frames and repeat, in both profiles.

The content shape each harness family relies on (see the README, "What the model sees"):

* harnesses that prefer ``structuredContent`` when it is there (Claude Code, Codex,
  OpenCode; OpenCode then drops the image): the agent profile sends none, so they
  fall back to the content blocks, where the text carries everything and the image
  the frame;
* harnesses that read the content blocks (Gemini CLI, the OpenAI Agents SDK, Cursor,
  Claude Desktop): text and image in both profiles, the same summary in the text as
  in ``structuredContent["summary"]``.
"""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest
from fastmcp import Client

from openenv_mcp.codecs import png_from_b64
from openenv_mcp.server import ServerSettings, build_server
from tests.figures import record_figure

pytestmark = pytest.mark.anyio


def server(profile: str, **options: Any) -> Any:
    return build_server("atari", settings=ServerSettings(profile=profile), **options)


async def call(client: Client, tool: str, **args: Any) -> Any:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result


def text_of(result: Any) -> str:
    return str(result.content[0].text)


async def test_agent_results_are_text_and_a_legible_image_only() -> None:
    with anyio.fail_after(60):
        async with Client(server("agent", game="breakout")) as client:
            reset = await call(client, "reset", seed=0)
            assert [c.type for c in reset.content] == ["text", "image"]
            assert reset.structured_content is None  # so no harness drops the image
            text = text_of(reset)
            assert text.startswith("New episode of Atari Breakout")
            assert "5 lives left" in text and "FIRE = launch the ball" in text
            frame = png_from_b64(reset.content[1].data)
            assert frame.shape == (630, 480, 3)  # 210x160, three times: short edge >= 400
            step = await call(client, "fire")
            assert text_of(step).startswith("Step 1 (FIRE): reward +0, return 0, 5 lives left")
            step = await call(client, "step", action="RIGHT", repeat=12)
            png = base64.b64decode(step.content[1].data)
            # A palette PNG: where a framework turns the image into base64 text (ADK,
            # LlamaIndex), the model pays for every byte of it, every step.
            assert len(png) <= 3000, len(png)
            assert min(png_from_b64(step.content[1].data).shape[:2]) >= 400
            record_figure(f"agent profile: Breakout frame after RIGHT x12: {len(png)} bytes")


async def test_full_results_carry_the_same_summary_in_text_and_structured_content() -> None:
    with anyio.fail_after(60):
        async with Client(server("full", game="pong")) as client:
            reset = await call(client, "reset", seed=0)
            view = reset.structured_content
            assert text_of(reset) == view["summary"]
            assert view["legal_actions"] == [
                "NOOP",
                "FIRE",
                "RIGHT",
                "LEFT",
                "RIGHTFIRE",
                "LEFTFIRE",
            ]
            assert "RIGHT = move your paddle UP the screen;" in view["summary"]
            frame = png_from_b64(reset.content[1].data)
            assert frame.shape == (210, 160, 3)  # a trainer's frames are the emulator's


async def test_events_a_point_conceded_and_a_life_lost() -> None:
    with anyio.fail_after(60):
        async with Client(server("full", game="pong", repeat_action_probability=0.0)) as client:
            await call(client, "reset", seed=0)
            for _ in range(20):
                view = (await call(client, "step", action="NOOP", repeat=32)).structured_content
                if view["reward"] < 0:
                    break
            assert any(e.startswith("The opponent scored a point") for e in view["events"])
            assert "The opponent scored a point" in view["summary"]
        async with Client(server("agent", game="breakout")) as client:
            await call(client, "reset", seed=0)
            await call(client, "fire")
            for _ in range(20):
                text = text_of(await call(client, "noop", repeat=32))
                if "Lost a life" in text:
                    break
            assert "Lost a life (4 left)" in text and "Press FIRE to serve the next ball" in text
            assert "repeated" not in text and "x32" not in text  # it stopped at the lost life


async def test_repeat_holds_an_action_and_stops_at_the_end() -> None:
    with anyio.fail_after(60):
        options = {"game": "pong", "max_episode_steps": 10}
        async with Client(server("full", **options)) as client:
            await call(client, "reset", seed=0)
            view = (await call(client, "step", action="RIGHT", repeat=4)).structured_content
            assert (view["step"], view["repeated"]) == (4, 4)
            assert view["summary"].startswith("Step 4 (RIGHT x4)")
            view = (await call(client, "right", repeat=32)).structured_content
            assert (view["step"], view["repeated"], view["truncated"]) == (10, 6, True)
            assert "Episode over (truncated) after 10 steps" in view["summary"]
            assert "call reset to play again" in view["summary"]
            bad = await client.call_tool(
                "step", {"action": "NOOP", "repeat": 33}, raise_on_error=False
            )
            assert bad.is_error and "repeat" in bad.content[0].text


async def test_the_server_names_its_game_in_instructions_prompt_and_rules() -> None:
    with anyio.fail_after(60):
        async with Client(server("agent", game="ms_pacman")) as client:
            prompts = await client.list_prompts()
            assert [p.name for p in prompts] == ["play"]
            play = await client.get_prompt("play")
            words = play.messages[0].content.text  # type: ignore[union-attr]
            assert "Ms. Pac-Man" in words and "call reset" in words.lower()
            rules = await client.read_resource("openenv://atari/rules")
            assert "pellets" in rules[0].text  # type: ignore[union-attr]
            assert "Sticky actions are on" in rules[0].text  # type: ignore[union-attr]


def test_tool_counts_per_profile() -> None:
    from openenv_mcp.server import get_app

    counts = {}
    for profile in ("full", "agent"):
        for full_set in (False, True):
            app = get_app(server(profile, game="ms_pacman", full_action_space=full_set))
            counts[profile, full_set] = len(app.tools)
    # Ms. Pac-Man: 9 actions (18 with the full action space); it has tasks: evaluate;
    # collect and run_episode.
    assert counts == {
        ("full", False): 8 + 1 + 2 + 9,
        ("full", True): 8 + 1 + 2 + 18,
        ("agent", False): 4,  # 4 + 9 would pass 12: no per-action tools
        ("agent", True): 4,
    }
