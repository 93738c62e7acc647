"""Any PettingZoo environment as a :class:`~openenv_mcp.seats.SeatedGame`.

:func:`resolve` reads an id as people write it (``tictactoe_v3``, ``tictactoe-v3``,
``classic/tictactoe_v3``, ``classic.tictactoe_v3``, ``pettingzoo.classic.tictactoe_v3``,
or ``module:name`` for an env of another package) and finds it in PettingZoo's
registries. :class:`PettingZooGame` plays one:

* an AEC env (every classic game but rock-paper-scissors) moves one agent at a time:
  ``to_move()`` is ``env.agent_selection``; an agent that is done steps ``None`` by
  itself while others play on;
* a parallel env (rock-paper-scissors, and the families whose native API it is) moves
  every live agent at once: ``to_move()`` is ``env.agents`` and ``apply`` takes the
  joint action;
* observations: a classic game's ``{"observation", "action_mask"}`` is split, the
  seat's observation being the ``"observation"`` part (and its space that subspace),
  the mask the legal actions; ``info["text"]`` is the board in words (``_known.py``,
  else the ``ansi`` render, else the observation described);
* rewards are ``env.rewards`` after each step (parallel: the step's), for every agent;
* ``reset(seed)`` seeds the env; an unseeded reset draws the env's seed from a stream
  the last seed started, so every episode has a seed, and a snapshot is that seed and
  the moves since (restored by replaying them: PettingZoo's envs do not deep-copy).
"""

from __future__ import annotations

import difflib
import importlib
import json
import os
import re
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from gymnasium import spaces

from openenv_mcp.errors import (
    ArgumentError,
    DependencyNotInstalled,
    InvalidAction,
    UnsupportedOption,
)
from openenv_mcp.options import parse_pairs
from openenv_mcp.seats import SeatedGame
from openenv_mcp_envs.pettingzoo._known import KNOWN, Known

# Frames are drawn off screen; without this SDL looks for a display.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import pettingzoo  # type: ignore[import-untyped,unused-ignore]
from pettingzoo.utils.env import (  # type: ignore[import-untyped,unused-ignore]
    AECEnv,
    ParallelEnv,
)

__all__ = [
    "Api",
    "PettingZooGame",
    "Resolved",
    "classic_games",
    "list_ids",
    "parse_kwargs",
    "resolve",
]

Api = Literal["auto", "aec", "parallel"]

#: make() arguments this package sets itself.
MANAGED = {"render_mode": "frames are controlled by --render / --no-render"}
#: pygame's drawing is not known to be thread-safe; episodes render on worker threads.
_RENDER_LOCK = threading.Lock()
#: The longest text of an observation described element by element.
_SHOWN_VALUES = 16


