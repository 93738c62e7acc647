"""Recorded episodes as datasets the field loads: Minari (offline RL) and JSON Lines (LLM work).

``openenv-mcp export DIR --format minari NAME`` writes a Minari dataset that
``minari.load_dataset(NAME)`` opens, with the observation and action spaces set
from the recording; ``--format jsonl`` writes one JSON object per episode, its
tool calls and results as chat messages, with the rewards.

Episodes that ran to their end (terminated or truncated) are exported as they
ended. The others (reset or closed mid-way, abandoned, or cut off by a server that
stopped) are exported truncated at their last recorded step, as Gymnasium would say
of an episode cut short: an agent's session rarely finishes an Atari game, and its
steps are data all the same. ``finished_only`` (``--finished-only``) leaves them out
instead. Episodes with no step are left out; every one left out is counted.

A Minari dataset carries an env spec, so ``dataset.recover_environment()`` (and
``eval_env=True``) makes a working :class:`~openenv_mcp.client.MCPGymEnv`: it starts
its own server over stdio with ``openenv-mcp serve ENV`` and the recorded config and
rewards (see :mod:`openenv_mcp.data._minari`). Frames are stored losslessly and compressed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from gymnasium import spaces as gym_spaces

from openenv_mcp.codecs import to_jsonable
from openenv_mcp.errors import ArgumentError
from openenv_mcp.recording import Recording, iter_recordings, read_recording
from openenv_mcp.spaces import encode, is_array_space

__all__ = ["ExportReport", "export_jsonl", "export_minari", "select"]


@dataclass
class ExportReport:
    """What an export wrote and what it left out."""

    episodes: int = 0
    steps: int = 0
    left_out: dict[str, int] = field(default_factory=dict)
    where: str = ""

    def text(self) -> str:
        out = ", ".join(f"{n} {why}" for why, n in sorted(self.left_out.items()))
        return f"exported {self.episodes} episodes ({self.steps} steps) to {self.where}" + (
            f"; left out: {out}" if out else ""
        )


def select(
    directory: str | os.PathLike[str], *, finished_only: bool = False, observations: bool = True
) -> tuple[list[Recording], dict[str, int]]:
    """The recordings under ``directory`` to export, and how many of each other kind.

    Args:
        finished_only: keep only episodes that terminated or were truncated by the env.
        observations: decode the observations (``False``: read them later, one
            episode at a time).
    """
    if not Path(directory).is_dir():
        raise ArgumentError(f"no such directory of recordings: {directory}")
    kept: list[Recording] = []
    left_out: dict[str, int] = {}
    for recording in iter_recordings(directory, observations=observations):
        why = _left_out_because(recording, finished_only)
        if why is None:
            kept.append(recording)
        else:
            left_out[why] = left_out.get(why, 0) + 1
    if kept:
        first = kept[0].start
        for recording in kept[1:]:
            if (recording.start["env_class"], recording.start["config"]) != (
                first["env_class"],
                first["config"],
            ):
                raise ArgumentError(
                    f"{directory} mixes environments ({first['env']} {first['config']} and "
                    f"{recording.start['env']} {recording.start['config']} in "
                    f"{recording.path.name}): export one environment's recordings at a time"
                )
    return kept, left_out


def _left_out_because(recording: Recording, finished_only: bool) -> str | None:
    if recording.finished:
        return None
    if finished_only:
        if not recording.complete:
            return "incomplete (no end record: the server was stopped, or still runs)"
        return f"not finished ({recording.end.get('status') if recording.end else '?'})"
    if not recording.steps:
        return "without a step"
    return None


def ends_truncated(recording: Recording) -> list[bool]:
    """Each step's ``truncated``, the last one set where the episode did not finish
    (reset, closed, abandoned or cut off at that step)."""
    truncations = [s.truncated for s in recording.steps]
    last = recording.steps[-1] if recording.steps else None
    if last is not None and not (last.terminated or last.truncated):
        truncations[-1] = True
    return truncations


def _numeric_info_keys(recordings: Sequence[Recording]) -> list[str]:
    """Info keys that are numbers in every step of every episode (what Minari stores)."""
    keys: set[str] | None = None
    for recording in recordings:
        for info in [recording.start["info"], *(s.info for s in recording.steps)]:
            numeric = {k for k, v in info.items() if isinstance(v, int | float | bool)}
            keys = numeric if keys is None else keys & numeric
    return sorted(keys or ())


def _stack(space: gym_spaces.Space[Any], values: list[Any]) -> Any:
    """A space's values as Minari's buffers hold them: arrays, dicts/tuples of arrays."""
    if isinstance(space, gym_spaces.Dict):
        return {k: _stack(s, [v[k] for v in values]) for k, s in space.spaces.items()}
    if isinstance(space, gym_spaces.Tuple):
        return tuple(_stack(s, [v[i] for v in values]) for i, s in enumerate(space.spaces))
    if isinstance(space, gym_spaces.Text):
        return list(values)
    if is_array_space(space) or isinstance(space, gym_spaces.Discrete):
        return np.asarray(values, dtype=space.dtype)
    raise ArgumentError(
        f"Minari cannot store a {type(space).__name__} space; export --format jsonl instead"
    )


def export_minari(
    directory: str | os.PathLike[str],
    dataset_id: str,
    *,
    progress: Callable[[str], None] | None = None,
    description: str | None = None,
    finished_only: bool = False,
    allow_modules: Iterable[str] = (),
) -> ExportReport:
    """Write the recordings under ``directory`` as the Minari dataset ``dataset_id``
    (in Minari's datasets root: ``MINARI_DATASETS_PATH`` or ``~/.minari/datasets``).

    Frames are stored losslessly (no JPEG), gzip-compressed in HDF5 (any reader,
    ``minari`` included, decompresses them). Rewards are the served ``reward`` (the
    env's own unless ``--reward`` composed one). The dataset's env spec (and eval env
    spec) make an :class:`~openenv_mcp.client.MCPGymEnv` serving the recorded
    environment. Episodes are read one at a time: memory holds one episode's frames.

    The environment class and rewards the recordings name are resolved as
    :func:`~openenv_mcp.recording.replay` resolves them: only among the registered
    environments and installed modules, never from the current directory or ``directory``.

    Args:
        finished_only: leave out episodes that did not finish (else they end truncated).
        allow_modules: modules the user trusts by name (``--allow-module``).

    Raises:
        DependencyNotInstalled: without the ``minari`` package (``openenv-mcp[data]``).
        ArgumentError: no episode to export, spaces Minari cannot hold, or a recording
            naming a module that is not allowed (the message says which).
    """
    from openenv_mcp.data import _minari

    minari = _minari.require()
    from minari.data_collector.episode_buffer import EpisodeBuffer

    recordings, left_out = select(directory, finished_only=finished_only, observations=False)
    if not recordings:
        raise ArgumentError(f"no episode recorded under {directory} to export")
    first = recordings[0]
    # Before any file is written: the env it names, refused where not allowed.
    env_spec = _minari.recorded_env_spec(
        first.start, source=first.path, allow=allow_modules, folders=(directory,)
    )
    obs_space, act_space = first.observation_space, first.action_space
    for space in (obs_space, act_space):
        _stack(space, [])  # fails now, before any file is written, if Minari cannot hold it
    info_keys = _numeric_info_keys(recordings)

    def buffers() -> Iterator[Any]:
        for index, brief in enumerate(recordings):
            recording = read_recording(brief.path)  # its frames, now
            steps = recording.steps
            infos = [recording.start["info"], *(s.info for s in steps)]
            yield EpisodeBuffer(
                id=index,
                seed=recording.start.get("seed"),
                options=recording.start.get("options"),
                observations=_stack(
                    obs_space, [recording.observation, *(s.observation for s in steps)]
                ),
                actions=_stack(act_space, [s.action for s in steps]),
                rewards=[s.reward for s in steps],
                terminations=[s.terminated for s in steps],
                truncations=ends_truncated(recording),
                infos={k: np.asarray([i[k] for i in infos]) for k in info_keys},
            )
            if progress is not None:
                progress(f"{index + 1}/{len(recordings)} {recording.path.name}")

    start = first.start
    _minari.create(
        minari,
        dataset_id,
        buffers(),
        obs_space,
        act_space,
        env_spec=env_spec,
        description=description
        or f"{start['title']} ({start['env']}, config {start['config']}) recorded by openenv-mcp",
        requirements=_minari.requirements(start),
    )
    return ExportReport(
        episodes=len(recordings),
        steps=sum(len(r.steps) for r in recordings),
        left_out=left_out,
        where=f"the Minari dataset {dataset_id}",
    )


def episode_messages(recording: Recording) -> list[dict[str, Any]]:
    """An episode's tool calls and their results as chat messages (OpenAI-style tool calls).

    A result holds the step's reward, terminated, truncated and info, and the
    observation where it is not an array (an array is a frame: ``"<frame>"``).
    """
    space = recording.observation_space
    array = is_array_space(space)

    def seen(observation: Any) -> Any:
        return "<frame>" if array else encode(space, observation, "list")

    messages: list[dict[str, Any]] = []
    number = 0

    def call(tool: str, arguments: Any, result: dict[str, Any]) -> None:
        nonlocal number
        number += 1
        call_id = f"call_{number}"
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": tool,
                            "arguments": orjson.dumps(arguments, default=to_jsonable).decode(),
                        },
                    }
                ],
            }
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": orjson.dumps(result, default=to_jsonable).decode(),
            }
        )

    start = recording.start
    call(
        "reset",
        start["call"]["arguments"],
        {"observation": seen(recording.observation), "info": start["info"]},
    )
    pending: dict[str, Any] | None = None
    others = iter(recording.calls)
    other = next(others, None)
    for step in recording.steps:
        while other is not None and other["step"] < step.index:
            call(other["tool"], other["arguments"] or {}, {"step": other["step"]})
            other = next(others, None)
        if step.call is not None:
            pending = {
                "tool": step.call["tool"],
                "arguments": step.call["arguments"],
                "rewards": [],
            }
        result = {
            "step": step.index,
            "reward": step.reward,
            "terminated": step.terminated,
            "truncated": step.truncated,
            "info": step.info,
            "observation": seen(step.observation),
        }
        if step.rewards is not None:
            result["rewards"] = step.rewards
        if pending is not None:
            call(pending["tool"], pending["arguments"], result)
            pending = None
        else:  # a held action's later steps (repeat): one message each
            messages[-1]["content"] = orjson.dumps(
                [*_as_list(orjson.loads(messages[-1]["content"])), result], default=to_jsonable
            ).decode()
    return messages


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def export_jsonl(
    directory: str | os.PathLike[str], out: str | os.PathLike[str], *, finished_only: bool = False
) -> ExportReport:
    """One JSON object per episode under ``directory``, written to ``out`` (``status``
    says how each ended; see :func:`select` for which are left out)."""
    recordings, left_out = select(directory, finished_only=finished_only)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for recording in recordings:
            start = recording.start
            end = recording.end or {}
            record = {
                # The episode's public id (recordings made before it held its handle,
                # long closed by now).
                "episode": start.get("episode", start.get("episode_id")),
                "recording": str(recording.path),
                "env": start["env"],
                "config": start["config"],
                # One seat of a game of seats (serve --seats): its table and seat.
                **{k: start[k] for k in ("table", "seat", "table_recording") if k in start},
                "seed": start.get("seed"),
                "options": start.get("options"),
                "status": end.get("status"),
                "steps": len(recording.steps),
                "return": recording.episode_return,
                "env_return": float(sum(s.env_reward for s in recording.steps)),
                "rewards": [s.reward for s in recording.steps],
                "trajectory": end.get("trajectory"),
                "messages": episode_messages(recording),
            }
            f.write(orjson.dumps(record, default=to_jsonable) + b"\n")
    return ExportReport(
        episodes=len(recordings),
        steps=sum(len(r.steps) for r in recordings),
        left_out=left_out,
        where=str(path),
    )
