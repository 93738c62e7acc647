"""The gymnasium env: any registered Gymnasium id behind the openenv-mcp contract.

Real Gymnasium environments throughout (toy_text and classic_control, drawn
with pygame), one registered here for the spaces no built-in uses, and the
server in memory except for one stdio test through the CLI.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import anyio
import gymnasium
import numpy as np
import pytest
from fastmcp import Client
from gymnasium import spaces
from typer.testing import CliRunner

from openenv_mcp.cli import app, parse_env_options
from openenv_mcp.client import MCPEnvClient, MCPGymEnv
from openenv_mcp.codecs import png_from_b64
from openenv_mcp.codecs import to_jsonable as to_json
from openenv_mcp.environment import contract_problems, has_frame, parse_options
from openenv_mcp.errors import (
    ArgumentError,
    DependencyNotInstalled,
    InvalidAction,
    UnsupportedOption,
)
from openenv_mcp.narration import narration_of
from openenv_mcp.registry import get_env_class
from openenv_mcp.server import build_server
from openenv_mcp.spec import EnvSpec, action_schema, model_properties
from openenv_mcp_envs.gymnasium import GymnasiumConfig, GymnasiumEnv, parse_kwargs
from openenv_mcp_envs.gymnasium import env as env_module
from tests.servers import stdio_transport

TEST_ID = "OpenenvTest/Spaces-v0"

# toy_text and classic_control draw their frames with pygame.
needs_pygame = pytest.mark.skipif(
    importlib.util.find_spec("pygame") is None, reason="pygame is not installed"
)


class SpacesEnv(gymnasium.Env[dict[str, Any], np.int64]):
    """A tiny env with a shifted Discrete action and a Dict observation."""

    metadata = {"render_modes": []}  # noqa: RUF012  (gymnasium's own convention)

    def __init__(self, size: int = 3) -> None:
        self.action_space = spaces.Discrete(size, start=-1)
        self.observation_space = spaces.Dict(
            {"position": spaces.Discrete(10), "last": spaces.Discrete(size, start=-1)}
        )
        self.position = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self.position = int(self.np_random.integers(3, 7))
        return {"position": self.position, "last": np.int64(0)}, {"note": "hi"}

    def step(self, action: np.int64) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        self.position = int(np.clip(self.position + int(action), 0, 9))
        obs = {"position": self.position, "last": np.int64(action)}
        return obs, float(action), self.position in (0, 9), False, {}


if TEST_ID not in gymnasium.registry:
    gymnasium.register(TEST_ID, entry_point=SpacesEnv, max_episode_steps=50)


def make(id: str, **options: Any) -> GymnasiumEnv:
    return GymnasiumEnv(GymnasiumConfig(id=id, **options))


# -- construction options --------------------------------------------------------------------


def test_registered_as_gymnasium() -> None:
    assert get_env_class("gymnasium") is GymnasiumEnv


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"map_name": "8x8", "is_slippery": false}', {"map_name": "8x8", "is_slippery": False}),
        ("map_name=8x8,is_slippery=false", {"map_name": "8x8", "is_slippery": False}),
        ('desc=["SF", "HG"], is_slippery=true', {"desc": ["SF", "HG"], "is_slippery": True}),
        ('name="a,b",n=3,x=1.5', {"name": "a,b", "n": 3, "x": 1.5}),
        ("", {}),
    ],
)
def test_kwargs_read_json_or_pairs(text: str, expected: dict[str, Any]) -> None:
    assert parse_kwargs(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": ', "not valid JSON"),
        ("[1, 2]", "key=value pairs"),
        ("natural", "key=value pairs"),
        ('{"render_mode": "human"}', "render_mode"),
        ("autoreset=true", "autoreset"),
    ],
)
def test_bad_kwargs_say_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        build_server("gymnasium", id="Blackjack-v1", kwargs=text)


def test_kwargs_reach_gymnasium_make() -> None:
    env = make("FrozenLake-v1", kwargs="map_name=8x8,is_slippery=false", render=False)
    assert env.gymnasium_env.observation_space == spaces.Discrete(64)
    assert env.metadata()["config"]["kwargs"] == {"map_name": "8x8", "is_slippery": False}
    env.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"id": "Blackjak-v1"}, "Did you mean: `Blackjack`"),
        ({"id": "CartPole-v9"}, "v0.*v1"),
        ({"id": "Taxi-v3"}, "Taxi-v4"),
        ({"id": "nosuchmodule:Thing-v0"}, "nosuchmodule"),
        ({"id": "CartPole-v1", "kwargs": "gravity=3"}, "unexpected keyword argument 'gravity'"),
        ({"id": "CartPole-v1", "max_episode_steps": 0}, "max_episode_steps"),
        ({"id": "CartPole-v1", "frames": True}, "unknown option 'frames'"),
    ],
)
def test_bad_options_fail_clearly(options: dict[str, Any], message: str) -> None:
    with pytest.raises((ArgumentError, DependencyNotInstalled), match=message):
        build_server("gymnasium", **options)


def test_cli_flags_and_describe() -> None:
    options = parse_env_options(
        GymnasiumEnv, ["--id", "FrozenLake-v1", "--kwargs", "is_slippery=false", "--no-render"]
    )
    assert options == {"id": "FrozenLake-v1", "kwargs": "is_slippery=false", "render": False}
    result = CliRunner().invoke(
        app, ["describe", "gymnasium", "--id", "Blackjack-v1", "--no-render"]
    )
    assert result.exit_code == 0, result.output
    assert "STICK" in result.output and "take another card" in result.output
    assert "hit(" in result.output and "stick(" in result.output
    bad = CliRunner().invoke(app, ["describe", "gymnasium", "--id", "Blackjak-v1"])
    assert bad.exit_code == 2 and "Blackjack" in bad.output


def test_max_episode_steps_truncates() -> None:
    env = make("CartPole-v1", max_episode_steps=3, render=False)
    env.reset(seed=0)
    results = [env.step(env.parse_action("LEFT")) for _ in range(3)]
    assert [r.truncated for r in results] == [False, False, True]
    assert not any(r.terminated for r in results)
    env.close()


# -- actions -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("id", "names"),
    [
        ("Blackjack-v1", ["STICK", "HIT"]),
        ("CartPole-v1", ["LEFT", "RIGHT"]),
        ("MountainCar-v0", ["LEFT", "NOOP", "RIGHT"]),
        ("Acrobot-v1", ["NEGATIVE_TORQUE", "NO_TORQUE", "POSITIVE_TORQUE"]),
        ("FrozenLake8x8-v1", ["LEFT", "DOWN", "RIGHT", "UP"]),
        ("CliffWalking-v1", ["UP", "RIGHT", "DOWN", "LEFT"]),
        ("Taxi-v4", ["SOUTH", "NORTH", "EAST", "WEST", "PICKUP", "DROPOFF"]),
        ("ALE/Pong-v5", ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]),
        (TEST_ID, ["ACTION_0", "ACTION_1", "ACTION_2"]),
    ],
)
def test_discrete_actions_are_named(id: str, names: list[str]) -> None:
    env = make(id, render=False)
    assert env.action_set is not None and env.action_set.names == names
    if id.startswith(("Blackjack", "Taxi")):
        assert all(a.meaning for a in env.action_set)
    env.close()


def test_discrete_start_is_honoured() -> None:
    """Action values are the space's own (-1, 0, 1 for Discrete(3, start=-1)); the
    names stand for them."""
    env = make(TEST_ID)
    assert env.action_set is not None and env.action_set[0].id == -1
    obs, _ = env.reset(seed=1)
    result = env.step(env.parse_action("ACTION_0"))
    assert result.reward == -1.0 and result.observation["last"] == -1
    assert result.observation["position"] == obs["position"] - 1
    assert env.step(env.parse_action(1)).reward == 1.0
    with pytest.raises(InvalidAction, match=r"legal: -1\.\.1 \(ACTION_0, ACTION_1, ACTION_2\)"):
        env.parse_action(2)
    env.close()


def test_box_actions_parse_with_clear_errors() -> None:
    env = make("Pendulum-v1", render=False)
    assert env.action_set is None
    schema = action_schema(env)
    assert schema["type"] == "array" and schema["items"]["maximum"] == 2.0
    assert env.action_space == spaces.Box(-2.0, 2.0, (1,), np.float32)
    env.reset(seed=0)
    assert env.step(env.parse_action([0.5])).reward <= 0
    assert env.parse_action(0.5).shape == (1,)  # a bare number for a one-element Box
    with pytest.raises(InvalidAction, match=r"out of bounds.*low -2, high 2"):
        env.parse_action([5])
    with pytest.raises(InvalidAction, match=r"shape \[1\].*got shape \[2\]"):
        env.parse_action([0.1, 0.2])
    with pytest.raises(InvalidAction, match="got str"):
        env.parse_action("left")
    with pytest.raises(InvalidAction, match="NaN"):
        env.parse_action([float("nan")])
    env.close()


# -- observations, text, frames ----------------------------------------------------------------


@needs_pygame
def test_blackjack_observation_space_and_words() -> None:
    env = make("Blackjack-v1")
    assert env.observation_space == spaces.Tuple(
        (spaces.Discrete(32), spaces.Discrete(11), spaces.Discrete(2))
    )
    assert has_frame(env) and "usable ace" in env.metadata()["observation"]
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs) and isinstance(obs, tuple)
    player, _dealer, ace = obs
    assert info["text"].startswith(f"player sum {player}, dealer shows ")
    assert info["text"].endswith("usable ace: " + ("yes" if ace else "no"))
    assert env.state() == {"text": info["text"]}
    env.close()


@pytest.mark.parametrize(
    ("id", "words"),
    [
        ("CartPole-v1", "pole angle"),
        ("MountainCar-v0", "goal at 0.5"),
        ("Acrobot-v1", "tip height"),
        ("Pendulum-v1", "0 is upright"),
        ("FrozenLake-v1", "@FFF/FHFH/FFFH/HFFG"),
        ("CliffWalking-v1", "row 3, col 0 of the 4x12 grid"),
        ("Taxi-v4", "destination"),
        (TEST_ID, '"position"'),
        ("ALE/Pong-v5", "a 210x160x3 uint8 array"),
    ],
)
def test_every_known_env_reads_out_in_words(id: str, words: str) -> None:
    env = make(id, render=False)
    _, info = env.reset(seed=0)
    assert words in info["text"]
    env.close()


def test_array_observations_keep_shape_and_bounds() -> None:
    env = make("CartPole-v1", render=False)
    space = env.observation_space
    assert isinstance(space, spaces.Box) and (space.shape, space.dtype) == ((4,), np.float32)
    assert not has_frame(env)
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32
    assert env.render() is None
    env.close()


@needs_pygame
@pytest.mark.parametrize("id", ["Blackjack-v1", "CartPole-v1", "FrozenLake-v1", "Taxi-v4"])
def test_frames_are_rgb_arrays(id: str) -> None:
    env = make(id)
    assert env.render() is None  # nothing to draw before reset
    env.reset(seed=0)
    frame = env.render()
    assert frame is not None and frame.dtype == np.uint8 and frame.ndim == 3
    assert frame.shape[2] == 3 and frame.flags.c_contiguous
    env.close()


@needs_pygame
def test_closing_one_episode_leaves_the_others_drawing() -> None:
    # Blackjack's close() calls pygame.quit(); the wrapper detaches first.
    first, second = make("Blackjack-v1"), make("Blackjack-v1")
    first.reset(seed=1)
    second.reset(seed=2)
    assert first.render() is not None
    first.close()
    frame = second.render()
    assert frame is not None and frame.shape[2] == 3
    second.close()


def test_missing_pygame_is_named_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(env_module, "_MODES", {})
    monkeypatch.setattr(env_module, "_PYGAME_MISSING", {})
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pygame" else real(name, *a)
    )
    with pytest.raises(DependencyNotInstalled, match=r"openenv-mcp\[gymnasium\].*--no-render"):
        make("CartPole-v1")
    make("CartPole-v1", render=False).close()  # without frames pygame is not needed


# -- seeds, options, snapshots -----------------------------------------------------------------


def rollout(env: GymnasiumEnv, seed: int | None, actions: list[Any]) -> list[Any]:
    obs, _ = env.reset(seed=seed)
    seen = [to_json(obs)]
    for action in actions:
        result = env.step(env.parse_action(action))
        seen.append((to_json(result.observation), result.reward, result.terminated))
        if result.terminated or result.truncated:
            break
    return seen


@pytest.mark.parametrize(
    ("id", "kwargs", "actions"),
    [
        ("Blackjack-v1", "", ["HIT", "HIT", "STICK"]),
        ("FrozenLake-v1", "is_slippery=true", ["RIGHT", "DOWN"] * 5),
        ("CartPole-v1", "", ["LEFT", "RIGHT"] * 5),
    ],
)
def test_seeds_reproduce_episodes(id: str, kwargs: str, actions: list[str]) -> None:
    a, b = make(id, kwargs=kwargs, render=False), make(id, kwargs=kwargs, render=False)
    assert rollout(a, 11, actions) == rollout(b, 11, actions)
    assert rollout(a, 11, actions) == rollout(a, 11, actions)
    episodes = {str(rollout(a, seed, actions)) for seed in range(12)}
    assert len(episodes) > 1  # different seeds, different episodes
    a.close()
    b.close()


def test_reset_options_pass_through_or_are_refused() -> None:
    """Options are checked against the env's Options (as the server does before reset),
    then passed to Gymnasium's reset as given."""
    env = make("CartPole-v1", render=False)
    assert set(model_properties(env.Options)) == {"low", "high"}
    obs, _ = env.reset(seed=0, options=parse_options(env, {"low": 0.2, "high": 0.21}))
    assert np.all((obs >= 0.2) & (obs <= 0.21))
    obs, _ = env.reset(seed=0, options=parse_options(env, {"low": 0}))
    assert np.all((obs >= 0) & (obs <= 0.05))  # an integer is a number; high: the default
    with pytest.raises(UnsupportedOption, match=r"option 'high': Input should be a valid number"):
        parse_options(env, {"high": None})
    with pytest.raises(UnsupportedOption, match=r"'lo'.*Did you mean 'low'"):
        parse_options(env, {"lo": 1})
    with pytest.raises(UnsupportedOption, match=r"option 'low': Input should be a valid number"):
        parse_options(env, {"low": "0.2"})
    env.close()
    pendulum = make("Pendulum-v1", render=False)
    assert set(EnvSpec.of(pendulum).options) == {"x_init", "y_init"}
    pendulum.close()
    blackjack = make("Blackjack-v1", render=False)
    assert blackjack.Options is None
    with pytest.raises(UnsupportedOption, match="Per-episode options: none"):
        parse_options(blackjack, {"natural": True})
    blackjack.close()


