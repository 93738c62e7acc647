"""Rewards you can compose, attached to any environment at serve time.

A :class:`Reward` scores one step (the action, the observation after it, the
env's own reward, terminated/truncated and info); a :class:`TrajectoryReward`
scores a whole episode when it ends and assigns credit back to its steps
(:class:`LastStep`, :class:`Discounted`). Containers compose step rewards:
:class:`WeightedSum`, :class:`Gate` (a threshold), :class:`Sequential`
(fail-fast: the first zero stops it), as in OpenEnv's rubrics (RFC 004).
:class:`Judge` awaits an async scorer (an LLM judge) under a timeout.

Serve with ``openenv-mcp serve ENV --reward package.module:obj`` (repeatable;
``obj`` a reward, a trajectory reward, a list of them, or a function that
returns one), or return them from the env's ``Environment.rewards()``. Every
step's ``structuredContent`` then carries ``rewards`` (each named part, and
``env``, the environment's own) beside ``reward``, which becomes the sum of the
step rewards; at the episode's end ``trajectory`` carries each trajectory
reward's score and its per-step credit (also from the ``episode_summary`` tool).

Rewards run where the environment lives (the server process or a worker), on
the objects the env returns, never on what went over the wire.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.errors import ArgumentError, RewardFailed

__all__ = [
    "Discounted",
    "EnvReward",
    "Gate",
    "Judge",
    "LastStep",
    "Reward",
    "RewardFailed",
    "RewardSet",
    "Sequential",
    "Step",
    "TrajectoryReward",
    "WeightedSum",
    "load_rewards",
    "reward",
    "trajectory_reward",
]


@dataclass(frozen=True)
class Step:
    """One step, as a reward function sees it.

    Attributes:
        index: the step's number in its episode (1 for the first step).
        action: the action as the environment took it (parsed).
        observation: the observation after the step (the env's own object);
            ``None`` in a trajectory unless the trajectory reward keeps them.
        reward: the environment's own reward for this step.
        terminated, truncated: as the environment returned them.
        info: the step's info (JSON-able).
    """

    index: int
    action: Any
    observation: Any
    reward: float
    terminated: bool
    truncated: bool
    info: Mapping[str, Any] = field(default_factory=dict)


# -- step rewards ------------------------------------------------------------------------------


class Reward:
    """A reward over one step. Subclasses implement :meth:`score`.

    ``score`` may return a float or an awaitable of one (see :class:`Judge`).
    Containers report their own value under their name and each part's under
    the part's name, so names must be unique within one served reward.
    """

    name: str = "reward"

    def score(self, step: Step) -> float | Awaitable[float]:
        raise NotImplementedError

    def parts(self) -> Sequence[Reward]:
        """The rewards this one combines (empty for a leaf)."""
        return ()

    def evaluate(self, step: Step, breakdown: dict[str, float]) -> float:
        """This reward's value for ``step``, each part's (and its own) put in ``breakdown``."""
        value = _settle(self, self.score(step))
        breakdown[self.name] = value
        return value

    def walk(self) -> Iterator[Reward]:
        """This reward and every part under it."""
        yield self
        for part in self.parts():
            yield from part.walk()

    def is_async(self) -> bool:
        """Whether any part awaits (a judge): the server then runs env calls on threads."""
        return any(isinstance(r, Judge) for r in self.walk())


class _FnReward(Reward):
    def __init__(self, fn: Callable[[Step], float], name: str) -> None:
        self.fn = fn
        self.name = name

    def score(self, step: Step) -> float:
        return self.fn(step)


def reward(fn: Callable[[Step], float] | None = None, *, name: str | None = None) -> Any:
    """Make a :class:`Reward` of a function of a :class:`Step` (a decorator, too)::

    @reward
    def alive(step): return 0.0 if step.terminated else 0.01
    """

    def wrap(f: Callable[[Step], float]) -> Reward:
        return _FnReward(f, name or f.__name__)

    return wrap if fn is None else wrap(fn)


class EnvReward(Reward):
    """The environment's own reward, scaled and optionally clipped (DQN's sign clip: 1.0)."""

    def __init__(self, scale: float = 1.0, clip: float | None = None, name: str = "env_reward"):
        self.scale, self.clip, self.name = scale, clip, name

    def score(self, step: Step) -> float:
        value = step.reward * self.scale
        if self.clip is not None:
            value = max(-self.clip, min(self.clip, value))
        return value


class WeightedSum(Reward):
    """Σ weight x part. ``weights`` default to 1 each."""

    def __init__(
        self,
        parts: Sequence[Reward],
        weights: Sequence[float] | None = None,
        name: str = "weighted_sum",
    ) -> None:
        if weights is not None and len(weights) != len(parts):
            raise ArgumentError(
                f"WeightedSum: {len(parts)} parts but {len(weights)} weights; give one each"
            )
        self._parts = list(parts)
        self.weights = [1.0] * len(parts) if weights is None else [float(w) for w in weights]
        self.name = name

    def parts(self) -> Sequence[Reward]:
        return self._parts

    def evaluate(self, step: Step, breakdown: dict[str, float]) -> float:
        value = sum(
            w * p.evaluate(step, breakdown) for p, w in zip(self._parts, self.weights, strict=True)
        )
        breakdown[self.name] = value
        return value


class Gate(Reward):
    """The part's value where it reaches ``threshold``, else 0 (a hard constraint)."""

    def __init__(self, part: Reward, threshold: float = 1.0, name: str | None = None) -> None:
        self.part, self.threshold = part, threshold
        self.name = name or f"gate_{part.name}"

    def parts(self) -> Sequence[Reward]:
        return (self.part,)

    def evaluate(self, step: Step, breakdown: dict[str, float]) -> float:
        inner = self.part.evaluate(step, breakdown)
        value = inner if inner >= self.threshold else 0.0
        breakdown[self.name] = value
        return value


