"""The recording format, and reading it back.

One episode is one JSON Lines file of records: ``start``, then ``step`` and ``call`` as
they happen, then ``end`` (:mod:`openenv_mcp.recording` describes each). Array
observations (frames) are stored losslessly as zstd of the XOR with the previous one
(:class:`_ObservationCodec`): what the writer encodes, the reader here decodes.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from gymnasium import spaces as gym_spaces

from openenv_mcp.codecs import decode_raw, encode_raw
from openenv_mcp.errors import ArgumentError
from openenv_mcp.spaces import decode, encode, is_array_space, space_from_json

__all__ = [
    "FORMAT",
    "RecordedStep",
    "Recording",
    "iter_frames",
    "iter_recordings",
    "read_recording",
    "versions",
]

#: The recording format's version, in every start record.
FORMAT = 1
_PACKAGES = ("openenv-mcp", "gymnasium", "ale-py", "numpy", "fastmcp", "mcp")


def versions() -> dict[str, str]:
    """The versions that decide what an episode does: Python and the packages."""
    found = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


class _ObservationCodec:
    """Observations to JSON and back: arrays as zstd of the XOR with the previous one."""

    def __init__(self, space: gym_spaces.Space[Any]) -> None:
        self.space = space
        self.delta = (
            is_array_space(space)
            and isinstance(space, gym_spaces.Box)
            and np.dtype(space.dtype).kind in "ui"
        )
        self.previous: np.ndarray | None = None

    def encode(self, observation: Any) -> Any:
        if not self.delta:
            return encode(self.space, observation, "zstd")
        array = np.asarray(observation, dtype=self.space.dtype)
        previous, self.previous = self.previous, array.copy()
        if previous is None or previous.shape != array.shape:
            return encode_raw(array, compress=True)
        return {**encode_raw(np.bitwise_xor(array, previous), compress=True), "delta": True}

    def decode(self, data: Any) -> Any:
        if not self.delta:
            return decode(self.space, data, check=False)
        array = decode_raw(data)
        if data.get("delta"):
            if self.previous is None:
                raise ValueError("a delta observation without the one before it")
            array = np.bitwise_xor(array, self.previous)
        self.previous = array
        return array


#: Frames that are not the observation: any RGB (or grey) image.
_FRAME_SPACE = gym_spaces.Box(0, 255, (1, 1, 3), np.uint8)


def iter_frames(path: str | os.PathLike[str]) -> Iterator[np.ndarray]:
    """A recording's frames, one at a time (the observations where they are the frame)."""
    with open(path, "rb") as f:
        first = orjson.loads(f.readline())
        obs_space = space_from_json(first["observation_space"])
        key = "frame" if "frame" in first else "observation"
        codec = _ObservationCodec(_FRAME_SPACE if key == "frame" else obs_space)
        if key == "observation" and not codec.delta:
            return
        yield codec.decode(first[key])
        for line in f:
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                return
            if record.get("kind") == "step" and key in record:
                yield codec.decode(record[key])


@dataclass
class RecordedStep:
    """One step of a recorded episode, decoded."""

    index: int
    action: Any
    reward: float
    env_reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    observation: Any
    rewards: dict[str, float] | None = None
    call: dict[str, Any] | None = None


@dataclass
class Recording:
    """A recorded episode, read back.

    Attributes:
        path: its file.
        start: the start record (observation decoded into ``observation``).
        steps: every step recorded.
        calls: the other tool calls, in order.
        end: the end record, or ``None`` when the file has none (``complete`` false).
        problem: why reading stopped early (a torn last line), else ``""``.
    """

    path: Path
    start: dict[str, Any]
    observation: Any
    steps: list[RecordedStep] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    problem: str = ""

    @property
    def complete(self) -> bool:
        """Whether the episode was closed with its end record (not killed mid-way)."""
        return self.end is not None

    @property
    def finished(self) -> bool:
        """Whether the episode ran to its end (terminated or truncated)."""
        return self.end is not None and self.end.get("status") in ("terminated", "truncated")

    @property
    def episode_return(self) -> float:
        return float(sum(s.reward for s in self.steps))

    @property
    def observation_space(self) -> gym_spaces.Space[Any]:
        return space_from_json(self.start["observation_space"])

    @property
    def action_space(self) -> gym_spaces.Space[Any]:
        return space_from_json(self.start["action_space"])


def _read_lines(path: Path) -> tuple[list[bytes], Any]:
    """A JSON Lines file's lines (without the empty one after the last newline) and its
    first record, parsed (``None`` when the file is empty or its first line is not JSON):
    what a reader checks the kind and format of before reading on."""
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    try:
        first = orjson.loads(lines[0]) if lines else None
    except orjson.JSONDecodeError:
        first = None
    return lines, first


def read_recording(path: str | os.PathLike[str], *, observations: bool = True) -> Recording:
    """Read one recorded episode.

    Args:
        observations: decode the observations (``False`` leaves them ``None``: faster).

    Raises:
        ArgumentError: the file is not a recording (no start record), naming what it found.
    """
    path = Path(path)
    lines, start = _read_lines(path)
    if not isinstance(start, dict) or start.get("kind") != "start":
        raise ArgumentError(f"{path} is not an openenv-mcp recording: no start record first")
    if start.get("format") != FORMAT:
        raise ArgumentError(
            f"{path} is recording format {start.get('format')!r}; this openenv-mcp reads {FORMAT}"
        )
    obs_space = space_from_json(start["observation_space"])
    act_space = space_from_json(start["action_space"])
    codec = _ObservationCodec(obs_space)
    first = codec.decode(start["observation"]) if observations else None
    recording = Recording(path=path, start=start, observation=first)
    for number, line in enumerate(lines[1:], start=2):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            recording.problem = f"line {number} is torn (the server stopped while writing it)"
            break
        kind = record.get("kind")
        if kind == "step":
            recording.steps.append(
                RecordedStep(
                    index=record["step"],
                    action=decode(act_space, record["action"], check=False),
                    reward=float(record["reward"]),
                    env_reward=float(record["env_reward"]),
                    terminated=record["terminated"],
                    truncated=record["truncated"],
                    info=record["info"],
                    observation=codec.decode(record["observation"]) if observations else None,
                    rewards=record.get("rewards"),
                    call=record.get("call"),
                )
            )
        elif kind == "call":
            recording.calls.append(record)
        elif kind == "end":
            recording.end = record
            break
    return recording


def iter_recordings(directory: str | os.PathLike[str], **kwargs: Any) -> Iterator[Recording]:
    """Every recording under ``directory`` (sorted by path)."""
    for path in sorted(Path(directory).rglob("*.jsonl")):
        try:
            yield read_recording(path, **kwargs)
        except ArgumentError:
            continue  # not a recording (collect's own index, for one)
