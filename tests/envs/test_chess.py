"""Chess: python-chess's rules, real opponents (random, the built-in search, Stockfish).

The unit tier plays in memory against the random mover and the built-in
engine (Stockfish is a process, so its tests are in the integration tier, with
Debian's stockfish installed by scripts/ensure_debian.sh where missing). The
integration tier also plays whole seeded games through MCPEnvClient over stdio
and through the MCP Inspector CLI over HTTP.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import anyio
import chess
import numpy as np
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_mcp.authoring.testing import check_env
from openenv_mcp.client import MCPEnvClient
from openenv_mcp.codecs import png_from_b64
from openenv_mcp.environment import contract_problems, parse_options
from openenv_mcp.errors import (
    ArgumentError,
    DependencyNotInstalled,
    InvalidAction,
    UnsupportedOption,
)
from openenv_mcp.narration import narration_of
from openenv_mcp.options import make_config
from openenv_mcp.server import ServerSettings, build_server
from openenv_mcp.server.transports._host import HOST_DIR_ENV
from openenv_mcp_envs.chess import (
    BuiltinEngine,
    ChessConfig,
    ChessEnv,
    StockfishEngine,
    find_stockfish,
)
from openenv_mcp_envs.chess._render import BOARD_PIXELS, draw_board
from tests.server.test_fuzz import FUZZ, Target, fuzz_target, run_case
from tests.servers import (
    CLI,
    ROOT,
    ensure_installed,
    episode_host_dir,
    http_server,
    stdio_command,
)
from tests.test_independent_clients import call as inspector_call
from tests.test_independent_clients import (
    http_target,
    inspector,
    node_tools,  # noqa: F401  (a shared fixture)
)

FOOLS_MATE = ["f3", "e5", "g4", "Qh4#"]


def make(**options: Any) -> ChessEnv:
    return ChessEnv(make_config(ChessConfig, options, "chess"))


def play(env: ChessEnv, moves: list[str]) -> list[Any]:
    """Step ``moves``; the step results."""
    return [env.step(env.parse_action(move)) for move in moves]


def first_legal(info: dict[str, Any], rng: np.random.Generator) -> str:
    """A seeded policy: one of the legal moves ``info`` lists (UCI)."""
    moves = info["legal_moves"]
    return str(moves[int(rng.integers(len(moves)))])


def rollout(env: ChessEnv, seed: int, steps: int = 30) -> list[Any]:
    """A seeded game (the policy seeded too), as comparable values."""
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed + 1000)
    trace: list[Any] = [obs, info["you"], info["reply"]]
    for _ in range(steps):
        result = env.step(env.parse_action(first_legal(info, rng)))
        info = result.info
        trace += [result.observation, result.reward, result.terminated, result.truncated]
        trace += [info["move"], info["reply"]]
        if result.terminated or result.truncated:
            break
    return trace


@pytest.fixture(scope="session")
def stockfish() -> str:
    """Debian's Stockfish, installed where missing (skips, saying why, where it cannot be)."""
    out = ensure_installed("ensure_debian.sh", "Stockfish", "stockfish", "stockfish")
    line = out.strip().splitlines()[-1]
    assert line.startswith("STOCKFISH="), out
    return line.split("=", 1)[1]


# -- the contract ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"opponent": "engine", "engine": "builtin", "color": "black", "depth": 1},
        {"opponent": "engine", "engine": "builtin", "color": "random", "skill": 3},
        {"opponent": "random", "color": "random"},
        {"opponent": "none"},
    ],
    ids=["builtin-black", "builtin-weak", "random", "self-play"],
)
def test_check_env_in_memory(options: dict[str, Any]) -> None:
    check_env(ChessEnv, worker=False, **options)


@pytest.mark.integration
def test_check_env_in_a_worker_process() -> None:
    check_env(ChessEnv, opponent="engine", engine="builtin", color="black")


@pytest.mark.integration
@pytest.mark.parametrize("skill", [20, 5])
def test_check_env_against_stockfish(stockfish: str, skill: int) -> None:
    check_env(
        ChessEnv,
        opponent="engine",
        engine="stockfish",
        stockfish_path=stockfish,
        color="black",
        skill=skill,
    )


