"""Replaying a recorded episode in this process, to check it is reproduced exactly."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces as gym_spaces

from openenv_mcp.codecs import to_jsonable
from openenv_mcp.environment import parse_options
from openenv_mcp.errors import ArgumentError
from openenv_mcp.recording._format import read_recording
from openenv_mcp.spaces import encode, is_array_space

if TYPE_CHECKING:
    from openenv_mcp.environment import Environment

__all__ = ["ReplayReport", "replay"]


@dataclass
class ReplayReport:
    """What :func:`replay` found.

    Attributes:
        path: the recording.
        steps: steps replayed (up to the first mismatch).
        recorded: steps the recording has.
        mismatch: the first difference, in words; ``""`` when everything matched.
        complete: whether the recording has its end record.
    """

    path: Path
    steps: int
    recorded: int
    mismatch: str
    complete: bool

    @property
    def ok(self) -> bool:
        return not self.mismatch

    def text(self) -> str:
        partial = "" if self.complete else " (an incomplete recording: the server stopped)"
        if self.ok:
            return (
                f"{self.path}: replayed {self.steps} steps{partial}; rewards, observations, "
                "terminated and truncated all match exactly"
            )
        return f"{self.path}: differs at {self.mismatch}{partial}"


def _same(space: gym_spaces.Space[Any], a: Any, b: Any) -> bool:
    if is_array_space(space):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(encode(space, a, "list") == encode(space, b, "list"))


@contextlib.contextmanager
def _recorded_env(
    path: Path, start: Mapping[str, Any], allow_modules: Iterable[str], what: str
) -> Iterator[tuple[type[Environment[Any]], Environment[Any]]]:
    """The environment a recording (``path``, its first record ``start``) names, made from
    its recorded config, with its class: refused without a seed (``what`` it records, in
    the message: ``"episodes"``, ``"games"``). The class is resolved as data's is
    (:func:`~openenv_mcp.registry.get_data_env_class`); the body runs still reading the
    recording's data, so what it loads (rewards it names) resolves the same way.

    Raises:
        ArgumentError: no seed, or the class cannot be had (naming it and why).
    """
    from openenv_mcp.options import make_config
    from openenv_mcp.registry import get_data_env_class, reading_data

    if start.get("seed") is None:
        raise ArgumentError(
            f"{path} was reset without a seed, so its randomness cannot be "
            f"reproduced; reset with seed=... to record replayable {what}"
        )
    allow = tuple(allow_modules)
    folders = (path.parent,)
    env_cls = get_data_env_class(
        str(start["env_class"]),
        str(start.get("env") or ""),
        source=path,
        allow=allow,
        folders=folders,
    )
    # What the env makes of its recorded config (a class it names) is read from here too.
    with reading_data(path, allow=allow, folders=folders):
        yield env_cls, env_cls(make_config(env_cls.Config, start["config"], env_cls.name))


def replay(path: str | os.PathLike[str], *, allow_modules: Iterable[str] = ()) -> ReplayReport:
    """Re-run a recorded episode from its seed and actions, in this process, and check
    that every reward (the env's own, and the served step rewards), observation,
    terminated and truncated is exactly what was recorded.

    A recording is data: the environment class and the rewards it names are resolved
    only among the registered environments and installed modules, never imported from
    the current directory or the recording's folder
    (:func:`~openenv_mcp.registry.get_data_env_class`).

    Args:
        allow_modules: modules the user trusts by name (``--allow-module``): a recording
            naming them (or their submodules) imports them as ``serve`` would.

    Raises:
        ArgumentError: the recording cannot be replayed (one seat of a game of seats:
            its table's file replays, :func:`replay_table`; it started from a snapshot,
            or has no seed), its environment cannot be made here, or it names a module
            that is not allowed (the message says which, and the flag that allows it).
    """
    from openenv_mcp.rewards import RewardSet, Step, load_rewards

    recording = read_recording(path)
    start = recording.start
    if start.get("seat") is not None:
        table = start.get("table_recording") or f"{start.get('table')}-*.jsonl"
        raise ArgumentError(
            f"{recording.path} is seat {start['seat']} of the game of seats "
            f"{start.get('table')}: one seat's moves alone cannot replay a game (the other "
            f"seats moved too); replay the table's file instead: {table} (beside it)"
        )
    if start.get("from_snapshot"):
        raise ArgumentError(
            f"{recording.path} started from a snapshot, not a seed: it cannot be replayed"
        )
    with _recorded_env(recording.path, start, allow_modules, "episodes") as (env_cls, env):
        try:
            rewards = RewardSet([*env_cls.serving.rewards, *load_rewards(start.get("rewards", []))])
        except BaseException:  # a reward refused or failing: the env made is closed
            env.close()
            raise
    space = env.observation_space
    report = ReplayReport(recording.path, 0, len(recording.steps), "", recording.complete)
    try:
        options = parse_options(env, start.get("options"))
        observation, _ = env.reset(seed=start["seed"], options=options)
        if not _same(space, observation, recording.observation):
            report.mismatch = "the first observation (after reset)"
            return report
        for recorded in recording.steps:
            result = env.step(env.parse_action(recorded.action))
            got: dict[str, Any] = {
                "env_reward": float(result.reward),
                "terminated": bool(result.terminated),
                "truncated": bool(result.truncated),
            }
            if rewards.step:
                step = Step(
                    recorded.index,
                    recorded.action,
                    result.observation,
                    float(result.reward),
                    bool(result.terminated),
                    bool(result.truncated),
                    to_jsonable(dict(result.info)),
                )
                got["reward"] = rewards.evaluate(step)[0]
            else:  # served as the env's own
                got["reward"] = got["env_reward"]
            for key, value in got.items():
                expected = getattr(recorded, key)
                if value != expected:
                    report.mismatch = (
                        f"step {recorded.index}: {key} {value!r}, recorded {expected!r}"
                    )
                    return report
            if not _same(space, result.observation, recorded.observation):
                report.mismatch = f"step {recorded.index}: the observation"
                return report
            report.steps += 1
    finally:
        env.close()
    return report
