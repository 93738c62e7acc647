"""The contract every openenv-mcp environment implements.

This file is the whole contract, in the manner of Gymnasium's ``core.py``: the
server and the client depend on nothing else of an environment. The core is
what Gymnasium's ``Env`` asks, plus a ``Config``::

    class Coin(Environment[CoinConfig]):
        name = "coin"
        description = "Guess the coin."
        Config = CoinConfig                     # construction options (CLI flags)

        def __init__(self, config: CoinConfig) -> None:
            super().__init__(config)
            self.action_space = spaces.Discrete(2)
            self.observation_space = spaces.Discrete(2)
            self.action_set = ActionSet.from_names(["HEADS", "TAILS"])  # optional names

        def reset(self, seed=None, options=None): ...   # -> (observation, info)
        def step(self, action): ...                     # -> StepResult (the Gymnasium five)

and, where they apply, ``render`` (with ``render_mode = "rgb_array"``), ``close``,
``snapshot``/``restore`` and ``tools``. Everything else is optional and grouped:

* schemas come from pydantic models, as ``Config`` does: ``Options`` (per-episode
  options of ``reset``, validated before ``reset`` sees them) and ``Info`` (what
  ``info`` holds, for clients);
* serving hints are one declared value, :class:`Serving`;
* the words a model reads (title, rules, the observation in words, a step's
  events) are a facet of their own, :class:`openenv_mcp.narration.Narration`;
* the tasks it is trained and evaluated on (splits of tasks, and its rule for
  success) are another, :class:`openenv_mcp.tasks.TaskSet`, from :meth:`task_set`;
* a game of several players, each a seat its own client drives, is a third,
  :class:`openenv_mcp.seats.SeatedGame`, from :meth:`seated_game`;
* ``state``, ``parse_action`` and ``metadata`` have defaults that fit most envs.

``info["action_mask"]`` (Gymnasium's convention) marks the actions legal next,
where that changes from state to state. One instance serves one episode at a
time; the server creates one instance per live episode and never calls an
instance from two threads at once.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

import numpy as np
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict, ValidationError

from openenv_mcp.errors import ArgumentError, InvalidAction, UnsupportedOption, did_you_mean
from openenv_mcp.options import format_validation_error
from openenv_mcp.spaces import decode, space_to_json, value_schema

if TYPE_CHECKING:
    from openenv_mcp.seats import SeatedGame
    from openenv_mcp.tasks import TaskSet

__all__ = [
    "Action",
    "ActionSet",
    "ConfigT",
    "EnvTool",
    "Environment",
    "Resources",
    "Serving",
    "StepResult",
    "contract_problems",
    "has_frame",
    "parse_options",
    "supports_snapshots",
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
        read_only: the tool changes nothing. This and the three below are what
            clients are told the tool does (MCP's tool annotations, all of them given:
            a harness takes a hint left out at its most cautious, and ``codex exec``
            refuses a tool that may be destructive or reach the outside world).
        destructive: it may undo or overwrite something beyond its episode (a file the
            episode did not make, a record elsewhere). An episode's own state is the
            episode's to change: a tool that only moves its episode on is not
            destructive. Never with ``read_only``.
        idempotent: calling it again with the same arguments changes nothing more;
            ``None``: as ``read_only`` (a look is; an act, by default, is not).
        open_world: it reaches outside the server's process (a remote server, the
            network); ``None``: whatever the environment does, i.e. not
            ``serving.offline``.
    """

    name: str
    description: str
    kind: Literal["static", "episode"]
    handler: Callable[[Any, Any], dict[str, Any]]
    params: type[BaseModel] | None = None
    read_only: bool = True
    destructive: bool = False
    idempotent: bool | None = None
    open_world: bool | None = None

    def __post_init__(self) -> None:
        if self.read_only and self.destructive:
            raise ValueError(f"tool {self.name!r}: a read_only tool cannot be destructive")
        if self.read_only and self.idempotent is False:
            raise ValueError(f"tool {self.name!r}: a read_only tool is idempotent")


