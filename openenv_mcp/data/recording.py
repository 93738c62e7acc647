"""Every episode recorded as it happens (``serve ... --record DIR``), and read back.

One episode is one JSON Lines file, ``DIR/<public id>-<n>.jsonl`` (``n``
counts the resets of one handle), written where the environment lives and
flushed after every record, so a server killed at any point leaves every step
up to the last one answered readable. The public id
(:func:`~openenv_mcp._handles.public_id`) names the episode without being its
handle, which is a capability: neither a file name nor a record holds a handle.
The directory is made 0700 and every file 0600 (the owner's alone).

* ``start``: the environment, its class and config, the seed and options, the
  package versions, the spaces, the first observation and info, and the call;
* ``step``: the action (as the env took it), the reward and its breakdown, the
  env's own reward (``env_reward``), terminated, truncated, info, the observation, and the tool
  call that drove it (on the first step of a call; ``repeat`` makes several);
* ``call``: another tool call on the episode (``state``, the env's own tools);
* ``end``: why it ended (terminated, truncated, reset, closed, broken), steps,
  return, and the trajectory rewards.

Array observations (frames) are stored losslessly as zstd of the XOR with the
previous observation: consecutive Atari frames differ in few bytes. With
``record_video`` (and the ``av`` package) each finished episode with frames is
also written as ``.mp4`` beside it, for people.

:func:`read_recording` reads a file back; a file without its ``end`` record
(the server was killed) reads as ``complete=False``, never as an error.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import logging
import os
import platform
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson
from gymnasium import spaces as gym_spaces

from openenv_mcp._handles import public_id
from openenv_mcp.codecs import decode_raw, encode_raw, to_jsonable
from openenv_mcp.environment import has_frame, parse_options
from openenv_mcp.errors import ArgumentError, RecordingFailed
from openenv_mcp.spaces import decode, encode, is_array_space, space_from_json, space_to_json

__all__ = [
    "FORMAT",
    "EpisodeRecorder",
    "RecordedStep",
    "Recording",
    "ReplayReport",
    "check_writable",
    "iter_recordings",
    "read_recording",
    "replay",
    "versions",
    "write_video",
]

log = logging.getLogger("openenv_mcp.data.recording")

#: The recording format's version, in every start record.
FORMAT = 1
_PACKAGES = ("openenv-mcp", "gymnasium", "ale-py", "numpy", "fastmcp", "mcp")


@functools.cache
def _versions() -> tuple[tuple[str, str], ...]:
    return tuple(versions().items())


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


class EpisodeRecorder:
    """Writes one server's episodes into ``directory`` (a runner's, in its process)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        episode_id: str,
        env: Any,
        describe: dict[str, Any],
        video: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.episode_id = episode_id
        #: What names the episode in its files: never its handle.
        self.public_id = public_id(episode_id)
        self.env = env
        self.describe = describe
        self.video = video
        self._file: IO[bytes] | None = None
        self.path: Path | None = None
        self._resets = 0
        self._codec = _ObservationCodec(env.observation_space)
        self._action_space = env.action_space
        #: Frames that are not the observation are recorded too (their own delta codec).
        self._frame_codec: _ObservationCodec | None = None
        if has_frame(env) and not env.frame_is_observation:
            self._frame_codec = _ObservationCodec(_FRAME_SPACE)

    def start(
        self,
        seed: int | None,
        options: dict[str, Any] | None,
        observation: Any,
        info: dict[str, Any],
        *,
        from_snapshot: bool = False,
        step: int = 0,
    ) -> Path:
        """Begin a new file (the previous episode of this handle ends as ``reset``)."""
        with contextlib.suppress(RecordingFailed):  # the last episode's failure was told
            self.end("reset")
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            while True:  # a fresh file, never one written before (a renewed env counts anew)
                self._resets += 1
                self.path = self.directory / f"{self.public_id}-{self._resets:04d}.jsonl"
                try:
                    self._file = _create_private(self.path)
                    break
                except FileExistsError:
                    continue
        except OSError as exc:
            raise RecordingFailed(f"recording to {self.directory} failed: {_cause(exc)}") from None
        self._codec.previous = None
        if self._frame_codec is not None:
            self._frame_codec.previous = None
        record: dict[str, Any] = {
            "kind": "start",
            "format": FORMAT,
            **self.describe,
            "episode": self.public_id,
            "seed": seed,
            "options": options,
            "from_snapshot": from_snapshot,
            "step": step,
            "time": time.time(),
            "versions": versions(),
            "observation_space": space_to_json(self.env.observation_space),
            "action_space": space_to_json(self._action_space),
            "observation": self._codec.encode(observation),
            "info": info,
            "call": {"tool": "reset", "arguments": {"seed": seed, "options": options}},
        }
        self._add_frame(record)
        self._write(record)
        return self.path

    def step(
        self,
        index: int,
        action: Any,
        reward: float,
        env_reward: float,
        rewards: dict[str, float] | None,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
        observation: Any,
        call: dict[str, Any] | None,
    ) -> None:
        """One environment step (flushed before the step is answered)."""
        if self._file is None:
            return
        record: dict[str, Any] = {
            "kind": "step",
            "step": index,
            "action": encode(self._action_space, action, "list"),
            "reward": reward,
            "env_reward": env_reward,
            "terminated": terminated,
            "truncated": truncated,
            "info": info,
            "observation": self._codec.encode(observation),
        }
        if rewards is not None:
            record["rewards"] = rewards
        if call is not None:
            record["call"] = call
        self._add_frame(record)
        self._write(record)

    def call(self, tool: str, arguments: dict[str, Any] | None, step: int) -> None:
        """A tool call on the episode that is not a step (state, an env tool)."""
        if self._file is not None:
            self._write({"kind": "call", "tool": tool, "arguments": arguments, "step": step})

    def end(self, status: str, **fields: Any) -> None:
        """Close the episode's file with its end record (once)."""
        if self._file is None:
            return
        self._write({"kind": "end", "status": status, "time": time.time(), **fields})
        self._file.close()
        self._file = None
        if self.video and has_frame(self.env) and self.path is not None:
            video_later(self.path)

    def _add_frame(self, record: dict[str, Any]) -> None:
        if self._frame_codec is not None:
            frame = self.env.render()
            if frame is not None:
                record["frame"] = self._frame_codec.encode(frame)

    def _write(self, record: dict[str, Any]) -> None:
        """Append and flush one record.

        Raises:
            RecordingFailed: the write failed, or the file was deleted meanwhile (the
                episode's file is then closed: nothing more is written to it).
        """
        assert self._file is not None
        try:
            if os.fstat(self._file.fileno()).st_nlink == 0:
                raise RecordingFailed(
                    f"the recording {self.path} was deleted while its episode was recorded; "
                    f"the episode is not recorded from step {record.get('step', 0)} on"
                )
            self._file.write(
                orjson.dumps(record, default=to_jsonable, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
            )
            self._file.flush()
        except OSError as exc:
            self._abandon()
            raise RecordingFailed(f"recording to {self.directory} failed: {_cause(exc)}") from None
        except RecordingFailed:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """Stop writing this episode's file (after a failure)."""
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()


#: Why a write failed, in words, by errno.
_CAUSES = {
    errno.ENOSPC: "the disk is full (no space left on the device)",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOENT: "the directory does not exist (any more)",
}


def _cause(exc: OSError) -> str:
    """Why an operation on a recording failed, in words."""
    return _CAUSES.get(exc.errno or 0, exc.strerror or repr(exc))


def check_writable(directory: str | os.PathLike[str]) -> Path:
    """Make ``directory`` (private) if missing and check a file can be written there: what
    a recording server checks at start, before any episode.

    Raises:
        RecordingFailed: naming the directory and why not.
    """
    path = Path(directory).resolve()
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, probe = tempfile.mkstemp(prefix=".openenv-mcp-probe-", dir=path)
        try:
            os.write(fd, b"\n")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise RecordingFailed(f"cannot record to {path}: {_cause(exc)}") from None
    return path


def _create_private(path: Path) -> IO[bytes]:
    """A new file only its owner may read or write (0600 from its creation: no moment
    when another user could open it); ``FileExistsError`` if ``path`` exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    return os.fdopen(fd, "wb")


#: Frames that are not the observation: any RGB (or grey) image.
_FRAME_SPACE = gym_spaces.Box(0, 255, (1, 1, 3), np.uint8)
_videos: list[threading.Thread] = []


def video_later(path: Path) -> None:
    """Write ``path``'s MP4 on a thread (stepping goes on meanwhile); see :func:`finish_videos`."""

    def run() -> None:
        with contextlib.suppress(OSError, AttributeError):  # stepping goes first
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        try:
            write_video(iter_frames(path), path.with_suffix(".mp4"))
        except Exception:  # a video is for people: it must never touch the recording
            log.exception("writing the video of %s failed", path)

    thread = threading.Thread(target=run, name=f"video {path.name}")
    thread.start()
    _videos[:] = [t for t in _videos if t.is_alive()] + [thread]


def finish_videos(timeout: float = 60.0) -> None:
    """Wait for the videos still being written (at shutdown), at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    for thread in list(_videos):
        thread.join(max(0.0, deadline - time.monotonic()))


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


def write_video(frames: Iterable[np.ndarray], path: Path, fps: int = 15) -> None:
    """Frames as an H.264 MP4 (``av``, the maintained FFmpeg binding): for people; the
    lossless frames stay in the recording. A new file is made 0600, as recordings are."""
    try:
        import av
    except ImportError:
        log.warning("video not written: install the 'av' package (openenv-mcp[data])")
        return
    frames = iter(frames)
    first = next(frames, None)
    if first is None:
        return
    height, width = first.shape[:2]
    with contextlib.suppress(FileExistsError):
        _create_private(path).close()  # 0600, as the recording: av keeps the mode it finds
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height = width + width % 2, height + height % 2
        stream.pix_fmt = "yuv420p"
        stream.options = {"preset": "veryfast"}
        stream.thread_count = 1  # one core at most, beside the stepping
        for frame in itertools.chain([first], frames):
            rgb = frame if frame.ndim == 3 else np.repeat(frame[..., None], 3, axis=2)
            if rgb.shape[0] % 2 or rgb.shape[1] % 2:
                rgb = np.pad(rgb, ((0, rgb.shape[0] % 2), (0, rgb.shape[1] % 2), (0, 0)))
            for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


# -- reading -----------------------------------------------------------------------------------


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


def read_recording(path: str | os.PathLike[str], *, observations: bool = True) -> Recording:
    """Read one recorded episode.

    Args:
        observations: decode the observations (``False`` leaves them ``None``: faster).

    Raises:
        ArgumentError: the file is not a recording (no start record), naming what it found.
    """
    path = Path(path)
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    try:
        start = orjson.loads(lines[0]) if lines else None
    except orjson.JSONDecodeError:
        start = None
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


# -- replay ------------------------------------------------------------------------------------


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
        ArgumentError: the recording cannot be replayed (it started from a snapshot,
            or has no seed), its environment cannot be made here, or it names a module
            that is not allowed (the message says which, and the flag that allows it).
    """
    from openenv_mcp.options import make_config
    from openenv_mcp.registry import get_data_env_class, reading_data
    from openenv_mcp.rewards import RewardSet, Step, load_rewards

    recording = read_recording(path)
    start = recording.start
    if start.get("from_snapshot"):
        raise ArgumentError(
            f"{recording.path} started from a snapshot, not a seed: it cannot be replayed"
        )
    if start.get("seed") is None:
        raise ArgumentError(
            f"{recording.path} was reset without a seed, so its randomness cannot be "
            "reproduced; reset with seed=... to record replayable episodes"
        )
    allow = tuple(allow_modules)
    folders = (recording.path.parent,)
    env_cls = get_data_env_class(
        str(start["env_class"]),
        str(start.get("env") or ""),
        source=recording.path,
        allow=allow,
        folders=folders,
    )
    # What the env makes of its recorded config (a class it names) is read from here too.
    with reading_data(recording.path, allow=allow, folders=folders):
        env = env_cls(make_config(env_cls.Config, start["config"], env_cls.name))
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
