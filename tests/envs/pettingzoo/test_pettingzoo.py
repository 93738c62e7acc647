"""PettingZoo over MCP with the real ``pettingzoo`` envs (``serve pettingzoo --id ...``).

Unit tier: ids in every spelling and the unknown ones refused; the contract (check_env)
for the classic games; the agent against seeded random players (AEC and parallel);
names, refusals, frames and snapshots; tic-tac-toe played to its end through the
in-memory MCP server. Integration tier: the same game over stdio, by its module path.
"""

from __future__ import annotations

import pickle
from typing import Any

import anyio
import numpy as np
import pytest
from fastmcp import Client
from pydantic import ValidationError
from typer.testing import CliRunner

from openenv_mcp.authoring.testing import check_env
from openenv_mcp.cli import app
from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import ArgumentError, DependencyNotInstalled, InvalidAction, ResetNeeded
from openenv_mcp.narration import narration_of
from openenv_mcp.registry import get_env_class
from openenv_mcp.server import ServerSettings, build_server
from openenv_mcp.spaces import NamedDiscrete
from openenv_mcp.tasks import Ending
from openenv_mcp_envs.pettingzoo import (
    PettingZooConfig,
    PettingZooEnv,
    classic_games,
    list_ids,
    resolve,
)
from tests.servers import CLI


def make(id: str = "tictactoe_v3", **options: Any) -> PettingZooEnv:
    return PettingZooEnv(PettingZooConfig(id=id, **options))


def play(env: PettingZooEnv, seed: int) -> list[Any]:
    """A whole episode, the agent playing its first legal action: its trace."""
    _, info = env.reset(seed=seed)
    trace: list[Any] = [info["text"], info["moves"]]
    for _ in range(500):
        result = env.step(env.parse_action(info["legal_actions"][0]))
        info = result.info
        trace += [info["text"], info["moves"], result.reward]
        if result.terminated or result.truncated:
            return trace
    raise AssertionError("the game did not end within 500 agent moves")


# -- ids ---------------------------------------------------------------------------------------


def test_registered_as_pettingzoo() -> None:
    assert get_env_class("pettingzoo") is PettingZooEnv


@pytest.mark.parametrize(
    "spelling",
    [
        "tictactoe_v3",
        "tictactoe-v3",
        "tictactoe",
        " classic/tictactoe_v3 ",
        "classic/tictactoe-v3",
        "classic.tictactoe_v3",
        "pettingzoo.classic.tictactoe_v3",
        "pettingzoo.classic.tictactoe.tictactoe",
    ],
)
def test_an_id_in_every_spelling(spelling: str) -> None:
    found = resolve(spelling)
    assert (found.id, found.registry_id, found.family) == (
        "tictactoe_v3",
        "classic/tictactoe-v3",
        "classic",
    )
    assert found.aec is not None and found.parallel is None


def test_the_classic_games_are_listed() -> None:
    games = classic_games()
    assert {
        "tictactoe_v3",
        "connect_four_v3",
        "chess_v6",
        "go_v5",
        "rps_v2",
        "texas_holdem_v4",
    } <= set(games)
    assert "pistonball_v6" in list_ids()["butterfly"]
    assert resolve("rps_v2").parallel is not None  # every agent moves at once


@pytest.mark.parametrize(
    ("id", "named"),
    [
        ("tictactoo_v3", "Close: tictactoe_v3"),
        ("classic/connect_five_v3", "connect_four_v3"),
        ("chess_v5", "Close: chess_v6"),
        ("nothing at all", "The classic games: chess_v6, connect_four_v3"),
    ],
)
def test_an_unknown_id_names_close_ones_and_the_classic_games(id: str, named: str) -> None:
    with pytest.raises(ArgumentError, match="unknown PettingZoo environment") as caught:
        make(id)
    assert named in str(caught.value) and "tictactoe_v3" in str(caught.value)
    with pytest.raises(ArgumentError, match="unknown PettingZoo environment"):
        build_server("pettingzoo", id=id)


