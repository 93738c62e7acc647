"""An OpenSpiel game with every player a seat (``serve openspiel --seats``).

:class:`OpenSpielGame` is the env's game (:meth:`OpenSpielEnv.seated_game`) as a
:class:`~openenv_mcp.seats.SeatedGame`: agents ``player_0 .. player_{n-1}``, each
observing the game as the env's agent in that seat would (the same observation kind
and spaces, the same text), chance sampled from the episode's seeded generator as the
env samples it (the same seed deals the same cards), and the env's opponent (random,
first_legal, mcts) for the seats no client takes. At a simultaneous node (goofspiel,
the matrix games) every player with a legal action is to move, and the joint move is
played once all have chosen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyspiel
from gymnasium import spaces

from openenv_mcp.environment import parse_options
from openenv_mcp.errors import (
    ArgumentError,
    InvalidAction,
    ResetNeeded,
    UnsupportedOption,
    did_you_mean,
)
from openenv_mcp.seats import Move, SeatedGame
from openenv_mcp_envs.openspiel import _bots
from openenv_mcp_envs.openspiel._common import MAX_TEXT, draw_text, seeded
from openenv_mcp_envs.openspiel._narration import listing, short_name

__all__ = ["OpenSpielGame"]


def _shown(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


class OpenSpielGame(SeatedGame):
    """One OpenSpiel game of the env's config, every player a seat.

    Args:
        env: the env whose game, config, observation kind and spaces this game plays
            (only read: the env's own episode is untouched).
    """

    def __init__(self, env: Any) -> None:
        self._env = env
        self.game = env.game
        self.title = str(env.game_type.long_name)
        self.possible_agents = [f"player_{i}" for i in range(env.num_players)]
        self._seats = {agent: i for i, agent in enumerate(self.possible_agents)}
        self._observation_space: spaces.Space[Any] = env.observation_space
        self._action_space: spaces.Space[Any] = env.action_space
        self._state: Any = None
        self._steps = 0
        self._opponent: str = env.config.opponent
        self._simulations: int = env.config.mcts_simulations
        # Fresh entropy until a seed is given; unseeded resets go on from here.
        self._chance_rng = seeded(None)[0]

    # -- spaces ------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        self._seat(agent)
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space[Any]:
        self._seat(agent)
        return self._action_space

    # -- the episode -------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        opts = dict(options or {})
        if "player" in opts:
            raise UnsupportedOption(
                "option 'player' seats the one agent of an episode without seats; here every "
                "player is a seat of its own: leave it out. Per-episode options with seats: "
                "opponent, mcts_simulations"
            )
        parsed = parse_options(self._env, opts) or {}
        opponent, simulations = self._env._opponent_of(parsed)
        if seed is not None:  # unseeded, chance goes on (Gymnasium's meaning)
            self._chance_rng = seeded(seed)[0]
        self._opponent, self._simulations = opponent, simulations
        self._state = self.game.new_initial_state()
        self._steps = 0
        self._chance()

    def to_move(self) -> list[str]:
        state = self._live()
        if self.over:
            return []
        if state.is_simultaneous_node():
            return [a for a, i in self._seats.items() if state.legal_actions(i)]
        return [self.possible_agents[int(state.current_player())]]

    def legal(self, agent: str) -> list[tuple[int, str]]:
        seat = self._seat(agent)
        state = self._live()
        if agent not in self.to_move():
            return []
        return [(int(a), str(state.action_to_string(seat, a))) for a in self._ids(seat)]

    def observe(self, agent: str) -> tuple[Any, dict[str, Any]]:
        seat = self._seat(agent)
        state = self._live()
        env = self._env
        text = env.agent_text(state, seat)
        if env.observation_kind == "text":
            observation: Any = text
        else:
            values = (
                state.observation_tensor(seat)
                if env.observation_kind == "observation_tensor"
                else state.information_state_tensor(seat)
            )
            space = self._observation_space
            assert isinstance(space, spaces.Box)
            observation = np.asarray(values, dtype=np.float32).reshape(space.shape)
        legal = self.legal(agent)
        mask = [0] * env.n_actions
        for a, _ in legal:
            mask[a] = 1
        info: dict[str, Any] = {
            "text": text,
            "player": seat,
            "current_player": int(state.current_player()),
            "legal_actions": [a for a, _ in legal],
            "legal_action_names": [n for _, n in legal],
            "action_mask": mask,
            "returns": [float(r) for r in state.returns()],
        }
        if state.is_terminal() and not env.perfect:
            info["final_state"] = str(state)[:MAX_TEXT]  # the whole deal, once it is over
        return observation, info

    def apply(self, actions: Mapping[str, int]) -> dict[str, float]:
        state = self._live()
        movers = self.to_move()
        if not movers:
            raise InvalidAction("the game is over: there is no legal action; call reset")
        for agent in actions:
            self._seat(agent)
            if agent not in movers:
                raise InvalidAction(f"{agent} is not to move now (to move: {', '.join(movers)})")
        missing = [a for a in movers if a not in actions]
        if missing:
            raise InvalidAction(
                f"a simultaneous move needs the action of every player to move: missing "
                f"{', '.join(missing)} (to move: {', '.join(movers)})"
            )
        for agent, action in actions.items():
            ids = self._ids(self._seats[agent])
            if isinstance(action, bool) or not isinstance(action, int | np.integer):
                raise InvalidAction(
                    f"{agent}'s action must be an action id (integer), got "
                    f"{type(action).__name__} {_shown(action)}"
                )
            if int(action) not in ids:
                raise InvalidAction(
                    f"{agent}'s action {int(action)} is not legal now; legal: "
                    f"{listing(self.legal(agent))}"
                )
        before = [float(r) for r in state.returns()]
        if state.is_simultaneous_node():
            state.apply_actions(
                [int(actions.get(a, pyspiel.INVALID_ACTION)) for a in self.possible_agents]
            )
        else:
            state.apply_action(int(actions[movers[0]]))
        self._chance()
        self._steps += 1
        after = [float(r) for r in state.returns()]
        return {a: after[i] - before[i] for a, i in self._seats.items()}

    def terminations(self) -> dict[str, bool]:
        ended = bool(self._live().is_terminal())
        return dict.fromkeys(self.possible_agents, ended)

    def truncations(self) -> dict[str, bool]:
        cap = self._env.config.max_episode_steps
        cut = cap is not None and self._steps >= cap and not self._live().is_terminal()
        return dict.fromkeys(self.possible_agents, cut)

    # -- what seats see of each other --------------------------------------------------

    def last_moves(self, viewer: str, moves: Sequence[Mapping[str, Any]]) -> list[Move]:
        """Every move in a perfect-information game; in the others the viewer's own, and
        only that the others moved (as the env's ``info["moves"]``)."""
        if self._env.perfect or viewer is None:
            return [dict(m) for m in moves]
        return [
            dict(m) if m.get("agent") == viewer else {**m, "action": None, "name": "(hidden)"}
            for m in moves
        ]

    def action_name(self, agent: str, action: int) -> str:
        seat = self._seat(agent)
        try:
            return str(self._live().action_to_string(seat, int(action)))
        except pyspiel.SpielError:
            return str(action)

    def render(self, viewer: str | None = None) -> np.ndarray | None:
        """The seat's text drawn (the whole state for a watcher) where the env draws
        frames (its ``render_mode`` is ``rgb_array``); else ``None``."""
        if self._env.render_mode != "rgb_array":
            return None
        state = self._live()
        if viewer is None:
            return draw_text(str(state)[:MAX_TEXT])
        return draw_text(self._env.agent_text(state, self._seat(viewer)))

    # -- built-in players --------------------------------------------------------------

    def opponent_action(self, agent: str, rng: np.random.Generator) -> int:
        """The env's opponent (this episode's: random, first_legal or mcts) for
        ``agent``, drawing from ``rng``."""
        seat = self._seat(agent)
        if agent not in self.to_move():
            movers = ", ".join(self.to_move()) or "nobody"
            raise InvalidAction(f"{agent} has no legal action now ({movers} to move)")
        cfg = self._env.config
        state = self._live()
        return _bots.choose(
            self.game,
            state,
            self._opponent,
            np.random.RandomState(rng.integers(0, 2**32, size=4, dtype=np.uint32)),
            self._simulations,
            cfg.mcts_rollouts,
            cfg.mcts_uct_c,
            player=seat,
        )

    # -- actions -----------------------------------------------------------------------

    def parse_action(self, agent: str, action: Any) -> int:
        """The legal action id ``action`` means: an id, a name in any case, or a name
        without its leading id (backgammon's ``24/22 24/21``).

        Raises:
            InvalidAction: naming what came and the legal actions (the first 60).
        """
        self._seat(agent)
        if self.over:
            raise InvalidAction("the game is over: there is no legal action; call reset")
        legal = self.legal(agent)
        if not legal:
            raise InvalidAction(
                f"it is not {agent}'s turn ({', '.join(self.to_move()) or 'nobody'} to move)"
            )
        ids = {a for a, _ in legal}

        def refuse(what: str, hint: str = "") -> InvalidAction:
            return InvalidAction(f"{what} is not legal now.{hint} Legal: {listing(legal)}")

        if isinstance(action, bool) or not isinstance(action, int | np.integer | str):
            raise InvalidAction(
                f"expected a legal action id (integer) or name (string), got "
                f"{type(action).__name__} {_shown(action)}; legal: {listing(legal)}"
            )
        if isinstance(action, int | np.integer):
            if int(action) in ids:
                return int(action)
            raise refuse(f"action {int(action)}")
        key = action.strip()
        by_name = {name.strip().lower(): a for a, name in reversed(legal)}
        for a, name in legal:
            by_name.setdefault(short_name(a, name).strip().lower(), a)
        if key.lower() in by_name:
            return by_name[key.lower()]
        if key.lstrip("-").isascii() and key.lstrip("-").isdigit() and len(key) <= 18:
            return self.parse_action(agent, int(key))
        raise refuse(f"action {_shown(action)}", did_you_mean(key, [n for _, n in legal]))

    # -- snapshots ---------------------------------------------------------------------

    def snapshot(self) -> Any:
        if self._state is None:
            raise UnsupportedOption("nothing to snapshot before the first reset")
        return {
            "game": str(self.game),
            "state": self._state.serialize(),
            "steps": self._steps,
            "opponent": self._opponent,
            "mcts_simulations": self._simulations,
            "chance_rng": self._chance_rng.get_state(),
        }

    def restore(self, saved: Any) -> None:
        if not isinstance(saved, Mapping) or saved.get("game") != str(self.game):
            got = saved.get("game") if isinstance(saved, Mapping) else type(saved).__name__
            raise UnsupportedOption(f"this snapshot is of {got!r}, not {str(self.game)!r}")
        self._state = self.game.deserialize_state(saved["state"])
        self._steps = int(saved["steps"])
        self._opponent = str(saved["opponent"])
        self._simulations = int(saved["mcts_simulations"])
        self._chance_rng.set_state(saved["chance_rng"])

    # -- helpers -----------------------------------------------------------------------

    def _seat(self, agent: str) -> int:
        """``agent``'s player number."""
        seat = self._seats.get(agent) if isinstance(agent, str) else None
        if seat is None:
            raise ArgumentError(
                f"no agent {_shown(agent)} in {self.title}.{did_you_mean(str(agent), self._seats)}"
                f" Agents: {', '.join(self.possible_agents)}"
            )
        return seat

    def _live(self) -> Any:
        """The state (after the first reset)."""
        if self._state is None:
            raise ResetNeeded("the game has not started: call reset first")
        return self._state

    def _ids(self, seat: int) -> list[int]:
        """``seat``'s legal action ids in the state as it is (to move or not)."""
        state = self._state
        if state.is_terminal() or state.is_chance_node():
            return []
        if state.is_simultaneous_node():
            return [int(a) for a in state.legal_actions(seat)]
        if int(state.current_player()) != seat:
            return []
        return [int(a) for a in state.legal_actions()]

    def _chance(self) -> None:
        """Sample chance nodes (as the env samples them) until a player is to move."""
        state = self._state
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            p = np.asarray(probs, dtype=np.float64)
            state.apply_action(int(outcomes[self._chance_rng.choice(len(outcomes), p=p / p.sum())]))
