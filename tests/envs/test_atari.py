"""Atari over MCP with the real ale-py emulator and its bundled ROMs."""

from __future__ import annotations

import hashlib
from typing import Any

import anyio
import numpy as np
import pytest
from fastmcp import Client

from openenv_mcp.codecs import decode_raw, png_from_b64
from openenv_mcp.server import ServerSettings, build_server
from openenv_mcp_envs.atari import AtariConfig, AtariEmulator, AtariEnv, list_games
from tests.servers import stdio_transport

pytestmark = pytest.mark.anyio


async def call(client: Client, tool: str, **args: Any) -> Any:
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert not result.is_error, result.content[0].text
    return result


async def error(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert result.is_error, result.structured_content
    text: str = result.content[0].text
    return text


def image_of(result: Any) -> np.ndarray:
    images = [c for c in result.content if c.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    return png_from_b64(images[0].data)


def test_every_bundled_game_is_listed() -> None:
    games = list_games()
    assert len(games) > 100
    assert {"pong", "breakout", "space_invaders", "montezuma_revenge"} <= set(games)


#: A few games in the unit tier; all 104 in the integration tier.
SAMPLE_GAMES = ("pong", "breakout", "montezuma_revenge", "pitfall2")


@pytest.mark.parametrize(
    "game",
    [
        g if g in SAMPLE_GAMES else pytest.param(g, marks=pytest.mark.integration)
        for g in list_games()
    ],
)
async def test_every_game_resets_and_steps(game: str) -> None:
    server = build_server("atari", game=game)
    with anyio.fail_after(60):
        async with Client(server) as client:
            reset = await call(client, "reset", seed=0)
            emu_shape = reset.structured_content["info"]
            assert emu_shape["lives"] >= 0
            frame = image_of(reset)
            assert frame.ndim == 3 and frame.shape[2] == 3
            for action in (0, 1, 0):
                step = await call(client, "step", action=action, frames="both")
                obs = decode_raw(step.structured_content["observation"])
                assert obs.shape == frame.shape and obs.dtype == np.uint8
            assert step.structured_content["step"] == 3


async def rollout(
    client: Client, seed: int, steps: int, actions: int = 6
) -> list[tuple[str, float]]:
    """(frame hash, reward) per step, with a fixed action sequence."""
    reset = await call(client, "reset", seed=seed, frames="raw", new_episode=True)
    eid = reset.structured_content["episode_id"]
    out = []
    for i in range(steps):
        step = await call(client, "step", episode_id=eid, action=(i * 7) % actions, frames="raw")
        sc = step.structured_content
        out.append(
            (hashlib.sha256(decode_raw(sc["observation"]).tobytes()).hexdigest(), sc["reward"])
        )
        if sc["status"] == "ended":
            break
    return out


async def test_seeds_reproduce_with_sticky_actions() -> None:
    server = build_server("atari", game="pong")  # sticky actions on: p = 0.25
    with anyio.fail_after(120):
        async with Client(server) as client:
            a = await rollout(client, seed=123, steps=400)
            b = await rollout(client, seed=123, steps=400)
            c = await rollout(client, seed=124, steps=400)
    assert len(a) == 400 and a == b
    assert a != c  # the sticky-action stream depends on the seed


@pytest.mark.integration
async def test_seeds_reproduce_across_server_restarts() -> None:
    """The same seed gives byte-identical frames in a fresh server process."""
    with anyio.fail_after(180):
        runs = []
        for _ in range(2):
            async with Client(stdio_transport("atari", "--game", "breakout"), timeout=60) as client:
                runs.append(await rollout(client, seed=7, steps=200, actions=4))
        async with Client(build_server("atari", game="breakout")) as client:
            runs.append(await rollout(client, seed=7, steps=200, actions=4))
    assert runs[0] == runs[1] == runs[2]


async def test_snapshot_forks_are_identical_until_actions_differ() -> None:
    server = build_server("atari", game="breakout")
    with anyio.fail_after(120):
        async with Client(server) as client:
            eid = (await call(client, "reset", seed=5)).structured_content["episode_id"]
            for _ in range(30):
                await call(client, "step", episode_id=eid, action="FIRE")
            snap = (await call(client, "snapshot", episode_id=eid)).structured_content
            assert snap["step"] == 30
            forks: list[list[str]] = []
            for group_member in range(4):
                fork = await call(
                    client,
                    "reset",
                    from_snapshot=snap["snapshot_id"],
                    frames="raw",
                    new_episode=True,
                )
                fid = fork.structured_content["episode_id"]
                assert fork.structured_content["step"] == 30
                hashes = [
                    hashlib.sha256(
                        fork.structured_content["observation"]["data"].encode()
                    ).hexdigest()
                ]
                for i in range(60):
                    # members 0-2 play the same actions; member 3 differs from step 20
                    action = (i % 4) if (group_member < 3 or i < 20) else 3 - (i % 4)
                    step = await call(client, "step", episode_id=fid, action=action, frames="raw")
                    hashes.append(
                        hashlib.sha256(
                            step.structured_content["observation"]["data"].encode()
                        ).hexdigest()
                    )
                forks.append(hashes)
    assert forks[0] == forks[1] == forks[2]
    assert forks[3][:21] == forks[0][:21] and forks[3] != forks[0]


async def test_image_is_the_emulator_screen_exactly() -> None:
    for obs_type in ("rgb", "grayscale", "ram"):
        server = build_server("atari", game="pong", obs_type=obs_type)
        async with Client(server) as client:
            await call(client, "reset", seed=3)
            for _ in range(20):
                step = await call(client, "step", action="RIGHT", frames="both")
            frame = image_of(step)
            raw = decode_raw(step.structured_content["observation"])
            emu = AtariEmulator(AtariConfig(game="pong"))
            assert frame.shape == emu.screen_shape == (210, 160, 3)
            if obs_type == "rgb":
                assert np.array_equal(frame, raw)
            elif obs_type == "grayscale":
                assert raw.shape == (210, 160)
            else:
                assert raw.shape == (128,)
            emu.close()


async def test_zstd_frames_are_the_raw_frames_compressed() -> None:
    for obs_type, shape in (("rgb", [210, 160, 3]), ("grayscale", [210, 160]), ("ram", [128])):
        server = build_server("atari", game="breakout", obs_type=obs_type)
        async with Client(server) as client:
            await call(client, "reset", seed=3)
            for _ in range(10):
                step = await call(client, "step", action="FIRE", frames="zstd")
                packed = step.structured_content["observation"]
                state = await call(client, "state", frames="raw")
                plain = state.structured_content["observation"]
                assert packed["encoding"] == "zstd" and "encoding" not in plain
                assert packed["shape"] == plain["shape"] == shape
                assert np.array_equal(decode_raw(packed), decode_raw(plain))
            if obs_type == "rgb":  # 134 KB of base64 raw; a few KB compressed
                assert len(packed["data"]) * 20 < len(plain["data"])


async def test_png_matches_a_reference_emulator_frame_for_frame() -> None:
    """A seeded episode over MCP equals the same episode on a bare AtariEmulator."""
    emu = AtariEmulator(AtariConfig(game="breakout"))
    emu.reset(seed=42)
    server = build_server("atari", game="breakout")
    async with Client(server) as client:
        first = await call(client, "reset", seed=42)
        assert np.array_equal(image_of(first), emu.screen_rgb())
        for i in range(100):
            action = [1, 2, 2, 3, 0][i % 5]
            step = await call(client, "step", action=action)
            reward, terminated, truncated = emu.step(action)
            sc = step.structured_content
            assert (sc["reward"], sc["terminated"], sc["truncated"]) == (
                reward,
                terminated,
                truncated,
            )
            assert np.array_equal(image_of(step), emu.screen_rgb())
    emu.close()


async def test_actions_by_name_index_and_action_tools() -> None:
    server = build_server("atari", game="space_invaders")
    async with Client(server) as client:
        tools = {t.name: t for t in await client.list_tools()}
        step_schema = tools["step"].input_schema["properties"]["action"]
        names = next(s["enum"] for s in step_schema["anyOf"] if s.get("type") == "string")
        assert names == ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]
        assert {"noop", "fire", "right", "left", "right_fire", "left_fire"} <= set(tools)
        assert "move right and shoot" in (tools["right_fire"].description or "")
        legal = (await call(client, "legal_actions")).structured_content
        assert legal["actions"][4] == {
            "id": 4,
            "name": "RIGHTFIRE",
            "meaning": "move right and shoot",
        }
        await call(client, "reset", seed=1)
        assert (await call(client, "step", action="rightfire")).structured_content["step"] == 1
        assert (await call(client, "step", action=4)).structured_content["step"] == 2
        assert (await call(client, "left_fire")).structured_content["step"] == 3
        text = await error(client, "step", action=19)
        assert text == (
            "InvalidAction: action 19 is not legal; legal: 0-5 (NOOP, FIRE, RIGHT, LEFT, "
            "RIGHTFIRE, LEFTFIRE)"
        )
        text = await error(client, "step", action="UPFIRE")
        assert "not legal" in text and "Legal: 0-5" in text
        text = await error(client, "step", action="FIER")
        assert "Did you mean 'FIRE'?" in text


async def test_action_tools_can_be_switched_off() -> None:
    server = build_server("atari", settings=ServerSettings(action_tools=False))
    async with Client(server) as client:
        names = {t.name for t in await client.list_tools()}
    assert "fire" not in names and {"reset", "step", "legal_actions"} <= names


async def test_per_episode_options_and_refusals() -> None:
    server = build_server("atari", game="breakout")
    async with Client(server) as client:
        reset = await call(client, "reset", seed=1, options={"mode": 4, "difficulty": 1})
        eid = reset.structured_content["episode_id"]
        state = (await call(client, "state", episode_id=eid)).structured_content
        assert (state["info"]["mode"], state["info"]["difficulty"]) == (4, 1)
        text = await error(client, "reset", options={"mode": 3})
        assert "mode 3 is not available" in text and "[0, 4, 8" in text
        text = await error(client, "reset", options={"frameskip": 2})
        assert text.startswith("UnsupportedOption:") and "per episode" in text


def test_construction_options_are_validated() -> None:
    from openenv_mcp.errors import ArgumentError

    with pytest.raises(ArgumentError, match="Did you mean 'breakout'"):
        build_server("atari", game="breakot")
    with pytest.raises(ArgumentError, match=r"available modes: \[0, 1\]"):
        build_server("atari", game="pong", mode=7)
    with pytest.raises(ArgumentError, match="obs_type"):
        build_server("atari", obs_type="depth")


async def test_max_episode_steps_truncates_not_terminates() -> None:
    server = build_server("atari", game="pong", max_episode_steps=5)
    async with Client(server) as client:
        await call(client, "reset", seed=0)
        for _ in range(5):
            last = (await call(client, "noop", frames="none")).structured_content
        assert last["truncated"] and not last["terminated"] and last["status"] == "ended"
        assert (await error(client, "noop")).startswith("ResetNeeded:")


def test_episodes_share_one_screen_space() -> None:
    """A Gymnasium Box of the 210x160x3 screen holds 400 KB of bounds; episodes share one
    (each once carried its own: 1.14 MiB an episode instead of 0.76)."""
    first, second = AtariEnv(AtariConfig(game="pong")), AtariEnv(AtariConfig(game="breakout"))
    try:
        assert first.observation_space is second.observation_space
    finally:
        first.close()
        second.close()
