"""OpenSpiel's games with every player a seat (``OpenSpielEnv.seated_game``), in process.

The real ``pyspiel`` games and the env's real bots: tic-tac-toe to the end, goofspiel's
joint moves, Kuhn poker's hidden moves, seeds, refusals, snapshots and the spaces every
agent's observation must fit at every step. Also the single-seat env in the
simultaneous-move games it now serves (the agent's action is its part of a joint move).
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

from openenv_mcp.errors import ArgumentError, InvalidAction, ResetNeeded, UnsupportedOption
from openenv_mcp.seats import SeatedGame
from openenv_mcp_envs.openspiel import OpenSpielConfig, OpenSpielEnv, list_games
from openenv_mcp_envs.openspiel._seats import OpenSpielGame

#: Opponent searches stay small in tests.
SIMS = 16
GOOFSPIEL = "goofspiel(num_cards=4)"


def make(game: str = "tic_tac_toe", **options: Any) -> OpenSpielEnv:
    return OpenSpielEnv(OpenSpielConfig(game=game, **options))


def seated(game: str = "tic_tac_toe", **options: Any) -> OpenSpielGame:
    table = make(game, **options).seated_game()
    assert isinstance(table, OpenSpielGame)
    return table


def check_views(game: SeatedGame) -> None:
    """Every agent's observation is inside its space and its info says what it may do."""
    movers = game.to_move()
    for agent in game.possible_agents:
        obs, info = game.observe(agent)
        space = game.observation_space(agent)
        assert space.contains(obs), (agent, obs)
        if isinstance(space, spaces.Box):
            assert isinstance(obs, np.ndarray) and obs.dtype == space.dtype
        legal = game.legal(agent)
        action_space = game.action_space(agent)
        assert isinstance(action_space, spaces.Discrete)
        assert len(info["action_mask"]) == action_space.n
        assert info["legal_actions"] == [a for a, _ in legal]
        assert info["legal_action_names"] == [n for _, n in legal]
        assert [i for i, m in enumerate(info["action_mask"]) if m] == sorted(info["legal_actions"])
        assert bool(legal) == (agent in movers)
        assert isinstance(info["text"], str) and isinstance(info["current_player"], int)
        assert len(info["returns"]) == len(game.possible_agents)


def play(
    game: SeatedGame, seed: int, moves_seed: int = 0, options: dict[str, Any] | None = None
) -> list[Any]:
    """A whole game, every seat the built-in opponent; the trace of texts and moves.

    Checks every agent's view at every step and that rewards add up to the returns."""
    game.reset(seed=seed, options=options)
    rng = np.random.default_rng(moves_seed)
    totals = dict.fromkeys(game.possible_agents, 0.0)
    trace: list[Any] = []
    for _ in range(1000):
        check_views(game)
        if game.over:
            break
        joint = {agent: game.opponent_action(agent, rng) for agent in game.to_move()}
        for agent, action in joint.items():
            assert game.parse_action(agent, action) == action
        names = {agent: game.action_name(agent, a) for agent, a in joint.items()}
        rewards = game.apply(joint)
        assert set(rewards) == set(game.possible_agents)
        for agent, reward in rewards.items():
            totals[agent] += reward
        trace.append((sorted(names.items()), game.observe(game.possible_agents[0])[1]["text"]))
    else:
        raise AssertionError("the game did not end within 1000 moves")
    returns = game.observe(game.possible_agents[0])[1]["returns"]
    assert [totals[a] for a in game.possible_agents] == pytest.approx(returns)
    trace.append(returns)
    return trace


# -- the hook ----------------------------------------------------------------------------------


def test_the_env_publishes_a_new_game_each_call() -> None:
    env = make("tic_tac_toe")
    first, second = env.seated_game(), env.seated_game()
    assert isinstance(first, OpenSpielGame) and first is not second
    assert first.possible_agents == ["player_0", "player_1"]
    assert first.title == "Tic Tac Toe"
    assert make("2048").seated_game() is None  # one player: nothing to seat
    assert seated("matching_pennies_3p").possible_agents == [f"player_{i}" for i in range(3)]


