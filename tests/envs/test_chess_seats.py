"""Chess with seats (``ChessEnv.seated_game``): White and Black each a seat, in memory.

Every game here is played on python-chess's rules through the env's own reading of
moves; the built-in players are the random mover and the built-in engine (Stockfish
is a process, so it stays out of this tier).
"""

from __future__ import annotations

from typing import Any

import chess
import numpy as np
import pytest
from gymnasium import spaces

from openenv_mcp.errors import ArgumentError, InvalidAction, UnsupportedOption
from openenv_mcp.options import make_config
from openenv_mcp.seats import SeatedGame
from openenv_mcp_envs.chess import BuiltinEngine, ChessConfig, ChessEnv, RandomOpponent
from openenv_mcp_envs.chess._render import BOARD_PIXELS, draw_board
from openenv_mcp_envs.chess._seats import (
    MOVE_IDS,
    MOVES,
    PLANES,
    ChessGame,
    ChessGameSnapshot,
    planes,
)

AGENTS = ["white", "black"]


def make(**options: Any) -> ChessGame:
    """A seated game of a chess server started with ``options`` (never Stockfish here)."""
    options.setdefault("engine", "builtin")
    env = ChessEnv(make_config(ChessConfig, options, "chess"))
    game = env.seated_game()
    assert isinstance(game, ChessGame)
    return game


def play(game: ChessGame, moves: list[Any]) -> list[dict[str, float]]:
    """Play ``moves`` (ids or names), each by the seat to move; the rewards of each."""
    rewards = []
    for move in moves:
        (agent,) = game.to_move()
        rewards.append(game.apply({agent: game.parse_action(agent, move)}))
    return rewards


def check_observations(game: ChessGame) -> None:
    """Both seats' observations are inside their spaces, with masks that fit."""
    movers = game.to_move()
    for agent in AGENTS:
        obs, info = game.observe(agent)
        assert game.observation_space(agent).contains(obs)
        assert (obs == planes(game.board)).all() and info["fen"] == game.board.fen()
        mask = info["action_mask"]
        assert len(mask) == game.action_space(agent).n == len(MOVES)  # type: ignore[attr-defined]
        assert set(mask) <= {0, 1}
        legal = game.legal(agent)
        assert [i for i, bit in enumerate(mask) if bit] == sorted(info["legal_actions"])
        assert info["legal_actions"] == [a for a, _ in legal]
        assert info["legal_action_names"] == [name for _, name in legal]
        assert info["legal_moves"] == [MOVES[a] for a, _ in legal]
        assert all(game.action_space(agent).contains(a) for a in info["legal_actions"])
        if agent in movers:
            assert sum(mask) == game.board.legal_moves.count() > 0
            assert "it is your move" in info["text"]
        else:
            assert sum(mask) == 0 and info["legal_actions"] == []
        assert isinstance(info["text"], str) and f"FEN {game.board.fen()}" in info["text"]
        assert info["you"] == agent and info["turn"] in AGENTS


def random_game(seed: int, **options: Any) -> list[int]:
    """A game where both seats are the built-in player, drawing from ``seed``; its moves."""
    game = make(**options)
    game.reset(seed=seed)
    rng = np.random.default_rng(seed)
    moves = []
    while game.to_move():
        (agent,) = game.to_move()
        action = game.opponent_action(agent, rng)
        moves.append(action)
        game.apply({agent: action})
    return moves


# -- what the game is --------------------------------------------------------------------------


def test_the_env_publishes_a_new_game_of_two_seats() -> None:
    env = ChessEnv(make_config(ChessConfig, {"engine": "builtin"}, "chess"))
    game, other = env.seated_game(), env.seated_game()
    assert isinstance(game, SeatedGame) and isinstance(game, ChessGame) and game is not other
    assert game.possible_agents == AGENTS and game.title == "chess"
    for agent in AGENTS:
        assert game.action_space(agent) == spaces.Discrete(1968)
        assert game.action_space(agent) is game.action_space(agent)
        assert game.observation_space(agent) == PLANES
        assert game.observation_space(agent) is game.observation_space(agent)
    with pytest.raises(ArgumentError, match="expected a seat, white or black, got 'red'"):
        game.action_space("red")
    game.reset(seed=0)
    assert game.to_move() == ["white"] and game.legal("black") == []
    assert [name for _, name in game.legal("white")][:3] == ["a3", "a4", "Na3"]  # by UCI


