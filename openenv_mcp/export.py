"""Recorded episodes as datasets the field loads: Minari (offline RL) and JSON Lines (LLM work).

``openenv-mcp export DIR --format minari NAME`` writes a Minari dataset that
``minari.load_dataset(NAME)`` opens, with the observation and action spaces set
from the recording; ``--format jsonl`` writes one JSON object per episode, its
tool calls and results as chat messages, with the rewards.

Only episodes that ran to their end (terminated or truncated) are exported; the
others (the server stopped, the episode was reset or closed mid-way) are counted
and left out, so every exported episode is a whole trajectory.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from gymnasium import spaces as gym_spaces

from openenv_mcp.codecs import to_jsonable
from openenv_mcp.errors import ArgumentError, DependencyNotInstalled
from openenv_mcp.recording import Recording, iter_recordings
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


def select(directory: str | os.PathLike[str]) -> tuple[list[Recording], dict[str, int]]:
    """The finished recordings under ``directory``, and how many of each other kind."""
    if not Path(directory).is_dir():
        raise ArgumentError(f"no such directory of recordings: {directory}")
    kept: list[Recording] = []
    left_out: dict[str, int] = {}
    for recording in iter_recordings(directory):
        if recording.finished:
            kept.append(recording)
            continue
        why = (
            "incomplete (no end record: the server was stopped, or still runs)"
            if not recording.complete
            else f"not finished ({recording.end.get('status') if recording.end else '?'})"
        )
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
) -> ExportReport:
    """Write the finished recordings under ``directory`` as the Minari dataset
    ``dataset_id`` (in Minari's datasets root: ``MINARI_DATASETS_PATH`` or
    ``~/.minari/datasets``). Frames are stored losslessly (no JPEG). Rewards are the
    served ``reward`` (the env's own unless ``--reward`` composed one).

    Raises:
        DependencyNotInstalled: without the ``minari`` package (``openenv-mcp[data]``).
        ArgumentError: no finished episode, or spaces Minari cannot hold.
    """
    try:
        import minari
        from minari.data_collector.episode_buffer import EpisodeBuffer
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"export --format minari needs the minari package (pip install "
            f"'openenv-mcp[data]'): {exc}"
        ) from None
    recordings, left_out = select(directory)
    if not recordings:
        raise ArgumentError(f"no finished episode recorded under {directory} to export")
    first = recordings[0]
    obs_space, act_space = first.observation_space, first.action_space
    info_keys = _numeric_info_keys(recordings)
    buffers = []
    for index, recording in enumerate(recordings):
        steps = recording.steps
        infos = [recording.start["info"], *(s.info for s in steps)]
        buffers.append(
            EpisodeBuffer(
                id=index,
                seed=recording.start.get("seed"),
                options=recording.start.get("options"),
                observations=_stack(
                    obs_space, [recording.observation, *(s.observation for s in steps)]
                ),
                actions=_stack(act_space, [s.action for s in steps]),
                rewards=[s.reward for s in steps],
                terminations=[s.terminated for s in steps],
                truncations=[s.truncated for s in steps],
                infos={k: np.asarray([i[k] for i in infos]) for k in info_keys},
            )
        )
        if progress is not None:
            progress(f"{index + 1}/{len(recordings)} {recording.path.name}")
    start = first.start
    with warnings.catch_warnings():  # Minari asks for an author, an email, an env spec
        warnings.simplefilter("ignore", UserWarning)
        _create(minari, dataset_id, buffers, obs_space, act_space, start, description)
    return ExportReport(
        episodes=len(recordings),
        steps=sum(len(r.steps) for r in recordings),
        left_out=left_out,
        where=f"the Minari dataset {dataset_id}",
    )


def _create(
    minari: Any,
    dataset_id: str,
    buffers: list[Any],
    obs_space: gym_spaces.Space[Any],
    act_space: gym_spaces.Space[Any],
    start: dict[str, Any],
    description: str | None,
) -> None:
    minari.create_dataset_from_buffers(
        dataset_id=dataset_id,
        buffer=buffers,
        observation_space=obs_space,
        action_space=act_space,
        algorithm_name="openenv-mcp recordings",
        description=description
        or f"{start['title']} ({start['env']}, config {start['config']}) recorded by openenv-mcp",
        jpeg_encoding=False,
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


def export_jsonl(directory: str | os.PathLike[str], out: str | os.PathLike[str]) -> ExportReport:
    """One JSON object per finished episode under ``directory``, written to ``out``."""
    recordings, left_out = select(directory)
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