def test_spaces_are_the_envs() -> None:
    env = make("tic_tac_toe")
    game = env.seated_game()
    assert game is not None
    assert game.observation_space("player_1") is env.observation_space
    assert game.observation_space("player_0") is game.observation_space("player_0")
    assert game.action_space("player_0") == spaces.Discrete(9)
    text = seated("tic_tac_toe", observation="text")
    text.reset(seed=0)
    obs, _ = text.observe("player_1")
    assert obs == "...\n...\n..." and text.observation_space("player_1").contains(obs)
    sheriff = seated("sheriff")  # the information-state tensor
    sheriff.reset(seed=0)
    check_views(sheriff)
    with pytest.raises(ArgumentError, match=r"no agent 'player_2'.*player_0, player_1"):
        seated().observation_space("player_2")


# -- whole games -------------------------------------------------------------------------------


def test_tic_tac_toe_to_the_end() -> None:
    game = seated("tic_tac_toe")
    game.reset(seed=0)
    obs, info = game.observe("player_0")
    assert game.to_move() == ["player_0"] and info["legal_actions"] == list(range(9))
    assert obs.shape == (3, 3, 3) and info["current_player"] == 0
    assert game.observe("player_1")[1]["action_mask"] == [0] * 9  # not its turn
    rewards = game.apply({"player_0": 4})
    assert rewards == {"player_0": 0.0, "player_1": 0.0}
    assert game.to_move() == ["player_1"] and game.legal("player_0") == []
    assert game.legal("player_1")[0] == (0, "o(0,0)")
    # x takes the left column while o plays the top row's right end, then the middle
    for agent, action in [("player_1", 2), ("player_0", 0), ("player_1", 5), ("player_0", 8)]:
        rewards = game.apply({agent: action})
    assert rewards == {"player_0": 1.0, "player_1": -1.0} and sum(rewards.values()) == 0
    assert game.over and game.to_move() == [] and all(game.terminations().values())
    assert not any(game.truncations().values())
    check_views(game)
    assert game.observe("player_1")[1]["returns"] == [1.0, -1.0]
    assert game.observe("player_0")[1]["current_player"] < 0


@pytest.mark.parametrize("name", ["tic_tac_toe", "connect_four", "backgammon", "leduc_poker"])
def test_whole_games_are_zero_sum_with_views_in_their_spaces(name: str) -> None:
    for seed in range(2):
        returns = play(seated(name), seed=seed, moves_seed=seed)[-1]
        assert sum(returns) == pytest.approx(0)


def test_goofspiel_joint_moves() -> None:
    game = seated(GOOFSPIEL)
    game.reset(seed=0)
    check_views(game)
    assert game.to_move() == ["player_0", "player_1"]  # both bid at once
    assert game.observe("player_0")[1]["current_player"] == -2  # OpenSpiel's simultaneous
    assert [n for _, n in game.legal("player_1")] == [f"[P1]Bid: {i}" for i in range(1, 5)]
    with pytest.raises(InvalidAction, match="missing player_1"):
        game.apply({"player_0": 3})
    rewards = game.apply({"player_0": 3, "player_1": 0})  # 4 beats 1: player 0 takes the card
    assert rewards == {"player_0": 0.0, "player_1": 0.0}  # won at the end, not card by card
    assert [a for a, _ in game.legal("player_0")] == [0, 1, 2]  # the 4 is spent
    text = game.observe("player_1")[1]["text"]  # perfect information: both hands
    assert "P0 hand: 1 2 3 \nP1 hand: 2 3 4" in text and "Points: " in text
    trace = play(game, seed=0)
    assert len(trace) == 4  # three rounds of bids (the last cards play themselves), returns
    assert all(len(names) == 2 for names, _ in trace[:-1])
    assert sum(trace[-1]) == pytest.approx(0)


