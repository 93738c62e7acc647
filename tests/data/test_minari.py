"""Minari round trips with the real package: exports that ``recover_environment()``
turns into a working env, ``DataCollector`` around an ``MCPGymEnv`` unchanged,
episodes that did not finish kept (truncated at their last step), frames compressed.

The recorded Pong episodes are made once for the module, on a server in memory;
the tests that start a server from a dataset's spec (a stdio subprocess) are in the
integration tier.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import h5py
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec

from openenv_mcp.client import MCPEnvClient, MCPGymEnv
from openenv_mcp.data.export import export_minari
from openenv_mcp.errors import DependencyNotInstalled
from openenv_mcp.options import cli_args, make_config, parse_cli_options
from openenv_mcp.recording import iter_recordings
from openenv_mcp.registry import env_names, get_env_class
from openenv_mcp.server import ServerSettings, build_server, get_app
from tests.servers import REQUIRED_OPTIONS

minari = pytest.importorskip("minari", reason="the [data] extra installs minari")

#: What Minari asks of a dataset's creator (it warns without each).
ABOUT = {
    "author": "openenv-mcp tests",
    "author_email": "tests@example.invalid",
    "code_permalink": "https://example.invalid/openenv-mcp",
    "description": "collected by tests/data/test_minari.py",
}

#: The issue's bound for 600 Pong steps (they took 64.7 MB before compression).
PONG_600_BOUND = 8 * 1024 * 1024
#: Steps of the episode closed mid-way (replayed through a recovered env).
CLOSED_STEPS = 40


def dataset_bytes(dataset: Any) -> int:
    return sum(f.stat().st_size for f in Path(dataset.storage.data_path).rglob("*") if f.is_file())


@pytest.fixture(scope="module")
def datasets_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("minari")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MINARI_DATASETS_PATH", str(root))
        yield root


@pytest.fixture(scope="module")
def pong_records(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Pong episodes as they end in practice, recorded by a server that still runs:
    one truncated by the env at 600 steps, one closed mid-way, one reset mid-way (and
    its successor never stepped), one abandoned (no end record)."""
    records = tmp_path_factory.mktemp("records")
    settings = ServerSettings(record=str(records))
    server = build_server("atari", game="pong", max_episode_steps=600, settings=settings)
    rng = np.random.default_rng(0)
    env = MCPEnvClient(server).sync()
    try:
        env.reset(seed=0)
        for _ in range(600):
            *_, terminated, truncated, _ = env.step(int(rng.integers(6)))
        assert truncated and not terminated
        closed = env.spawn()
        closed.reset(seed=1)
        for _ in range(CLOSED_STEPS):
            closed.step(int(rng.integers(6)))
        closed.close()
        reset = env.spawn()
        reset.reset(seed=2)
        for _ in range(25):
            reset.step(int(rng.integers(6)))
        reset.reset(seed=3)  # ends the first as "reset"; the second is never stepped
        abandoned = env.spawn()
        abandoned.reset(seed=4)
        for _ in range(10):
            abandoned.step(int(rng.integers(6)))
        yield records  # exported while the last two are still open
    finally:
        env.close()
        import anyio

        anyio.run(get_app(server).aclose)


@pytest.fixture(scope="module")
def pong_dataset(pong_records: Path, datasets_root: Path) -> Any:
    report = export_minari(pong_records, "test/pong-v0")
    assert (report.episodes, report.steps) == (4, 600 + CLOSED_STEPS + 25 + 10)
    assert report.left_out == {"without a step": 1}
    return minari.load_dataset("test/pong-v0")


def test_unfinished_episodes_are_exported_truncated_at_their_last_step(pong_dataset: Any) -> None:
    episodes = list(pong_dataset.iterate_episodes())
    # In the order of their files (by episode handle)
    assert sorted(len(e.actions) for e in episodes) == sorted([600, CLOSED_STEPS, 25, 10])
    for episode in episodes:
        assert not episode.terminations.any()
        assert episode.truncations[-1] and not episode.truncations[:-1].any()
    assert [e.id for e in episodes] == [0, 1, 2, 3]


def test_finished_only_leaves_them_out_and_frames_are_stored_compressed(
    pong_dataset: Any, pong_records: Path, datasets_root: Path
) -> None:
    report = export_minari(pong_records, "test/pong-600-v0", finished_only=True)
    assert (report.episodes, report.steps) == (1, 600)
    assert report.left_out == {
        "incomplete (no end record: the server was stopped, or still runs)": 2,
        "not finished (closed)": 1,
        "not finished (reset)": 1,
    }
    dataset = minari.load_dataset("test/pong-600-v0")
    assert dataset_bytes(dataset) < PONG_600_BOUND
    with h5py.File(Path(dataset.storage.data_path) / "main_data.hdf5") as f:
        assert f["episode_0/observations"].compression == "gzip"
    (episode,) = dataset.iterate_episodes()
    recordings = {len(r.steps): r for r in iter_recordings(pong_records)}
    recorded = recordings[600]
    frames = [recorded.observation, *(s.observation for s in recorded.steps)]
    assert episode.observations.shape == (601, 210, 160, 3)
    assert all(np.array_equal(a, b) for a, b in zip(episode.observations, frames, strict=True))
    assert episode.rewards.tolist() == [s.reward for s in recorded.steps]


