"""Any PettingZoo environment, the agent in one seat, seeded random players in the others.

``openenv-mcp serve pettingzoo --id tictactoe_v3`` (connect_four_v3, chess_v6, go_v5,
rps_v2, texas_holdem_v4, leduc_holdem_v4, hanabi_v5, ...; ``describe pettingzoo``
lists every id):

* the agent plays one of the env's agents (``--agent NAME``, default the first); every
  other agent plays a uniformly random legal action from the episode's seeded
  generator; at a simultaneous move (a parallel env such as rps_v2) they choose with
  the agent, without seeing its choice;
* actions are the env's action ids (``NamedDiscrete``) or their names (tic-tac-toe's
  cells, Connect Four's columns, chess's UCI moves, Go's points, poker's bets); each
  step's ``info`` lists the legal ones by id and name and as an ``action_mask``;
* the observation is the agent's own (a classic game's ``"observation"`` part; its
  ``"action_mask"`` is ``info["action_mask"]``), and ``info["text"]`` the game in
  words as the agent may see it;
* the step reward is the agent's, from its move and the others' moves after it;
  ``info["rewards"]`` has every agent's;
* ``serve pettingzoo --seats`` serves the same game with a seat per agent
  (:meth:`PettingZooEnv.seated_game`).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
import pettingzoo  # type: ignore[import-untyped,unused-ignore]
from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.environment import Environment, Serving, StepResult
from openenv_mcp.errors import ArgumentError, InvalidAction, UnsupportedOption
from openenv_mcp.options import kwargs_checks
from openenv_mcp.spaces import NamedDiscrete
from openenv_mcp.tasks import TaskSet
from openenv_mcp_envs.pettingzoo._game import (
    MANAGED,
    Api,
    PettingZooGame,
    classic_games,
    list_ids,
    parse_kwargs,
)
from openenv_mcp_envs.pettingzoo._narration import PettingZooNarration
from openenv_mcp_envs.pettingzoo._tasks import pettingzoo_tasks

__all__ = ["PettingZooConfig", "PettingZooEnv"]

log = logging.getLogger(__name__)

#: Moves the other agents may make in a row before the agent's turn comes (a guard
#: against an env whose agent never gets its turn back).
MAX_OTHERS_MOVES = 100_000
#: Games dealt at most in one reset, where the others end each before the agent's turn.
MAX_DEALS = 100


class PettingZooConfig(BaseModel):
    """Options of the pettingzoo environment (``openenv-mcp serve pettingzoo --id ...``)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        "tictactoe_v3",
        min_length=1,
        max_length=300,
        description="A PettingZoo environment: tictactoe_v3, connect_four_v3, chess_v6, go_v5, "
        "rps_v2, texas_holdem_v4, ... (also classic/tictactoe_v3 or "
        "pettingzoo.classic.tictactoe_v3; module:name for another package's env).",
    )
    agent: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="The env's agent you play (player_1, black_0, ...); default: its first.",
    )
    kwargs: Annotated[dict[str, Any], kwargs_checks(parse_kwargs, MANAGED)] = Field(
        {},
        description="Keyword arguments of the env: key=value pairs (board_size=9,komi=6.5) "
        "or a JSON object.",
    )
    api: Api = Field(
        "auto",
        description="Which PettingZoo API to play: auto (parallel where the env has it, so "
        "every agent moves at once), aec or parallel.",
    )
    max_episode_steps: int | None = Field(
        None,
        ge=1,
        description="Truncate episodes after this many of your moves (with --seats: after "
        "this many moves of all seats together).",
    )
    render: bool = Field(
        True,
        description="Return the env's rgb_array frame as a PNG image where it draws one "
        "(never the private cards of another seat).",
    )


class PettingZooInfo(BaseModel):
    """What ``info`` holds."""

    text: str = Field(description="The game in words, as you may see it.")
    agent: str = Field(description="The agent you play.")
    to_move: list[str] = Field(description="The agents to move now (none once it is over).")
    legal_actions: list[int] = Field(description="Your legal action ids now.")
    legal_action_names: list[str] = Field(description="Their names, in the same order.")
    action_mask: list[int] = Field(description="1 for each legal action id, over all ids.")
    rewards: dict[str, float] = Field(description="Every agent's reward of this step.")
    returns: dict[str, float] = Field(description="Every agent's return so far.")
    moves: list[dict[str, Any]] = Field(
        description="The moves since your last (agent, action, name), yours first."
    )