def test_references_to_an_env_of_another_package() -> None:
    made = make("pettingzoo.classic.connect_four.connect_four:env")
    assert made.game.possible_agents == ["player_0", "player_1"] and not made.game.parallel
    # a game this package does not know: ids for names, the observation described
    _, info = made.reset(seed=0)
    assert info["legal_action_names"] == [str(i) for i in range(7)]
    assert info["text"].startswith("You are player_0; observation: a 6x7x2 int8 array")
    # ...or its ansi render, where it has one and draws no frames
    drawn = make("pettingzoo.classic.chess.chess:env", render=False)
    assert drawn.game.mode == "ansi"
    assert drawn.reset(seed=0)[1]["text"].startswith("r n b q k b n r\np p p p")
    simultaneous = make("pettingzoo.classic.rps.rps:parallel_env")
    assert simultaneous.game.parallel
    with pytest.raises(ArgumentError, match="no callable 'nothing'"):
        make("pettingzoo.classic.rps.rps:nothing")
    with pytest.raises(DependencyNotInstalled, match="could not be imported"):
        make("no_such_package_here:env")


def test_bad_configs_fail_clearly() -> None:
    with pytest.raises(ArgumentError, match="its agents: player_1, player_2"):
        make(agent="player_0")
    with pytest.raises(ValidationError, match="'render_mode' cannot be passed through kwargs"):
        make(kwargs="render_mode=human")
    with pytest.raises(ArgumentError, match="has no parallel API"):
        make(api="parallel")
    with pytest.raises(ArgumentError, match="bad kwargs"):
        make("connect_four_v3", kwargs={"rows": 7})
    with pytest.raises(ArgumentError, match="only discrete action spaces"):
        make("multiwalker_v9")
    with pytest.raises(ValidationError, match="key=value pairs"):
        make("go_v5", kwargs="board_size")


def test_kwargs_reach_the_env() -> None:
    env = make("go_v5", kwargs="board_size=5,komi=0.5")
    assert env.action_space == NamedDiscrete(26) and env.game.kwargs == {
        "board_size": 5,
        "komi": 0.5,
    }
    assert "Komi 0.5" in env.reset(seed=0)[1]["text"]
    assert make("rps_v2", kwargs='{"num_actions": 5}').action_space.n == 5


def test_describe_and_metadata() -> None:
    meta = make("connect_four_v3").metadata()
    assert meta["registry_id"] == "classic/connect_four-v3" and meta["api"] == "aec"
    assert meta["agents"] == ["player_0", "player_1"] and meta["classic_games"] == classic_games()
    result = CliRunner().invoke(app, ["describe", "pettingzoo", "--id", "rps_v2"])
    assert result.exit_code == 0, result.output
    assert "--agent" in result.output and "PettingZoo rock-paper-scissors" in result.output


# -- the contract ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"id": "tictactoe_v3"},
        {"id": "connect_four_v3", "agent": "player_1"},
        {"id": "rps_v2"},  # parallel: the agent and its opponent move at once
        {"id": "rps_v2", "api": "aec"},
        {"id": "texas_holdem_v4"},
        {"id": "leduc_holdem_v4", "agent": "player_1"},
        {"id": "texas_holdem_no_limit_v6"},
        {"id": "hanabi_v5", "kwargs": {"colors": 2, "ranks": 2, "hand_size": 2}},
        {"id": "chess_v6"},  # boolean planes: their schema says boolean
        {"id": "go_v5", "kwargs": {"board_size": 5}},
    ],
)
def test_check_env(options: dict[str, Any]) -> None:
    report = check_env(PettingZooEnv, worker=False, **options)
    assert report.ok, report


def test_spaces_observations_and_info() -> None:
    env = make("tictactoe_v3")
    assert env.action_space == NamedDiscrete(9)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.int8 and obs.shape == (3, 3, 2) and not obs.any()
    assert info["agent"] == "player_1" and info["to_move"] == ["player_1"]
    assert info["action_mask"] == [1] * 9 and info["legal_actions"] == list(range(9))
    assert info["legal_action_names"][4] == "center"
    result = env.step(env.parse_action("center"))
    assert result.observation[1, 1].tolist() == [1, 0]  # the agent's mark in its own plane
    assert [m["agent"] for m in result.info["moves"]] == ["player_1", "player_2"]
    assert result.info["moves"][0] == {"agent": "player_1", "action": 4, "name": "center"}
    assert sum(result.info["action_mask"]) == 7


