"""PettingZoo's games as seated games (``PettingZooGame``), every agent a seat, in memory.

Real PettingZoo environments throughout: the classic games (AEC), rock-paper-scissors
(parallel: every agent moves at once), and PettingZoo's own ``api_test`` run over the
game through a small AEC adapter, as a client's ``as_pettingzoo()`` sees it.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.test import api_test

from openenv_mcp.errors import ArgumentError, InvalidAction, UnsupportedOption
from openenv_mcp.options import make_config
from openenv_mcp.seats import SeatedGame
from openenv_mcp_envs.pettingzoo import PettingZooConfig, PettingZooEnv, PettingZooGame

#: Every classic game, with kwargs that keep a random game short, and whether it is
#: zero-sum.
CLASSIC: list[tuple[str, dict[str, Any], bool]] = [
    ("tictactoe_v3", {}, True),
    ("connect_four_v3", {}, True),
    ("chess_v6", {}, True),
    ("go_v5", {"board_size": 5}, True),
    ("rps_v2", {"max_cycles": 5}, True),
    ("texas_holdem_v4", {}, True),
    ("texas_holdem_no_limit_v6", {}, True),
    ("leduc_holdem_v4", {}, True),
    ("hanabi_v5", {"colors": 2, "ranks": 2, "hand_size": 2}, False),
]


def check_seats(game: SeatedGame) -> None:
    """Every agent's observation is inside its space, with an info that fits the turn."""
    movers = game.to_move()
    for agent in game.possible_agents:
        obs, info = game.observe(agent)
        space = game.observation_space(agent)
        assert space.contains(obs), (agent, obs)
        if isinstance(space, spaces.Box):
            assert isinstance(obs, np.ndarray) and obs.dtype == space.dtype
        n = int(game.action_space(agent).n)  # type: ignore[attr-defined]
        mask = info["action_mask"]
        assert len(mask) == n and set(mask) <= {0, 1}
        legal = game.legal(agent)
        assert [i for i, bit in enumerate(mask) if bit] == info["legal_actions"]
        assert info["legal_actions"] == [a for a, _ in legal]
        assert info["legal_action_names"] == [name for _, name in legal]
        assert isinstance(info["text"], str) and info["text"]
        assert bool(legal) == (agent in movers)


def random_game(game: SeatedGame, seed: int, limit: int = 400) -> list[Any]:
    """A seeded random game, checking every seat at every move; its trace."""
    rng = np.random.default_rng(seed)
    game.reset(seed=seed)
    trace: list[Any] = []
    returns = dict.fromkeys(game.possible_agents, 0.0)
    for _ in range(limit):
        check_seats(game)
        movers = game.to_move()
        if not movers:
            break
        joint = {m: game.opponent_action(m, rng) for m in movers}
        rewards = game.apply(joint)
        assert set(rewards) == set(game.possible_agents)
        for agent, reward in rewards.items():
            returns[agent] += reward
        trace.append((joint, rewards, game.observe(movers[0])[1]["text"]))
    check_seats(game)
    trace.append(returns)
    return trace


@pytest.mark.parametrize(("id", "kwargs", "zero_sum"), CLASSIC)
def test_random_games_keep_every_seat_inside_its_spaces(
    id: str, kwargs: dict[str, Any], zero_sum: bool
) -> None:
    game = PettingZooGame(id, kwargs, max_moves=60)
    trace = random_game(game, seed=7)
    assert game.over and game.to_move() == []
    returns = trace[-1]
    if zero_sum:
        assert sum(returns.values()) == pytest.approx(0.0)
    assert random_game(game, seed=7) == trace  # the same seed, the same game
    game.close()


def test_tictactoe_names_cells_and_pays_the_winner() -> None:
    game = PettingZooGame("tictactoe_v3")
    assert game.possible_agents == ["player_1", "player_2"] and game.title == "tic-tac-toe"
    assert game.observation_space("player_1") == spaces.Box(0, 1, (3, 3, 2), np.int8)
    game.reset(seed=0)
    names = [name for _, name in game.legal("player_1")]
    assert names[:5] == ["top-left", "middle-left", "bottom-left", "top-center", "center"]
    rewards = []
    for move in ["center", "top-left", "top-center", 2, "BOTTOM-CENTER"]:  # X: center column
        (agent,) = game.to_move()
        rewards.append(game.apply({agent: game.parse_action(agent, move)}))
    assert rewards[-1] == {"player_1": 1.0, "player_2": -1.0}
    assert all(r == {"player_1": 0.0, "player_2": 0.0} for r in rewards[:-1])
    assert game.over and game.terminations() == {"player_1": True, "player_2": True}
    obs, info = game.observe("player_2")  # after the end, from the loser's seat
    assert info["text"].splitlines()[:3] == ["O X .", ". X .", "O X ."]
    assert "Game over; returns: player_1 +1, player_2 -1" in info["text"]
    assert obs[1, 1].tolist() == [0, 1]  # player_2's planes: its marks first
    assert info["action_mask"] == [0] * 9 and info["legal_actions"] == []


