"""The OpenSpiel env's task set: per game, random and MCTS opponents as difficulties, seats
and seeds as tasks, and success as a win, judged at the end of real games over MCP
(OpenSpiel's own games and bots)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.environment import parse_options
from openenv_mcp.errors import ArgumentError, UnsupportedOption
from openenv_mcp.server import build_server
from openenv_mcp.tasks import Ending, UnknownTask
from openenv_mcp_envs.openspiel._tasks import MCTS_LEVELS, SIZES, OpenSpielTasks
from openenv_mcp_envs.openspiel.env import OpenSpielConfig, OpenSpielEnv

#: Seconds any one MCP conversation here may take.
LIMIT = 120


def make(**config: Any) -> OpenSpielEnv:
    return OpenSpielEnv(OpenSpielConfig(**config))


@pytest.fixture
def env() -> Iterator[OpenSpielEnv]:
    made = make(game="tic_tac_toe")
    yield made
    made.close()


# -- the set ------------------------------------------------------------------------------------


def test_splits_and_sizes_locally_and_over_mcp(env: OpenSpielEnv) -> None:
    tasks = env.task_set()
    assert [(s.name, s.type) for s in tasks.splits()] == [
        ("train", "train"),
        ("validation", "validation"),
        ("test", "test"),
    ]
    levels = 1 + len(MCTS_LEVELS)
    expected = [{"name": n, "type": n, "tasks": size * levels} for n, size in SIZES.items()]

    async def main() -> list[dict[str, Any]]:
        with anyio.fail_after(LIMIT):
            async with MCPEnvClient(build_server("openspiel", game="tic_tac_toe")) as client:
                return client.splits

    assert anyio.run(main) == expected


def test_check_finds_nothing_wrong(env: OpenSpielEnv) -> None:
    assert env.task_set().check() == []


def test_tasks_interleave_opponents_and_seats(env: OpenSpielEnv) -> None:
    tasks = env.task_set()
    assert [tasks.task("test", i).difficulty for i in range(5)] == [
        "random",
        "mcts10",
        "mcts100",
        "mcts1000",
        "random",
    ]
    first, strong = tasks.task("test", 0), tasks.task("test", 7)
    assert first.id == "tic_tac_toe-random-test-0000" and first.seed == 2_000_000
    assert dict(first.options) == {"player": 0, "opponent": "random"}
    assert strong.id == "tic_tac_toe-mcts1000-test-0001"
    assert dict(strong.options) == {"player": 1, "opponent": "mcts", "mcts_simulations": 1000}
    assert strong.data == {"game": "tic_tac_toe()", "player": 1, "players": 2}
    for split, index in (("train", 0), ("validation", 101), ("test", 199), ("train", 3999)):
        task = tasks.task(split, index)
        assert tasks.locate(task.id) == (split, index, task)
    seeds = {s.name: {t.seed for t in tasks.tasks(s.name)[:200]} for s in tasks.splits()}
    assert not seeds["train"] & seeds["validation"] and not seeds["validation"] & seeds["test"]


def test_each_game_has_its_own_set() -> None:
    tic, catch, hexed = make(game="tic_tac_toe"), make(game="catch"), make(game="hex(board_size=5)")
    cribbage = make(game="cribbage")
    try:
        assert tic.task_set() is make(game="tic_tac_toe").task_set()  # cached per game
        solo = catch.task_set()
        assert [t.difficulty for t in solo.tasks("test")[:3]] == ["solo"] * 3
        assert dict(solo.task("test", 0).options) == {"player": 0}
        assert solo.task("test", 0).id == "catch-solo-test-0000"
        prefix = hexed.task_set().task("train", 0).id.split("-")[0]
        assert re.fullmatch(r"hex\.[0-9a-f]{8}", prefix)
        assert hexed.task_set().task("train", 0).data["game"] == "hex(board_size=5)"
        # OpenSpiel's MCTS cannot play a game that rewards along the way: random alone
        assert {t.difficulty for t in cribbage.task_set().tasks("test")} == {"random"}
        with pytest.raises(UnknownTask, match="cribbage-DIFFICULTY-SPLIT-NNNN"):
            cribbage.task_set().locate("cribbage-mcts10-test-0000")
        with pytest.raises(UnknownTask, match="tic_tac_toe-DIFFICULTY"):
            tic.task_set().locate("connect_four-random-test-0000")
    finally:
        for env in (tic, catch, hexed, cribbage):
            env.close()


def test_success_is_a_win() -> None:
    duel = OpenSpielTasks("tic_tac_toe()", "tic_tac_toe", 2, True, 1.0)
    solo = OpenSpielTasks("catch()", "catch", 1, False, 1.0)
    task = duel.task("test", 0)

    def ending(returns: list[float], seat: int, terminated: bool = True) -> Ending:
        info = {"returns": returns, "player": seat}
        return Ending(0.0, 0.0, 5, terminated, not terminated, info)

    assert duel.success(task, ending([1.0, -1.0], 0))
    assert not duel.success(task, ending([1.0, -1.0], 1))
    assert not duel.success(task, ending([0.0, 0.0], 0))  # a draw
    assert not duel.success(task, ending([1.0, -1.0], 0, terminated=False))
    assert not duel.success(task, ending([1.0, -1.0], 5))
    assert not duel.success(task, Ending(0.0, 0.0, 5, True, False, {"returns": "1,-1"}))
    assert solo.success(solo.task("test", 0), ending([1.0], 0))
    assert not solo.success(solo.task("test", 0), ending([-1.0], 0))


# -- over MCP -----------------------------------------------------------------------------------


def test_a_task_twice_gives_the_same_first_observation() -> None:
    # Seat 1: the opponent (random, then MCTS) moves first, from the seed.
    async def main() -> list[tuple[str, int]]:
        seen = []
        with anyio.fail_after(LIMIT):
            async with MCPEnvClient(build_server("openspiel", game="tic_tac_toe")) as client:
                for index in (4, 5, 4, 5):
                    _, info = await client.reset(options={"split": "test", "index": index})
                    seen.append((info["text"], info["player"]))
        return seen

    seen = anyio.run(main)
    assert seen[0] == seen[2] and seen[1] == seen[3]
    assert seen[0][1] == 1 and seen[0][0].count("x") == 1  # the opponent moved


def test_games_played_to_the_end_are_judged() -> None:
    async def play(client: MCPEnvClient, options: dict[str, Any]) -> dict[str, Any]:
        _, info = await client.reset(options=options)
        while True:
            _, _, terminated, truncated, info = await client.step(info["legal_actions"][0])
            if terminated or truncated:
                return dict(info)

    async def main() -> list[dict[str, Any]]:
        with anyio.fail_after(LIMIT):
            server = build_server("openspiel", game="tic_tac_toe", opponent="first_legal")
            async with MCPEnvClient(server) as client:
                return [
                    await play(client, {"task": "tic_tac_toe-random-test-0000"}),
                    await play(client, {"task": "tic_tac_toe-random-test-0001"}),
                    await play(client, {"split": "test", "index": 1}),  # MCTS, 10 simulations
                ]

    won, lost, against_mcts = anyio.run(main)
    assert won["returns"] == [1.0, -1.0] and won["task"]["success"] is True
    assert lost["player"] == 1 and lost["returns"] == [1.0, -1.0]
    assert lost["task"]["success"] is False
    assert isinstance(against_mcts["task"]["success"], bool)
    assert against_mcts["task"]["difficulty"] == "mcts10"


# -- attacks ------------------------------------------------------------------------------------


def test_bad_starts_are_refused_clearly() -> None:
    async def main() -> list[tuple[str, str]]:
        refused = []
        with anyio.fail_after(LIMIT):
            async with MCPEnvClient(build_server("openspiel", game="tic_tac_toe")) as client:
                for options, seed in (
                    ({"split": "test", "index": 200}, None),
                    ({"split": "Test", "index": 0}, None),
                    ({"task": "chess-random-test-0000"}, None),
                    ({"task": "connect_four-random-test-0000"}, None),
                    ({"task": "tic_tac_toe-mcts5-test-0000"}, None),
                    ({"task": "tic_tac_toe-random-test-0050"}, None),
                    ({"task": "tic_tac_toe-random-test-0000", "player": 1}, None),
                    ({"task": "tic_tac_toe-mcts10-test-0000", "mcts_simulations": 9}, None),
                    ({"split": "test", "index": 0}, 1),
                ):
                    try:
                        await client.reset(seed=seed, options=options)
                    except (UnknownTask, ArgumentError) as exc:
                        refused.append((type(exc).__name__, str(exc)))
                _, info = await client.reset(options={"split": "test", "index": 0})
                assert info["task"]["id"] == "tic_tac_toe-random-test-0000"  # it goes on
        return refused

    refused = anyio.run(main)
    kinds = [kind for kind, _ in refused]
    assert kinds == ["UnknownTask"] * 6 + ["ArgumentError"] * 3
    texts = [text for _, text in refused]
    assert "has 200 tasks (indices 0-199), got index 200" in texts[0]
    assert "Did you mean 'test'?" in texts[1]
    for text in texts[2:6]:
        assert "tic_tac_toe-DIFFICULTY-SPLIT-NNNN" in text and "mcts1000" in text
    assert "sets option 'player' to 0" in texts[6]
    assert "sets option 'mcts_simulations' to 10" in texts[7]
    assert "starts from seed 2000000" in texts[8]


def test_per_episode_opponent_options_are_checked() -> None:
    tic, cribbage, catch = make(game="tic_tac_toe"), make(game="cribbage"), make(game="catch")
    try:
        for env, options, message in (
            (tic, {"mcts_simulations": 10}, "this episode's opponent is 'random'"),
            (tic, {"opponent": "first_legal", "mcts_simulations": 5}, "add opponent 'mcts'"),
            (tic, {"opponent": "mcts", "mcts_simulations": 0}, "mcts_simulations"),
            (tic, {"opponent": "mcts", "mcts_simulations": "10"}, "mcts_simulations"),
            (tic, {"opponent": "alphazero"}, "opponent"),
            (cribbage, {"opponent": "mcts"}, "rewards along the way"),
            (catch, {"opponent": "random"}, "cannot be set per episode"),
        ):
            with pytest.raises(UnsupportedOption, match=message):
                env.reset(seed=0, options=parse_options(env, options))
        tic.reset(seed=0, options={"opponent": "mcts", "mcts_simulations": 12, "player": 1})
        saved = tic.snapshot()
        assert saved["opponent"] == "mcts" and saved["mcts_simulations"] == 12
        tic.reset(seed=0)  # no options: the config's opponent again
        assert tic.snapshot()["opponent"] == "random"
        other = make(game="tic_tac_toe", opponent="first_legal")
        other.restore(saved)
        tic.restore(saved)
        action = tic.legal()[0][0]
        assert tic.step(action).info["moves"] == other.step(action).info["moves"]
        other.close()
    finally:
        for env in (tic, cribbage, catch):
            env.close()


def test_a_refused_reset_leaves_the_episode_as_it_was(env: OpenSpielEnv) -> None:
    env.reset(seed=4, options={"player": 1})
    before = env.snapshot()
    with pytest.raises(UnsupportedOption):
        env.reset(seed=5, options={"mcts_simulations": 3})
    after = env.snapshot()
    for key in ("state", "seat", "opponent", "mcts_simulations", "steps"):
        assert after[key] == before[key]
    for key in ("chance_rng", "opponent_rng", "seat_rng"):
        assert after[key][1].tolist() == before[key][1].tolist()
