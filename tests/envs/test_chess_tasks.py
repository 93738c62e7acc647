"""The chess env's task set: four opponent strengths as difficulties, openings and seeds
as tasks, and success as a win, judged at the end of a real game over MCP (python-chess,
the built-in engine, and Stockfish where it can be installed: a process, so its test is
in the integration tier)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import chess
import pytest

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.environment import parse_options
from openenv_mcp.errors import ArgumentError, UnsupportedOption
from openenv_mcp.server import build_server
from openenv_mcp.tasks import Ending, UnknownTask
from openenv_mcp_envs.chess import ChessConfig, ChessEnv
from openenv_mcp_envs.chess._engine import BuiltinEngine, RandomOpponent, TunedStockfish
from openenv_mcp_envs.chess._tasks import DIFFICULTIES, OPENINGS, SIZES, ChessTasks, chess_tasks
from tests.servers import ensure_installed

#: Seconds any one MCP conversation here may take.
LIMIT = 120
_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


def make(**config: Any) -> ChessEnv:
    return ChessEnv(ChessConfig(**config))


@pytest.fixture
def env() -> Iterator[ChessEnv]:
    made = make(opponent="random", engine="builtin")
    yield made
    made.close()


def greedy(fen: str, legal: list[str]) -> str:
    """Mate where it can, else take the most valuable piece, else the first legal move."""
    board = chess.Board(fen)
    best, gain = legal[0], -1
    for uci in legal:
        move = chess.Move.from_uci(uci)
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return uci
        taken = board.piece_at(move.to_square)
        value = (_VALUES.get(taken.piece_type, 0) if taken else 0) + (8 if move.promotion else 0)
        if value > gain:
            best, gain = uci, value
    return best


# -- the set ------------------------------------------------------------------------------------


def test_splits_and_sizes_locally_and_over_mcp(env: ChessEnv) -> None:
    tasks = env.task_set()
    assert [(s.name, s.type) for s in tasks.splits()] == [
        ("train", "train"),
        ("validation", "validation"),
        ("test", "test"),
    ]
    expected = [
        {"name": name, "type": name, "tasks": size * len(DIFFICULTIES)}
        for name, size in SIZES.items()
    ]

    async def main() -> list[dict[str, Any]]:
        with anyio.fail_after(LIMIT):
            async with MCPEnvClient(
                build_server("chess", opponent="random", engine="builtin")
            ) as client:
                return client.splits

    assert anyio.run(main) == expected


def test_check_finds_nothing_wrong(env: ChessEnv) -> None:
    assert env.task_set().check() == []


def test_the_set_is_cached_per_engine_and_splits_share_no_seed(env: ChessEnv) -> None:
    assert env.task_set() is chess_tasks("builtin")
    assert chess_tasks("builtin") is not chess_tasks("stockfish")
    tasks = env.task_set()
    seeds = {
        s.name: {t.seed for t in tasks.tasks(s.name)[: 4 * SIZES["test"]]} for s in tasks.splits()
    }
    assert not seeds["train"] & seeds["validation"]
    assert not seeds["train"] & seeds["test"] and not seeds["validation"] & seeds["test"]


def test_tasks_interleave_difficulties_openings_and_colours(env: ChessEnv) -> None:
    tasks = env.task_set()
    first = tasks.task("test", 0)
    assert first.id == "chess-random-test-0000" and first.difficulty == "random"
    assert dict(first.options) == {
        "opponent": "random",
        "fen": chess.STARTING_FEN,
        "color": "white",
    }
    hard = tasks.task("test", 3 + 4 * 13)  # hard's 13th game: opening 1, as Black
    assert hard.id == "chess-hard-test-0013" and hard.group == "builtin"
    assert hard.options["color"] == "black" and hard.data["opening"] == OPENINGS[1][0]
    assert {k: hard.options[k] for k in ("opponent", "depth", "skill")} == DIFFICULTIES["hard"]
    assert hard.seed == 2_000_000 + 3 + 4 * 13
    for split, index in (("train", 0), ("validation", 77), ("test", 199), ("train", 3999)):
        task = tasks.task(split, index)
        assert tasks.locate(task.id) == (split, index, task)
        assert not (set(task.data) & {"answer", "solution"})


def test_success_is_a_win_and_points_score_the_result() -> None:
    tasks = ChessTasks("builtin")
    task = tasks.task("test", 0)

    def ending(result: str, you: str, terminated: bool = True) -> Ending:
        return Ending(1.0, 1.0, 10, terminated, not terminated, {"result": result, "you": you})

    assert tasks.success(task, ending("1-0", "white"))
    assert tasks.success(task, ending("0-1", "black"))
    assert not tasks.success(task, ending("0-1", "white"))
    assert not tasks.success(task, ending("1/2-1/2", "white"))
    assert not tasks.success(task, ending("*", "white", terminated=False))
    assert tasks.scores(task, ending("1/2-1/2", "black")) == {"points": 0.5}
    assert tasks.scores(task, ending("1-0", "black")) == {"points": 0.0}
    assert tasks.scores(task, ending("*", "white", terminated=False)) == {}
    assert not tasks.success(task, Ending(0.0, 0.0, 0, True, False, {}))


# -- over MCP -----------------------------------------------------------------------------------


def test_a_task_twice_gives_the_same_first_observation() -> None:
    # Black's games: the opponent moves first, from the seed (random, then a weakened engine).
    async def main() -> list[tuple[Any, Any]]:
        seen = []
        with anyio.fail_after(LIMIT):
            server = build_server("chess", opponent="random", engine="builtin")
            async with MCPEnvClient(server) as client:
                for index in (48, 49, 48, 49):
                    obs, info = await client.reset(options={"split": "test", "index": index})
                    seen.append((obs, info["reply"], info["task"]["id"]))
        return seen

    seen = anyio.run(main)
    assert seen[0] == seen[2] and seen[1] == seen[3]
    assert seen[0][1] and seen[1][1]  # the opponent moved first
    assert seen[0][2] == "chess-random-test-0012" and seen[1][2] == "chess-easy-test-0012"


def test_a_game_played_to_the_end_is_judged() -> None:
    async def play(client: MCPEnvClient, task: str) -> dict[str, Any]:
        obs, info = await client.reset(options={"task": task})
        while True:
            obs, _, terminated, truncated, info = await client.step(
                greedy(obs, info["legal_moves"])
            )
            if terminated or truncated:
                return dict(info)

    async def main() -> list[dict[str, Any]]:
        with anyio.fail_after(LIMIT):
            server = build_server("chess", opponent="engine", engine="builtin", depth=1)
            async with MCPEnvClient(server) as client:
                return [
                    await play(client, "chess-random-test-0006"),
                    await play(client, "chess-random-test-0001"),
                ]

    won, drawn = anyio.run(main)
    assert won["result"] == "1-0" and won["task"]["success"] is True
    assert won["task"]["scores"] == {"points": 1.0}
    assert drawn["result"] == "1/2-1/2" and drawn["task"]["success"] is False
    assert drawn["task"]["scores"] == {"points": 0.5}


def test_a_truncated_game_is_no_success() -> None:
    async def main() -> dict[str, Any]:
        with anyio.fail_after(LIMIT):
            server = build_server("chess", opponent="random", engine="builtin", max_moves=2)
            async with MCPEnvClient(server) as client:
                _, info = await client.reset(options={"split": "validation", "index": 0})
                for _ in range(2):
                    _, _, terminated, truncated, info = await client.step(info["legal_moves"][0])
                assert truncated and not terminated
                return dict(info["task"])

    judged = anyio.run(main)
    assert judged["success"] is False and "scores" not in judged


# -- attacks ------------------------------------------------------------------------------------


def test_bad_starts_are_refused_clearly() -> None:
    async def main() -> list[tuple[str, str]]:
        refused = []
        with anyio.fail_after(LIMIT):
            async with MCPEnvClient(
                build_server("chess", opponent="random", engine="builtin")
            ) as client:
                for options, seed in (
                    ({"split": "test", "index": 200}, None),
                    ({"split": "tset", "index": 0}, None),
                    ({"task": "echo-test-1"}, None),
                    ({"task": "tic_tac_toe-random-test-0000"}, None),
                    ({"task": "chess-hard-test-0050"}, None),
                    ({"task": "chess-hard-test-12"}, None),
                    ({"task": "chess-brutal-test-0000"}, None),
                    ({"task": "chess-random-test-0000", "color": "black"}, None),
                    ({"task": "chess-easy-test-0000", "depth": 3}, None),
                    ({"split": "test", "index": 0}, 5),
                ):
                    try:
                        await client.reset(seed=seed, options=options)
                    except (UnknownTask, ArgumentError) as exc:
                        refused.append((type(exc).__name__, str(exc)))
                # the server goes on
                _, info = await client.reset(options={"split": "test", "index": 1})
                assert info["task"]["id"] == "chess-easy-test-0000"
        return refused

    refused = anyio.run(main)
    assert len(refused) == 10
    kinds = [kind for kind, _ in refused]
    assert kinds[:7] == ["UnknownTask"] * 7 and kinds[7:] == ["ArgumentError"] * 3
    texts = [text for _, text in refused]
    assert "has 200 tasks (indices 0-199), got index 200" in texts[0]
    assert "Did you mean 'test'?" in texts[1]
    for text in texts[2:7]:
        assert "chess-DIFFICULTY-SPLIT-NNNN" in text and "random, easy, medium, hard" in text
    assert "sets option 'color' to 'white'" in texts[7]
    assert "sets option 'depth' to 1" in texts[8]
    assert "starts from seed 2000000" in texts[9]


# -- the per-episode opponent ----------------------------------------------------------------------


def test_per_episode_opponent_options_are_checked() -> None:
    env = make(opponent="random", engine="builtin")
    try:
        for options, message in (
            ({"depth": 2}, "this episode's opponent is 'random'"),
            ({"opponent": "random", "skill": 3}, "add opponent 'engine'"),
            ({"opponent": "engine", "depth": 9}, "searches 1-3 plies, got 9"),
            ({"opponent": "engine", "depth": "2"}, "depth"),
            ({"opponent": "engine", "skill": 21}, "skill"),
            ({"opponent": "magnus"}, "opponent"),
        ):
            with pytest.raises(UnsupportedOption, match=message):
                env.reset(seed=0, options=parse_options(env, options))
        env.reset(seed=0, options={"opponent": "engine", "depth": 1, "skill": 0})
        assert isinstance(env.opponent, BuiltinEngine) and env.opponent.depth == 1
        assert env.opponent.skill == 0
        env.reset(seed=0)  # no options: the server's opponent again
        assert isinstance(env.opponent, RandomOpponent) and env.opponent is env.default_opponent
    finally:
        env.close()


def test_a_refused_reset_leaves_the_episode_as_it_was() -> None:
    env = make(opponent="random", engine="builtin")
    try:
        env.reset(seed=0, options={"opponent": "engine", "depth": 2})
        before = env.snapshot()
        with pytest.raises(UnsupportedOption):
            env.reset(seed=1, options={"opponent": "engine", "depth": 7})
        assert env.snapshot() == before and isinstance(env.opponent, BuiltinEngine)
    finally:
        env.close()


def test_snapshots_keep_the_episode_opponent() -> None:
    env = make(opponent="random", engine="builtin")
    other = make(opponent="none", engine="builtin")
    try:
        env.reset(seed=3, options={"opponent": "engine", "depth": 1, "skill": 5, "color": "black"})
        saved = env.snapshot()
        other.restore(saved)
        assert isinstance(other.opponent, BuiltinEngine) and other.opponent.skill == 5
        move = env.legal_moves()["uci"][0]
        assert env.step(move).info["reply"] == other.step(move).info["reply"]
    finally:
        env.close()
        other.close()


def test_self_play_servers_start_tasks_against_an_opponent() -> None:
    env = make(opponent="none", engine="builtin")
    try:
        task = env.task_set().task("test", 2)  # medium: the engine
        _, info = env.reset(seed=task.seed, options=dict(task.options))
        assert info["you"] == "white" and isinstance(env.opponent, BuiltinEngine)
        env.reset(seed=0)
        assert env.opponent is None and env.agent is None  # self-play again
    finally:
        env.close()


@pytest.fixture(scope="module")
def stockfish() -> str:
    """Debian's Stockfish, installed where missing (skips, saying why, where it cannot be)."""
    out = ensure_installed("ensure_debian.sh", "Stockfish", "stockfish", "stockfish")
    line = out.strip().splitlines()[-1]
    assert line.startswith("STOCKFISH="), out
    return line.split("=", 1)[1]


@pytest.mark.integration
def test_stockfish_plays_each_episode_strength_on_one_process(stockfish: str) -> None:
    env = make(opponent="random", engine="stockfish", stockfish_path=stockfish)
    try:
        assert env.task_set() is chess_tasks("stockfish")
        task = env.task_set().task("test", 1 + 4 * 12)  # easy, as Black: Stockfish moves first
        first = env.reset(seed=task.seed, options=dict(task.options))
        assert isinstance(env.opponent, TunedStockfish)
        assert env.opponent.depth == 1 and env.opponent.skill == 0
        assert (
            env.opponent.label.startswith("Stockfish") and "depth 1, skill 0" in env.opponent.label
        )
        process = env.opponent.engine
        hard = env.task_set().task("test", 3 + 4 * 12)
        env.reset(seed=hard.seed, options=dict(hard.options))
        assert isinstance(env.opponent, TunedStockfish) and env.opponent.engine is process
        again = env.reset(seed=task.seed, options=dict(task.options))
        assert again[0] == first[0] and again[1]["reply"] == first[1]["reply"]
    finally:
        env.close()
