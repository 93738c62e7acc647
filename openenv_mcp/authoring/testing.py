"""Check an environment against the contract, as its author would before serving it.

::

    from openenv_mcp.authoring.testing import check_env

    check_env(MyEnv, size=5)        # raises EnvCheckError listing what failed, and how to fix it

:func:`check_env` builds the environment from its ``Config`` and checks, in
order: the declarations (Gymnasium spaces, action names, frames), that the
spaces travel (their JSON form rebuilds them; their value schema is valid),
that observations lie in the observation space and travel exactly, that
rewards and flags have the right types, that the same seed and actions
replay the same episode, that snapshots restore exactly and pickle (workers
send them across a pipe), that it runs the same in a worker process, and that
it answers the same through a full MCP round trip in memory.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_mcp.codecs import to_jsonable
from openenv_mcp.environment import (
    Environment,
    contract_problems,
    has_frame,
    supports_snapshots,
)
from openenv_mcp.errors import InvalidAction
from openenv_mcp.options import make_config
from openenv_mcp.spaces import decode, encode, space_from_json, space_to_json, value_schema
from openenv_mcp.spec import action_schema

__all__ = ["CheckReport", "EnvCheckError", "check_env", "values_equal"]


class EnvCheckError(AssertionError):
    """An environment failed :func:`check_env`; the message lists every failure."""

    def __init__(self, report: CheckReport) -> None:
        super().__init__(str(report))
        self.report = report


@dataclass
class CheckReport:
    """What :func:`check_env` found: the checks that passed and those that failed."""

    env: str
    passed: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return not self.failures

    def __str__(self) -> str:
        lines = [f"check_env({self.env}): {len(self.passed)} passed, {len(self.failures)} failed"]
        lines += [f"  FAILED {failure}" for failure in self.failures]
        lines += [f"  skipped {what}" for what in self.skipped]
        return "\n".join(lines)


def values_equal(a: Any, b: Any) -> bool:
    """Whether two values of a space are equal: structure, numbers and array dtypes alike.

    A ``Discrete`` value may be a Python int on one side and a numpy integer on
    the other (JSON cannot tell them apart); arrays must match in dtype and values.
    """
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(values_equal(a[k], b[k]) for k in a)
        )
    if isinstance(a, (tuple, list)):
        return (
            isinstance(b, (tuple, list))
            and len(a) == len(b)
            and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, spaces.GraphInstance):
        return (
            isinstance(b, spaces.GraphInstance)
            and values_equal(a.nodes, b.nodes)
            and values_equal(a.edges, b.edges)
            and values_equal(a.edge_links, b.edge_links)
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
        )
    return bool(a == b)


_Step = tuple[Any, float, bool, bool, dict[str, Any]]
#: Samples tried for one legal action before the check gives up.
_TRIES = 50


class _Checker:
    def __init__(self, env_cls: type[Environment[Any]], config: Any, steps: int, seed: int) -> None:
        self.env_cls = env_cls
        self.config = config
        self.steps = steps
        self.seed = seed
        self.report = CheckReport(env_cls.__name__)

    def check(self, name: str, fn: Callable[[], None]) -> bool:
        try:
            fn()
        except _Fail as exc:
            self.report.failures.append(f"{name}: {exc}")
            return False
        except Exception as exc:
            self.report.failures.append(f"{name}: raised {type(exc).__name__}: {exc}")
            return False
        self.report.passed.append(name)
        return True

    def make(self) -> Environment[Any]:
        return self.env_cls(self.config)

    # -- an episode, here ------------------------------------------------------------------

    def actions(self, env: Environment[Any]) -> list[Any]:
        """Seeded wire actions, legal under each step's action mask, for one rollout."""
        env.action_space.seed(self.seed)
        _, info = env.reset(seed=self.seed)
        wire: list[Any] = []
        for _ in range(self.steps):
            mask = info.get("action_mask")
            for _attempt in range(_TRIES):  # an env may refuse actions its state makes illegal
                sample = (
                    env.action_space.sample(mask=np.asarray(mask, dtype=np.int8))
                    if mask is not None and isinstance(env.action_space, spaces.Discrete)
                    else env.action_space.sample()
                )
                action = encode(env.action_space, sample)
                try:
                    parsed = env.parse_action(action)
                    break
                except InvalidAction:
                    continue
            else:
                raise _Fail(f"no legal action among {_TRIES} samples of {env.action_space}")
            wire.append(action)
            result = env.step(parsed)
            info = result.info
            if result.terminated or result.truncated:
                break
        return wire

    def rollout(self, env: Environment[Any], wire: list[Any]) -> list[Any]:
        observation, info = env.reset(seed=self.seed)
        trace: list[Any] = [observation, to_jsonable(info)]
        for action in wire:
            result = env.step(env.parse_action(action))
            trace += [
                result.observation,
                result.reward,
                result.terminated,
                result.truncated,
                to_jsonable(result.info),
            ]
            if result.terminated or result.truncated:
                break
        return trace


