"""Any registered Gymnasium environment, served over MCP.

``openenv-mcp serve gymnasium --id Blackjack-v1`` wraps ``gymnasium.make`` in
the openenv-mcp contract:

* the environment's own spaces are the served spaces, whatever they are
  (``openenv_mcp.spaces`` carries their values): a ``Box`` action takes a list
  of numbers, Blackjack's ``Tuple`` observation arrives as ``[14, 10, 0]`` and
  leaves the client as the tuple ``(14, 10, 0)``;
* ``Discrete`` actions get names (one MCP tool each) from the environment's
  documentation where it has any (``_known.py``), else from the env's own
  ``get_action_meanings()``, else ``ACTION_0..``;
* ``info["text"]`` reads the observation out in words for a model ("player
  sum 14, dealer shows 10, usable ace: no");
* ``render_mode="rgb_array"`` frames come back as PNG images;
* seeds go straight to ``env.reset(seed=...)`` (unseeded, its own ``np_random``
  goes on, as in Gymnasium); snapshots are deep copies.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.codecs import to_jsonable
from openenv_mcp.environment import ActionSet, Environment, Serving, StepResult
from openenv_mcp.errors import ArgumentError, DependencyNotInstalled, UnsupportedOption
from openenv_mcp.options import kwargs_checks, parse_pairs
from openenv_mcp.tasks import TaskSet

# Frames are drawn off screen (rgb_array); without this SDL looks for a display
# and complains about XDG_RUNTIME_DIR on stderr. Users can still override it.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import gymnasium
from gymnasium import spaces

from openenv_mcp_envs.gymnasium._known import known_for
from openenv_mcp_envs.gymnasium._narration import GymnasiumNarration
from openenv_mcp_envs.gymnasium._tasks import gymnasium_tasks

__all__ = ["GymnasiumConfig", "GymnasiumEnv", "parse_kwargs"]

# gymnasium.make options that this wrapper sets itself or that would break the
# one-episode-per-reset contract.
_MANAGED = {
    "render_mode": "frames are controlled by --render / --no-render",
    "autoreset": "episodes end with terminated/truncated; call reset to start another",
    "apply_api_compatibility": "only Gymnasium-API environments are supported",
}
# Namespaces whose environments register on import of a package.
_NAMESPACE_MODULES = {"ALE": "ale_py"}
# pygame draws toy_text and classic_control frames; its fonts and blits are
# not known to be thread-safe, and episodes render on worker threads.
_RENDER_LOCK = threading.Lock()
_PYGAME_ENVS = ("gymnasium.envs.toy_text", "gymnasium.envs.classic_control", "gymnasium.envs.box2d")
# Envs whose every call is short and bounded (no I/O): served on the event loop.
_INLINE_MODULES = ("gymnasium.envs.toy_text", "gymnasium.envs.classic_control", "ale_py.")


def _json_or_string(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw.strip("\"'") if raw[:1] in "\"'" else raw


def parse_kwargs(text: str) -> dict[str, Any]:
    """Read ``gymnasium.make`` keyword arguments from a command line.

    Two forms: a JSON object (``'{"map_name": "8x8", "is_slippery": false}'``)
    or ``key=value`` pairs separated by commas (``map_name=8x8,is_slippery=false``),
    where each value is read as JSON when it can be (``false``, ``3``, ``[1, 2]``)
    and is a plain string otherwise.

    Raises:
        ValueError: saying which part could not be read and what was expected.
    """
    return parse_pairs(text, "kwargs", "map_name=8x8,is_slippery=false", _json_or_string)


class GymnasiumConfig(BaseModel):
    """Options of the gymnasium environment (``openenv-mcp serve gymnasium --id ...``)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        "CartPole-v1",
        min_length=1,
        description="A registered Gymnasium id (Blackjack-v1, FrozenLake-v1, CartPole-v1, ...); "
        "'module:Id' imports the module first to register its environments.",
    )
    kwargs: Annotated[dict[str, Any], kwargs_checks(parse_kwargs, _MANAGED)] = Field(
        {},
        description="Keyword arguments for gymnasium.make: a JSON object "
        "('{\"is_slippery\": false}') or key=value pairs (is_slippery=false,map_name=8x8).",
    )
    max_episode_steps: int | None = Field(
        None, ge=1, description="Truncate episodes after this many steps (default: the id's own)."
    )
    render: bool = Field(
        True,
        description="Return the environment's rgb_array frame as a PNG image where it has one "
        "(toy_text and classic_control draw with pygame).",
    )