@pytest.mark.parametrize("id", ["Blackjack-v1", "CartPole-v1", "FrozenLake-v1", TEST_ID])
def test_an_unseeded_reset_continues_the_stream(id: str) -> None:
    """reset(seed=None) goes on with the environment's own np_random (Gymnasium's meaning):
    after the same seeded reset, two instances start the same unseeded episodes."""
    kwargs = "is_slippery=true" if id.startswith("FrozenLake") else ""
    a, b = make(id, kwargs=kwargs, render=False), make(id, kwargs=kwargs, render=False)
    assert not contract_problems(a)
    action = a.action_set.names[-1] if a.action_set else None
    for env in (a, b):
        env.reset(seed=7)
    for _ in range(4):
        assert rollout(a, None, [action] * 4) == rollout(b, None, [action] * 4)
    a.close()
    b.close()


def test_narration_titles_and_words() -> None:
    env = make("CartPole-v1", render=False)
    obs, info = env.reset(seed=0)
    narration = narration_of(env)
    assert narration.title == "Gymnasium CartPole-v1" == EnvSpec.of(env).title
    assert narration.observation_text(obs) == info["text"]
    env.close()


@needs_pygame
@pytest.mark.parametrize("id", ["Blackjack-v1", "CartPole-v1", "Taxi-v4", "FrozenLake-v1"])
def test_snapshots_restore_exactly_even_after_drawing(id: str) -> None:
    env = make(id)
    env.reset(seed=5)
    env.render()  # pygame surfaces now hang off the env; they cannot be copied
    snap = env.snapshot()
    action = env.action_set.names[1] if env.action_set else None
    first = [env.step(env.parse_action(action)) for _ in range(3)]
    frame = env.render()
    for _ in range(2):  # one snapshot, restored twice
        env.restore(snap)
        again = [env.step(env.parse_action(action)) for _ in range(3)]
        assert [to_json(r.observation) for r in again] == [to_json(r.observation) for r in first]
        assert [r.reward for r in again] == [r.reward for r in first]
        assert np.array_equal(env.render(), frame)
    other = make(id)  # a snapshot restores into any instance of the same config
    other.restore(snap)
    assert to_json(other.step(other.parse_action(action)).observation) == to_json(
        first[0].observation
    )
    env.close()
    other.close()


