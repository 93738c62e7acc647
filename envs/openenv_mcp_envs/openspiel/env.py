"""Every OpenSpiel game of turns or simultaneous moves, the agent in one seat, seeded bots
in the others.

``openenv-mcp serve openspiel --game tic_tac_toe`` (connect_four, kuhn_poker,
leduc_poker, backgammon, hex, go, 2048, ...; ``describe openspiel`` lists them):

* the agent plays one seat (``--player N``, or ``--player random``: drawn from
  each episode's seed); every other seat is a seeded opponent (``--opponent
  random | first_legal | mcts``); chance nodes (dice, deals, new tiles) are
  sampled by the environment from the episode's seeded generator, never asked
  of the agent;
* actions are the game's action ids (``NamedDiscrete(num_distinct_actions)``) or
  their names (``state.action_to_string``). In a simultaneous-move game (goofspiel,
  matrix games) the agent's action is its part of each joint move, the opponents
  choosing theirs at the same node. The legal ones change every turn, so
  each step's ``info`` carries them by id and by name and as an ``action_mask``,
  and the server's ``legal_actions`` tool lists them (named by the narration's
  ``action_name``);
* the observation is the game's ``observation_tensor`` from the agent's seat (or
  its ``information_state_tensor``, or the text where it has neither), and
  ``info["text"]`` the state as text, as the agent may see it (the whole state in
  perfect-information games; the agent's own observation string otherwise);
* the step reward is the agent's; ``info["rewards"]`` and ``info["returns"]`` give
  every player's reward of the step and return so far;
* seeds: ``reset(seed=s)`` seeds chance, the opponents and a random seat; an
  unseeded reset goes on with the same generators (Gymnasium's meaning);
* per-episode options may seat the agent (``player``) and choose the opponents
  (``opponent``, ``mcts_simulations``): the task set
  (:mod:`openenv_mcp_envs.openspiel._tasks`, one per game) starts each game so;
* snapshots hold the serialized state, the episode's opponent and every generator's
  state;
* ``serve openspiel --seats`` serves every player as a seat a client drives
  (:meth:`OpenSpielEnv.seated_game`, :class:`~openenv_mcp_envs.openspiel._seats.OpenSpielGame`).
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pyspiel
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from openenv_mcp.environment import Environment, Resources, Serving, StepResult
from openenv_mcp.errors import ArgumentError, InvalidAction, UnsupportedOption, did_you_mean
from openenv_mcp.spaces import AnyText, NamedDiscrete
from openenv_mcp.tasks import TaskSet
from openenv_mcp_envs.openspiel import _bots
from openenv_mcp_envs.openspiel._common import MAX_TEXT, draw_text, seeded
from openenv_mcp_envs.openspiel._games import list_games, load, parse_params, unsupported_games
from openenv_mcp_envs.openspiel._narration import OpenSpielNarration, listing, short_name
from openenv_mcp_envs.openspiel._openenv import OpenSpielModels
from openenv_mcp_envs.openspiel._seats import OpenSpielGame
from openenv_mcp_envs.openspiel._tasks import openspiel_tasks

if TYPE_CHECKING:
    from openenv_mcp.seats import SeatedGame

__all__ = ["OpenSpielConfig", "OpenSpielEnv"]

log = logging.getLogger(__name__)

#: State texts longer than this are drawn as an image instead (by default): a model's
#: one-line summary shows only the first 300 characters of the observation text.
FRAME_THRESHOLD = 150
_ObservationKind = Literal["auto", "observation_tensor", "information_state_tensor", "text"]


class OpenSpielConfig(BaseModel):
    """Options of the OpenSpiel environment (``openenv-mcp serve openspiel --game ...``)."""

    model_config = ConfigDict(extra="forbid")

    game: str = Field(
        "tic_tac_toe",
        min_length=1,
        max_length=1000,
        description="An OpenSpiel game: tic_tac_toe, connect_four, kuhn_poker, leduc_poker, "
        "backgammon, hex, go, 2048, ... (describe openspiel lists them); a game string such "
        "as 'go(board_size=9)' works too.",
    )
    game_params: dict[str, Any] = Field(
        {},
        description="The game's parameters, checked against its own list: key=value pairs "
        "(board_size=9,komi=6.5) or a JSON object.",
    )
    player: int | Literal["random"] = Field(
        0,
        description="The agent's seat (0-based), or 'random': drawn from each episode's seed.",
    )
    opponent: _bots.OpponentKind = Field(
        "random",
        description="Who plays the other seats: random (seeded), first_legal, or mcts "
        "(seeded Monte Carlo tree search; --mcts-simulations bounds it).",
    )
    mcts_simulations: int = Field(
        100, ge=1, le=100_000, description="MCTS simulations per opponent move."
    )
    mcts_rollouts: int = Field(
        1, ge=1, le=100, description="Random rollouts per MCTS leaf evaluation."
    )
    mcts_uct_c: float = Field(2.0, gt=0, le=100, description="MCTS exploration constant (UCT).")
    observation: _ObservationKind = Field(
        "auto",
        description="What the observation is: auto (the observation tensor, else the "
        "information-state tensor, else the text), one of those by name, or text.",
    )
    max_episode_steps: int | None = Field(
        None, ge=1, description="Truncate episodes after this many agent moves."
    )
    render: bool | None = Field(
        None,
        description="Draw the state text as an image (PNG) each call; default: only for "
        "games whose text is too long for a model's one-line summary (go, backgammon...).",
    )

    @field_validator("game_params", mode="before")
    @classmethod
    def _read_params(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_params(value)
        return value

    @field_validator("opponent", mode="before")
    @classmethod
    def _dashes(cls, value: Any) -> Any:
        return value.strip().lower().replace("-", "_") if isinstance(value, str) else value

    @field_validator("player", mode="before")
    @classmethod
    def _seat(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
        return value


@functools.cache
def _box(shape: tuple[int, ...]) -> spaces.Box:
    """One observation space per shape, shared by every episode."""
    return spaces.Box(-np.inf, np.inf, shape, np.float32)


def _has_shape(shape: Any) -> bool:
    """Whether a game's tensor shape is implemented (crossword declares one it lacks)."""
    try:
        return len(shape()) > 0
    except pyspiel.SpielError:
        return False