def _make(config: GymnasiumConfig, render_mode: str | None) -> gymnasium.Env[Any, Any]:
    """``gymnasium.make`` with its errors turned into ours."""
    kwargs = dict(config.kwargs)
    if render_mode is not None:  # some envs' constructors take no render_mode at all
        kwargs["render_mode"] = render_mode
    if config.max_episode_steps is not None:
        kwargs["max_episode_steps"] = config.max_episode_steps
    namespace = config.id.split("/", 1)[0] if "/" in config.id and ":" not in config.id else ""
    if namespace in _NAMESPACE_MODULES and not any(
        key.startswith(f"{namespace}/") for key in gymnasium.registry
    ):
        import importlib

        # when missing, gymnasium's own "namespace not found" below says so
        with contextlib.suppress(ImportError):
            gymnasium.register_envs(importlib.import_module(_NAMESPACE_MODULES[namespace]))
    try:
        return gymnasium.make(config.id, **kwargs)
    except gymnasium.error.DependencyNotInstalled as exc:
        raise DependencyNotInstalled(f"gymnasium {config.id}: {exc}") from None
    except gymnasium.error.Error as exc:
        raise ArgumentError(f"gymnasium id {config.id!r}: {exc}") from None
    except ImportError as exc:
        raise DependencyNotInstalled(f"gymnasium {config.id}: {exc}") from None
    except TypeError as exc:
        raise ArgumentError(f"gymnasium {config.id}: bad kwargs {config.kwargs}: {exc}") from None


_MODES: dict[str, list[str]] = {}
_PYGAME_MISSING: dict[str, bool] = {}


def _render_modes(config: GymnasiumConfig) -> list[str]:
    """The render modes of ``config``'s environment (made once per process to look)."""
    key = json.dumps([config.id, config.kwargs], sort_keys=True, default=str)
    if key not in _MODES:
        probe = _make(config, None)
        try:
            _MODES[key] = list(probe.metadata.get("render_modes") or [])
            if type(probe.unwrapped).__module__.startswith(_PYGAME_ENVS):
                import importlib.util

                _PYGAME_MISSING[config.id] = importlib.util.find_spec("pygame") is None
        finally:
            probe.close()
    return _MODES[key]


def _render_objects(env: Any) -> dict[str, Any]:
    """Attributes of ``env`` holding pygame objects (screens, clocks, sprite lists)."""

    def is_pygame(value: Any) -> bool:
        if isinstance(value, (list, tuple)):
            return any(is_pygame(v) for v in value)
        if isinstance(value, dict):
            return any(is_pygame(v) for v in value.values())
        return type(value).__module__.startswith("pygame")

    return {k: v for k, v in vars(env).items() if is_pygame(v)}


class GymnasiumInfo(BaseModel):
    """What ``info`` holds: the observation in words, then the environment's own fields."""

    text: str = Field(description="The observation in words.")