def test_matrix_game_one_joint_move() -> None:
    game = seated("matrix_rps")
    game.reset(seed=0)
    assert game.to_move() == ["player_0", "player_1"]
    rewards = game.apply({"player_0": game.parse_action("player_0", "Paper"), "player_1": 0})
    assert rewards == {"player_0": 1.0, "player_1": -1.0} and game.over
    moves = [
        {"agent": "player_0", "action": 1, "name": "Paper"},
        {"agent": "player_1", "action": 0, "name": "Rock"},
    ]
    seen = game.last_moves("player_0", moves)  # one shot: not perfect information
    assert seen[1] == {"agent": "player_1", "action": None, "name": "(hidden)"}
    assert "final_state" in game.observe("player_0")[1]  # the whole of it once it is over


def test_three_players_at_once() -> None:
    game = seated("matching_pennies_3p")
    trace = play(game, seed=0)
    assert len(trace) == 2 and len(trace[0][0]) == 3


# -- what seats see ----------------------------------------------------------------------------


def test_kuhn_poker_hides_moves_and_cards() -> None:
    game = seated("kuhn_poker")
    game.reset(seed=3)
    cards = {a: game.observe(a)[1]["text"] for a in game.possible_agents}
    assert all(len(text) == 1 for text in cards.values()) and len(set(cards.values())) == 2
    game.apply({"player_0": game.parse_action("player_0", "bet")})
    moves = [{"agent": "player_0", "action": 1, "name": "Bet"}]
    assert game.last_moves("player_0", moves) == moves
    assert game.last_moves("player_1", moves) == [
        {"agent": "player_0", "action": None, "name": "(hidden)"}
    ]
    assert moves == [{"agent": "player_0", "action": 1, "name": "Bet"}]  # not changed
    assert game.observe("player_1")[1]["text"] == cards["player_1"] + "b"
    game.apply({"player_1": 1})  # call
    assert game.over
    info = game.observe("player_1")[1]
    assert sum(info["returns"]) == 0 and abs(info["returns"][0]) == 2
    assert "final_state" in info  # the whole deal once it is over


def test_perfect_information_shows_every_move() -> None:
    game = seated("tic_tac_toe")
    moves = [{"agent": "player_0", "action": 4, "name": "x(1,1)"}]
    assert game.last_moves("player_1", moves) == moves


def test_the_same_deal_as_the_single_seat_env() -> None:
    for seed in range(6):
        game = seated("kuhn_poker")
        game.reset(seed=seed)
        env = make("kuhn_poker")
        _, info = env.reset(seed=seed)
        assert game.observe("player_0")[1]["text"] == info["text"]


def test_render_draws_where_the_env_does() -> None:
    game = seated("backgammon")  # a long text: drawn
    game.reset(seed=0)
    frame = game.render("player_0")
    assert isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.dtype == np.uint8
    assert isinstance(game.render(None), np.ndarray)
    small = seated("tic_tac_toe")
    small.reset(seed=0)
    assert small.render("player_0") is None
    drawn = seated("tic_tac_toe", render=True)
    drawn.reset(seed=0)
    assert isinstance(drawn.render("player_1"), np.ndarray)


# -- seeds, opponents, options and snapshots ---------------------------------------------------


@pytest.mark.parametrize("name", ["kuhn_poker", "backgammon", GOOFSPIEL])
def test_same_seed_same_game(name: str) -> None:
    first = play(seated(name), seed=5, moves_seed=1)
    assert play(seated(name), seed=5, moves_seed=1) == first
    assert {str(play(seated(name), seed=s, moves_seed=s)) for s in range(6)} != {str(first)}


def test_an_unseeded_reset_goes_on_from_the_last_seed() -> None:
    a, b = seated("kuhn_poker"), seated("kuhn_poker")
    a.reset(seed=4)
    b.reset(seed=4)
    deals = []
    for _ in range(8):
        a.reset()
        b.reset()
        deal = [a.observe(p)[1]["text"] for p in a.possible_agents]
        assert deal == [b.observe(p)[1]["text"] for p in b.possible_agents]
        deals.append(tuple(deal))
    assert len(set(deals)) > 1