def test_construction_options_are_checked() -> None:
    with pytest.raises(ArgumentError, match="built-in engine searches 1-3 plies, got 5"):
        make(opponent="engine", engine="builtin", depth=5)
    with pytest.raises(DependencyNotInstalled, match="apt-get install stockfish"):
        make(opponent="engine", engine="stockfish", stockfish_path="/nonexistent/stockfish")
    with pytest.raises(ArgumentError, match="'opponent'"):
        make(opponent="magnus")
    with pytest.raises(ArgumentError, match="illegal_penalty"):
        make(illegal_penalty=2)
    # where Stockfish is missing, auto falls back to the built-in engine (depth capped at 3)
    assert find_stockfish("/nonexistent/stockfish") is None


def test_auto_without_stockfish_plays_the_builtin_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    import openenv_mcp_envs.chess.env as env_module

    monkeypatch.setattr(env_module, "find_stockfish", lambda path=None: None)
    env = make(opponent="engine", engine="auto", depth=9)
    assert env.engine_kind == "builtin"
    assert isinstance(env.opponent, BuiltinEngine) and env.opponent.depth == 3
    assert "built-in engine" in narration_of(env).title


def test_agent_profile_has_four_tools_and_no_move_tools() -> None:
    async def main() -> list[str]:
        server = build_server("chess", settings=ServerSettings(profile="agent"), opponent="random")
        async with Client(server) as client:
            return sorted(t.name for t in await client.list_tools())

    assert anyio.run(main) == ["legal_moves", "reset", "state", "step"]


# -- moves ----------------------------------------------------------------------------------


def test_san_and_uci_are_both_accepted() -> None:
    env = make(opponent="none")
    env.reset(seed=0)
    results = play(env, ["e4", "e7e5", "Nf3", "b8c6", "Bc4", "g8f6", "O-O"])
    assert all(r.reward == 0 and not r.info["illegal"] for r in results)
    assert [r.info["move_san"] for r in results] == ["e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6", "O-O"]
    assert results[-1].info["move"] == "e1g1"
    assert results[-1].observation == (
        "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQ1RK1 b kq - 5 4"
    )
    # UCI in capitals and with spaces, SAN with its check mark, promotion both ways
    env.reset(options={"fen": "8/4P2k/8/8/8/8/8/4K3 w - - 0 1"})
    assert env.step(env.parse_action(" E7E8Q ")).info["move_san"] == "e8=Q"
    env.reset(options={"fen": "8/4P2k/8/8/8/8/8/4K3 w - - 0 1"})
    assert env.step(env.parse_action("e8=N")).info["move"] == "e7e8n"


def test_illegal_moves_cost_the_penalty_and_count_toward_the_cap() -> None:
    env = make(opponent="random", max_moves=3, illegal_penalty=0.25)
    start, _ = env.reset(seed=0)
    first = env.step(env.parse_action("e2e5"))
    assert first.reward == -0.25 and not first.terminated and not first.truncated
    assert first.observation == start  # the board stays
    assert first.info["illegal"].startswith("Illegal move 'e2e5' for white: the pawn on e2")
    assert "Legal moves: a3, a4, Na3" in first.info["illegal"]
    assert (first.info["moves"], first.info["moves_left"], first.info["illegal_moves"]) == (1, 2, 1)
    second = env.step(env.parse_action("e4"))  # a legal move after an illegal one
    assert second.reward == 0 and second.info["move_san"] == "e4" and second.info["reply"]
    third = env.step(env.parse_action("hello"))
    assert third.reward == -0.25 and third.truncated and not third.terminated
    assert "neither a UCI move" in third.info["illegal"]
    assert third.info["illegal_moves"] == 2 and third.info["moves_left"] == 0


def test_illegal_moves_alone_reach_the_cap() -> None:
    """OpenEnv's chess never ends an episode of illegal moves; this one does."""
    env = make(opponent="none", max_moves=5)
    env.reset(seed=0)
    results = play(env, ["Ke2"] * 5)
    assert [r.truncated for r in results] == [False] * 4 + [True]
    assert sum(r.reward for r in results) == pytest.approx(-0.5)


