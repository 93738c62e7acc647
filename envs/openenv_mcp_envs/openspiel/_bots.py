"""The opponents: seeded bots that move for every seat but the agent's.

Each bot draws only from the numpy ``RandomState`` it is handed (the episode's
opponent generator), so the same seed gives the same moves, and a snapshot that
saves that generator's state replays them. MCTS bots are built afresh for each
decision (they keep no state between moves): OpenSpiel's Python ``MCTSBot`` with a
``RandomRolloutEvaluator`` on the generator itself for perfect-information
games, and pyspiel's ``ISMCTSBot`` (information-set MCTS, which samples only
worlds consistent with what its player knows) seeded from the generator for
imperfect-information games.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pyspiel
from open_spiel.python.algorithms import mcts

from openenv_mcp.errors import ArgumentError

__all__ = ["OPPONENTS", "OpponentKind", "check_opponent", "choose"]

OpponentKind = Literal["random", "first_legal", "mcts"]

#: What each opponent does, in words for a model and for ``describe``.
OPPONENTS: dict[str, str] = {
    "random": "picks uniformly among its legal actions (seeded)",
    "first_legal": "always plays its lowest-numbered legal action",
    "mcts": "Monte Carlo tree search with random rollouts and a bounded number of simulations "
    "(seeded; information-set MCTS in imperfect-information games)",
}

_MAX_SEED = 2**31 - 1


def _perfect(game: Any) -> bool:
    return bool(game.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION)


def check_opponent(game: Any, kind: str, simulations: int, rollouts: int, uct_c: float) -> None:
    """Refuse an opponent that cannot play ``game``, saying why (tried on its first decision).

    Raises:
        ArgumentError: MCTS on a simultaneous-move game, on a game without terminal-only
            rewards, or on an imperfect-information game whose states cannot resample
            hidden information.
    """
    if kind != "mcts" or game.num_players() < 2:
        return
    name = game.get_type().short_name
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        raise ArgumentError(
            f"opponent 'mcts' cannot play {name!r}: it is a simultaneous-move game (every "
            "player acts at once), and OpenSpiel's MCTS searches one player's turn at a time; "
            "use --opponent random or first_legal, or make it turn-based: "
            f"--game 'turn_based_simultaneous_game(game={name}())'"
        )
    if game.get_type().reward_model != pyspiel.GameType.RewardModel.TERMINAL:
        raise ArgumentError(
            f"opponent 'mcts' cannot play {name!r}: OpenSpiel's MCTS needs rewards only at the "
            "end of the game, and this game rewards along the way; use --opponent random "
            "or first_legal"
        )
    if _perfect(game):
        return
    state = game.new_initial_state()
    rng = np.random.RandomState(0)
    while state.is_chance_node():
        outcomes, probs = zip(*state.chance_outcomes(), strict=True)
        state.apply_action(int(rng.choice(outcomes, p=probs)))
    if state.is_terminal():
        return
    try:
        choose(game, state, "mcts", rng, min(simulations, 4), rollouts, uct_c)
    except pyspiel.SpielError as exc:
        raise ArgumentError(
            f"opponent 'mcts' cannot play {name!r}: information-set MCTS must resample the "
            f"hidden information, and this game cannot ({exc}); use --opponent random or "
            "first_legal"
        ) from None


def choose(
    game: Any,
    state: Any,
    kind: str,
    rng: np.random.RandomState,
    simulations: int,
    rollouts: int,
    uct_c: float,
    player: int | None = None,
) -> int:
    """The action of an opponent of ``kind`` moving in ``state`` (drawing from ``rng``):
    the player to move's, or ``player``'s part of a joint move at a simultaneous node
    (random and first_legal only: MCTS plays turn by turn).

    Raises:
        ArgumentError: MCTS asked for a part of a joint move.
    """
    simultaneous = bool(state.is_simultaneous_node())
    if simultaneous and player is None:
        raise ArgumentError("a simultaneous-move node: say whose part of the joint move to choose")
    legal = state.legal_actions(player) if simultaneous else state.legal_actions()
    if kind == "first_legal":
        return int(legal[0])
    if kind == "random" or len(legal) == 1:
        return int(legal[rng.randint(len(legal))])
    if simultaneous:
        raise ArgumentError(
            "opponent 'mcts' cannot choose a part of a simultaneous move: use random or first_legal"
        )
    if _perfect(game):
        evaluator = mcts.RandomRolloutEvaluator(n_rollouts=rollouts, random_state=rng)
        bot = mcts.MCTSBot(game, uct_c, simulations, evaluator, solve=True, random_state=rng)
        return int(bot.step(state))
    seed = int(rng.randint(_MAX_SEED))
    evaluator = pyspiel.RandomRolloutEvaluator(rollouts, seed)
    bot = pyspiel.ISMCTSBot(
        seed,
        evaluator,
        uct_c,
        simulations,
        -1,
        pyspiel.ISMCTSFinalPolicyType.NORMALIZED_VISIT_COUNT,
        False,
        False,
    )
    return int(bot.step(state))
