"""The contract every openenv-mcp environment implements.

This file is the whole contract, in the manner of Gymnasium's ``core.py``: the
server (:mod:`openenv_mcp.server`) and the client depend on nothing else of an
environment. An environment is a class with:

* a ``Config`` pydantic model: its construction options (CLI flags and Python
  keyword arguments share these names);
* ``reset(seed, options)`` -> ``(observation, info)`` and ``step(action)`` ->
  :class:`StepResult` (the Gymnasium five: never a lone ``done``);
* ``state()``, ``render()`` and ``close()``;
* a description of its actions (:class:`ActionSet`, or a JSON schema for
  free-form actions) and of its observation (:class:`ObservationSpec`);
* optionally its own tools (:class:`EnvTool`) and snapshots.

One instance serves one episode at a time; the server creates one instance per
live episode and never calls an instance from two threads at once.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from openenv_mcp.errors import InvalidAction, UnsupportedOption, did_you_mean

__all__ = [
    "Action",
    "ActionSet",
    "EnvTool",
    "Environment",
    "ObservationSpec",
    "StepResult",
    "reject_options",
]


class Action(BaseModel):
    """One discrete action: its index, its name and what it does."""

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
    """A finite set of named actions, indexed ``0..n-1`` (Gymnasium ``Discrete``).

    Actions are given by index or by name; :meth:`resolve` turns either into the
    index and says what was legal when it was not.
    """

    def __init__(self, actions: Sequence[Action]) -> None:
        if [a.id for a in actions] != list(range(len(actions))):
            raise ValueError("action ids must be 0..n-1 in order")
        self.actions: tuple[Action, ...] = tuple(actions)
        self._by_name = {a.name.upper(): a.id for a in self.actions}

    @classmethod
    def from_names(
        cls, names: Sequence[str], meanings: Mapping[str, str] | None = None
    ) -> ActionSet:
        """Build a set from names in index order, with optional meanings by name."""
        meanings = meanings or {}
        return cls([Action(id=i, name=n, meaning=meanings.get(n, "")) for i, n in enumerate(names)])

    @property
    def n(self) -> int:
        """The number of actions."""
        return len(self.actions)

    @property
    def names(self) -> list[str]:
        """Action names in index order."""
        return [a.name for a in self.actions]

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Action]:
        return iter(self.actions)

    def __getitem__(self, index: int) -> Action:
        return self.actions[index]

    def contains(self, action: object) -> bool:
        """Whether ``action`` (index or name) is in the set."""
        try:
            self.resolve(action)
        except InvalidAction:
            return False
        return True

    def sample(self, rng: np.random.Generator | None = None) -> int:
        """A uniformly random action index."""
        return int((rng or np.random.default_rng()).integers(self.n))

    def describe(self) -> str:
        """``"0-5 (NOOP, FIRE, ...)"``: the legal actions in one line."""
        return f"0-{self.n - 1} ({', '.join(self.names)})"

    def resolve(self, action: object) -> int:
        """Return the index of ``action``, given as an index or a name.

        Raises:
            InvalidAction: naming what came and what is legal.
        """
        if isinstance(action, bool):  # bool is an int subclass; True is not an action
            raise InvalidAction(
                f"expected an action index or name, got the boolean {action!r}; "
                f"legal: {self.describe()}"
            )
        if isinstance(action, (int, np.integer)):
            if 0 <= int(action) < self.n:
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
            f"expected an action index or name, got {type(action).__name__} {_brief(action)}; "
            f"legal: {self.describe()}"
        )

    def tool_name(self, index: int) -> str:
        """The snake_case tool name for an action (``"RIGHTFIRE"`` -> ``"right_fire"``)."""
        return _snake(self.actions[index].name)

    def json_schema(self) -> dict[str, Any]:
        """JSON schema of an action argument: an index or one of the names."""
        return {
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": self.n - 1},
                {"type": "string", "enum": self.names},
            ],
            "description": "A legal action, by index or by name: "
            + ", ".join(f"{a.id}={a.name}" for a in self.actions),
        }

    def to_json(self) -> list[dict[str, Any]]:
        """The actions as JSON objects (``id``, ``name``, ``meaning``)."""
        return [a.model_dump() for a in self.actions]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActionSet) and self.actions == other.actions

    def __hash__(self) -> int:
        return hash(self.actions)

    def __repr__(self) -> str:
        return f"ActionSet({self.describe()})"


class ObservationSpec(BaseModel):
    """What an observation is, so a client can build its space before ``reset``.

    ``kind`` is ``"array"`` (a numpy array of ``shape``/``dtype``, sent to
    clients in compact raw form on request), ``"text"`` (a string) or ``"json"``
    (any JSON value, always sent inline).
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["array", "text", "json"]
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    low: float | None = None
    high: float | None = None
    has_frame: bool = False
    frame_shape: tuple[int, ...] | None = None
    frame_is_observation: bool = False
    description: str = ""