def test_opponents() -> None:
    first = seated("tic_tac_toe", opponent="first_legal")
    first.reset(seed=0)
    rng = np.random.default_rng(0)
    assert first.opponent_action("player_0", rng) == 0
    with pytest.raises(InvalidAction, match=r"player_1 has no legal action now \(player_0"):
        first.opponent_action("player_1", rng)
    mcts = seated("tic_tac_toe", opponent="mcts", mcts_simulations=SIMS)
    for seed in range(2):
        mcts.reset(seed=0)
        a = mcts.opponent_action("player_0", np.random.default_rng(seed))
        mcts.reset(seed=0)
        assert mcts.opponent_action("player_0", np.random.default_rng(seed)) == a
    # the episode's options choose the opponent
    per_episode = seated("tic_tac_toe")
    per_episode.reset(seed=0, options={"opponent": "first_legal"})
    assert per_episode.opponent_action("player_0", rng) == 0
    # information-set MCTS in an imperfect-information game (pyspiel's ISMCTSBot breaks
    # ties in an order of its own, so only that it plays is checked here)
    assert sum(play(seated("leduc_poker", opponent="mcts", mcts_simulations=SIMS), 2)[-1]) == 0


def test_options_are_checked() -> None:
    game = seated("tic_tac_toe")
    with pytest.raises(UnsupportedOption, match=r"'player'.*every player is a seat"):
        game.reset(seed=0, options={"player": 1})
    with pytest.raises(UnsupportedOption, match="Did you mean 'opponent'"):
        game.reset(seed=0, options={"oponent": "random"})
    with pytest.raises(UnsupportedOption, match="bounds an MCTS opponent"):
        game.reset(seed=0, options={"mcts_simulations": 5})
    with pytest.raises(UnsupportedOption, match="'random', 'first_legal' or 'mcts'"):
        game.reset(seed=0, options={"opponent": "alphazero"})
    with pytest.raises(UnsupportedOption, match="simultaneous-move game"):
        seated(GOOFSPIEL).reset(seed=0, options={"opponent": "mcts"})
    game.reset(seed=0, options={"opponent": "mcts", "mcts_simulations": 4})


def test_mcts_is_refused_for_simultaneous_games() -> None:
    with pytest.raises(ArgumentError, match=r"simultaneous-move game.*random or first_legal"):
        make(GOOFSPIEL, opponent="mcts")
    with pytest.raises(ArgumentError, match="turn_based_simultaneous_game"):
        make("matrix_rps", opponent="mcts")


def test_move_cap_truncates() -> None:
    game = seated("connect_four", max_episode_steps=3)
    game.reset(seed=0)
    for agent, action in [("player_0", 0), ("player_1", 1), ("player_0", 2)]:
        assert not game.over
        game.apply({agent: action})
    assert all(game.truncations().values()) and not any(game.terminations().values())
    assert game.over and game.to_move() == [] and game.legal("player_1") == []
    check_views(game)
    with pytest.raises(InvalidAction, match="the game is over"):
        game.parse_action("player_1", 3)
    game.reset(seed=0)
    assert not game.over


def test_snapshot_and_restore() -> None:
    game = seated("backgammon")
    game.reset(seed=7)
    rng = np.random.default_rng(0)
    for _ in range(4):
        game.apply({a: game.opponent_action(a, rng) for a in game.to_move()})
    saved = pickle.loads(pickle.dumps(game.snapshot()))
    state = rng.bit_generator.state

    def tail(g: SeatedGame) -> list[Any]:
        r = np.random.default_rng(0)
        r.bit_generator.state = state
        out = []
        for _ in range(4):  # dice come from the game's own generator, restored too
            g.apply({a: g.opponent_action(a, r) for a in g.to_move()})
            out.append(g.observe("player_0")[1]["text"])
        return out

    first = tail(game)
    other = seated("backgammon")
    other.restore(saved)
    assert tail(other) == first
    with pytest.raises(UnsupportedOption, match="snapshot is of"):
        seated("kuhn_poker").restore(saved)
    with pytest.raises(UnsupportedOption, match="before the first reset"):
        seated("kuhn_poker").snapshot()
    sim = seated(GOOFSPIEL)
    sim.reset(seed=1)
    sim.apply({"player_0": 0, "player_1": 1})
    back = seated(GOOFSPIEL)
    back.restore(sim.snapshot())
    assert back.observe("player_1")[1] == sim.observe("player_1")[1]
    assert back.to_move() == sim.to_move()