@pytest.mark.parametrize(
    ("fen", "move", "words"),
    [
        (chess.STARTING_FEN, "Nf4", "no white knight can move to f4 now. Did you mean 'Nf3'?"),
        (chess.STARTING_FEN, "e2e5", "the pawn on e2 cannot move to e5. Did you mean 'e2e4'?"),
        (chess.STARTING_FEN, "nf3", "Did you mean 'Nf3'?"),
        (chess.STARTING_FEN, "Ke2", "e2 holds white's own pawn"),
        (chess.STARTING_FEN, "e7e5", "the pawn on e7 is black's, and it is white's move"),
        (chess.STARTING_FEN, "e3e4", "there is no piece on e3"),
        (chess.STARTING_FEN, "O-O", "castling that way is not allowed now"),
        (
            "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
            "Bb4",
            "no white bishop can move to b4 now",
        ),
        ("4k3/8/8/8/8/8/8/R3K3 w - - 0 1", "Qd2", "white has no queen left"),
        ("4k3/8/8/8/8/8/4q3/R3K3 w - - 0 1", "Ra2", "white is in check, and no rook move"),
        ("4k3/8/8/8/8/8/4r3/R3K2R w KQ - 0 1", "e1g1", "you cannot castle out of check"),
        ("4k3/8/8/8/8/8/8/R3K2R w - - 0 1", "e1c1", "white may no longer castle"),
        ("4k3/4r3/8/8/8/8/4B3/4K3 w - - 0 1", "e2d3", "would leave your king in check"),
        ("8/4P2k/8/8/8/8/8/4K3 w - - 0 1", "e7e8", "must promote: add q, r, b or n (e8q)"),
        (
            "r3k2r/8/8/8/8/8/8/R1N1K1NR w KQkq - 0 1",
            "N1e2",
            "Did you mean",
        ),
    ],
)
def test_illegal_moves_say_why_and_what_was_meant(fen: str, move: str, words: str) -> None:
    env = make(opponent="none")
    env.reset(options={"fen": fen})
    result = env.step(env.parse_action(move))
    assert result.reward == pytest.approx(-0.1)
    assert words in result.info["illegal"], result.info["illegal"]
    assert result.observation == chess.Board(fen).fen()


def test_ambiguous_san_names_both_moves() -> None:
    env = make(opponent="none")
    env.reset(options={"fen": "4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1"})
    result = env.step(env.parse_action("Nd2"))
    assert "Nd2 is ambiguous: Nbd2 or Nfd2" in result.info["illegal"]
    assert env.step(env.parse_action("Nbd2")).info["move"] == "b1d2"


@pytest.mark.parametrize("action", [7, None, ["e4"], {"move": "e4"}, "e" * 33])
def test_what_cannot_be_a_move_is_refused_without_a_step(action: Any) -> None:
    env = make(opponent="none")
    env.reset(seed=0)
    with pytest.raises(InvalidAction, match=r"SAN \(Nf3\) or UCI \(g1f3\)"):
        env.parse_action(action)
    assert env.state()["moves"] == 0


# -- the end of a game ----------------------------------------------------------------------


def test_fools_mate_in_self_play_rewards_the_mating_side() -> None:
    env = make(opponent="none")
    env.reset(seed=0)
    results = play(env, FOOLS_MATE)
    assert [r.terminated for r in results] == [False, False, False, True]
    last = results[-1]
    assert last.reward == 1.0 and not last.truncated
    assert (last.info["result"], last.info["termination"]) == ("0-1", "checkmate")
    assert last.info["legal_moves"] == []
    events = narration_of(env).step_events(results[-2].info, last)
    assert "Checkmate: Black wins" in events


def test_fools_mate_against_an_engine_is_a_loss() -> None:
    """The agent (White) walks into the mate; the built-in engine finds it at depth 1."""
    env = make(opponent="engine", engine="builtin", depth=1, color="white")
    fen = "rnbqkbnr/pppp1ppp/8/4p3/8/5P2/PPPPP1PP/RNBQKBNR w KQkq - 0 2"
    _, info = env.reset(seed=0, options={"fen": fen})
    result = env.step(env.parse_action("g4"))
    assert result.terminated and result.reward == -1.0
    assert (result.info["reply_san"], result.info["result"]) == ("Qh4#", "0-1")
    assert "Checkmate: you lose" in narration_of(env).step_events(info, result)


def test_the_agent_mating_wins() -> None:
    env = make(opponent="engine", engine="builtin", depth=2, color="black")
    fen = "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2"
    env.reset(seed=0, options={"fen": fen})
    result = env.step(env.parse_action("d8h4"))
    assert result.terminated and result.reward == 1.0 and result.info["reply"] == ""
    assert result.info["you"] == "black"