def test_the_board_in_words() -> None:
    game = PettingZooGame("tictactoe_v3")
    game.apply({"player_1": 4})
    game.apply({"player_2": 0})
    text = game.observe("player_1")[1]["text"]
    assert text.splitlines()[:3] == ["O . .", ". X .", ". . ."]
    assert "you are player_1" in text and "Your turn (player_1)" in text
    assert "player_1 to move (you are player_2)" in game.observe("player_2")[1]["text"]
    four = PettingZooGame("connect_four_v3")
    four.apply({"player_0": 3})
    lines = four.observe("player_1")[1]["text"].splitlines()
    assert lines[5] == ". . . X . . ." and lines[6] == "0 1 2 3 4 5 6"
    chess = PettingZooGame("chess_v6")
    chess.apply({"player_0": chess.parse_action("player_0", "e2e4")})
    text = chess.observe("player_1")[1]["text"]
    assert "FEN: rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq" in text
    assert "Black to move" in text
    go = PettingZooGame("go_v5", {"board_size": 5})
    assert [n for _, n in go.legal("black_0")][:2] == ["A5", "B5"]
    go.apply({"black_0": go.parse_action("black_0", "c3")})
    lines = go.observe("white_0")[1]["text"].splitlines()
    assert lines[0] == "   A B C D E" and lines[3] == " 3 . . X . ."
    assert go.legal("white_0")[-1][1] == "pass"


def test_poker_shows_each_seat_its_own_hand_only() -> None:
    game = PettingZooGame("texas_holdem_v4")
    game.reset(seed=3)
    hands = {}
    for agent in game.possible_agents:
        text = game.observe(agent)[1]["text"]
        hands[agent] = next(line for line in text.splitlines() if line.startswith("Your hand"))
    assert hands["player_0"] != hands["player_1"]
    (mover,) = game.to_move()
    assert {n for _, n in game.legal(mover)} <= {"call", "raise", "fold", "check"}
    # A frame shows every hand: none for a seat, one for a watcher.
    assert game.render("player_0") is None
    frame = game.render()
    assert frame is not None and frame.ndim == 3 and frame.dtype == np.uint8


def test_chess_moves_by_uci_name_for_either_colour() -> None:
    game = PettingZooGame("chess_v6")
    moves = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "f3g5", "d7d5", "e4d5", "f6d5"]
    for move in moves:
        (agent,) = game.to_move()
        action = game.parse_action(agent, move)
        assert game.action_name(agent, action) == move
        game.apply({agent: action})
    (agent,) = game.to_move()
    assert agent == "player_0" and "g5f7" in {n for _, n in game.legal(agent)}


def test_rock_paper_scissors_is_simultaneous() -> None:
    game = PettingZooGame("rps_v2", {"max_cycles": 2})
    assert game.parallel and game.to_move() == ["player_0", "player_1"]
    assert [n for _, n in game.legal("player_1")] == ["rock", "paper", "scissors"]
    with pytest.raises(InvalidAction, match="every agent to move"):
        game.apply({"player_0": 0})
    assert game.apply({"player_0": 0, "player_1": 1}) == {"player_0": -1.0, "player_1": 1.0}
    obs, info = game.observe("player_0")
    assert obs == 1  # the opponent's last choice: paper
    assert "you played rock, player_1 played paper" in info["text"]
    game.apply({"player_0": 2, "player_1": 1})
    assert game.over and game.truncations() == {"player_0": True, "player_1": True}
    assert game.returns == {"player_0": 0.0, "player_1": 0.0}
    assert "Game over (cut short)" in game.observe("player_1")[1]["text"]
    aec = PettingZooGame("rps_v2", api="aec")  # the same game, one agent at a time
    assert not aec.parallel and aec.to_move() == ["player_0"]


def test_actions_are_refused_naming_what_is_legal() -> None:
    game = PettingZooGame("tictactoe_v3")
    game.apply({"player_1": 4})
    with pytest.raises(InvalidAction, match="not player_1's turn"):
        game.parse_action("player_1", 0)
    with pytest.raises(InvalidAction, match=r"action 4 is not legal now; legal: 0=top-left"):
        game.parse_action("player_2", 4)
    with pytest.raises(InvalidAction, match="Did you mean 'top-left'"):
        game.parse_action("player_2", "top-lef")
    with pytest.raises(ArgumentError, match="agents: player_1, player_2"):
        game.observe("player_3")