class Sequential(Reward):
    """The parts in order; the first that scores 0 stops it with 0 (later parts are not
    run, nor reported); else the last part's value."""

    def __init__(self, *parts: Reward, name: str = "sequential") -> None:
        if not parts:
            raise ArgumentError("Sequential needs at least one part")
        self._parts, self.name = list(parts), name

    def parts(self) -> Sequence[Reward]:
        return self._parts

    def evaluate(self, step: Step, breakdown: dict[str, float]) -> float:
        value = 0.0
        for part in self._parts:
            value = part.evaluate(step, breakdown)
            if value == 0:
                break
        breakdown[self.name] = value
        return value


class Judge(Reward):
    """A reward that awaits ``scorer(step)`` (an async function: an LLM judge, a
    sandbox), at most ``timeout`` seconds. A timeout or an exception fails the step
    with :class:`RewardFailed`, naming the judge."""

    def __init__(
        self,
        scorer: Callable[[Step], Awaitable[float]],
        timeout: float = 30.0,
        name: str = "judge",
    ) -> None:
        if not inspect.iscoroutinefunction(scorer):
            raise ArgumentError(f"Judge {name!r}: the scorer must be an async function")
        self.scorer, self.timeout, self.name = scorer, timeout, name

    def score(self, step: Step) -> float:
        future = asyncio.run_coroutine_threadsafe(self.scorer(step), _judge_loop())
        try:
            return float(future.result(self.timeout))
        except FutureTimeout:
            future.cancel()
            raise RewardFailed(
                f"reward {self.name!r} (a judge) gave no score within {self.timeout:g}s "
                f"(its timeout) at step {step.index}"
            ) from None


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _judge_loop() -> asyncio.AbstractEventLoop:
    """One event loop on its own thread where judges' coroutines run (the caller may be
    on the server's event loop, a worker thread, or a worker process)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="openenv-judges", daemon=True).start()
            _loop = loop
        return _loop


def _settle(owner: Reward | TrajectoryReward, value: Any) -> float:
    if inspect.isawaitable(value):
        raise ArgumentError(
            f"reward {owner.name!r} returned an awaitable: wrap an async scorer in Judge"
        )
    try:
        return float(value)
    except (TypeError, ValueError):
        raise RewardFailed(
            f"reward {owner.name!r} returned {type(value).__name__} {value!r}; expected a number"
        ) from None


# -- trajectory rewards ------------------------------------------------------------------------


class LastStep:
    """All of a trajectory's score to its last step."""

    def __call__(self, score: float, steps: int) -> list[float]:
        return [0.0] * (steps - 1) + [score] if steps else []


class Discounted:
    """Step ``t`` of ``T`` gets ``gamma ** (T - t) * score``: the last the whole score."""

    def __init__(self, gamma: float = 0.99) -> None:
        if not 0 < gamma <= 1:
            raise ArgumentError(f"Discounted: gamma must be in (0, 1], got {gamma}")
        self.gamma = gamma

    def __call__(self, score: float, steps: int) -> list[float]:
        return [score * self.gamma ** (steps - t) for t in range(1, steps + 1)]


class TrajectoryReward:
    """A reward over a whole episode, scored when it ends; ``credit`` spreads the score
    back over the steps. Subclasses implement :meth:`score`; set ``keep_observations``
    when it reads them (they are kept for the whole episode)."""

    name: str = "trajectory"
    keep_observations: bool = False
    credit: Callable[[float, int], list[float]] = LastStep()

    def score(self, steps: Sequence[Step]) -> float:
        raise NotImplementedError