def test_the_dataset_carries_an_env_spec_naming_the_served_env(pong_dataset: Any) -> None:
    for spec in (pong_dataset.spec.env_spec, pong_dataset.storage.metadata["eval_env_spec"]):
        spec = spec if isinstance(spec, EnvSpec) else EnvSpec.from_json(spec)
        assert spec.entry_point == "openenv_mcp.client:MCPGymEnv"
        command = spec.kwargs["target"]
        assert command[:3] == ["openenv-mcp", "serve", "atari"]
        assert command[3:] == [
            "--game",
            "pong",
            "--obs-type",
            "rgb",
            "--frameskip",
            "4",
            "--repeat-action-probability",
            "0.25",
            "--no-full-action-space",
            "--max-episode-steps",
            "600",
            "--no-preprocess",
            "--screen-size",
            "84",
            "--noop-max",
            "30",
            "--no-terminal-on-life-loss",
            "--frame-stack",
            "1",
        ]
    assert pong_dataset.storage.metadata["requirements"][0].startswith("openenv-mcp>=")


@pytest.mark.integration
def test_recover_environment_replays_an_exported_episode(pong_dataset: Any) -> None:
    """The recovered eval env starts its own server from the spec; the episode's seed
    and actions give the recorded frames again, exactly. (The env spec's own recovery,
    and a DataCollector's dataset over stdio, run in docs/trainers-data.md's test.)"""
    closed = next(e for e in pong_dataset.iterate_episodes() if len(e.actions) == CLOSED_STEPS)
    seed = pong_dataset.storage.get_episode_metadata([closed.id])
    env = pong_dataset.recover_environment(eval_env=True)
    try:
        assert isinstance(env.unwrapped, MCPGymEnv)
        obs, _ = env.reset(seed=next(iter(seed))["seed"])
        assert np.array_equal(obs, closed.observations[0])
        for action, expected in zip(closed.actions, closed.observations[1:], strict=True):
            obs, *_ = env.step(action)
            assert np.array_equal(obs, expected)
    finally:
        env.close()


# -- MCPGymEnv.spec and DataCollector --------------------------------------------------------


@pytest.mark.parametrize("name", env_names())
def test_cli_args_give_back_every_registered_envs_config(name: str) -> None:
    """A spec's command says the config exactly: its flags parse back to the same config."""
    try:
        config_cls = get_env_class(name).Config
    except DependencyNotInstalled as exc:
        pytest.skip(f"{name} is not installed here: {exc}")
    configs = [config_cls(**REQUIRED_OPTIONS.get(name, {}))]
    extra = {
        "gymnasium": {"id": "FrozenLake-v1", "kwargs": {"map_name": "8x8", "is_slippery": False}},
        "atari": {"game": "breakout", "full_action_space": True, "mode": 1},
        "openspiel": {"game": "kuhn_poker", "game_params": {"players": 2}},
    }
    if name in extra:
        configs.append(make_config(config_cls, extra[name], name))
    for config in configs:
        args = cli_args(config.model_dump(mode="json"))
        (parsed,) = parse_cli_options([config_cls], args, where=name)
        assert make_config(config_cls, parsed, name) == config, args


def test_the_spec_of_an_env_on_a_server_object_serialises_as_its_command() -> None:
    settings = ServerSettings(reward=["harness_examples.rewards:breakout"])
    server = build_server("atari", game="breakout", settings=settings)
    env = MCPGymEnv(server, frames="raw", headers={"Authorization": "Bearer secret"})
    try:
        assert env.spec is not None
        text = env.spec.to_json()
        assert "secret" not in text  # headers stay out of datasets
        kwargs = json.loads(text)["kwargs"]
        assert kwargs["target"][:5] == ["openenv-mcp", "serve", "atari", "--game", "breakout"]
        assert kwargs["target"][-2:] == ["--reward", "harness_examples.rewards:breakout"]
        assert kwargs["frames"] == "raw"
        made = gym.make(env.spec)  # in this process: the same server object, no process
        try:
            assert made.unwrapped.client.session.target is server
        finally:
            made.close()
    finally:
        env.close()


def test_data_collector_wraps_an_mcp_gym_env_unchanged(datasets_root: Path) -> None:
    pytest.importorskip("jax", reason="minari[create] (the test extra) installs jax")
    server = build_server("gymnasium", id="CartPole-v1", render=False)
    env = minari.DataCollector(MCPGymEnv(server))
    try:
        env.action_space.seed(0)
        env.reset(seed=0)
        episodes = 0
        while episodes < 2:
            *_, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                episodes += 1
                # Seeded: DataCollector seeds an unseeded reset with 64 bits, which the
                # server takes once seeds follow Gymnasium's (issue 26, item 2).
                env.reset(seed=episodes)
        dataset = env.create_dataset(
            "test/cartpole-collected-v0", algorithm_name="random", eval_env=env.spec, **ABOUT
        )
    finally:
        env.close()
    assert dataset.total_episodes == 2
    assert dataset.spec.env_spec.kwargs["target"][:5] == [
        "openenv-mcp",
        "serve",
        "gymnasium",
        "--id",
        "CartPole-v1",
    ]