# -- over MCP ----------------------------------------------------------------------------------


@needs_pygame
@pytest.mark.anyio
async def test_blackjack_over_mcp_tools_text_and_image() -> None:
    server = build_server("gymnasium", id="Blackjack-v1")
    with anyio.fail_after(60):
        async with Client(server) as client:
            tools = {t.name: t for t in await client.list_tools()}
            assert {"reset", "step", "state", "stick", "hit", "snapshot"} <= set(tools)
            assert "take another card" in (tools["hit"].description or "")
            assert "Gymnasium Blackjack-v1" in (tools["reset"].description or "")
            reset = await client.call_tool("reset", {"seed": 3})
            assert reset.structured_content is not None
            assert isinstance(reset.structured_content["observation"], list)
            text = reset.content[0].text  # type: ignore[union-attr]
            assert "player sum" in text and "Legal actions: STICK = stop taking cards" in text
            image = reset.content[1]
            assert image.type == "image"
            assert png_from_b64(image.data).shape[2] == 3  # type: ignore[union-attr]
            hit = await client.call_tool("hit", {})
            assert hit.structured_content is not None
            assert hit.structured_content["step"] == 1
            bad = await client.call_tool("step", {"action": "DOUBLE"}, raise_on_error=False)
            assert bad.is_error
            assert "Legal: 0-1 (STICK, HIT)" in bad.content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_mcp_client_drives_gymnasium_and_forks_snapshots() -> None:
    server = build_server("gymnasium", id="Blackjack-v1", render=False)
    with anyio.fail_after(60):
        async with MCPEnvClient(server) as env:
            assert env.get_action_meanings() == ["STICK", "HIT"]
            _, info = await env.reset(seed=9)
            assert info["text"].startswith("player sum")
            handle = await env.snapshot()
            fork = env.spawn()
            outcomes = []
            for client in (env, fork, env):
                await client.reset(from_snapshot=handle)
                outcomes.append(await client.step("HIT"))
            assert outcomes[0][0] == outcomes[1][0] == outcomes[2][0]
            assert outcomes[0][1] == outcomes[1][1] == outcomes[2][1]
            await fork.close()