@pytest.mark.parametrize(
    ("fen", "move", "termination"),
    [
        ("8/8/8/2k5/8/4r3/4K3/8 w - - 0 1", "Kxe3", "insufficient_material"),
        ("7k/8/8/6Q1/8/8/8/6K1 w - - 0 1", "Qg6", "stalemate"),
        ("8/8/8/4k3/8/8/R7/4K3 w - - 99 80", "Ra3", "fifty_moves"),
    ],
)
@pytest.mark.parametrize("opponent", ["none", "engine"])
def test_draws_end_the_game(fen: str, move: str, termination: str, opponent: str) -> None:
    env = make(opponent=opponent, engine="builtin", depth=1)
    env.reset(seed=0, options={"fen": fen})
    result = env.step(env.parse_action(move))
    assert result.terminated and not result.truncated and result.reward == 0.0
    assert (result.info["result"], result.info["termination"]) == ("1/2-1/2", termination)
    assert result.info["reply"] == ""  # the game ended before the opponent's turn
    assert f"Draw by {termination.replace('_', ' ')}" in narration_of(env).step_events({}, result)


def test_threefold_repetition_ends_the_game_unless_draws_are_not_claimed() -> None:
    shuffle = ["Nf3", "Nf6", "Ng1", "Ng8"] * 2
    env = make(opponent="none")
    env.reset(seed=0)
    results = play(env, shuffle)
    assert [r.terminated for r in results] == [False] * 7 + [True]
    assert results[-1].info["termination"] == "threefold_repetition"
    patient = make(opponent="none", claim_draw=False)
    patient.reset(seed=0)
    assert not any(r.terminated for r in play(patient, shuffle))


# -- per-episode options ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"fen": "not a fen"}, "is not a FEN"),
        ({"fen": "8/8/8/8/8/8/8/8 w - - 0 1"}, "is not a legal position: no white king"),
        ({"fen": "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"}, "the game is already over there (stalemate)"),
        ({"fen": 42}, "option 'fen': Input should be a valid string"),
        ({"fen": "8/" * 65}, "option 'fen': String should have at most 128 characters"),
        ({"color": "green"}, "option 'color': Input should be 'white', 'black' or 'random'"),
        ({"colour": "white"}, "Did you mean 'color'?"),
    ],
)
def test_bad_reset_options_are_refused(options: dict[str, Any], words: str) -> None:
    """Types and names are checked against ``Options`` before reset (as the server does);
    what only a board can tell (a FEN's legality), by reset."""
    env = make(opponent="random")
    env.reset(seed=0)
    env.step(env.parse_action("e4"))
    before = env.snapshot()
    with pytest.raises(UnsupportedOption) as caught:
        env.reset(seed=1, options=parse_options(env, options))
    assert words in str(caught.value)
    assert env.snapshot() == before  # a refused reset changes nothing


def test_options_are_declared_and_pass_only_what_was_set() -> None:
    env = make(opponent="random", color="black")
    assert not contract_problems(env)
    assert parse_options(env, {"color": "white"}) == {"color": "white"}
    assert env.reset(seed=0, options=parse_options(env, {}))[1]["you"] == "black"
    assert env.reset(seed=0, options={"color": "white"})[1]["you"] == "white"


def test_an_unseeded_reset_continues_the_stream() -> None:
    """reset(seed=None) goes on with the env's own generator (Gymnasium's meaning): the
    same as the episodes after one seeded reset, not a fresh draw."""
    a, b = make(opponent="random", color="random"), make(opponent="random", color="random")
    a.reset(seed=3)
    b.reset(seed=3)
    for _ in range(6):
        assert a.reset()[1]["you"] == b.reset()[1]["you"]
    colours = {a.reset()[1]["you"] for _ in range(20)}
    assert colours == {"white", "black"}  # the stream moves on between resets


def test_colour_per_episode_and_the_opponent_opens_for_a_black_agent() -> None:
    env = make(opponent="random", color="white")
    obs, info = env.reset(seed=4, options={"color": "black"})
    assert info["you"] == "black" and info["turn"] == "black" and info["reply"]
    assert obs == info["fen"] == chess.Board(obs).fen()
    assert f"last move {info['reply']}" in info["text"]
    # the text diagram reads as the FEN does (rank 8 first); the picture turns for Black
    assert info["text"].splitlines()[1].startswith("8 ")
    assert np.array_equal(env.render(), draw_board(env._board, white_below=False))