class _Fail(Exception):
    """A failed check: the message says what was wrong and how to fix it."""


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise _Fail(message)


def check_env(
    env_cls: type[Environment[Any]],
    *,
    steps: int = 20,
    seed: int = 0,
    worker: bool = True,
    mcp: bool = True,
    raise_on_failure: bool = True,
    **config: Any,
) -> CheckReport:
    """Check ``env_cls`` (built with ``config``) against the openenv-mcp contract.

    Args:
        env_cls: the environment class.
        steps: steps of each rollout.
        seed: the seed of every rollout (and of the sampled actions).
        worker: also run it in a worker process (the class must be importable
            by module and name, as worker processes import it).
        mcp: also run it through a server and :class:`~openenv_mcp.client.MCPEnvClient`
            in memory.
        raise_on_failure: raise :class:`EnvCheckError` if anything failed.
        **config: the environment's construction options.

    Returns:
        The report: what passed, what failed (and why), what was skipped.
    """
    checker = _Checker(env_cls, None, steps, seed)
    report = checker.report
    try:
        checker.config = make_config(env_cls.Config, config, env_cls.__name__)
    except Exception as exc:
        report.failures.append(f"config: {exc}")
        return _finish(report, raise_on_failure)
    try:
        env = checker.make()
    except Exception as exc:
        report.failures.append(f"construction: {env_cls.__name__}(config) raised {exc!r}")
        return _finish(report, raise_on_failure)
    try:
        _check_instance(checker, env)
    finally:
        env.close()
    if report.ok and worker:
        checker.check("worker process", lambda: _check_worker(checker))
    elif not worker:
        report.skipped.append("worker process (worker=False)")
    if report.ok and mcp:
        checker.check("MCP round trip", lambda: _check_mcp(checker))
    elif not mcp:
        report.skipped.append("MCP round trip (mcp=False)")
    return _finish(report, raise_on_failure)


def _finish(report: CheckReport, raise_on_failure: bool) -> CheckReport:
    if raise_on_failure and not report.ok:
        raise EnvCheckError(report)
    return report


def _check_instance(checker: _Checker, env: Environment[Any]) -> None:
    def declarations() -> None:
        problems = contract_problems(env)
        _expect(not problems, "; ".join(problems))

    if not checker.check("declarations", declarations):
        return

    def spaces_travel() -> None:
        import jsonschema

        for attr in ("action_space", "observation_space"):
            space = getattr(env, attr)
            rebuilt = space_from_json(space_to_json(space))
            _expect(
                rebuilt == space,
                f"{attr} {space} comes back from its JSON form as {rebuilt}: give it a space "
                "Gymnasium defines (or JsonSpace for values no space describes)",
            )
            jsonschema.Draft202012Validator.check_schema(value_schema(space))
        jsonschema.Draft202012Validator.check_schema(action_schema(env))

    checker.check("spaces travel", spaces_travel)
    wire: list[Any] = []

    def episode() -> None:
        space = env.observation_space
        observation, info = env.reset(seed=checker.seed)
        _expect(
            isinstance(info, dict), f"reset must return (observation, info dict), got info {info!r}"
        )
        _observed(space, observation, "reset")
        wire.extend(checker.actions(env))
        observation, _ = env.reset(seed=checker.seed)
        for action in wire:
            result = env.step(env.parse_action(action))
            _observed(space, result.observation, "step")
            _expect(
                isinstance(result.reward, (int, float, np.number))
                and math.isfinite(float(result.reward)),
                f"step's reward must be a finite number, got {result.reward!r}",
            )
            for flag in ("terminated", "truncated"):
                value = getattr(result, flag)
                _expect(
                    isinstance(value, (bool, np.bool_)),
                    f"step's {flag} must be a bool, got {value!r}",
                )
            _expect(
                isinstance(result.info, dict), f"step's info must be a dict, got {result.info!r}"
            )
            if result.terminated or result.truncated:
                break

    if not checker.check("an episode", episode):
        return

    def determinism() -> None:
        other = checker.make()
        try:
            first = checker.rollout(env, wire)
            second = checker.rollout(other, wire)
        finally:
            other.close()
        for i, (a, b) in enumerate(zip(first, second, strict=True)):
            _expect(
                values_equal(a, b),
                f"the same seed and actions gave {b!r:.120} where another instance gave "
                f"{a!r:.120} (item {i} of the rollout): seed every source of randomness "
                "from reset(seed)",
            )

    checker.check("seeded determinism", determinism)

    if supports_snapshots(env):

        def snapshots() -> None:
            env.reset(seed=checker.seed)
            half = len(wire) // 2
            for action in wire[:half]:
                env.step(env.parse_action(action))
            saved = pickle.loads(pickle.dumps(env.snapshot()))
            rest = wire[half:]
            expected = [_step(env, a) for a in rest]
            fresh = checker.make()
            try:
                for target in (env, fresh):
                    target.restore(saved)
                    again = [_step(target, a) for a in rest]
                    for a, b in zip(expected, again, strict=True):
                        _expect(
                            values_equal(list(a[:4]), list(b[:4])),
                            f"after restore the same actions gave {b[:4]!r:.120} instead of "
                            f"{a[:4]!r:.120}: the snapshot must hold the whole state, RNG included",
                        )
            finally:
                fresh.close()

        checker.check("snapshots restore exactly and pickle", snapshots)
    else:
        checker.report.skipped.append("snapshots (snapshot/restore not implemented)")

    if has_frame(env):

        def frames() -> None:
            observation, _ = env.reset(seed=checker.seed)
            frame = env.render()
            _expect(
                isinstance(frame, np.ndarray)
                and frame.dtype == np.uint8
                and frame.ndim == 3
                and frame.shape[2] == 3,
                f"render() must return an HxWx3 uint8 array where has_frame, got {frame!r:.80}",
            )
            if env.frame_is_observation:
                _expect(
                    values_equal(np.asarray(frame), np.asarray(observation)),
                    "frame_is_observation, but render() differs from the observation",
                )

        checker.check("frames", frames)