class OpenSpielInfo(BaseModel):
    """What ``info`` holds (``move_number`` only in the ``state`` tool's; ``final_state``
    only at the end of an imperfect-information game)."""

    text: str = Field(description="The state as text, as you may see it.")
    player: int = Field(description="Your seat.")
    current_player: int = Field(
        description="Whose turn it is (yours while running; -4 at the end)."
    )
    move_number: int = Field(description="Moves so far (state only).")
    legal_actions: list[int] = Field(description="Legal action ids now.")
    legal_action_names: list[str] = Field(description="Their names, in the same order.")
    action_mask: list[int] = Field(description="1 for each legal action id, over all ids.")
    rewards: list[float] = Field(description="Every player's reward of this step.")
    returns: list[float] = Field(description="Every player's return so far.")
    moves: list[dict[str, Any]] = Field(
        description="Moves since your last (player, action, name; hidden ones named '(hidden)')."
    )


def _options(players: int) -> type[BaseModel]:
    """The per-episode options of a game of ``players`` seats (the opponent's only where
    there are other seats)."""
    # Typed with no default value of their type: an option left out is not passed to reset.
    fields: dict[str, Any] = {
        "player": (
            int,
            Field(None, ge=0, le=players - 1, description="Your seat for this episode."),
        )
    }
    if players > 1:
        fields["opponent"] = (
            _bots.OpponentKind,
            Field(None, description="Who plays the other seats this episode (--opponent)."),
        )
        fields["mcts_simulations"] = (
            int,
            Field(
                None,
                ge=1,
                le=100_000,
                description="MCTS simulations per opponent move this episode (with mcts).",
            ),
        )
    return create_model(
        "OpenSpielOptions", __config__=ConfigDict(extra="forbid", strict=True), **fields
    )