def test_random_colour_comes_from_the_seed() -> None:
    env = make(opponent="random", color="random")
    colours = {seed: env.reset(seed=seed)[1]["you"] for seed in range(12)}
    assert set(colours.values()) == {"white", "black"}
    assert all(env.reset(seed=s)[1]["you"] == c for s, c in colours.items())


# -- seeds and snapshots ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"opponent": "random", "color": "random"},
        {"opponent": "engine", "engine": "builtin", "depth": 1, "skill": 4, "color": "random"},
    ],
    ids=["random", "builtin"],
)
def test_the_same_seed_replays_the_same_game(options: dict[str, Any]) -> None:
    a, b = make(**options), make(**options)
    games = {seed: rollout(a, seed) for seed in (0, 1, 2)}
    for seed, game in games.items():
        assert rollout(b, seed) == game
    assert len({json.dumps(game) for game in games.values()}) == 3  # seeds matter


def test_snapshots_restore_board_counters_and_rng() -> None:
    env = make(opponent="engine", engine="builtin", depth=1, skill=0, color="random")
    _, info = env.reset(seed=7)
    rng = np.random.default_rng(0)
    for _ in range(6):
        info = env.step(env.parse_action(first_legal(info, rng))).info
    env.step(env.parse_action("Ke9"))  # an illegal move is part of the state too
    saved = pickle.loads(pickle.dumps(env.snapshot()))

    def rest(target: ChessEnv) -> list[Any]:
        out = []
        state = target.state()
        policy = np.random.default_rng(99)
        for _ in range(8):
            result = target.step(target.parse_action(first_legal(state, policy)))
            state = result.info
            out.append((result.observation, result.reward, result.info["reply"]))
            if result.terminated or result.truncated:
                break
        return out

    expected = rest(env)
    fresh = make(opponent="engine", engine="builtin", depth=1, skill=0, color="random")
    for target in (env, fresh):
        target.restore(saved)
        assert target.state()["illegal_moves"] == 1 and target.state()["moves"] == 7
        assert rest(target) == expected
    assert expected


# -- what a model sees ----------------------------------------------------------------------


def test_text_diagram_and_fen() -> None:
    env = make(opponent="none")
    env.reset(seed=0)
    result = env.step(env.parse_action("e4"))
    text = result.info["text"]
    assert text == narration_of(env).observation_text(result.observation)
    lines = text.splitlines()
    assert lines[0] == "Black to move, last move e2e4."
    assert lines[1] == "8 r n b q k b n r" and lines[5] == "4 . . . . P . . ."
    assert lines[9] == "  a b c d e f g h"
    assert lines[10] == f"FEN {result.observation}"
    assert len(text) < 300  # the summary's observation text is not cut


def frame_stats(frame: np.ndarray) -> tuple[int, float]:
    colours = len(np.unique(frame.reshape(-1, 3), axis=0))
    return colours, float(frame.std())


@pytest.mark.parametrize("glyphs", [True, False])
def test_board_image_is_a_real_board(glyphs: bool) -> None:
    board = chess.Board()
    frame = draw_board(board, glyphs=glyphs)
    assert frame.shape == (BOARD_PIXELS, BOARD_PIXELS, 3) and frame.dtype == np.uint8
    colours, spread = frame_stats(frame)
    assert colours > 20 and spread > 30
    # pieces are there: an empty square differs from one with a piece on it
    e4 = frame[24 + 4 * 60 : 24 + 5 * 60, 24 + 4 * 60 : 24 + 5 * 60]
    e2 = frame[24 + 6 * 60 : 24 + 7 * 60, 24 + 4 * 60 : 24 + 5 * 60]
    assert len(np.unique(e4.reshape(-1, 3), axis=0)) == 1
    assert len(np.unique(e2.reshape(-1, 3), axis=0)) > 3
    board.push_san("e4")
    assert not np.array_equal(draw_board(board, glyphs=glyphs), frame)