def test_the_action_ids_cover_every_move_of_real_games() -> None:
    assert len(MOVES) == len(set(MOVES)) == 1968 and list(MOVES) == sorted(MOVES)
    assert all(MOVE_IDS[uci] == i for i, uci in enumerate(MOVES))
    promotions = ["a7a8q", "a7b8n", "h2h1r", "e2d1b", "e7e8q"]
    assert all(uci in MOVE_IDS for uci in [*promotions, "e1g1", "e8c8", "g1f3"])
    assert "a7a8k" not in MOVE_IDS and "a1b3" in MOVE_IDS and "a1b4" not in MOVE_IDS
    # Random games reach castling, en passant and promotions; every move has an id.
    for seed in range(6):
        board = chess.Board()
        rng = np.random.default_rng(seed)
        while not board.is_game_over() and len(board.move_stack) < 300:
            legal = list(board.legal_moves)
            assert all(m.uci() in MOVE_IDS for m in legal)
            board.push(legal[int(rng.integers(len(legal)))])


# -- whole games --------------------------------------------------------------------------------


def test_fools_mate_wins_for_black_and_loses_for_white() -> None:
    game = make(opponent="none")
    game.reset(seed=0)
    # The move in each form a seat may give: SAN, UCI in capitals, an id, SAN in lowercase.
    rewards = play(game, ["f3", "E7E5", MOVE_IDS["g2g4"], "qh4#"])
    assert rewards[:3] == [{"white": 0.0, "black": 0.0}] * 3
    assert rewards[3] == {"white": -1.0, "black": 1.0} and sum(rewards[3].values()) == 0
    assert game.terminations() == {"white": True, "black": True}
    assert game.truncations() == {"white": False, "black": False}
    assert game.over and game.to_move() == []
    assert game.legal("white") == game.legal("black") == []
    check_observations(game)
    _, white = game.observe("white")
    _, black = game.observe("black")
    assert (white["result"], white["termination"]) == ("0-1", "checkmate")
    assert "you lost" in white["text"] and "you won" in black["text"]
    assert "Game over: 0-1 (checkmate)" in white["text"]
    assert [m.uci() for m in game.board.move_stack] == ["f2f3", "e7e5", "g2g4", "d8h4"]


def test_observations_are_inside_the_spaces_at_every_ply() -> None:
    game = make(opponent="random", max_moves=60)
    game.reset(seed=3)
    rng = np.random.default_rng(3)
    check_observations(game)
    plies = 0
    while game.to_move():
        (agent,) = game.to_move()
        _, info = game.observe(agent)
        # Every name of a legal move reads back as its id (SAN, and UCI in capitals).
        for action, name, uci in zip(
            info["legal_actions"], info["legal_action_names"], info["legal_moves"], strict=True
        ):
            assert game.parse_action(agent, name) == action
            assert game.parse_action(agent, uci.upper()) == action
            assert game.parse_action(agent, str(action)) == action
        rewards = game.apply({agent: game.opponent_action(agent, rng)})
        assert set(rewards) == set(AGENTS) and sum(rewards.values()) == 0
        plies += 1
        check_observations(game)
    assert game.over and plies <= 120


def test_the_same_seed_plays_the_same_game_with_random_players() -> None:
    first = random_game(5, opponent="random", max_moves=50)
    assert first == random_game(5, opponent="random", max_moves=50)
    assert first != random_game(6, opponent="random", max_moves=50)
    # The server's --opponent none leaves a seat no client takes to random moves, seeded too.
    assert random_game(5, opponent="none", max_moves=50) == first


def test_the_engine_plays_a_seat_no_client_takes() -> None:
    game = make(opponent="engine", depth=1)
    game.reset(seed=0)
    play(game, ["f3", "e5", "g4"])
    rng = np.random.default_rng(0)
    action = game.opponent_action("black", rng)
    assert MOVES[action] == "d8h4"
    assert game.apply({"black": action}) == {"white": -1.0, "black": 1.0}
    with pytest.raises(InvalidAction, match=r"the game is over \(0-1, checkmate\)"):
        game.opponent_action("white", rng)


@pytest.mark.parametrize(
    ("fen", "move", "termination", "claim_draw"),
    [
        ("8/8/8/2k5/8/4r3/4K3/8 w - - 0 1", "Kxe3", "insufficient_material", True),
        ("7k/8/8/6Q1/8/8/8/6K1 w - - 0 1", "Qg6", "stalemate", True),
        ("8/8/8/4k3/8/8/R7/4K3 w - - 99 80", "Ra3", "fifty_moves", True),
        ("8/8/8/4k3/8/8/R7/4K3 w - - 149 80", "Ra3", "seventyfive_moves", False),
    ],
)
def test_draws_end_the_game_at_nought_each(
    fen: str, move: str, termination: str, claim_draw: bool
) -> None:
    game = make(opponent="none", claim_draw=claim_draw)
    game.reset(seed=0, options={"fen": fen})
    assert play(game, [move]) == [{"white": 0.0, "black": 0.0}]
    assert game.terminations() == {"white": True, "black": True} and game.to_move() == []
    _, info = game.observe("black")
    assert (info["result"], info["termination"]) == ("1/2-1/2", termination)
    assert "a draw" in info["text"]