class OpenSpielEnv(Environment[OpenSpielConfig]):
    """One OpenSpiel game: the agent in one seat, seeded opponents, chance sampled."""

    name: ClassVar[str] = "openspiel"
    description: ClassVar[str] = (
        "Every OpenSpiel game of turns or simultaneous moves (--game tic_tac_toe, "
        "connect_four, kuhn_poker, leduc_poker, backgammon, hex, go, 2048, goofspiel, ...): "
        "the agent plays one seat against seeded opponents (random, first_legal, mcts); "
        "legal actions by id and name."
    )
    Config: ClassVar[type[BaseModel]] = OpenSpielConfig
    Info = OpenSpielInfo
    # Not inline: MCTS opponents may search for a while. No tool per action: the legal
    # actions change every turn.
    serving = Serving(
        inline=False,
        action_tools=False,
        resources=Resources(cpu=1.0, memory_mib=512, episodes=256),
    )
    narration = OpenSpielNarration
    openenv_models = OpenSpielModels

    def __init__(self, config: OpenSpielConfig) -> None:
        super().__init__(config)
        self.game = load(config.game, config.game_params)
        self.game_type = self.game.get_type()
        self.short_name: str = self.game_type.short_name
        self.num_players: int = self.game.num_players()
        self.perfect = (
            self.game_type.information == pyspiel.GameType.Information.PERFECT_INFORMATION
        )
        if isinstance(config.player, int) and not 0 <= config.player < self.num_players:
            raise ArgumentError(
                f"player {config.player} is not a seat of {self.short_name!r}, which has "
                f"{self.num_players} player(s): choose 0-{self.num_players - 1} or 'random'"
            )
        _bots.check_opponent(
            self.game,
            config.opponent,
            config.mcts_simulations,
            config.mcts_rollouts,
            config.mcts_uct_c,
        )
        self.observation_kind = self._observation_kind(config.observation)
        if self.observation_kind == "text":
            self.observation_space = AnyText(MAX_TEXT)
        elif self.observation_kind == "observation_tensor":
            self.observation_space = _box(tuple(self.game.observation_tensor_shape()))
        else:
            self.observation_space = _box(tuple(self.game.information_state_tensor_shape()))
        self.n_actions: int = self.game.num_distinct_actions()
        # Named by the state (state.action_to_string): parse_action resolves the names.
        self.action_space = NamedDiscrete(self.n_actions)
        self.Options = _options(self.num_players)
        self._state: Any = None
        self._seat = 0 if config.player == "random" else int(config.player)
        # Fresh entropy until a seed is given; unseeded resets go on from here.
        self._chance_rng, self._opponent_rng, self._seat_rng = seeded(None)
        self._steps = 0
        self._moves: list[dict[str, Any]] = []
        self._rewards = [0.0] * self.num_players
        #: This episode's opponent and MCTS simulations (the config's, unless options chose).
        self._opponent: str = config.opponent
        self._simulations: int = config.mcts_simulations
        self._mcts_refusal: str | None = None if config.opponent != "mcts" else ""
        self.render_mode = "rgb_array" if self._wants_frame(config.render) else None

    def _observation_kind(self, asked: str) -> str:
        t, game = self.game_type, self.game
        provided = {
            "observation_tensor": bool(t.provides_observation_tensor)
            and _has_shape(game.observation_tensor_shape),
            "information_state_tensor": bool(t.provides_information_state_tensor)
            and _has_shape(game.information_state_tensor_shape),
            "text": True,
        }
        if asked == "auto":
            return next(kind for kind, ok in provided.items() if ok)
        if not provided[asked]:
            offered = ", ".join(k for k, ok in provided.items() if ok)
            raise ArgumentError(
                f"observation {asked!r}: {self.short_name!r} does not provide an {asked}; "
                f"it offers: {offered}"
            )
        return asked

    def _wants_frame(self, asked: bool | None) -> bool:
        if asked is not None:
            return asked
        state = self.game.new_initial_state()
        rng = np.random.RandomState(0)
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        seat = state.current_player() if state.current_player() >= 0 else 0
        return len(self.agent_text(state, seat)) > FRAME_THRESHOLD

    def metadata(self) -> dict[str, Any]:
        t = self.game_type
        return {
            "config": self.config.model_dump(mode="json"),
            "game": self.short_name,
            "long_name": t.long_name,
            "game_string": str(self.game),
            "parameters": dict(self.game.get_parameters()),
            "num_players": self.num_players,
            "num_distinct_actions": self.n_actions,
            "information": t.information.name,
            "chance_mode": t.chance_mode.name,
            "utility": t.utility.name,
            "min_utility": self.game.min_utility(),
            "max_utility": self.game.max_utility(),
            "max_game_length": self.game.max_game_length(),
            "observation": self.observation_kind,
            "opponents": dict(_bots.OPPONENTS),
            "games": list_games(),
            "unsupported_games": unsupported_games(),
        }

    # -- the state, as the agent sees it -----------------------------------------------

    @property
    def game_state(self) -> Any:
        """The episode's ``pyspiel.State`` (``None`` before the first reset): read it, do not
        apply actions to it."""
        return self._state

    @property
    def seat(self) -> int:
        """The agent's seat (this episode's)."""
        return self._seat

    def agent_text(self, state: Any, seat: int) -> str:
        """``state`` as text, as ``seat`` may see it (cut at ``MAX_TEXT``)."""
        t = self.game_type
        if self.perfect:
            text = str(state)
        elif t.provides_information_state_string:  # perfect recall: the history too
            text = state.information_state_string(seat)
        elif t.provides_observation_string:
            text = state.observation_string(seat)
        else:
            text = "(this game shows no text of a player's view)"
        return text[:MAX_TEXT]

    def legal(self) -> list[tuple[int, str]]:
        """The agent's legal actions now, as ``(id, name)``; none unless it is its turn
        (or its part of a simultaneous move)."""
        state = self._state
        return [(a, state.action_to_string(self._seat, a)) for a in self._legal_ids()]

    def _legal_ids(self) -> list[int]:
        state = self._state
        if state is None or state.is_terminal() or state.is_chance_node():
            return []
        if state.is_simultaneous_node():
            return [int(a) for a in state.legal_actions(self._seat)]
        if state.current_player() != self._seat:
            return []
        return [int(a) for a in state.legal_actions()]

    def _observation(self) -> Any:
        state, seat = self._state, self._seat
        if self.observation_kind == "text":
            return self.agent_text(state, seat)
        values = (
            state.observation_tensor(seat)
            if self.observation_kind == "observation_tensor"
            else state.information_state_tensor(seat)
        )
        space = self.observation_space
        assert isinstance(space, spaces.Box)
        return np.asarray(values, dtype=np.float32).reshape(space.shape)

    def _info(self) -> dict[str, Any]:
        state = self._state
        legal = self.legal()
        mask = [0] * self.n_actions
        for a, _ in legal:
            mask[a] = 1
        info: dict[str, Any] = {
            "text": self.agent_text(state, self._seat),
            "player": self._seat,
            "current_player": int(state.current_player()),
            "legal_actions": [a for a, _ in legal],
            "legal_action_names": [n for _, n in legal],
            "action_mask": mask,
            "rewards": list(self._rewards),
            "returns": [float(r) for r in state.returns()],
            "moves": list(self._moves),
        }
        if state.is_terminal() and not self.perfect:
            info["final_state"] = str(state)[:MAX_TEXT]  # the whole deal, once it is over
        return info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        if self._state is None:
            return draw_text(" ")
        return draw_text(self.agent_text(self._state, self._seat))

    # -- actions -----------------------------------------------------------------------

    def parse_action(self, action: Any) -> Any:
        state = self._state
        if state is None or state.is_terminal():
            raise InvalidAction("the game is over: there is no legal action; call reset")
        legal = self.legal()
        ids = {a for a, _ in legal}

        def refuse(what: str, hint: str = "") -> InvalidAction:
            return InvalidAction(f"{what} is not legal now.{hint} Legal: {listing(legal)}")

        if isinstance(action, bool):
            raise InvalidAction(
                f"expected a legal action id or name, got the boolean {action!r}; "
                f"legal: {listing(legal)}"
            )
        if isinstance(action, (int, np.integer)):
            if int(action) in ids:
                return np.int64(action)
            raise refuse(f"action {int(action)}")
        if isinstance(action, str):
            key = action.strip()
            by_name = {name.strip().lower(): a for a, name in reversed(legal)}
            for a, name in legal:  # backgammon's "0 - 24/22 24/21": the move alone
                by_name.setdefault(short_name(a, name).strip().lower(), a)
            if key.lower() in by_name:
                return np.int64(by_name[key.lower()])
            if key.lstrip("-").isascii() and key.lstrip("-").isdigit() and len(key) <= 18:
                number = int(key)
                if number in ids:
                    return np.int64(number)
                raise refuse(f"action {number}")
            shown = repr(action) if len(action) <= 60 else repr(action[:57]) + "..."
            names = [name for _, name in legal]
            raise refuse(f"action {shown}", did_you_mean(key, names))
        shown = repr(action) if len(repr(action)) <= 60 else repr(action)[:57] + "..."
        raise InvalidAction(
            f"expected a legal action id (integer) or name (string), got "
            f"{type(action).__name__} {shown}; legal: {listing(legal)}"
        )

    # -- the episode -------------------------------------------------------------------

    def _advance(self) -> None:
        """Play chance and opponents until it is the agent's turn or the game is over."""
        state = self._state
        while not state.is_terminal() and not self._legal_ids():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                p = np.asarray(probs, dtype=np.float64)
                action = int(outcomes[self._chance_rng.choice(len(outcomes), p=p / p.sum())])
                who = -1
            elif state.is_simultaneous_node():  # the agent has no part in this one
                self._play_joint(None)
                continue
            else:
                who = int(state.current_player())
                action = self._opponent_action(who)
            name = state.action_to_string(who, action)
            self._record(who, action, name)
            state.apply_action(action)

    def _opponent_action(self, who: int) -> int:
        cfg = self.config
        return _bots.choose(
            self.game,
            self._state,
            self._opponent,
            self._opponent_rng,
            self._simulations,
            cfg.mcts_rollouts,
            cfg.mcts_uct_c,
            player=who,
        )

    def _play_joint(self, mine: int | None) -> None:
        """One simultaneous move: ``mine`` the agent's part, the opponents' chosen (in
        seat order), a player without a legal action passing OpenSpiel's invalid action."""
        state = self._state
        joint: list[int] = []
        for who in range(self.num_players):
            if who == self._seat and mine is not None:
                action = mine
            elif not state.legal_actions(who):
                joint.append(pyspiel.INVALID_ACTION)
                continue
            else:
                action = self._opponent_action(who)
            joint.append(action)
            self._record(who, action, state.action_to_string(who, action))
        state.apply_actions(joint)

    def _record(self, who: int, action: int, name: str) -> None:
        if self.perfect or who == self._seat:
            self._moves.append({"player": who, "action": action, "name": name})
        else:  # an opponent's move or a deal may be private: say only that it happened
            self._moves.append({"player": who, "action": None, "name": "(hidden)"})

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        opts = options or {}
        seat = opts.get("player")  # a seat of the game: checked against Options
        opponent, simulations = self._opponent_of(opts)
        if seed is not None:  # unseeded, every stream goes on (Gymnasium's meaning)
            self._chance_rng, self._opponent_rng, self._seat_rng = seeded(seed)
        if seat is not None:
            self._seat = int(seat)
        elif self.config.player == "random":
            self._seat = int(self._seat_rng.randint(self.num_players))
        else:
            self._seat = int(self.config.player)
        self._state = self.game.new_initial_state()
        self._opponent, self._simulations = opponent, simulations
        self._steps = 0
        self._moves = []
        self._advance()
        self._rewards = [float(r) for r in self._state.returns()]
        return self._observation(), self._info()

    def _opponent_of(self, opts: dict[str, Any]) -> tuple[str, int]:
        """The episode's opponent and MCTS simulations, from its options (types and
        ranges checked against ``Options``) and the config.

        Raises:
            UnsupportedOption: MCTS simulations for an opponent that is not MCTS, or an
                MCTS opponent in a game it cannot play (saying why).
        """
        cfg = self.config
        kind = opts.get("opponent")
        simulations = opts.get("mcts_simulations")
        opponent = str(kind) if kind is not None else cfg.opponent
        if simulations is not None and opponent != "mcts":
            raise UnsupportedOption(
                f"option 'mcts_simulations' bounds an MCTS opponent, but this episode's "
                f"opponent is {opponent!r}: add opponent 'mcts' (or leave it out)"
            )
        if opponent == "mcts":
            refusal = self._mcts_refused()
            if refusal:
                raise UnsupportedOption(f"option 'opponent': {refusal}")
        return opponent, int(simulations) if simulations is not None else cfg.mcts_simulations

    def _mcts_refused(self) -> str:
        """Why an MCTS opponent cannot play this game (``""``: it can), tried once."""
        if self._mcts_refusal is None:
            cfg = self.config
            try:
                _bots.check_opponent(
                    self.game, "mcts", cfg.mcts_simulations, cfg.mcts_rollouts, cfg.mcts_uct_c
                )
                self._mcts_refusal = ""
            except ArgumentError as exc:
                self._mcts_refusal = str(exc)
        return self._mcts_refusal

    def seated_game(self) -> SeatedGame | None:
        """This game with every player a seat (``serve openspiel --seats``): an
        :class:`~openenv_mcp_envs.openspiel._seats.OpenSpielGame` of this config; ``None``
        for a one-player game."""
        if self.num_players < 2:
            return None
        return OpenSpielGame(self)

    def task_set(self) -> TaskSet:
        return openspiel_tasks(
            str(self.game),
            self.short_name,
            self.num_players,
            not self._mcts_refused() if self.num_players > 1 else False,
            float(self.game.max_utility()),
        )

    def step(self, action: Any) -> StepResult:
        state = self._state
        action = int(action)
        if state is None or state.is_terminal() or action not in self._legal_ids():
            self.parse_action(action)  # raises InvalidAction, naming the legal actions
            raise InvalidAction(f"action {action} is not legal now")
        before = [float(r) for r in state.returns()]
        self._moves = []
        if state.is_simultaneous_node():  # the agent's part; the opponents choose theirs
            self._play_joint(action)
        else:
            self._record(self._seat, action, state.action_to_string(self._seat, action))
            state.apply_action(action)
        self._advance()
        self._steps += 1
        after = [float(r) for r in state.returns()]
        self._rewards = [a - b for a, b in zip(after, before, strict=True)]
        terminated = bool(state.is_terminal())
        cap = self.config.max_episode_steps
        truncated = bool(cap is not None and self._steps >= cap and not terminated)
        return StepResult(
            self._observation(),
            self._rewards[self._seat],
            terminated,
            truncated,
            self._info(),
        )

    def state(self) -> dict[str, Any]:
        if self._state is None:
            return {}
        legal = self.legal()
        return {
            "text": self.agent_text(self._state, self._seat),
            "player": self._seat,
            "move_number": int(self._state.move_number()),
            "legal_actions": [a for a, _ in legal],
            "legal_action_names": [n for _, n in legal],
        }

    # -- snapshots ---------------------------------------------------------------------

    def snapshot(self) -> Any:
        if self._state is None:
            raise UnsupportedOption("nothing to snapshot before the first reset")
        return {
            "game": str(self.game),
            "state": self._state.serialize(),
            "seat": self._seat,
            "opponent": self._opponent,
            "mcts_simulations": self._simulations,
            "steps": self._steps,
            "moves": [dict(m) for m in self._moves],
            "rewards": list(self._rewards),
            "chance_rng": self._chance_rng.get_state(),
            "opponent_rng": self._opponent_rng.get_state(),
            "seat_rng": self._seat_rng.get_state(),
        }

    def restore(self, snapshot: Any) -> None:
        if snapshot.get("game") != str(self.game):
            raise UnsupportedOption(
                f"this snapshot is of {snapshot.get('game')!r}, not {str(self.game)!r}"
            )
        self._state = self.game.deserialize_state(snapshot["state"])
        self._seat = int(snapshot["seat"])
        # Snapshots from before per-episode opponents hold none: the config's played.
        self._opponent = str(snapshot.get("opponent", self.config.opponent))
        self._simulations = int(snapshot.get("mcts_simulations", self.config.mcts_simulations))
        self._steps = int(snapshot["steps"])
        self._moves = [dict(m) for m in snapshot["moves"]]
        self._rewards = list(snapshot["rewards"])
        self._chance_rng.set_state(snapshot["chance_rng"])
        self._opponent_rng.set_state(snapshot["opponent_rng"])
        self._seat_rng.set_state(snapshot["seat_rng"])


if TYPE_CHECKING:  # mypy checks that the env has what its narration reads (OpenSpielView)
    from openenv_mcp_envs.openspiel._narration import OpenSpielView

    def _narrated(env: OpenSpielEnv) -> OpenSpielView:
        return env