@dataclass
class StepResult:
    """What ``step`` returns: the Gymnasium five.

    Attributes:
        observation: the observation after the action (see :class:`ObservationSpec`).
        reward: the reward for this step.
        terminated: the episode reached a terminal state of the MDP.
        truncated: the episode was cut short (time limit), not terminal.
        info: JSON-able extra fields (lives, frame numbers, ...).
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
            ``episode_id`` and run under that episode's lock.
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


class Environment(ABC):
    """An RL environment that openenv-mcp can serve.

    Subclasses set ``name``, ``description`` and ``Config``, and implement the
    abstract methods. The constructor takes a validated ``Config`` instance.
    """

    #: Registry name (``openenv-mcp serve NAME``).
    name: ClassVar[str]
    #: One line for ``openenv-mcp list`` and the server's instructions.
    description: ClassVar[str]
    #: Construction options; its field descriptions become CLI help.
    Config: ClassVar[type[BaseModel]]
    #: Whether :meth:`snapshot` / :meth:`restore` are implemented.
    supports_snapshots: ClassVar[bool] = False
    #: Whether every call is short and bounded (no I/O, no unbounded loops), so
    #: the server may run it on its event loop instead of a worker thread.
    run_inline: ClassVar[bool] = False

    def __init__(self, config: BaseModel) -> None:
        self.config = config

    # -- description -------------------------------------------------------------

    @property
    def title(self) -> str:
        """What is being served, for people and models (``"Atari Breakout"``)."""
        return self.name

    @property
    def action_set(self) -> ActionSet | None:
        """The discrete actions, or ``None`` for free-form actions."""
        return None

    def action_schema(self) -> dict[str, Any]:
        """JSON schema of ``step``'s ``action`` argument."""
        if self.action_set is None:
            raise NotImplementedError("free-form environments must define action_schema()")
        return self.action_set.json_schema()

    def parse_action(self, action: Any) -> Any:
        """Validate a wire action and return what :meth:`step` takes.

        Raises:
            InvalidAction: naming what came and what is legal.
        """
        if self.action_set is None:
            raise NotImplementedError("free-form environments must define parse_action()")
        return self.action_set.resolve(action)

    @property
    @abstractmethod
    def observation_spec(self) -> ObservationSpec:
        """What observations look like."""

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

    def observation_text(self, observation: Any) -> str | None:
        """The observation in words, for the one-line text a model reads.

        ``None`` (the default) shows a text or JSON observation as it is and an
        array observation not at all (its frame is the image).
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
        """Capture the full state (RNG included) so :meth:`restore` can resume it."""
        raise UnsupportedOption(f"environment {self.name!r} does not support snapshots")

    def restore(self, snapshot: Any) -> None:
        """Resume from a :meth:`snapshot` value (from any instance with the same config)."""
        raise UnsupportedOption(f"environment {self.name!r} does not support snapshots")


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