def test_frames_over_mcp_decode_as_png_of_the_board() -> None:
    async def main() -> tuple[np.ndarray, np.ndarray, str]:
        server = build_server("chess", opponent="engine", engine="builtin", depth=1)
        async with Client(server) as client:
            reset = await client.call_tool("reset", {"seed": 0})
            step = await client.call_tool("step", {"action": "d4"})
            images = [
                png_from_b64(c.data)  # type: ignore[union-attr]
                for r in (reset, step)
                for c in r.content
                if c.type == "image"
            ]
            return images[0], images[1], step.content[0].text  # type: ignore[union-attr]

    first, second, text = anyio.run(main)
    assert first.shape == second.shape == (BOARD_PIXELS, BOARD_PIXELS, 3)
    assert frame_stats(first)[0] > 20 and not np.array_equal(first, second)
    assert "You played d4 (d2d4)" in text and "replied" in text and "Legal moves for white" in text


def test_legal_moves_tool_and_instructions() -> None:
    async def main() -> tuple[dict[str, Any], str]:
        server = build_server("chess", opponent="none")
        async with Client(server) as client:
            await client.call_tool("reset", {"seed": 0})
            await client.call_tool("step", {"action": "e4"})
            moves = await client.call_tool("legal_moves", {})
            assert moves.structured_content is not None
            return dict(moves.structured_content), str(server.instructions)

    moves, instructions = anyio.run(main)
    assert moves["turn"] == "black" and moves["count"] == 20 and not moves["game_over"]
    assert "Nf6" in moves["san"] and "g8f6" in moves["uci"]
    assert moves["san"].index("Nf6") == moves["uci"].index("g8f6")
    for words in ("SAN", "UCI", "legal_moves", "counts toward the limit", "uppercase"):
        assert words in instructions


# -- fuzz -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chess_target() -> Any:
    moves = ["e4", "e2e4", "Nf3", "g1f3", "O-O", "e8=Q", "Ke2", "0000", "--", "e2e5", "Nf4"]
    actions = st.sampled_from(moves) | st.text(max_size=12) | st.integers(-3, 3)
    with fuzz_target(
        "chess",
        actions,
        "e4",
        ["fen", "color"],
        opponent="engine",
        engine="builtin",
        depth=1,
        max_moves=30,
    ) as target:
        yield target


@given(data=st.data())
@settings(FUZZ, max_examples=150)
def test_fuzz_chess(chess_target: Target, data: st.DataObject) -> None:
    run_case(chess_target, data)


# -- Stockfish ----------------------------------------------------------------------------------


@pytest.mark.integration
def test_stockfish_is_deterministic_and_restores(stockfish: str) -> None:
    options = {
        "opponent": "engine",
        "engine": "stockfish",
        "stockfish_path": stockfish,
        "depth": 4,
        "skill": 6,
        "color": "random",
    }
    a, b = make(**options), make(**options)
    try:
        assert a.engine_kind == "stockfish" and isinstance(a.opponent, StockfishEngine)
        game = rollout(a, 3, steps=12)
        assert rollout(b, 3, steps=12) == game
        a.reset(seed=5)
        a.step(a.parse_action("e4" if a.state()["you"] == "white" else "e5"))
        saved = a.snapshot()
        after = a.step(a.parse_action(a.state()["legal_moves"][0]))
        b.restore(saved)
        again = b.step(b.parse_action(b.state()["legal_moves"][0]))
        assert (again.observation, again.info["reply"]) == (after.observation, after.info["reply"])
    finally:
        a.close()
        b.close()


@pytest.mark.integration
def test_stockfish_process_ends_with_close(stockfish: str) -> None:
    env = make(opponent="engine", engine="stockfish", stockfish_path=stockfish, color="black")
    env.reset(seed=0)  # Stockfish opens as White
    assert isinstance(env.opponent, StockfishEngine)
    engine = env.opponent._engine
    assert engine is not None
    pid = engine.transport.get_pid()
    assert Path(f"/proc/{pid}").exists()
    env.close()
    engine.transport.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)  # reaped already


@pytest.mark.integration
def test_stockfish_beats_the_random_mover(stockfish: str) -> None:
    """A real engine: Stockfish at depth 6 mates a random mover within 60 moves."""
    engine = StockfishEngine(stockfish, depth=6)
    board, rng = chess.Board(), np.random.default_rng(0)
    try:
        while not board.is_game_over() and board.fullmove_number <= 60:
            board.push(engine.choose(board, rng))
            if not board.is_game_over():
                moves = sorted(board.legal_moves, key=lambda m: m.uci())
                board.push(moves[int(rng.integers(len(moves)))])
    finally:
        engine.close()
    assert board.is_checkmate() and board.turn == chess.BLACK