# CartPole's own velocity bounds are infinite; check_env says so for the original too.
@pytest.mark.filterwarnings("ignore:.*infinity:UserWarning")
def test_cartpole_through_the_gym_adapter_passes_check_env() -> None:
    from gymnasium.utils.env_checker import check_env

    with MCPEnvClient(build_server("gymnasium", id="CartPole-v1", render=False)).sync() as env:
        gym_env = MCPGymEnv.from_client(env)
        assert gym_env.observation_space.shape == (4,)
        check_env(gym_env, skip_render_check=True)


@pytest.mark.integration
@pytest.mark.anyio
async def test_serve_gymnasium_over_stdio_with_kwargs() -> None:
    transport = stdio_transport(
        "gymnasium", "--id", "FrozenLake-v1", "--kwargs", "is_slippery=false", "--no-render"
    )
    with anyio.fail_after(90):
        async with Client(transport) as client:
            await client.call_tool("reset", {"seed": 0})
            for action in ("right", "right", "down", "down", "down"):
                await client.call_tool(action, {})
            last = await client.call_tool("right", {})
            assert last.structured_content is not None
            assert last.structured_content["reward"] == 1.0
            assert last.structured_content["terminated"] is True


def test_an_advisory_mask_is_passed_on_not_enforced() -> None:
    """Taxi's info["action_mask"] says which actions change the state; a masked action is
    a legal, penalised step in Gymnasium, so it must be one through MCP too."""
    reference = gymnasium.make("Taxi-v4")
    env = MCPGymEnv(build_server("gymnasium", id="Taxi-v4"))
    try:
        _, info = reference.reset(seed=3)
        _, served_info = env.reset(seed=3)
        assert list(served_info["action_mask"]) == list(info["action_mask"])
        pickup = 4
        assert not info["action_mask"][pickup]  # no passenger here: masked
        expected = reference.step(pickup)
        got = env.step(pickup)
        assert got[1] == expected[1] == -10 and got[2:4] == expected[2:4]
    finally:
        env.close()
        reference.close()