def test_the_random_players_are_seeded() -> None:
    env = make("connect_four_v3")
    assert play(env, seed=4) == play(env, seed=4)
    assert play(env, seed=4) != play(env, seed=5)
    poker = make("texas_holdem_v4")
    assert poker.reset(seed=9)[1]["text"] == poker.reset(seed=9)[1]["text"]


def test_the_agent_may_play_second() -> None:
    env = make("tictactoe_v3", agent="player_2")
    obs, info = env.reset(seed=1)
    assert sum(info["action_mask"]) == 8 and obs[..., 1].sum() == 1  # X has moved
    assert info["moves"][0]["agent"] == "player_1"


def test_an_episode_starts_on_the_agents_turn_even_after_a_fold() -> None:
    env = make("leduc_holdem_v4", agent="player_1")
    for seed in range(30):  # the first to act folds in some of these deals
        _, info = env.reset(seed=seed)
        assert info["legal_actions"] and info["to_move"] == ["player_1"]


def test_a_simultaneous_game() -> None:
    env = make("rps_v2", kwargs="max_cycles=3")
    obs, info = env.reset(seed=0)
    assert obs == 3 and info["to_move"] == ["player_0", "player_1"]  # 3: nothing played yet
    result = env.step(env.parse_action("rock"))
    both = result.info["moves"]
    assert [m["agent"] for m in both] == ["player_0", "player_1"]
    assert result.observation == both[1]["action"]  # the opponent's choice, seen after
    assert result.reward == {0: 0.0, 1: -1.0, 2: 1.0}[both[1]["action"]]
    env.step(0)
    last = env.step(0)
    assert last.truncated and not last.terminated
    assert last.info["returns"]["player_0"] == -last.info["returns"]["player_1"]


def test_illegal_actions_are_refused_naming_the_legal_ones() -> None:
    env = make("tictactoe_v3")
    env.reset(seed=0)
    env.step(env.parse_action(0))
    with pytest.raises(InvalidAction, match="not legal now; legal: "):
        env.parse_action(0)
    with pytest.raises(InvalidAction, match="Did you mean"):
        env.parse_action("centre")
    with pytest.raises(InvalidAction, match="expected a legal action id"):
        env.parse_action(1.5)


def test_frames_where_the_env_draws_them() -> None:
    env = make("connect_four_v3")
    env.reset(seed=0)
    frame = env.render()
    assert env.render_mode == "rgb_array" and frame is not None
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
    assert make("texas_holdem_v4").render_mode is None  # every hand is drawn: no frame
    assert make("tictactoe_v3", render=False).render_mode is None


def test_snapshots_restore_the_game_and_the_players() -> None:
    env = make("connect_four_v3")
    env.reset(seed=2)
    env.step(3)
    saved = pickle.loads(pickle.dumps(env.snapshot()))
    ahead = [env.step(env.parse_action(a)).info["text"] for a in (3, 4)]
    again = make("connect_four_v3")
    again.restore(saved)
    assert [again.step(again.parse_action(a)).info["text"] for a in (3, 4)] == ahead


def test_instructions_name_the_game_the_seat_and_the_players() -> None:
    text = narration_of(make("chess_v6", agent="player_1")).instructions()
    assert "PettingZoo chess (chess_v6" in text and "You are player_1" in text
    assert "random legal moves" in text and "UCI" in text
    assert "at once" in narration_of(make("rps_v2")).instructions()
    assert "imperfect" in narration_of(make("texas_holdem_v4")).instructions()


def test_tasks_are_seeded_games_to_win_from_the_seat() -> None:
    tasks = make("tictactoe_v3", agent="player_2").task_set()
    first = tasks.tasks("test")[0]
    assert first.id == "tictactoe_v3.player_2-test-0000" and first.seed == 2_000_000
    go = make("go_v5", kwargs="board_size=5").task_set().tasks("train")[0].id
    assert go.startswith("go_v5.") and go.endswith(".black_0-train-0000") and len(go) == 33

    def ending(returns: dict[str, float], terminated: bool = True) -> Ending:
        info = {"agent": "player_2", "returns": returns}
        return Ending(
            episode_return=returns["player_2"],
            env_return=returns["player_2"],
            steps=4,
            terminated=terminated,
            truncated=not terminated,
            info=info,
        )

    assert tasks.success(first, ending({"player_1": -1.0, "player_2": 1.0}))
    assert not tasks.success(first, ending({"player_1": 0.0, "player_2": 0.0}))  # a draw
    assert not tasks.success(first, ending({"player_1": -1.0, "player_2": 1.0}, False))
    assert tasks.success(first, ending({"player_1": 3.0, "player_2": 3.0}))  # a shared score