def test_snapshots_replay_to_the_same_game() -> None:
    game = PettingZooGame("texas_holdem_v4")
    game.reset(seed=11)
    for _ in range(2):  # call or check: nobody folds
        (agent,) = game.to_move()
        game.apply({agent: next(a for a, n in game.legal(agent) if n in ("call", "check"))})
    saved = pickle.loads(pickle.dumps(game.snapshot()))
    before = {a: game.observe(a) for a in game.possible_agents}
    other = PettingZooGame("texas_holdem_v4")
    other.restore(saved)
    for agent, (obs, info) in before.items():
        again = other.observe(agent)
        assert np.array_equal(again[0], obs) and again[1] == info
    # unseeded resets go on from the last seed: the same deals again after it
    deals = []
    for _ in range(2):
        game.reset(seed=5)
        game.reset()
        deals.append(game.observe("player_0")[1]["text"])
    assert deals[0] == deals[1]
    with pytest.raises(UnsupportedOption, match="not 'leduc_holdem_v4'"):
        PettingZooGame("leduc_holdem_v4").restore(saved)


def test_per_episode_options_are_refused() -> None:
    with pytest.raises(UnsupportedOption, match="Per-episode options: none"):
        PettingZooGame("tictactoe_v3").reset(seed=0, options={"board": 3})


def test_the_env_publishes_a_new_game_with_its_config() -> None:
    env = PettingZooEnv(
        make_config(PettingZooConfig, {"id": "go_v5", "kwargs": "board_size=5"}, "pettingzoo")
    )
    first, second = env.seated_game(), env.seated_game()
    assert isinstance(first, PettingZooGame) and first is not second
    assert first.kwargs == {"board_size": 5} and first.possible_agents == ["black_0", "white_0"]
    capped = PettingZooEnv(PettingZooConfig(id="tictactoe_v3", max_episode_steps=2))
    game = capped.seated_game()
    game.apply({"player_1": 0})
    game.apply({"player_2": 1})
    assert game.over and game.truncations() == {"player_1": True, "player_2": True}


# -- PettingZoo's own API test, over the seats -------------------------------------------------


class SeatsAEC(AECEnv):  # type: ignore[misc]
    """A seated game as a PettingZoo AEC env again: what a client's adapter does over MCP."""

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": [],
        "name": "seats",
        "is_parallelizable": False,
    }

    def __init__(self, game: SeatedGame) -> None:
        super().__init__()
        self.game = game
        self.possible_agents = list(game.possible_agents)
        self._spaces = {
            a: spaces.Dict(
                {
                    "observation": game.observation_space(a),
                    "action_mask": spaces.Box(
                        0,
                        1,
                        (int(game.action_space(a).n),),
                        np.int8,  # type: ignore[attr-defined]
                    ),
                }
            )
            for a in self.possible_agents
        }

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.game.action_space(agent)

    def render(self) -> Any:
        return self.game.render()

    def close(self) -> None:
        self.game.close()

    def observe(self, agent: str) -> dict[str, Any]:
        obs, info = self.game.observe(agent)
        return {"observation": obs, "action_mask": np.asarray(info["action_mask"], np.int8)}

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        self.game.reset(seed=seed)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self._sync()
        self.agent_selection = self.game.to_move()[0]

    def _sync(self) -> None:
        ends, cuts = self.game.terminations(), self.game.truncations()
        self.terminations = {a: ends[a] for a in self.agents}
        self.truncations = {a: cuts[a] for a in self.agents}

    def step(self, action: Any) -> None:
        selected = self.agent_selection
        if self.terminations[selected] or self.truncations[selected]:
            self._was_dead_step(action)
            return
        self.rewards = self.game.apply({selected: int(action)})
        self._sync()
        self._cumulative_rewards[selected] = 0
        self._accumulate_rewards()
        movers = self.game.to_move()
        if movers:
            self.agent_selection = movers[0]
        else:  # over: every agent steps None in turn
            order = self.agents
            self.agent_selection = order[(order.index(selected) + 1) % len(order)]


# api_test's advice, not its checks: an empty board's planes are all zeros, and a space of
# an observation with its action mask is a Dict (as every classic game's is, which
# api_test lets pass by name).
@pytest.mark.filterwarnings("ignore:Observation numpy array is all zeros")
@pytest.mark.filterwarnings("ignore:Observation space for each agent probably should be")
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array")
@pytest.mark.parametrize(
    ("id", "kwargs"),
    [("tictactoe_v3", {}), ("texas_holdem_v4", {}), ("go_v5", {"board_size": 5})],
)
def test_pettingzoos_api_test_passes_over_the_seats(id: str, kwargs: dict[str, Any]) -> None:
    game = PettingZooGame(id, kwargs, max_moves=60)
    api_test(SeatsAEC(game), num_cycles=200)