# -- refusals ----------------------------------------------------------------------------------


def test_illegal_and_out_of_turn_actions_are_refused() -> None:
    game = seated("tic_tac_toe")
    with pytest.raises(ResetNeeded, match="call reset first"):
        game.to_move()
    game.reset(seed=0)
    game.apply({"player_0": 4})
    with pytest.raises(InvalidAction, match=r"it is not player_0's turn \(player_1 to move\)"):
        game.parse_action("player_0", 0)
    for bad, message in [
        (4, r"action 4 is not legal now\. Legal: 0=o\(0,0\), 1=o\(0,1\)"),
        ("x(0,0)", r"'x\(0,0\)' is not legal now\. Did you mean 'o\(0,0\)'\?"),
        (9, "action 9 is not legal now"),
        (True, "expected a legal action id.*got bool True"),
        (1.5, "got float 1.5"),
        ("9" * 5000, "not legal now"),
    ]:
        with pytest.raises(InvalidAction, match=message) as caught:
            game.parse_action("player_1", bad)
        assert len(str(caught.value)) < 1000
    assert game.parse_action("player_1", " O(0,0) ") == 0
    assert game.parse_action("player_1", "8") == 8
    assert game.parse_action("player_1", np.int64(2)) == 2
    with pytest.raises(ArgumentError, match=r"no agent 'player_9'.*Did you mean"):
        game.parse_action("player_9", 0)
    with pytest.raises(InvalidAction, match=r"player_0 is not to move now \(to move: player_1\)"):
        game.apply({"player_0": 0})
    with pytest.raises(InvalidAction, match=r"player_1's action 4 is not legal now; legal: 0="):
        game.apply({"player_1": 4})
    with pytest.raises(InvalidAction, match="must be an action id"):
        game.apply({"player_1": "o(0,0)"})  # type: ignore[dict-item]
    assert game.to_move() == ["player_1"]  # nothing refused changed the game
    go = seated("go", game_params={"board_size": 9})
    go.reset(seed=0)
    with pytest.raises(InvalidAction, match="and 22 more") as caught:
        go.parse_action("player_0", "B z9")
    assert len(str(caught.value)) < 1200
    backgammon = seated("backgammon")
    backgammon.reset(seed=0)
    mover = backgammon.to_move()[0]
    action, name = backgammon.legal(mover)[0]
    assert backgammon.parse_action(mover, name.split(" - ", 1)[1]) == action  # without its id


# -- the single-seat env in simultaneous-move games ----------------------------------------------


def test_simultaneous_games_are_served_to_one_agent() -> None:
    assert {"goofspiel", "matrix_rps", "blotto", "oshi_zumo"} <= set(list_games())
    env = make(GOOFSPIEL, opponent="first_legal", player=1)
    _, info = env.reset(seed=0)
    assert info["current_player"] == -2 and info["legal_actions"] == [0, 1, 2, 3]
    result = env.step(env.parse_action("[P1]Bid: 4"))
    assert [(m["player"], m["action"]) for m in result.info["moves"][:2]] == [(0, 0), (1, 3)]
    while not (result.terminated or result.truncated):
        result = env.step(env.parse_action(result.info["legal_actions"][0]))
    assert sum(result.info["returns"]) == 0
    rps = make("matrix_rps", opponent="first_legal")  # the opponent plays Rock
    rps.reset(seed=0)
    result = rps.step(rps.parse_action("Paper"))
    assert result.terminated and result.reward == 1.0
    assert result.info["moves"][1] == {"player": 1, "action": None, "name": "(hidden)"}
    with pytest.raises(InvalidAction, match="the game is over"):
        rps.parse_action("Rock")
