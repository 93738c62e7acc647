"""The contract every openenv-mcp environment implements.

This file is the whole contract, in the manner of Gymnasium's ``core.py``: the
server and the client depend on nothing else of an environment. An
environment is a class, generic over its ``Config``, with:

* ``Config``: a pydantic model of its construction options (CLI flags and
  Python keyword arguments share these names); ``__init__`` takes an instance;
* ``action_space`` and ``observation_space``: Gymnasium spaces, set in
  ``__init__`` as a Gymnasium env sets them. Values travel as
  :mod:`openenv_mcp.spaces` writes them, so any Gymnasium space works, nested
  or not;
* optionally ``action_set``: names and meanings for a ``Discrete`` action space
  (one MCP tool per action; ``step`` takes a name or a number), and
  ``has_frame`` / ``frame_is_observation`` where :meth:`render` draws frames;
* ``reset(seed, options)`` -> ``(observation, info)`` and ``step(action)`` ->
  :class:`StepResult` (the Gymnasium five: never a lone ``done``);
  ``info["action_mask"]`` (Gymnasium's convention) marks the actions legal
  next, where that changes from state to state;
* ``state()``, ``render()``, ``close()``; optionally its own tools
  (:class:`EnvTool`) and snapshots.

One instance serves one episode at a time; the server creates one instance per
live episode and never calls an instance from two threads at once.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

import numpy as np
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict

from openenv_mcp.errors import InvalidAction, UnsupportedOption, did_you_mean
from openenv_mcp.spaces import decode, space_to_json, value_schema

__all__ = [
    "Action",
    "ActionSet",
    "ConfigT",
    "EnvTool",
    "Environment",
    "Resources",
    "StepResult",
    "contract_problems",
    "reject_options",
]

ConfigT = TypeVar("ConfigT", bound=BaseModel)


class Action(BaseModel):
    """One named discrete action: its value in the action space, its name and what it does."""

    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    meaning: str = ""


def _brief(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut short: an error names what came without echoing megabytes."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text)} chars)"


def _snake(name: str) -> str:
    """``"UPRIGHTFIRE"`` -> ``"up_right_fire"``; ``"Stick"`` -> ``"stick"``."""
    words = re.findall(r"UP|DOWN|LEFT|RIGHT|FIRE|NOOP|[A-Z]?[a-z0-9]+|[A-Z]+", name)
    return "_".join(w.lower() for w in words) if words else name.lower()


class ActionSet:
    """Names for the values of a ``Discrete`` action space (``start .. start+n-1``).

    Actions are given by value or by name; :meth:`resolve` turns either into
    the value and says what was legal when it was not.
    """

    def __init__(self, actions: Sequence[Action]) -> None:
        ids = [a.id for a in actions]
        if not ids or ids != list(range(ids[0], ids[0] + len(ids))):
            raise ValueError(f"action ids must be consecutive integers, got {ids}")
        names = [a.name.upper() for a in actions]
        if len(set(names)) != len(names):
            raise ValueError(
                f"action names must differ (case aside), got {[a.name for a in actions]}"
            )
        self.actions: tuple[Action, ...] = tuple(actions)
        self.start = ids[0]
        self._by_name = {name: a.id for name, a in zip(names, actions, strict=True)}

    @classmethod
    def from_names(
        cls, names: Sequence[str], meanings: Mapping[str, str] | None = None, *, start: int = 0
    ) -> ActionSet:
        """A set from names in value order (from ``start``), with optional meanings by name."""
        meanings = meanings or {}
        return cls(
            [Action(id=start + i, name=n, meaning=meanings.get(n, "")) for i, n in enumerate(names)]
        )

    @property
    def n(self) -> int:
        """The number of actions."""
        return len(self.actions)

    @property
    def names(self) -> list[str]:
        """Action names in value order."""
        return [a.name for a in self.actions]

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Action]:
        return iter(self.actions)

    def __getitem__(self, position: int) -> Action:
        return self.actions[position]

    def by_id(self, action_id: int) -> Action:
        """The action whose value is ``action_id``."""
        return self.actions[action_id - self.start]

    def space(self) -> spaces.Discrete:
        """The ``Discrete`` space these actions name."""
        return spaces.Discrete(self.n, start=self.start)

    def contains(self, action: object) -> bool:
        """Whether ``action`` (value or name) is in the set."""
        try:
            self.resolve(action)
        except InvalidAction:
            return False
        return True

    def sample(self, rng: np.random.Generator | None = None) -> int:
        """A uniformly random action value."""
        return self.start + int((rng or np.random.default_rng()).integers(self.n))

    def describe(self, ids: Sequence[int] | None = None) -> str:
        """``"0-5 (NOOP, FIRE, ...)"``: the legal actions in one line (all, or just
        ``ids`` as ``"0=NOOP, 2=RIGHT"``)."""
        if ids is None:
            last = self.start + self.n - 1
            span = f"{self.start}-{last}" if self.start >= 0 else f"{self.start}..{last}"
            return f"{span} ({', '.join(self.names)})"
        return ", ".join(f"{i}={self.by_id(i).name}" for i in ids) or "none"

    def resolve(self, action: object) -> int:
        """The value of ``action``, given as a value or a name (any case, or digits).

        Raises:
            InvalidAction: naming what came and what is legal.
        """
        if isinstance(action, bool):  # bool is an int subclass; True is not an action
            raise InvalidAction(
                f"expected an action value or name, got the boolean {action!r}; "
                f"legal: {self.describe()}"
            )
        if isinstance(action, (int, np.integer)):
            if self.start <= int(action) < self.start + self.n:
                return int(action)
            raise InvalidAction(f"action {int(action)} is not legal; legal: {self.describe()}")
        if isinstance(action, str):
            key = action.strip().upper()
            if key in self._by_name:
                return self._by_name[key]
            # ASCII digits only, and few: str.isdigit accepts "²", which int()
            # refuses, and int() refuses strings of over 4300 digits.
            if re.fullmatch(r"-?[0-9]{1,18}", key):
                return self.resolve(int(key))
            hint = did_you_mean(key, self._by_name)
            raise InvalidAction(
                f"action {_brief(action)} is not legal.{hint} Legal: {self.describe()}"
            )
        raise InvalidAction(
            f"expected an action value or name, got {type(action).__name__} {_brief(action)}; "
            f"legal: {self.describe()}"
        )

    def tool_name(self, action: Action) -> str:
        """The snake_case tool name of an action (``"RIGHTFIRE"`` -> ``"right_fire"``)."""
        return _snake(action.name)

    def json_schema(self) -> dict[str, Any]:
        """JSON schema of an action argument: a value or one of the names."""
        last = self.start + self.n - 1
        return {
            "anyOf": [
                {"type": "integer", "minimum": self.start, "maximum": last},
                {"type": "string", "enum": self.names},
            ],
            "description": "A legal action, by number or by name: "
            + ", ".join(f"{a.id}={a.name}" for a in self.actions),
        }

    def to_json(self) -> list[dict[str, Any]]:
        """The actions as JSON objects (``id``, ``name``, ``meaning``)."""
        return [a.model_dump() for a in self.actions]

    @classmethod
    def from_json(cls, data: Sequence[Mapping[str, Any]]) -> ActionSet:
        """The inverse of :meth:`to_json`."""
        return cls([Action(**dict(a)) for a in data])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActionSet) and self.actions == other.actions

    def __hash__(self) -> int:
        return hash(self.actions)

    def __repr__(self) -> str:
        return f"ActionSet({self.describe()})"


@dataclass
class StepResult:
    """What ``step`` returns: the Gymnasium five.

    Attributes:
        observation: the observation after the action (a member of ``observation_space``).
        reward: the reward for this step.
        terminated: the episode reached a terminal state of the MDP.
        truncated: the episode was cut short (time limit), not terminal.
        info: extra fields (lives, frame numbers, ``action_mask``...); values
            JSON cannot hold reach clients as their ``repr``.
    """

    observation: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvTool:
    """An environment's own tool, listed beside ``reset``/``step``/``state``.

    Attributes:
        name: tool name (snake_case).
        description: what it does, written for a model deciding to call it.
        kind: ``"static"`` tools need no episode and are called with the
            server's prototype instance; ``"episode"`` tools take an
            ``episode_id`` and run on that episode's environment, under its lock.
        handler: ``handler(env, params)`` -> a JSON-able dict. ``params`` is an
            instance of ``params`` (or ``None`` when it is ``None``).
        params: pydantic model of the tool's own arguments, or ``None``.
        read_only: the tool changes nothing (an MCP annotation for clients).
    """

    name: str
    description: str
    kind: Literal["static", "episode"]
    handler: Callable[[Any, Any], dict[str, Any]]
    params: type[BaseModel] | None = None
    read_only: bool = True


@dataclass(frozen=True)
class Resources:
    """What one server of an environment needs, declared by the environment for its
    manifest (a deployer's requests and limits).

    Attributes:
        cpu: cores one server uses when busy.
        memory_mib: memory of one server with ``episodes`` live episodes, in MiB.
        episodes: the live episodes ``memory_mib`` is for.
        episode_timeout_s: how long one episode may take, wall clock, in seconds.
    """

    cpu: float = 1.0
    memory_mib: int = 512
    episodes: int = 64
    episode_timeout_s: float = 3600.0


class Environment(ABC, Generic[ConfigT]):
    """An RL environment that openenv-mcp can serve.

    Subclasses set ``name``, ``description`` and ``Config`` (the model
    ``ConfigT`` names), set ``action_space`` and ``observation_space`` in
    ``__init__``, and implement :meth:`reset` and :meth:`step`::

        class Coin(Environment[CoinConfig]):
            name = "coin"
            description = "Guess the coin."
            Config = CoinConfig

            def __init__(self, config: CoinConfig) -> None:
                super().__init__(config)
                self.action_space = spaces.Discrete(2)
                self.observation_space = spaces.Discrete(2)
                self.action_set = ActionSet.from_names(["HEADS", "TAILS"])
    """

    #: Registry name (``openenv-mcp serve NAME``).
    name: ClassVar[str]
    #: One line for ``openenv-mcp list`` and the server's instructions.
    description: ClassVar[str]
    #: Construction options (``ConfigT``); its field descriptions become CLI help.
    Config: ClassVar[type[BaseModel]]
    #: Whether :meth:`snapshot` / :meth:`restore` are implemented.
    supports_snapshots: ClassVar[bool] = False
    #: Whether every call is short and bounded (no I/O, no unbounded loops), so
    #: the server may run it on its event loop instead of a worker thread.
    run_inline: ClassVar[bool] = False
    #: Whether the server may offer one MCP tool per named action (``fire``,
    #: ``left``); ``False`` for an env with very many actions.
    action_tools: ClassVar[bool] = True
    #: What ``step``'s ``action`` argument is, for a model reading the tool.
    action_description: ClassVar[str] = ""
    #: The least and greatest reward one step can give (the manifest's ``reward_range``;
    #: ``openenv-mcp check`` holds the env to it).
    reward_range: ClassVar[tuple[float, float]] = (-math.inf, math.inf)
    #: What one server of this env needs, for a deployer (the manifest's ``resources``).
    resources: ClassVar[Resources] = Resources()
    #: Whether it runs with no network at all (no downloads, no remote calls).
    offline: ClassVar[bool] = True

    #: The space of actions ``step`` takes (set in ``__init__``).
    action_space: spaces.Space[Any]
    #: The space of observations ``reset`` and ``step`` return (set in ``__init__``).
    observation_space: spaces.Space[Any]
    #: Names and meanings of the values of a ``Discrete`` action space, or ``None``.
    action_set: ActionSet | None = None
    #: Whether :meth:`render` returns frames (sent to clients as PNG images).
    has_frame: bool = False
    #: Whether the observation is the RGB frame itself, so a client may take it from the PNG.
    frame_is_observation: bool = False

    def __init__(self, config: ConfigT) -> None:
        self.config: ConfigT = config

    # -- description -------------------------------------------------------------

    @property
    def title(self) -> str:
        """What is being served, for people and models (``"Atari Breakout"``)."""
        return self.name

    def action_schema(self) -> dict[str, Any]:
        """JSON schema of ``step``'s ``action`` argument (from the action space and names)."""
        schema = (
            self.action_set.json_schema()
            if self.action_set is not None
            else value_schema(self.action_space)
        )
        if self.action_description:
            known = schema.get("description")
            schema["description"] = (
                f"{self.action_description} {known}" if known else self.action_description
            )
        return schema

    def parse_action(self, action: Any) -> Any:
        """Validate a wire action and return what :meth:`step` takes.

        The default reads ``action`` as a value of :attr:`action_space` (a name
        too, where :attr:`action_set` names them). Override it for actions
        whose legality depends on the state beyond an ``action_mask``.

        Raises:
            InvalidAction: naming what came and what is legal.
        """
        if self.action_set is not None:
            return self.action_space.dtype.type(self.action_set.resolve(action))  # type: ignore[union-attr]
        return decode(self.action_space, action, where="action: ")

    def info_schema(self) -> dict[str, Any]:
        """JSON schema ``properties`` of the ``info`` dict (for ``outputSchema``)."""
        return {}

    def reset_options_schema(self) -> dict[str, Any]:
        """JSON schema ``properties`` of the per-episode ``options`` of :meth:`reset`."""
        return {}

    def metadata(self) -> dict[str, Any]:
        """Static, JSON-able facts (config, game lists...) served as a resource."""
        return {"config": self.config.model_dump(mode="json")}

    def tools(self) -> list[EnvTool]:
        """The environment's own tools."""
        return []

    # -- the episode ---------------------------------------------------------------

    @abstractmethod
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start a new episode.

        Args:
            seed: seeds every source of randomness; the same seed and actions
                must reproduce the episode exactly. ``None`` draws fresh entropy.
            options: per-episode options (see :meth:`reset_options_schema`).
                An option that cannot change per episode raises
                :class:`UnsupportedOption` rather than being ignored.

        Returns:
            ``(observation, info)``.
        """

    @abstractmethod
    def step(self, action: Any) -> StepResult:
        """Advance one step with an action returned by :meth:`parse_action`."""

    def state(self) -> dict[str, Any]:
        """JSON-able fields describing the current state (beyond the observation)."""
        return {}

    def instructions(self) -> str:
        """What a model needs to play: what this is, the goal, how to act.

        Served as the MCP server's instructions, the ``play`` prompt and the
        ``openenv://ENV/rules`` resource. The default is :attr:`description`.
        """
        return self.description

    def rewards(self) -> Sequence[Any]:
        """The environment's own composed rewards (:mod:`openenv_mcp.rewards`): step
        rewards and trajectory rewards, served with it beside any ``--reward``. Default:
        none (the reward is the env's own)."""
        return ()

    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        """What happened in a step, in words for a model, beyond what the server tells
        itself (rewards, ``info["lives"]`` going down, the episode's end).

        Args:
            info_before: the info of the step (or reset) before this one.
            result: this step's result.
        """
        return []

    def observation_text(self, observation: Any) -> str | None:
        """The observation in words, for the one-line text a model reads.

        ``None`` (the default) shows an observation that is not an array as
        its ``repr``, and an array not at all (its frame is the image).
        """
        return None

    def render(self) -> np.ndarray | None:
        """The current frame as an ``HxWx3`` uint8 array, or ``None`` without one."""
        return None

    def close(self) -> None:
        """Free the environment's resources. Called once; the instance is then dropped."""
        return None

    # -- snapshots -----------------------------------------------------------------

    def snapshot(self) -> Any:
        """Capture the full state (RNG included) so :meth:`restore` can resume it.

        The value must pickle: with worker processes it crosses a pipe.
        """
        raise UnsupportedOption(f"environment {self.name!r} does not support snapshots")

    def restore(self, snapshot: Any) -> None:
        """Resume from a :meth:`snapshot` value (from any instance with the same config)."""
        raise UnsupportedOption(f"environment {self.name!r} does not support snapshots")


def contract_problems(env: Environment[Any]) -> list[str]:
    """What an instance gets wrong about the contract's declarations (empty: nothing).

    Checks that the spaces are Gymnasium spaces, that :attr:`Environment.action_set`
    names exactly the values of a ``Discrete`` action space, and that a frame
    observation is an RGB image.
    """
    problems: list[str] = []
    who = type(env).__name__
    for attr in ("action_space", "observation_space"):
        space = getattr(env, attr, None)
        if not isinstance(space, spaces.Space):
            problems.append(
                f"{who}.{attr} must be a gymnasium.spaces.Space set in __init__, "
                f"got {type(space).__name__}"
            )
            continue
        try:
            space_to_json(space)
            value_schema(space)
        except Exception as exc:
            problems.append(f"{who}.{attr} ({space}) cannot be described: {exc!r}")
    actions, space = env.action_set, getattr(env, "action_space", None)
    if actions is not None:
        if not isinstance(space, spaces.Discrete):
            problems.append(f"{who}.action_set names actions, but the action space is {space}")
        elif (actions.start, actions.n) != (int(space.start), int(space.n)):
            problems.append(
                f"{who}.action_set names {actions.n} actions from {actions.start}, "
                f"but the action space is {space}"
            )
    if env.frame_is_observation:
        obs = getattr(env, "observation_space", None)
        if not env.has_frame:
            problems.append(f"{who}.frame_is_observation needs has_frame")
        if not (
            isinstance(obs, spaces.Box)
            and obs.dtype == np.uint8
            and len(obs.shape) == 3
            and obs.shape[2] == 3
        ):
            problems.append(
                f"{who}.frame_is_observation needs an HxWx3 uint8 Box observation, got {obs}"
            )
    return problems


def reject_options(
    env_name: str, options: Mapping[str, Any] | None, allowed: Sequence[str]
) -> None:
    """Raise :class:`UnsupportedOption` for any option not in ``allowed``."""
    for key in options or {}:
        if key not in allowed:
            allowed_text = ", ".join(allowed) if allowed else "none"
            raise UnsupportedOption(
                f"option {key!r} cannot be set per episode for {env_name!r}."
                f"{did_you_mean(key, allowed)} Per-episode options: {allowed_text}; "
                "construction options are set when the server starts."
            )