# -- whole games over real transports -------------------------------------------------------


@pytest.mark.integration
def test_a_seeded_game_through_mcp_env_client_over_stdio() -> None:
    options = ["--opponent", "random", "--color", "random", "--max-moves", "80"]
    local = make(opponent="random", color="random", max_moves=80)
    with MCPEnvClient(stdio_command("chess", *options)).sync() as env:
        assert env.action_space == local.action_space
        obs, info = env.reset(seed=11)
        local_obs, local_info = local.reset(seed=11)
        assert (obs, info["you"]) == (local_obs, local_info["you"])
        listed = env.call("legal_moves")
        assert listed["uci"] == info["legal_moves"] == local_info["legal_moves"]
        policy = np.random.default_rng(5)
        while True:
            move = first_legal(info, policy)
            obs, reward, terminated, truncated, info = env.step(move)
            mine = local.step(local.parse_action(move))
            assert (obs, reward, terminated, truncated) == (
                mine.observation,
                mine.reward,
                mine.terminated,
                mine.truncated,
            )
            assert info["reply"] == mine.info["reply"]
            if terminated or truncated:
                break
        assert info["status"] == "ended" and info["step"] <= 80
        assert terminated or info["moves_left"] == 0


@pytest.mark.integration
def test_a_seeded_game_through_the_inspector_cli_over_http(node_tools: dict[str, str]) -> None:  # noqa: F811
    with http_server("chess", "--opponent", "none") as url:
        target = http_target(url)
        names = {t["name"] for t in inspector(node_tools, target, "tools/list")["tools"]}
        assert {"reset", "step", "state", "legal_moves"} <= names
        reset = inspector(node_tools, target, "tools/call", *inspector_call("reset", {"seed": 3}))
        eid = reset["structuredContent"]["episode_id"]
        assert [c["type"] for c in reset["content"]] == ["text", "image"]
        views = []
        for move in FOOLS_MATE:
            step = inspector(
                node_tools,
                target,
                "tools/call",
                *inspector_call("step", {"episode_id": eid, "action": move}),
            )
            views.append(step["structuredContent"])
        assert [v["terminated"] for v in views] == [False, False, False, True]
        assert views[-1]["reward"] == 1.0 and views[-1]["info"]["termination"] == "checkmate"
        assert "Checkmate: Black wins" in views[-1]["summary"]
        after = inspector(
            node_tools,
            target,
            "tools/call",
            *inspector_call("step", {"episode_id": eid, "action": "e4"}),
            ok=False,
        )
        assert after["content"][0]["text"].startswith("ResetNeeded:")


@pytest.mark.integration
def test_the_harness_config_serves_chess_for_an_agent() -> None:
    """harness_examples/chess.mcp.json's arguments, served (through the CLI, as ./dev runs it)."""
    config = json.loads((ROOT / "harness_examples" / "chess.mcp.json").read_text())
    server = config["mcpServers"]["chess"]
    assert server["command"] == "/ABSOLUTE/PATH/TO/openenv-mcp/dev"
    # ./dev run: the set-up venv's openenv-mcp, never installing
    assert server["args"][:4] == ["run", "serve", "chess", "--agent"]

    async def main(hosts: Path) -> None:  # --agent: the episodes live in an episode host
        transport = StdioTransport(
            command=CLI[0],
            args=[*CLI[1:], *server["args"][1:]],
            env={**os.environ, HOST_DIR_ENV: str(hosts)},
            cwd=str(ROOT),
        )
        with anyio.fail_after(120):
            async with Client(transport, timeout=60) as client:
                assert client.server_info is not None
                assert client.server_info.name == "openenv-chess"
                names = sorted(t.name for t in await client.list_tools())
                assert names == ["legal_moves", "reset", "state", "step"]
                reset = await client.call_tool("reset", {"seed": 0})
                assert [c.type for c in reset.content] == ["text", "image"]
                assert reset.structured_content is None
                step = await client.call_tool("step", {"action": "e4"})
                assert "You played e4 (e2e4)" in step.content[0].text  # type: ignore[union-attr]

    with episode_host_dir() as hosts:
        anyio.run(main, hosts)