def _step(env: Environment[Any], action: Any) -> _Step:
    result = env.step(env.parse_action(action))
    return result.observation, result.reward, result.terminated, result.truncated, result.info


def _observed(space: spaces.Space[Any], observation: Any, where: str) -> None:
    _expect(
        space.contains(observation),
        f"{where} returned {observation!r:.120}, which is not in the observation space {space}",
    )
    for arrays in ("list", "zstd"):
        back = decode(space, encode(space, observation, arrays), check=False)  # type: ignore[arg-type]
        _expect(
            values_equal(back, observation) or values_equal(back, np.asarray(observation)),
            f"{where}'s observation does not travel exactly ({arrays}): {observation!r:.80} came "
            f"back as {back!r:.80}; return values of the declared space's dtype",
        )


def _reference(checker: _Checker) -> tuple[list[Any], list[Any]]:
    """Seeded wire actions and the local pipeline's views for them (the comparison base)."""
    from openenv_mcp.pipeline import EpisodePipeline

    env = checker.make()
    try:
        wire = checker.actions(env)
        episode = EpisodePipeline(env, "check")
        views = [_plain(episode.reset(checker.seed, None, "raw").view)]
        for action in wire:
            outcome = episode.step(action, "raw")
            views.append(_plain(outcome.view))
            if outcome.view["status"] == "ended":
                break
    finally:
        env.close()
    return wire, views


def _plain(view: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if k != "episode_id"}


def _check_worker(checker: _Checker) -> None:
    import anyio.from_thread

    from openenv_mcp.pipeline import Reset, Step
    from openenv_mcp.server.episodes._workers import WorkerRuntime

    wire, expected = _reference(checker)

    async def run() -> list[Any]:
        runtime = WorkerRuntime(
            checker.env_cls, checker.config, 1, call_timeout=60.0, start_timeout=120.0
        )
        try:
            ref = await runtime.create("check")
            (first,) = await runtime.run([(ref, Reset(checker.seed, None, "raw"))])
            views = [first]
            for action in wire:
                (outcome,) = await runtime.run([(ref, Step(action, "raw"))])
                views.append(outcome)
                if isinstance(outcome, Exception) or outcome.view["status"] == "ended":
                    break
            return views
        finally:
            await runtime.aclose()

    with anyio.from_thread.start_blocking_portal() as portal:
        outcomes = portal.call(run)
    for i, (want, got) in enumerate(zip(expected, outcomes, strict=True)):
        if isinstance(got, Exception):
            raise _Fail(f"call {i} failed in the worker: {type(got).__name__}: {got}")
        _expect(
            _plain(got.view) == want,
            f"call {i} answered differently in a worker process: {_plain(got.view)!r:.160} "
            f"instead of {want!r:.160}",
        )


def _check_mcp(checker: _Checker) -> None:
    import anyio.from_thread

    from openenv_mcp.client import MCPEnvClient
    from openenv_mcp.server import build_server, get_app

    wire, expected = _reference(checker)
    server = build_server(checker.env_cls, **checker.config.model_dump())
    app = get_app(server)
    try:
        with MCPEnvClient(server).sync() as client:
            for attr in ("action_space", "observation_space"):
                mine, theirs = getattr(client, attr), getattr(app.prototype, attr)
                _expect(mine == theirs, f"the client rebuilt {attr} {theirs} as {mine}")
            _, info = client.reset(seed=checker.seed)
            views = [info]
            for action in wire:
                *_, info = client.step(action)
                views.append(info)
                if info["terminated"] or info["truncated"]:
                    break
    finally:
        with anyio.from_thread.start_blocking_portal() as portal:
            portal.call(app.aclose)
    for i, (want, got) in enumerate(zip(expected, views, strict=True)):
        for key in ("step", "reward", "episode_return", "terminated", "truncated", "status"):
            _expect(
                want[key] == got[key],
                f"call {i} over MCP gave {key} {got[key]!r} instead of {want[key]!r}",
            )