@dataclass(frozen=True)
class Resources:
    """What one server of an environment needs, for a deployer (the manifest's ``resources``).

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


@dataclass(frozen=True)
class Serving:
    """How an environment may be served: the hints a server and a deployer read.

    Attributes:
        inline: every call is short and bounded (no I/O, no unbounded loops), so the
            server may run it on its event loop instead of a worker thread.
        action_tools: the server may offer one MCP tool per named action (``fire``,
            ``left``); ``False`` for an env with very many actions.
        offline: it runs with no network at all (no downloads, no remote calls);
            ``openenv-mcp check`` holds it to that.
        reward_range: the least and greatest reward one step can give (the manifest's;
            ``openenv-mcp check`` holds the env to it).
        resources: what one server needs (the manifest's ``resources``).
        rewards: composed rewards (:mod:`openenv_mcp.rewards`) served with the env
            beside any ``--reward``; the env's own reward otherwise.
        enforce_mask: the server refuses an action ``info["action_mask"]`` marks
            illegal (``InvalidAction``); ``False`` where the mask only advises, as in
            Gymnasium's Taxi (a masked action is a legal, penalised step there).
        slow_steps: a step may take seconds (a sandboxed test run): a client of the MCP
            tasks extension gets ``step`` answered as a task it polls.
    """

    inline: bool = False
    action_tools: bool = True
    offline: bool = True
    reward_range: tuple[float, float] = (-math.inf, math.inf)
    resources: Resources = Resources()
    rewards: tuple[Any, ...] = ()
    enforce_mask: bool = True
    slow_steps: bool = False


class Environment(ABC, Generic[ConfigT]):
    """An RL environment that openenv-mcp can serve (see the module's docstring)."""

    #: Registry name (``openenv-mcp serve NAME``).
    name: ClassVar[str]
    #: One line for ``openenv-mcp list`` and the server's instructions.
    description: ClassVar[str]
    #: Construction options (``ConfigT``); its field descriptions become CLI help.
    Config: ClassVar[type[BaseModel]]
    #: Per-episode options of :meth:`reset`, or ``None`` for none; the server checks
    #: options against it (unknown names, types, ranges) before ``reset`` sees them. An
    #: instance may set its own (its ranges depend on the config).
    Options: type[BaseModel] | None = None
    #: The fields of ``info``, documented for clients (the tools' ``outputSchema``).
    Info: ClassVar[type[BaseModel] | None] = None
    #: How it may be served (:class:`Serving`). An instance whose hints depend on its
    #: config sets its own in ``__init__`` (the gymnasium env serves classic-control
    #: tasks inline): the server reads the instance's.
    serving: Serving = Serving()
    #: What a model reads of it (:class:`openenv_mcp.narration.Narration`); ``None``
    #: for the defaults (its name, its description, no events).
    narration: ClassVar[type[Any] | None] = None
    #: The models of its namesake among OpenEnv's envs, which ``--openenv`` then speaks
    #: (:class:`openenv_mcp.openenv.OpenEnvModels`); ``None`` for none.
    openenv_models: ClassVar[type[Any] | None] = None

    #: The space of actions ``step`` takes (set in ``__init__``).
    action_space: spaces.Space[Any]
    #: The space of observations ``reset`` and ``step`` return (set in ``__init__``).
    observation_space: spaces.Space[Any]
    #: Names and meanings of the values of a ``Discrete`` action space, or ``None``.
    action_set: ActionSet | None = None
    #: ``"rgb_array"`` where :meth:`render` draws frames (sent to clients as PNG images).
    render_mode: str | None = None
    #: Whether the observation is the RGB frame itself, so a client may take it from the PNG.
    frame_is_observation: bool = False
    #: The env's own random generator, where it has one (Gymnasium's ``Env.np_random``):
    #: seeded by ``reset(seed=...)``, continued by a reset without one. Clients mirror it
    #: (:mod:`openenv_mcp.wire.rng`), so wrappers that draw from ``env.unwrapped.np_random``
    #: (no-op starts) draw what they would in one process. ``None``: nothing to mirror.
    np_random: np.random.Generator | None = None
    #: Arrays a client may ask for beside the observation (``extras=[...]`` on reset, step
    #: and state), read by :meth:`extra`: an Atari env's screens and RAM, what ALE
    #: wrappers read of the emulator.
    extra_names: tuple[str, ...] = ()

    def __init__(self, config: ConfigT) -> None:
        self.config: ConfigT = config

    # -- the episode ---------------------------------------------------------------

    @abstractmethod
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start a new episode.

        Args:
            seed: seeds every source of randomness; the same seed and actions
                must reproduce the episode exactly. ``None`` continues the env's
                own random stream (a fresh one the first time), as Gymnasium does.
            options: per-episode options, already checked against :attr:`Options`
                (only the ones the caller set).

        Returns:
            ``(observation, info)``.
        """

    @abstractmethod
    def step(self, action: Any) -> StepResult:
        """Advance one step with an action returned by :meth:`parse_action`."""

    def render(self) -> np.ndarray | None:
        """The current frame as an ``HxWx3`` uint8 array (``render_mode="rgb_array"``)."""
        return None

    def close(self) -> None:
        """Free the environment's resources. Called once; the instance is then dropped."""
        return None

    def tools(self) -> list[EnvTool]:
        """The environment's own tools, listed beside ``reset``/``step``/``state``."""
        return []

    def task_set(self) -> TaskSet | None:
        """The tasks this environment (with its config) publishes, or ``None`` for none.

        Splits of tasks, each with a stable id and what its episode starts from, and the
        env's rule for success (:class:`openenv_mcp.tasks.TaskSet`). A reset starts one
        with ``options={"split": ..., "index": ...}`` or ``options={"task": ID}``. Called
        on every instance that starts a task: keep it cheap (build once per config).
        """
        return None

    def observe(self) -> tuple[Any, dict[str, Any]] | None:
        """The observation and info now, for an env whose state moves between this
        episode's own steps (a seat of a shared game, while the others move); ``None``
        (the default): the last ``reset`` or ``step`` still stands. ``state`` calls it."""
        return None

    def seated_game(self) -> SeatedGame | None:
        """A new game of this environment's players, each a seat a client drives
        (:class:`openenv_mcp.seats.SeatedGame`), or ``None`` where the game has one player.

        ``serve ENV --seats`` serves it: every player (or those named) a seat of its own,
        the rest played by the env's built-in opponents. Called once per table, on the
        server's prototype instance, with the env's config."""
        return None

    # -- snapshots (GRPO forks): implement both, or neither ----------------------------

    def snapshot(self) -> Any:
        """Capture the full state (RNG included) so :meth:`restore` can resume it.

        The value must pickle: with worker processes it crosses a pipe.
        """
        raise UnsupportedOption(f"environment {self.name!r} does not support snapshots")

    def restore(self, snapshot: Any) -> None:
        """Resume from a :meth:`snapshot` value (from any instance with the same config)."""
        raise UnsupportedOption(f"environment {self.name!r} does not support snapshots")

    # -- optional, with defaults -------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """JSON-able fields describing the current state, beyond the observation
        (the ``state`` tool adds them to ``info``)."""
        return {}

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

    def metadata(self) -> dict[str, Any]:
        """Static, JSON-able facts (config, game lists...) served as a resource."""
        return {"config": self.config.model_dump(mode="json")}

    def check_exposure(self, exposed: bool) -> None:
        """Called once, on the server's first instance, before the server takes calls.

        Args:
            exposed: clients other than the process that started the server can reach it
                (it serves HTTP, holds an auth token, or serves a web port).

        Raises:
            OpenEnvError: to refuse being served so; the server does not start, and says
                why. Default: anything goes.
        """
        return None

    def extra(self, name: str) -> np.ndarray:
        """The current value of extra ``name`` (one of :attr:`extra_names`), a fresh array.

        Raises:
            ArgumentError: ``name`` is not one of :attr:`extra_names`.
        """
        listed = ", ".join(self.extra_names) or "none"
        raise ArgumentError(
            f"{self.name} has no extra {name!r}.{did_you_mean(name, self.extra_names)} "
            f"Extras: {listed}"
        )


def supports_snapshots(env: Environment[Any] | type[Environment[Any]]) -> bool:
    """Whether an environment (class) implements :meth:`Environment.snapshot`."""
    cls = env if isinstance(env, type) else type(env)
    return cls.snapshot is not Environment.snapshot


def has_frame(env: Environment[Any]) -> bool:
    """Whether :meth:`Environment.render` draws frames."""
    return env.render_mode == "rgb_array"


def parse_options(
    env: Environment[Any], options: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """``options`` checked against ``env.Options``: what :meth:`Environment.reset` takes.

    Only the options the caller set are passed on (an env tells "not given" from
    its default), as plain values.

    Raises:
        UnsupportedOption: an option the env does not take (with "did you mean"), or a
            value of the wrong type or range, naming what was expected and what came.
    """
    if not options:
        return None
    model = env.Options
    if model is None:
        key = next(iter(options))
        raise UnsupportedOption(
            f"option {key!r} cannot be set per episode for {env.name!r}. Per-episode "
            "options: none; construction options are set when the server starts."
        )
    allowed = list(model.model_fields)
    for key in options:
        if key not in allowed:
            raise UnsupportedOption(
                f"option {key!r} cannot be set per episode for {env.name!r}."
                f"{did_you_mean(key, allowed)} Per-episode options: {', '.join(allowed)}; "
                "construction options are set when the server starts."
            )
    try:
        parsed = model.model_validate(dict(options))
    except ValidationError as exc:
        message = format_validation_error(
            f"{env.name} reset", exc, noun="option", known=model.model_fields
        )
        raise UnsupportedOption(message) from None
    return parsed.model_dump(exclude_unset=True)


#: Members of the contract before it was slimmed, and where each went: an env written
#: for the old contract is told what to change rather than silently half-served.
_MOVED = {
    "title": "narration (a Narration subclass's title)",
    "instructions": "narration (Narration.instructions)",
    "observation_text": "narration (Narration.observation_text)",
    "step_events": "narration (Narration.step_events)",
    "action_description": "narration (Narration.action_description)",
    "run_inline": "serving = Serving(inline=...)",
    "action_tools": "serving = Serving(action_tools=...)",
    "offline": "serving = Serving(offline=...)",
    "reward_range": "serving = Serving(reward_range=...)",
    "resources": "serving = Serving(resources=...)",
    "rewards": "serving = Serving(rewards=(...))",
    "supports_snapshots": "nothing: it is derived from snapshot/restore being implemented",
    "has_frame": 'render_mode = "rgb_array"',
    "info_schema": "Info, a pydantic model of info's fields",
    "reset_options_schema": "Options, a pydantic model of the per-episode options",
    "action_schema": "the action space (with its action_set); narration adds words",
}


def contract_problems(env: Environment[Any]) -> list[str]:
    """What an instance gets wrong about the contract's declarations (empty: nothing).

    Checks that the spaces are Gymnasium spaces, that :attr:`Environment.action_set`
    names exactly the values of a ``Discrete`` action space, that a frame observation
    is an RGB image, that snapshots come as a pair, and that no member of the old,
    larger contract is still defined (each named with where it went).
    """
    problems: list[str] = []
    cls = type(env)
    who = cls.__name__
    for member, where in _MOVED.items():
        if any(member in vars(base) for base in cls.__mro__ if base not in _CONTRACT_BASES):
            problems.append(f"{who}.{member} is no longer part of the contract: use {where}")
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
    if env.render_mode not in (None, "rgb_array"):
        problems.append(f"{who}.render_mode must be None or 'rgb_array', got {env.render_mode!r}")
    for attr in ("Options", "Info"):
        model = getattr(env, attr)
        if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
            problems.append(f"{who}.{attr} must be a pydantic model class or None, got {model!r}")
    if (cls.snapshot is Environment.snapshot) != (cls.restore is Environment.restore):
        problems.append(f"{who} must implement both snapshot and restore, or neither")
    if env.frame_is_observation:
        obs = getattr(env, "observation_space", None)
        if not has_frame(env):
            problems.append(f'{who}.frame_is_observation needs render_mode = "rgb_array"')
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


_CONTRACT_BASES = (Environment, Generic, ABC, object)