@pytest.mark.parametrize(("claim_draw", "plies"), [(True, 8), (False, 16)])
def test_repetition_ends_the_game_threefold_if_claimed_else_fivefold(
    claim_draw: bool, plies: int
) -> None:
    game = make(opponent="none", claim_draw=claim_draw)
    game.reset(seed=0)
    shuffle = ["Nf3", "Nf6", "Ng1", "Ng8"] * 4
    for ply, move in enumerate(shuffle[:plies], start=1):
        assert not game.over
        assert play(game, [move]) == [{"white": 0.0, "black": 0.0}]
        assert game.over == (ply == plies)
    _, info = game.observe("white")
    kind = "threefold_repetition" if claim_draw else "fivefold_repetition"
    assert (info["result"], info["termination"]) == ("1/2-1/2", kind)


def test_max_moves_cuts_the_game_short_after_each_seats_moves() -> None:
    game = make(opponent="none", max_moves=2)
    game.reset(seed=0)
    play(game, ["e4", "e5", "Nf3"])
    assert not game.over and game.to_move() == ["black"]
    assert play(game, ["Nc6"]) == [{"white": 0.0, "black": 0.0}]
    assert game.truncations() == {"white": True, "black": True}
    assert game.terminations() == {"white": False, "black": False}
    assert game.over and game.to_move() == []
    check_observations(game)
    _, info = game.observe("white")
    assert info["truncated"] and "cut short after 2 moves each" in info["text"]
    with pytest.raises(InvalidAction, match=r"cut short after 2 moves each.*call reset"):
        game.parse_action("white", "Bc4")


# -- refusals ----------------------------------------------------------------------------------


def test_moves_out_of_turn_are_refused() -> None:
    game = make(opponent="none")
    game.reset(seed=0)
    with pytest.raises(InvalidAction, match="it is not black's turn: white is to move"):
        game.parse_action("black", "e5")
    with pytest.raises(InvalidAction, match="it is not black's turn"):
        game.opponent_action("black", np.random.default_rng(0))
    with pytest.raises(InvalidAction, match=r"expected one move, white's .*got moves of black"):
        game.apply({"black": MOVE_IDS["e7e5"]})
    with pytest.raises(ArgumentError, match="expected a seat, white or black, got 'White'"):
        game.parse_action("White", "e4")


@pytest.mark.parametrize(
    ("action", "words"),
    [
        ("e5", r"Illegal move 'e5' for white: no white pawn can move to e5 now\. Legal moves: a3"),
        ("Ke2", "e2 holds white's own pawn"),
        ("e2e5", "the pawn on e2 cannot move to e5"),
        ("e7e5", "the pawn on e7 is black's, and it is white's move"),
        ("hello", "neither a UCI move"),
        (MOVE_IDS["e2e5"], r"action \d+ \(e2e5\) is not legal now: the pawn on e2 cannot move"),
        (1968, r"action 1968 is not a move id: ids are 0-1967.*legal now: .*=Nf3"),
        (-1, "action -1 is not a move id"),
        ("x" * 40, "at most 32 characters"),
        (True, "expected a move: an action id .* got bool True"),
        (1.5, "got float 1.5"),
        (None, "got NoneType None"),
        (["e4"], "got list"),
    ],
)
def test_illegal_moves_are_refused_saying_why_and_what_is_legal(action: Any, words: str) -> None:
    game = make(opponent="none")
    game.reset(seed=0)
    with pytest.raises(InvalidAction, match=words):
        game.parse_action("white", action)
    assert game.board.fen() == chess.STARTING_FEN and game.to_move() == ["white"]


def test_san_in_another_case_must_name_one_move() -> None:
    # Both a b-pawn and a bishop can take on c3: "bxc3" is the pawn's, "Bxc3" the bishop's.
    fen = "4k3/8/8/8/8/2n5/1P1B4/4K3 w - - 0 1"
    game = make(opponent="none")
    game.reset(seed=0, options={"fen": fen})
    assert MOVES[game.parse_action("white", "bxc3")] == "b2c3"
    assert MOVES[game.parse_action("white", "Bxc3")] == "d2c3"
    with pytest.raises(
        InvalidAction, match=r"'BXC3' could be bxc3 \(b2c3\) or Bxc3 \(d2c3\): SAN tells"
    ):
        game.parse_action("white", "BXC3")
    assert MOVES[game.parse_action("white", "kF1")] == "e1f1"