class PettingZooEnv(Environment[PettingZooConfig]):
    """One PettingZoo environment: the agent plays one of its agents, random players the rest."""

    name: ClassVar[str] = "pettingzoo"
    description: ClassVar[str] = (
        "Any PettingZoo environment (--id tictactoe_v3, connect_four_v3, chess_v6, go_v5, "
        "rps_v2, texas_holdem_v4, ...): the agent plays one agent against seeded random "
        "players; legal actions by id and name; --seats gives every agent a seat."
    )
    Config: ClassVar[type[BaseModel]] = PettingZooConfig
    Info = PettingZooInfo
    # Not inline: chess's legal moves and Go's scoring take a while. No tool per action:
    # the legal actions change every turn.
    serving = Serving(inline=False, action_tools=False)
    narration = PettingZooNarration

    def __init__(self, config: PettingZooConfig) -> None:
        super().__init__(config)
        self.game = self._new_game(max_moves=None)
        agents = self.game.possible_agents
        agent = config.agent if config.agent is not None else agents[0]
        if agent not in agents:
            raise ArgumentError(
                f"agent {agent!r} is not an agent of {self.game.resolved.id}; its agents: "
                f"{', '.join(agents)}"
            )
        self.agent: str = agent
        space = self.game.action_space(agent)
        # Named by the game, per state: parse_action resolves the names.
        self.action_space = NamedDiscrete(int(space.n), start=int(space.start))
        self.observation_space = self.game.observation_space(agent)
        # A frame shows every hand: drawn only where every agent sees the whole game.
        frames = self.game.mode == "rgb_array" and self.game.perfect
        self.render_mode = "rgb_array" if frames else None
        self._rng = np.random.default_rng()
        self._started = False
        self._steps = 0
        self._moves: list[dict[str, Any]] = []
        self._rewards = dict.fromkeys(agents, 0.0)

    def _new_game(self, max_moves: int | None) -> PettingZooGame:
        cfg = self.config
        return PettingZooGame(
            cfg.id, cfg.kwargs, api=cfg.api, max_moves=max_moves, render=cfg.render
        )

    def seated_game(self) -> PettingZooGame:
        """A new game of the same env and kwargs, every agent a seat (``--seats``)."""
        return self._new_game(max_moves=self.config.max_episode_steps)

    def task_set(self) -> TaskSet:
        """Train, validation and test seeds of the served env and seat, a success when won
        (``_tasks.py``)."""
        kwargs = json.dumps(self.config.kwargs, sort_keys=True, default=str)
        return pettingzoo_tasks(self.game.resolved.id, kwargs, self.agent)

    def metadata(self) -> dict[str, Any]:
        game = self.game
        found = game.resolved
        agent = self.agent
        return {
            "config": self.config.model_dump(mode="json"),
            "pettingzoo_version": pettingzoo.__version__,
            "id": found.id,
            "registry_id": found.registry_id,
            "family": found.family,
            "title": game.title,
            "api": "parallel" if game.parallel else "aec",
            "agents": list(game.possible_agents),
            "agent": agent,
            "observation_space": str(game.observation_space(agent)),
            "action_space": str(game.action_space(agent)),
            "render_modes": list(game.render_modes),
            "perfect_information": game.perfect,
            "classic_games": classic_games(),
            "ids": list_ids(),
        }

    # -- the state, as the agent sees it -----------------------------------------------

    def text(self) -> str:
        """The game in words, as the agent may see it."""
        return self.game.text(self.agent)

    def legal(self) -> list[tuple[int, str]]:
        """The agent's legal actions now, as ``(id, name)``; none unless it is to move."""
        return self.game.legal(self.agent)

    def _info(self) -> dict[str, Any]:
        _, info = self.game.observe(self.agent)
        info["rewards"] = dict(self._rewards)
        info["returns"] = self.game.returns
        info["moves"] = self.game.last_moves(self.agent, self._moves)
        return info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array" or not self._started:
            return None
        return self.game.render(self.agent)

    # -- actions -----------------------------------------------------------------------

    def parse_action(self, action: Any) -> Any:
        return np.int64(self.game.parse_action(self.agent, action))

    # -- the episode -------------------------------------------------------------------

    def _play(self, joint: dict[str, int], rewards: dict[str, float]) -> None:
        """Apply one move, naming it in the moves and adding its rewards."""
        game = self.game
        for who, action in joint.items():
            self._moves.append(
                {"agent": who, "action": action, "name": game.action_name(who, action)}
            )
        for who, reward in game.apply(joint).items():
            rewards[who] = rewards.get(who, 0.0) + reward

    def _advance(self, rewards: dict[str, float]) -> None:
        """The other agents move until it is the agent's turn or its game is over."""
        game = self.game
        for _ in range(MAX_OTHERS_MOVES):
            movers = game.to_move()
            done = game.terminations()[self.agent] or game.truncations()[self.agent]
            if done or not movers or self.agent in movers:
                return
            self._play({m: game.opponent_action(m, self._rng) for m in movers}, rewards)
        raise InvalidAction(
            f"{self.agent}'s turn did not come back within {MAX_OTHERS_MOVES} moves of the "
            "other agents"
        )

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if options:
            key = next(iter(options))
            raise UnsupportedOption(f"option {key!r}: PettingZoo episodes take no options")
        if seed is not None:  # unseeded, both streams go on (Gymnasium's meaning)
            self._rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        game = self.game
        game.reset(seed=seed)
        for _ in range(MAX_DEALS):
            self._moves = []
            rewards = dict.fromkeys(game.possible_agents, 0.0)
            self._advance(rewards)
            if not (game.terminations()[self.agent] or game.truncations()[self.agent]):
                break
            # The others ended the game before the agent's first move (a poker player
            # folded): an episode starts on the agent's turn, so the game is dealt again,
            # with the next seed of the episode's seed stream.
            game.reset()
        self._started = True
        self._steps = 0
        self._rewards = rewards
        observation, _ = self.game.observe(self.agent)
        return observation, self._info()

    def step(self, action: Any) -> StepResult:
        game = self.game
        movers = game.to_move()
        chosen = int(action)
        if self.agent not in movers or chosen not in {a for a, _ in game.legal(self.agent)}:
            self.parse_action(chosen)  # raises InvalidAction, naming the legal actions
            raise InvalidAction(f"action {chosen} is not legal now")
        joint = {self.agent: chosen}
        for other in movers:
            if other != self.agent:
                joint[other] = game.opponent_action(other, self._rng)
        self._moves = []
        rewards = dict.fromkeys(game.possible_agents, 0.0)
        self._play(joint, rewards)
        self._advance(rewards)
        self._rewards = rewards
        self._steps += 1
        terminated = game.terminations()[self.agent]
        cap = self.config.max_episode_steps
        truncated = game.truncations()[self.agent] or (
            cap is not None and self._steps >= cap and not terminated
        )
        observation, _ = game.observe(self.agent)
        return StepResult(
            observation, rewards[self.agent], bool(terminated), bool(truncated), self._info()
        )

    def state(self) -> dict[str, Any]:
        if not self._started:
            return {}
        legal = self.legal()
        return {
            "text": self.text(),
            "agent": self.agent,
            "to_move": self.game.to_move(),
            "legal_actions": [a for a, _ in legal],
            "legal_action_names": [n for _, n in legal],
        }

    def close(self) -> None:
        self.game.close()

    # -- snapshots ---------------------------------------------------------------------

    def snapshot(self) -> Any:
        if not self._started:
            raise UnsupportedOption("nothing to snapshot before the first reset")
        return {
            "game": self.game.snapshot(),
            "agent": self.agent,
            "rng": self._rng.bit_generator.state,
            "steps": self._steps,
            "moves": [dict(m) for m in self._moves],
            "rewards": dict(self._rewards),
        }

    def restore(self, snapshot: Any) -> None:
        if snapshot.get("agent") != self.agent:
            raise UnsupportedOption(
                f"this snapshot is of agent {snapshot.get('agent')!r}, not {self.agent!r}"
            )
        self.game.restore(snapshot["game"])
        self._rng.bit_generator.state = snapshot["rng"]
        self._steps = int(snapshot["steps"])
        self._moves = [dict(m) for m in snapshot["moves"]]
        self._rewards = dict(snapshot["rewards"])
        self._started = True


if TYPE_CHECKING:  # mypy checks that the env has what its narration reads (PettingZooView)
    from openenv_mcp_envs.pettingzoo._narration import PettingZooView

    def _narrated(env: PettingZooEnv) -> PettingZooView:
        return env