class GymnasiumEnv(Environment[GymnasiumConfig]):
    """A Gymnasium environment (``gymnasium.make(id, **kwargs)``) behind the MCP contract."""

    name: ClassVar[str] = "gymnasium"
    description: ClassVar[str] = (
        "Any registered Gymnasium environment (--id Blackjack-v1, CartPole-v1, FrozenLake-v1, "
        "...): named discrete actions, observations in words, rgb_array frames as images."
    )
    Config: ClassVar[type[BaseModel]] = GymnasiumConfig
    Info = GymnasiumInfo
    # Gymnasium's info["action_mask"] advises (Taxi's masked actions are legal, penalised
    # steps): refusing them would make a run through MCP differ from gymnasium.make's.
    serving = Serving(enforce_mask=False)
    narration = GymnasiumNarration

    def __init__(self, config: GymnasiumConfig) -> None:
        super().__init__(config)
        self._frames = config.render and "rgb_array" in _render_modes(config)
        if self._frames and _PYGAME_MISSING.get(config.id):
            raise DependencyNotInstalled(
                f"{config.id} draws its frames with pygame, which is not installed: "
                "pip install 'openenv-mcp[gymnasium]' (in a clone of openenv-mcp: ./dev setup "
                "gymnasium), or serve without frames: --no-render."
            )
        self._env = _make(config, "rgb_array" if self._frames else None)
        unwrapped = self._env.unwrapped
        # Render attributes as a fresh env has them (None) or lacks them: how
        # snapshots and close() leave pygame objects behind (see _detach).
        self._pristine = {k: v for k, v in vars(unwrapped).items() if v is None}
        self._known = known_for(unwrapped)
        self.action_space = self._env.action_space
        self.observation_space = self._env.observation_space
        self.action_set = self._action_set()
        self.render_mode = "rgb_array" if self._frames else None
        self.Options = self._known.options
        self._observation: Any = None
        #: The observation described in this call, and its words (a step's info and its
        #: summary both want them); cleared by every call that changes the env.
        self._described: tuple[Any, str] | None = None
        self._started = False
        if type(unwrapped).__module__.startswith(_INLINE_MODULES):
            # A thread hop per call costs more than these envs' whole step (CartPole:
            # ~10 us): pure-Python classic-control and toy-text envs and ALE never block.
            self.serving = dataclasses.replace(type(self).serving, inline=True)

    # -- description -------------------------------------------------------------------

    def _action_set(self) -> ActionSet | None:
        space = self._env.action_space
        if not isinstance(space, spaces.Discrete):
            return None
        n = int(space.n)
        if len(self._known.actions) == n:
            names = [name for name, _ in self._known.actions]
            return ActionSet.from_names(names, dict(self._known.actions), start=int(space.start))
        meanings = getattr(self._env.unwrapped, "get_action_meanings", None)
        if callable(meanings):
            found = [str(m) for m in meanings()]
            if len(found) == n and len({f.upper() for f in found}) == n:
                return ActionSet.from_names(found, start=int(space.start))
        return ActionSet.from_names([f"ACTION_{i}" for i in range(n)], start=int(space.start))

    @property  # type: ignore[override]
    def np_random(self) -> np.random.Generator:
        """The wrapped env's own generator (``env.unwrapped.np_random``)."""
        return self._env.unwrapped.np_random

    @np_random.setter
    def np_random(self, generator: np.random.Generator) -> None:
        self._env.unwrapped.np_random = generator

    @property
    def gymnasium_env(self) -> gymnasium.Env[Any, Any]:
        """The wrapped ``gymnasium.Env`` (as ``gymnasium.make`` returned it)."""
        return self._env

    def metadata(self) -> dict[str, Any]:
        spec = self._env.spec
        return {
            "config": self.config.model_dump(mode="json"),
            "gymnasium_version": gymnasium.__version__,
            "entry_point": str(spec.entry_point) if spec else None,
            "max_episode_steps": spec.max_episode_steps if spec else None,
            "observation_space": str(self._env.observation_space),
            "observation": self._known.observation or None,
            "action_space": str(self._env.action_space),
            "render_modes": list(self._env.metadata.get("render_modes") or []),
        }

    def task_set(self) -> TaskSet:
        """Train, validation and test seeds of the served id, judged by its registered
        ``reward_threshold`` where it has one (``_tasks.py`` says the rest)."""
        spec = self._env.spec
        threshold = spec.reward_threshold if spec is not None else None
        return gymnasium_tasks(self.config.id, None if threshold is None else float(threshold))

    # -- the episode -------------------------------------------------------------------

    def describe(self, observation: Any) -> str:
        """The observation in words, as ``info["text"]`` carries it."""
        described = self._described
        if described is not None and described[0] is observation:
            return described[1]
        text = self._describe(observation)
        self._described = (observation, text)
        return text

    def _describe(self, observation: Any) -> str:
        if self._known.describe is not None:
            try:
                return self._known.describe(observation, self._env.unwrapped)
            except Exception:  # a describer must never break a step: fall back
                pass
        return _generic_text(self._env.observation_space, observation)

    def _info(self, observation: Any, info: dict[str, Any]) -> dict[str, Any]:
        data = to_jsonable(info)
        assert isinstance(data, dict)
        data.pop("text", None)
        return {"text": self.describe(observation), **data}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self._described = None  # envs may reuse one observation array, changed in place
        observation, info = self._env.reset(seed=seed, options=options or None)
        self._observation, self._started = observation, True
        return observation, self._info(observation, info)

    def step(self, action: Any) -> StepResult:
        self._described = None
        observation, reward, terminated, truncated, info = self._env.step(action)
        self._observation = observation
        return StepResult(
            observation=observation,
            reward=float(reward),
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=self._info(observation, info),
        )

    def state(self) -> dict[str, Any]:
        return {"text": self.describe(self._observation)} if self._started else {}

    def render(self) -> np.ndarray | None:
        if not self._frames or not self._started:
            return None
        with _RENDER_LOCK:
            frame = self._env.render()
        if not isinstance(frame, np.ndarray):
            return None
        return np.ascontiguousarray(frame, dtype=np.uint8)

    def _detach(self, env: Any, keys: Iterable[str]) -> None:
        """Leave attributes ``keys`` of ``env`` as a fresh env has them (``None``) or lacks them."""
        for key in keys:
            if key in self._pristine:
                setattr(env, key, self._pristine[key])
            else:
                delattr(env, key)

    def close(self) -> None:
        # Some envs' close() calls pygame.quit(), which would pull the display
        # from under every other episode in this process; off-screen surfaces
        # need no quit, so detach them first.
        with _RENDER_LOCK:
            unwrapped = self._env.unwrapped
            self._detach(unwrapped, _render_objects(unwrapped))
            self._env.close()

    # -- snapshots ---------------------------------------------------------------------

    def _copy(self, env: gymnasium.Env[Any, Any]) -> gymnasium.Env[Any, Any]:
        unwrapped = env.unwrapped
        # pygame surfaces cannot be copied; the copy redraws them on first render.
        drawn = _render_objects(unwrapped)
        memo: dict[int, Any] = {id(v): None for v in drawn.values()}
        try:
            with _RENDER_LOCK:
                copied = copy.deepcopy(env, memo)
        except Exception as exc:
            raise UnsupportedOption(
                f"{self.config.id} cannot be snapshotted (its state does not copy: {exc})"
            ) from None
        self._detach(copied.unwrapped, drawn)
        return copied

    def snapshot(self) -> Any:
        return (self._copy(self._env), self._observation, self._started)

    def restore(self, snapshot: Any) -> None:
        env, observation, started = snapshot
        self.close()
        self._env = self._copy(env)
        self._observation, self._started = observation, started
        self._described = None


def _generic_text(space: spaces.Space[Any], observation: Any) -> str:
    """Words for an observation of an environment without a describer."""
    if isinstance(space, spaces.Discrete):
        return f"state {int(observation)}"
    if isinstance(observation, np.ndarray):
        if observation.size <= 16:
            values = ", ".join(f"{float(v):.4g}" for v in observation.ravel())
            return f"observation [{values}]"
        shape = "x".join(str(s) for s in observation.shape)
        return f"observation: a {shape} {observation.dtype} array"
    return f"observation {json.dumps(to_jsonable(observation))}"


if TYPE_CHECKING:  # mypy checks that the env has what its narration reads (GymnasiumView)
    from openenv_mcp_envs.gymnasium._narration import GymnasiumView

    def _narrated(env: GymnasiumEnv) -> GymnasiumView:
        return env