def test_moves_after_the_end_are_refused() -> None:
    game = make(opponent="none")
    game.reset(seed=0)
    play(game, ["f3", "e5", "g4", "Qh4#"])
    for agent in AGENTS:
        with pytest.raises(InvalidAction, match=r"the game is over \(0-1, checkmate\).*reset"):
            game.parse_action(agent, "e4")
    with pytest.raises(InvalidAction, match="the game is over"):
        game.apply({"white": MOVE_IDS["e2e4"]})


# -- options, pictures, snapshots --------------------------------------------------------------


def test_a_start_position_and_the_built_in_player_per_episode() -> None:
    game = make(opponent="random")
    fen = "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2"
    game.reset(seed=0, options={"fen": fen})
    assert game.board.fen() == fen and game.to_move() == ["black"]
    assert isinstance(game._opponent, RandomOpponent)
    game.reset(seed=0, options={"fen": fen, "opponent": "engine", "depth": 1})
    assert isinstance(game._opponent, BuiltinEngine) and game._opponent.depth == 1
    assert MOVES[game.opponent_action("black", np.random.default_rng(0))] == "d8h4"
    game.reset(seed=0)  # no options: the server's player, from the usual position
    assert isinstance(game._opponent, RandomOpponent)
    assert game.board.fen() == chess.STARTING_FEN


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"color": "black"}, UnsupportedOption, r"each colour\s+is a seat of its own"),
        ({"colour": "white"}, UnsupportedOption, "Per-episode options with seats: fen, opponent"),
        ({"fen": "not a fen"}, UnsupportedOption, "option 'fen' 'not a fen' is not a FEN"),
        ({"fen": 3}, UnsupportedOption, "fen"),
        (
            {"fen": "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"},
            UnsupportedOption,
            "the game is already over there",
        ),
        ({"depth": 2}, UnsupportedOption, "add opponent 'engine'"),
        ({"opponent": "stockfish"}, UnsupportedOption, "opponent"),
        ("fen", ArgumentError, "expected options as an object, got str"),
    ],
)
def test_bad_options_are_refused(options: Any, error: type[Exception], words: str) -> None:
    game = make(opponent="random")
    game.reset(seed=0)
    play(game, ["e4"])
    with pytest.raises(error, match=words):
        game.reset(seed=0, options=options)
    assert [m.uci() for m in game.board.move_stack] == ["e2e4"]  # the game as it was


def test_each_seat_sees_the_board_from_its_side() -> None:
    game = make(opponent="none")
    game.reset(seed=0)
    play(game, ["e4"])
    white, black, watcher = game.render("white"), game.render("black"), game.render()
    assert white.shape == black.shape == (BOARD_PIXELS, BOARD_PIXELS, 3)
    assert white.dtype == np.uint8
    assert np.array_equal(white, draw_board(game.board, True))
    assert np.array_equal(black, draw_board(game.board, False))
    assert np.array_equal(watcher, white) and not np.array_equal(white, black)


def test_snapshots_restore_the_game_and_its_player() -> None:
    game = make(opponent="random")
    game.reset(seed=0, options={"opponent": "engine", "depth": 1})
    play(game, ["e4", "e5", "Nf3"])
    saved = game.snapshot()
    assert isinstance(saved, ChessGameSnapshot)
    seen = game.observe("black")
    play(game, ["Nc6", "Bb5"])
    game.reset(seed=1)
    assert isinstance(game._opponent, RandomOpponent)
    game.restore(saved)
    again = game.observe("black")
    assert game.board.fen() == seen[1]["fen"] and (again[0] == seen[0]).all()
    assert again[1] == seen[1]
    assert isinstance(game._opponent, BuiltinEngine) and game._opponent.depth == 1
    assert play(game, ["Nc6"]) == [{"white": 0.0, "black": 0.0}]
    with pytest.raises(UnsupportedOption, match="expected a seated chess game's snapshot"):
        game.restore({"fen": chess.STARTING_FEN})


def test_every_seat_sees_every_move() -> None:
    game = make(opponent="none")
    game.reset(seed=0)
    action = game.parse_action("white", "Nf3")
    assert game.action_name("white", action) == "Nf3"
    moves = [{"agent": "white", "action": action, "name": "Nf3"}]
    assert game.last_moves("black", moves) == moves