def _json_or_string(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'" else raw


def parse_kwargs(text: str) -> dict[str, Any]:
    """The env's keyword arguments from a command line: ``board_size=9,komi=6.5`` or a
    JSON object (``'{"num_players": 3}'``); each value is read as JSON where it can be.

    Raises:
        ValueError: saying which part could not be read and what was expected.
    """
    return parse_pairs(text, "kwargs", "board_size=9,komi=6.5", _json_or_string)


# -- ids ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resolved:
    """A PettingZoo environment found from an id.

    Attributes:
        id: the id as PettingZoo's modules name it (``"tictactoe_v3"``), or the
            ``module:name`` reference given.
        registry_id: PettingZoo's registry id (``"classic/tictactoe-v3"``); ``None`` for a
            reference to a callable.
        family: ``"classic"``, ``"butterfly"``... (``None`` for a reference).
        name: the game's name without family and version (``"tictactoe"``).
        aec: makes the AEC env (keyword arguments), where it has one.
        parallel: makes the parallel env, where it has one.
    """

    id: str
    registry_id: str | None
    family: str | None
    name: str
    aec: Callable[..., Any] | None
    parallel: Callable[..., Any] | None


_ID = re.compile(r"^(?:(?P<family>[\w.-]+)/)?(?P<name>[\w.-]+?)(?:[-_]v(?P<version>\d+))?$")


def _specs() -> dict[str, Any]:
    """Every registered spec, AEC and parallel, by registry id."""
    found: dict[str, Any] = dict(pettingzoo.aec_registry)
    for key, spec in pettingzoo.parallel_registry.items():
        found.setdefault(key, spec)
    return found


def _short(spec: Any) -> str:
    """``tictactoe_v3``: the name PettingZoo's modules and docs use."""
    return f"{spec.name}_v{spec.version}" if spec.version is not None else str(spec.name)


def list_ids() -> dict[str, list[str]]:
    """Every registered id (``tictactoe_v3``), by family."""
    families: dict[str, list[str]] = {}
    for spec in _specs().values():
        families.setdefault(str(spec.namespace or ""), []).append(_short(spec))
    return {family: sorted(ids) for family, ids in sorted(families.items())}


def classic_games() -> list[str]:
    """The classic games' ids (``chess_v6``, ``connect_four_v3``, ...)."""
    return list_ids().get("classic", [])


def _maker(kind: Literal["aec", "parallel"], registry_id: str) -> Callable[..., Any]:
    def make(**kwargs: Any) -> Any:
        return pettingzoo.make(kind, registry_id, **kwargs)

    return make


def _resolved(spec: Any) -> Resolved:
    key = str(spec.id)
    return Resolved(
        id=_short(spec),
        registry_id=key,
        family=spec.namespace,
        name=str(spec.name),
        aec=_maker("aec", key) if key in pettingzoo.aec_registry else None,
        parallel=_maker("parallel", key) if key in pettingzoo.parallel_registry else None,
    )


def _unknown(raw: str, specs: dict[str, Any]) -> ArgumentError:
    shorts = {_short(s): s for s in specs.values()}
    longs = {f"{s.namespace}/{_short(s)}": s for s in specs.values() if s.namespace}
    close = difflib.get_close_matches(raw.strip(), [*shorts, *longs], n=3, cutoff=0.6)
    hint = f" Close: {', '.join(close)}." if close else ""
    families = ", ".join(sorted({str(s.namespace) for s in specs.values() if s.namespace}))
    return ArgumentError(
        f"unknown PettingZoo environment {raw!r}.{hint} The classic games: "
        f"{', '.join(classic_games())}. Ids are NAME_vN, FAMILY/NAME_vN or "
        f"pettingzoo.FAMILY.NAME_vN (families: {families}; describe pettingzoo lists every "
        "id), or module:name for an env another package registers or makes."
    )


def resolve(raw: str) -> Resolved:
    """The PettingZoo environment ``raw`` names.

    Raises:
        ArgumentError: no registered env has that id (naming close ones and the classic
            games), or a bare name is in several families.
        DependencyNotInstalled: a ``module:name`` reference whose module cannot be imported.
    """
    text = raw.strip()
    if ":" in text:
        return _reference(text)
    specs = _specs()
    path = text.removeprefix("pettingzoo.")
    for spec in specs.values():  # the implementation's module: pettingzoo.classic.chess.chess
        entry = spec.entry_point
        if isinstance(entry, str) and entry.split(":")[0] == f"pettingzoo.{path}":
            return _resolved(spec)
    if "/" not in path and "." in path:  # classic.tictactoe_v3
        family, _, rest = path.rpartition(".")
        path = f"{family.replace('.', '/')}/{rest}"
    match = _ID.fullmatch(path)
    if not match:
        raise _unknown(text, specs)
    family, name = match["family"], match["name"]
    version = int(match["version"]) if match["version"] is not None else None
    found = [
        s
        for s in specs.values()
        if s.name == name
        and (family is None or s.namespace == family)
        and (version is None or s.version == version)
    ]
    if not found:
        raise _unknown(text, specs)
    in_families = sorted({str(s.namespace) for s in found})
    if len(in_families) > 1:
        raise ArgumentError(
            f"PettingZoo environment {text!r} is in several families "
            f"({', '.join(in_families)}): name one, e.g. {in_families[0]}/{name}"
        )
    return _resolved(max(found, key=lambda s: -1 if s.version is None else int(s.version)))


def _reference(text: str) -> Resolved:
    module_name, _, attr = text.partition(":")
    if not module_name or not attr:
        raise ArgumentError(f"expected module:name, got {text!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"PettingZoo environment {text!r}: module {module_name!r} could not be imported ({exc})"
        ) from None
    try:  # a package that registers its envs on import: module:family/name-v0
        return resolve(attr)
    except ArgumentError:
        pass
    creator = getattr(module, attr, None)
    if not callable(creator):
        names = [n for n in vars(module) if not n.startswith("_")]
        close = difflib.get_close_matches(attr, names, n=3, cutoff=0.6)
        hint = f" Close: {', '.join(close)}." if close else ""
        raise ArgumentError(
            f"PettingZoo environment {text!r}: {module_name!r} has no callable {attr!r} and "
            f"no registered id {attr!r}.{hint}"
        )
    try:  # which API it makes: made once to look
        probe = creator()
    except Exception as exc:
        raise ArgumentError(f"PettingZoo environment {text!r}: {attr}() raised {exc!r}") from None
    parallel = isinstance(probe, ParallelEnv)
    if not parallel and not isinstance(probe, AECEnv):
        raise ArgumentError(
            f"PettingZoo environment {text!r}: {attr}() made a {type(probe).__name__}, not a "
            "PettingZoo AECEnv or ParallelEnv"
        )
    _close(probe)
    return Resolved(
        id=text,
        registry_id=None,
        family=None,
        name=attr,
        aec=None if parallel else creator,
        parallel=creator if parallel else None,
    )


# -- making the env ----------------------------------------------------------------------


def _construct(found: Resolved, parallel: bool, kwargs: Mapping[str, Any]) -> Any:
    """The env, with PettingZoo's errors turned into ours."""
    maker = found.parallel if parallel else found.aec
    assert maker is not None
    try:
        with warnings.catch_warnings():
            # no-limit hold'em declares float64 bounds for its float32 Box: Gymnasium says so
            warnings.filterwarnings("ignore", message=r".*precision lowered by casting")
            env = maker(**kwargs)
    except DependencyNotInstalled:
        raise
    except ImportError as exc:  # PettingZoo's FailedToImport is no ImportError
        raise DependencyNotInstalled(_missing(found, exc)) from None
    except TypeError as exc:
        raise ArgumentError(f"PettingZoo {found.id}: bad kwargs {dict(kwargs)}: {exc}") from None
    except (AssertionError, ValueError) as exc:
        raise ArgumentError(f"PettingZoo {found.id} with kwargs {dict(kwargs)}: {exc}") from None
    except Exception as exc:
        if type(exc).__name__ == "FailedToImport":
            raise DependencyNotInstalled(_missing(found, exc)) from None
        raise
    wanted = ParallelEnv if parallel else AECEnv
    if not isinstance(env, wanted):
        raise ArgumentError(
            f"PettingZoo {found.id} made a {type(env).__name__}, not a PettingZoo {wanted.__name__}"
        )
    return env


def _missing(found: Resolved, exc: BaseException) -> str:
    extra = (
        "pip install 'openenv-mcp[pettingzoo]'"
        if found.family in (None, "classic")
        else f"pip install 'pettingzoo[{found.family}]'"
    )
    said = str(exc)
    return f"PettingZoo {found.id} cannot be made here: {said}" + (
        "" if "pip install" in said else f" ({extra})"
    )


_MODES: dict[str, list[str]] = {}


def _render_modes(found: Resolved, parallel: bool, kwargs: Mapping[str, Any]) -> list[str]:
    """The render modes of the env (one made per process and config to look)."""
    key = json.dumps([found.id, parallel, dict(kwargs)], sort_keys=True, default=str)
    if key not in _MODES:
        probe = _construct(found, parallel, kwargs)
        try:
            _MODES[key] = [
                str(m) for m in (getattr(probe, "metadata", {}) or {}).get("render_modes", [])
            ]
        finally:
            _close(probe)
    return _MODES[key]


def _pygame_objects(env: Any) -> list[str]:
    """Attributes of ``env`` holding pygame objects (screens, clocks, fonts)."""
    return [key for key, value in vars(env).items() if type(value).__module__.startswith("pygame")]


def _close(env: Any) -> None:
    """Close ``env`` without ``pygame.quit()`` (some envs' close calls it when they hold
    a screen, which would pull the display from under every other episode here)."""
    with _RENDER_LOCK:
        unwrapped = env.unwrapped
        for key in _pygame_objects(unwrapped):
            setattr(unwrapped, key, None)
        env.close()


def _inner(space: spaces.Space[Any]) -> spaces.Space[Any] | None:
    """The ``"observation"`` subspace of a classic game's ``{"observation",
    "action_mask"}`` Dict space; ``None`` for any other space."""
    if isinstance(space, spaces.Dict) and {"observation", "action_mask"} <= set(space.spaces):
        return space.spaces["observation"]
    return None


def _fit(space: spaces.Space[Any], value: Any) -> Any:
    """``value`` as a member of ``space`` (dtype and shape) where it is an array space."""
    if isinstance(space, spaces.Box):
        return np.asarray(value, dtype=space.dtype).reshape(space.shape)
    if isinstance(space, spaces.Discrete):
        return np.int64(int(np.asarray(value).reshape(())))
    if isinstance(space, spaces.MultiBinary | spaces.MultiDiscrete):
        return np.asarray(value, dtype=space.dtype).reshape(space.shape)
    return value


def _blank(space: spaces.Space[Any]) -> Any:
    """An observation of ``space`` for an agent never observed (zeros, within bounds)."""
    if isinstance(space, spaces.Box):
        return np.clip(np.zeros(space.shape, space.dtype), space.low, space.high).astype(
            space.dtype
        )
    if isinstance(space, spaces.Discrete):
        return np.int64(space.start)
    if isinstance(space, spaces.MultiBinary | spaces.MultiDiscrete):
        return np.zeros(space.shape, space.dtype)
    return space.sample()


def describe_observation(value: Any) -> str:
    """Words for an observation of a game without a describer."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        if value.size <= _SHOWN_VALUES:
            return f"observation [{', '.join(f'{float(v):.4g}' for v in value.ravel())}]"
        shape = "x".join(str(s) for s in value.shape)
        return (
            f"observation: a {shape} {value.dtype} array ({int(np.count_nonzero(value))} nonzero)"
        )
    if isinstance(value, np.generic | np.ndarray):
        return f"observation {value.item()!r}"
    return f"observation {value!r}"[:1000]


# -- the game ----------------------------------------------------------------------------


class PettingZooGame(SeatedGame):
    """One PettingZoo environment, every agent a seat.

    Args:
        id: the env's id (see :func:`resolve`).
        kwargs: its keyword arguments (``render_mode`` is this class's to set).
        api: ``"auto"`` (the parallel API where the env registers one, else AEC),
            ``"aec"`` or ``"parallel"``.
        max_moves: truncate every agent after this many moves (joint moves at a
            simultaneous node count once); ``None``: the env's own limits only.
        render: draw ``rgb_array`` frames where the env has them.

    Raises:
        ArgumentError: an unknown id, bad kwargs, an API the env lacks, or an action
            space that is not ``Discrete``.
        DependencyNotInstalled: the env's packages are missing.
    """

    def __init__(
        self,
        id: str = "tictactoe_v3",
        kwargs: Mapping[str, Any] | None = None,
        *,
        api: Api = "auto",
        max_moves: int | None = None,
        render: bool = True,
    ) -> None:
        self.resolved = found = resolve(id)
        self.kwargs: dict[str, Any] = dict(kwargs or {})
        for key, why in MANAGED.items():
            if key in self.kwargs:
                raise ArgumentError(f"{key!r} cannot be passed through kwargs: {why}")
        self.parallel = self._api(found, api)
        self.max_moves = max_moves
        known = KNOWN.get(found.name) if found.family == "classic" else None
        self.known: Known | None = known
        modes = _render_modes(found, self.parallel, self.kwargs)
        self.render_modes = modes
        frames = render and "rgb_array" in modes and (known is None or known.frames)
        mode = "rgb_array" if frames else ("ansi" if "ansi" in modes else None)
        made = dict(self.kwargs)
        if mode is not None:
            made["render_mode"] = mode
        self.env: Any = _construct(found, self.parallel, made)
        self.mode = mode
        self.title = self.known.title if self.known else found.id
        self.perfect = self.known.perfect if self.known else True
        self.possible_agents = [str(a) for a in self.env.possible_agents]
        self._observation_spaces: dict[str, spaces.Space[Any]] = {}
        self._split: dict[str, bool] = {}
        self._action_spaces: dict[str, spaces.Discrete] = {}
        for agent in self.possible_agents:
            self._describe_spaces(agent)
        #: Seeds of unseeded resets come from here (reseeded by every seeded reset).
        self._seeds = np.random.default_rng()
        self._seed = 0
        self._history: list[dict[str, int]] = []
        self.reset()

    @staticmethod
    def _api(found: Resolved, api: Api) -> bool:
        """Whether to play the parallel env."""
        if api == "auto":
            return found.parallel is not None
        wanted = found.parallel if api == "parallel" else found.aec
        if wanted is None:
            has = "aec" if found.aec is not None else "parallel"
            raise ArgumentError(
                f"PettingZoo {found.id} has no {api} API; it has the {has} API: api={has} (or auto)"
            )
        return api == "parallel"

    def _describe_spaces(self, agent: str) -> None:
        space = self.env.observation_space(agent)
        inner = _inner(space)
        self._split[agent] = inner is not None
        self._observation_spaces[agent] = inner if inner is not None else space
        actions = self.env.action_space(agent)
        if not isinstance(actions, spaces.Discrete):
            raise ArgumentError(
                f"PettingZoo {self.resolved.id}: {agent}'s action space is {actions}; only "
                "discrete action spaces (Discrete) are served"
            )
        self._action_spaces[agent] = actions

    # -- spaces ----------------------------------------------------------------------

    def _check_agent(self, agent: str) -> None:
        if agent not in self._action_spaces:
            raise ArgumentError(
                f"{agent!r} is not an agent of {self.resolved.id}; its agents: "
                f"{', '.join(self.possible_agents)}"
            )

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        self._check_agent(agent)
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        self._check_agent(agent)
        return self._action_spaces[agent]

    # -- the episode -----------------------------------------------------------------

    @property
    def unwrapped(self) -> Any:
        """The env under its wrappers (a parallel env's AEC env where it wraps one)."""
        return self.env.unwrapped

    @property
    def seed(self) -> int:
        """This episode's seed (drawn from the seed stream where the reset gave none)."""
        return self._seed

    @property
    def moves(self) -> int:
        """Moves since the reset (joint moves count once)."""
        return self._moves

    @property
    def returns(self) -> dict[str, float]:
        """Every agent's rewards so far."""
        return dict(self._returns)

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        if options:
            key = next(iter(options))
            raise UnsupportedOption(
                f"option {key!r} cannot be set per episode for PettingZoo {self.resolved.id}. "
                "Per-episode options: none (the env's kwargs are set when it is served)."
            )
        if seed is not None:
            self._seeds = np.random.default_rng(np.random.SeedSequence(seed))
            episode_seed = int(seed)
        else:
            episode_seed = int(self._seeds.integers(2**31))
        self._start(episode_seed)

    def _start(self, seed: int) -> None:
        self._seed = seed
        self._history = []
        self._moves = 0
        self._ends = dict.fromkeys(self.possible_agents, False)
        self._cuts = dict.fromkeys(self.possible_agents, False)
        self._returns = dict.fromkeys(self.possible_agents, 0.0)
        self._cache: dict[str, tuple[Any, np.ndarray | None]] = {}
        self._last: dict[str, Any] = {}
        self._obs: dict[str, Any] = {}
        self._infos: dict[str, dict[str, Any]] = {}
        if self.parallel:
            observations, infos = self.env.reset(seed=seed)
            self._obs.update(observations)
            self._infos.update(infos)
        else:
            self.env.reset(seed=seed)
            self._note_ends()
            self._skip_dead({})

    def _note_ends(
        self, ends: Mapping[str, Any] | None = None, cuts: Mapping[str, Any] | None = None
    ) -> None:
        """Record every agent's termination and truncation (kept once the env drops it)."""
        env = self.env
        for agent, value in (ends if ends is not None else env.terminations).items():
            self._ends[str(agent)] = bool(value)
        for agent, value in (cuts if cuts is not None else env.truncations).items():
            self._cuts[str(agent)] = bool(value)

    def _done(self, agent: str) -> bool:
        return self._ends[agent] or self._cuts[agent]

    def _skip_dead(self, rewards: dict[str, float]) -> None:
        """Step ``None`` for done agents of an AEC env while others play on (PettingZoo's
        way to drop them), adding what those steps give to ``rewards``."""
        env = self.env
        for _ in range(10 * len(self.possible_agents)):
            if self.over or not env.agents:
                return
            selected = str(env.agent_selection)
            if not self._done(selected):
                return
            env.step(None)
            for agent, reward in env.rewards.items():
                rewards[str(agent)] = rewards.get(str(agent), 0.0) + float(reward)
            self._note_ends()

    def to_move(self) -> list[str]:
        if self.over:
            return []
        if self.parallel:
            return [str(a) for a in self.env.agents if not self._done(str(a))]
        selected = str(self.env.agent_selection)
        return [] if self._done(selected) else [selected]

    def terminations(self) -> dict[str, bool]:
        return dict(self._ends)

    def truncations(self) -> dict[str, bool]:
        return dict(self._cuts)

    def _observed(self, agent: str) -> tuple[Any, np.ndarray | None]:
        """``agent``'s observation (inside its space) and the env's action mask, if any."""
        if agent in self._cache:
            return self._cache[agent]
        space = self._observation_spaces[agent]
        env_info: Mapping[str, Any] = {}
        if self.parallel:
            raw = self._obs.get(agent, self._last.get(agent))
            env_info = self._infos.get(agent, {})
        else:
            try:
                raw = self.env.observe(agent)
            except Exception:  # an agent the env has dropped: its last observation
                raw = self._last.get(agent)
            env_info = (getattr(self.env, "infos", None) or {}).get(agent, {})
        mask: Any = None
        if raw is None:
            value = self._last.get(agent)
            if value is None:
                value = _blank(space)
        elif self._split[agent]:
            value, mask = _fit(space, raw["observation"]), raw["action_mask"]
        else:
            value = _fit(space, raw)
        if mask is None and isinstance(env_info, Mapping):
            mask = env_info.get("action_mask")
        found = (value, None if mask is None else np.asarray(mask).reshape(-1))
        self._last[agent] = value
        self._cache[agent] = found
        return found

    def _mask(self, agent: str) -> np.ndarray:
        n = int(self._action_spaces[agent].n)
        mask = np.zeros(n, dtype=np.int8)
        if agent not in self.to_move():
            return mask
        _, found = self._observed(agent)
        if found is None or found.size != n:
            mask[:] = 1
        else:
            mask[:] = (found != 0).astype(np.int8)
        return mask

    def action_name(self, agent: str, action: int) -> str:
        self._check_agent(agent)
        start = int(self._action_spaces[agent].start)
        known = self.known
        if known is not None and known.name is not None:
            index = self.possible_agents.index(agent)
            try:
                return known.name(self.unwrapped, index, int(action) - start)
            except Exception:  # an id the game cannot name now
                return str(action)
        return str(action)

    def legal(self, agent: str) -> list[tuple[int, str]]:
        self._check_agent(agent)
        start = int(self._action_spaces[agent].start)
        ids = [start + int(i) for i in np.flatnonzero(self._mask(agent))]
        return [(a, self.action_name(agent, a)) for a in ids]

    def text(self, agent: str) -> str:
        """The game in words, as ``agent`` may see it: the board and whose turn it is."""
        return f"{self.board_text(agent).rstrip()}\n{self.status(agent)}"

    def board_text(self, agent: str) -> str:
        """The board (or the observation) in words, as ``agent`` may see it."""
        self._check_agent(agent)
        index = self.possible_agents.index(agent)
        known = self.known
        body = ""
        if known is not None and known.text is not None:
            try:
                body = known.text(self.unwrapped, index)
            except Exception:  # a describer must never break a move: fall back
                body = ""
        if not body and self.mode == "ansi":
            with _RENDER_LOCK:
                drawn = self.env.render()
            body = drawn if isinstance(drawn, str) else ""
        if not body:
            body = f"You are {agent}; {describe_observation(self._observed(agent)[0])}."
        return body

    def status(self, agent: str) -> str:
        """Whose turn it is, or how the game ended, from ``agent``'s seat."""
        if self.over:
            scores = ", ".join(f"{a} {self._returns[a]:+g}" for a in self.possible_agents)
            cut = " (cut short)" if any(self._cuts.values()) else ""
            return f"Game over{cut}; returns: {scores} (you are {agent})."
        movers = self.to_move()
        if agent in movers:
            others = [m for m in movers if m != agent]
            also = f" (with {', '.join(others)}, at once)" if others else ""
            return f"Your turn ({agent}){also}."
        if self._done(agent):
            return f"Your game is over ({agent}); {', '.join(movers)} to move."
        return f"{', '.join(movers) or 'nobody'} to move (you are {agent})."

    def observe(self, agent: str) -> tuple[Any, dict[str, Any]]:
        self._check_agent(agent)
        value, _ = self._observed(agent)
        legal = self.legal(agent)
        mask = self._mask(agent)
        info: dict[str, Any] = {
            "text": self.text(agent),
            "agent": agent,
            "to_move": self.to_move(),
            "action_mask": [int(m) for m in mask],
            "legal_actions": [a for a, _ in legal],
            "legal_action_names": [n for _, n in legal],
        }
        return value, info

    def apply(self, actions: Mapping[str, int]) -> dict[str, float]:
        movers = self.to_move()
        if sorted(actions) != sorted(movers):
            raise InvalidAction(
                f"a move takes the action of every agent to move ({', '.join(movers) or 'none'}),"
                f" got actions of {', '.join(map(str, actions)) or 'none'}"
            )
        joint = {str(a): int(x) for a, x in actions.items()}
        rewards = self._step(joint)
        self._history.append(joint)
        return rewards

    def _step(self, joint: dict[str, int]) -> dict[str, float]:
        rewards = dict.fromkeys(self.possible_agents, 0.0)
        self._cache = {}
        env = self.env
        if self.parallel:
            observations, got, ends, cuts, infos = env.step(joint)
            self._obs.update(observations)
            self._infos.update(infos)
            for agent, reward in got.items():
                rewards[str(agent)] += float(reward)
            self._note_ends(ends, cuts)
        else:
            ((agent, action),) = joint.items()
            env.step(action)
            for who, reward in env.rewards.items():
                rewards[str(who)] += float(reward)
            self._note_ends()
            self._skip_dead(rewards)
        self._moves += 1
        if self.max_moves is not None and self._moves >= self.max_moves and not self.over:
            for who in self.possible_agents:
                if not self._ends[who]:
                    self._cuts[who] = True
        self._cache = {}
        for who, reward in rewards.items():
            self._returns[who] += reward
        return rewards

    # -- frames, snapshots, the end ----------------------------------------------------

    def render(self, viewer: str | None = None) -> np.ndarray | None:
        if self.mode != "rgb_array" or (viewer is not None and not self.perfect):
            return None
        with _RENDER_LOCK:
            frame = self.env.render()
        if not isinstance(frame, np.ndarray) or frame.ndim != 3:
            return None
        return np.ascontiguousarray(frame[..., :3], dtype=np.uint8)

    def snapshot(self) -> dict[str, Any]:
        return {
            "id": self.resolved.id,
            "kwargs": dict(self.kwargs),
            "seed": self._seed,
            "moves": [dict(m) for m in self._history],
            "cuts": dict(self._cuts),
            "seeds": self._seeds.bit_generator.state,
        }

    def restore(self, saved: Any) -> None:
        if saved.get("id") != self.resolved.id or saved.get("kwargs") != self.kwargs:
            raise UnsupportedOption(
                f"this snapshot is of PettingZoo {saved.get('id')!r} with kwargs "
                f"{saved.get('kwargs')}, not {self.resolved.id!r} with {self.kwargs}"
            )
        self._start(int(saved["seed"]))
        for joint in saved["moves"]:  # the same seed and moves: the same game
            self._step({str(a): int(x) for a, x in joint.items()})
            self._history.append(dict(joint))
        self._cuts.update(saved["cuts"])
        self._seeds.bit_generator.state = saved["seeds"]

    def close(self) -> None:
        _close(self.env)