class _FnTrajectory(TrajectoryReward):
    def __init__(
        self,
        fn: Callable[[Sequence[Step]], float],
        name: str,
        credit: Callable[[float, int], list[float]],
        keep_observations: bool,
    ) -> None:
        self.fn, self.name, self.credit = fn, name, credit
        self.keep_observations = keep_observations

    def score(self, steps: Sequence[Step]) -> float:
        return self.fn(steps)


def trajectory_reward(
    fn: Callable[[Sequence[Step]], float] | None = None,
    *,
    name: str | None = None,
    credit: Callable[[float, int], list[float]] | None = None,
    keep_observations: bool = False,
) -> Any:
    """Make a :class:`TrajectoryReward` of a function of the episode's steps (a decorator)."""

    def wrap(f: Callable[[Sequence[Step]], float]) -> TrajectoryReward:
        return _FnTrajectory(f, name or f.__name__, credit or LastStep(), keep_observations)

    return wrap if fn is None else wrap(fn)


# -- what one episode evaluates ----------------------------------------------------------------


class RewardSet:
    """The step and trajectory rewards served with one environment."""

    def __init__(self, items: Iterable[Reward | TrajectoryReward]) -> None:
        self.step: list[Reward] = []
        self.trajectory: list[TrajectoryReward] = []
        for item in items:
            if isinstance(item, Reward):
                self.step.append(item)
            elif isinstance(item, TrajectoryReward):
                self.trajectory.append(item)
            else:
                raise ArgumentError(
                    f"a reward must be a Reward or a TrajectoryReward, got {type(item).__name__}"
                )
        names = [r.name for s in self.step for r in s.walk()] + [t.name for t in self.trajectory]
        clash = sorted({n for n in names if names.count(n) > 1} | ({"env"} & set(names)))
        if clash:
            raise ArgumentError(
                f"reward names must be unique and not 'env' (the env's own), got {clash} "
                "more than once: give each part its own name="
            )
        self.keep_observations = any(t.keep_observations for t in self.trajectory)
        self.is_async = any(r.is_async() for r in self.step)

    def __bool__(self) -> bool:
        return bool(self.step or self.trajectory)

    def evaluate(self, step: Step) -> tuple[float, dict[str, float]]:
        """The step's reward (the sum of the step rewards, or the env's own if there are
        none) and its breakdown (``env`` and every named part)."""
        breakdown = {"env": step.reward}
        total = step.reward
        if self.step:
            total = sum(_run(r, step, breakdown) for r in self.step)
        return total, breakdown

    def end(self, steps: Sequence[Step]) -> dict[str, Any]:
        """Each trajectory reward's score and per-step credit, at the episode's end."""
        scores: dict[str, float] = {}
        credit: dict[str, list[float]] = {}
        for t in self.trajectory:
            try:
                score = _settle(t, t.score(steps))
                credit[t.name] = [float(c) for c in t.credit(score, len(steps))]
            except RewardFailed:
                raise
            except Exception as exc:
                raise RewardFailed(
                    f"trajectory reward {t.name!r} raised {type(exc).__name__}: {exc}"
                ) from exc
            scores[t.name] = score
        return {"scores": scores, "credit": credit}


def _run(r: Reward, step: Step, breakdown: dict[str, float]) -> float:
    try:
        return r.evaluate(step, breakdown)
    except (RewardFailed, ArgumentError):
        raise
    except Exception as exc:
        raise RewardFailed(
            f"reward {r.name!r} raised {type(exc).__name__} at step {step.index}: {exc}"
        ) from exc


def load_rewards(refs: Sequence[str]) -> list[Reward | TrajectoryReward]:
    """The rewards named by ``package.module:obj`` references.

    ``obj`` may be a reward, a trajectory reward, a list or tuple of them, or a
    callable taking no arguments that returns any of these.

    Raises:
        ArgumentError: naming the reference and what it found instead.
    """
    from openenv_mcp.registry import load_reference

    found: list[Reward | TrajectoryReward] = []
    for ref in refs:
        obj = load_reference(ref, "--reward")
        if callable(obj) and not isinstance(obj, Reward | TrajectoryReward):
            obj = obj()
        items = list(obj) if isinstance(obj, list | tuple) else [obj]
        for item in items:
            if not isinstance(item, Reward | TrajectoryReward):
                raise ArgumentError(
                    f"--reward {ref!r} is a {type(item).__name__}; expected a Reward, a "
                    "TrajectoryReward, a list of them, or a function returning one "
                    "(openenv_mcp.rewards)"
                )
            found.append(item)
    return found