# -- over MCP ----------------------------------------------------------------------------------


def _full_game(client: Any) -> list[Any]:
    _, info = client.reset(seed=3)
    trace = [info["text"]]
    while True:
        _, reward, terminated, truncated, info = client.step(info["legal_action_names"][0])
        trace += [info["text"], reward]
        if terminated or truncated:
            return trace


def test_tictactoe_to_the_end_in_memory() -> None:
    server = build_server("pettingzoo", id="tictactoe_v3")
    with MCPEnvClient(server).sync() as client:
        obs, info = client.reset(seed=0)
        assert obs.shape == (3, 3, 2) and list(info["action_mask"]) == [1] * 9
        legal = client.call("legal_actions")
        assert legal["actions"][4] == {"id": 4, "name": "center"}
        trace = _full_game(client)
        assert trace[-1] in (-1.0, 0.0, 1.0)
        assert "Game over; returns: player_1" in trace[-2]
        with pytest.raises(ResetNeeded):
            client.step(0)
        client.reset(seed=0)
        with pytest.raises(InvalidAction, match="Legal: 0=top-left"):
            client.step("top-lft")
    with MCPEnvClient(build_server("pettingzoo", id="tictactoe_v3")).sync() as client:
        assert _full_game(client) == trace  # the same seed, the same game


def test_chess_by_move_names_in_memory() -> None:
    server = build_server("pettingzoo", id="chess_v6", render=False)
    with MCPEnvClient(server).sync() as client:
        obs, info = client.reset(seed=0)
        assert obs.shape == (8, 8, 111) and obs.dtype == np.bool_
        assert len(info["legal_actions"]) == 20 and "e2e4" in info["legal_action_names"]
        _, _, _, _, info = client.step("e2e4")
        assert "FEN: " in info["text"] and info["moves"][0]["name"] == "e2e4"
        assert len(info["moves"]) == 2  # black answered


def test_agent_profile_tools_and_text() -> None:
    settings = ServerSettings(profile="agent")

    async def run(server: Any, action: str) -> tuple[set[str], str, str, int]:
        async with Client(server) as client:
            names = {t.name for t in await client.list_tools()}
            reset = await client.call_tool("reset", {"seed": 0})
            step = await client.call_tool("step", {"action": action})
            images = sum(1 for c in step.content if c.type == "image")
            return names, reset.content[0].text, step.content[0].text, images

    # Go's board is long: the frame shows it, the text says whose turn and what is legal
    server = build_server("pettingzoo", settings=settings, id="go_v5")
    names, reset, step, images = anyio.run(run, server, "D4")
    assert names == {"reset", "step", "state", "legal_actions"}
    assert "Your turn (black_0)" in reset and "362 legal actions: 0=A19" in reset
    assert "white_0 played " in step and images == 1
    # tic-tac-toe's board is short: in words too
    server = build_server("pettingzoo", settings=settings, id="tictactoe_v3")
    _, reset, step, _ = anyio.run(run, server, "center")
    assert "Observation: . . .\n. . .\n. . .\n" in reset and "9 legal actions: 0=top-left" in reset
    assert "player_2 played " in step and ". X " in step


@pytest.mark.integration
def test_tictactoe_over_stdio_by_its_module_path() -> None:
    command = [*CLI, "serve", "pettingzoo", "--stdio", "--id", "pettingzoo.classic.tictactoe_v3"]
    with MCPEnvClient(command).sync() as client:
        over_stdio = _full_game(client)
    with MCPEnvClient(build_server("pettingzoo", id="tictactoe_v3")).sync() as client:
        assert _full_game(client) == over_stdio
