"""Writing episodes as they happen (``serve ... --record DIR``): one private file per
episode, flushed after every record, and (with ``record_video``) an MP4 beside it."""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson

from openenv_mcp.codecs import to_jsonable
from openenv_mcp.environment import has_frame
from openenv_mcp.errors import RecordingFailed
from openenv_mcp.recording._format import (
    _FRAME_SPACE,
    FORMAT,
    _ObservationCodec,
    iter_frames,
    versions,
)
from openenv_mcp.spaces import encode, space_to_json
from openenv_mcp.wire.handles import public_id

__all__ = ["EpisodeRecorder", "check_writable", "finish_videos", "write_video"]

log = logging.getLogger("openenv_mcp.recording")


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
        #: What every start record of this handle adds (a seat's: its table and seat).
        self.marks: Callable[[], dict[str, Any]] | None = None
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
        task: dict[str, Any] | None = None,
    ) -> Path:
        """Begin a new file (the previous episode of this handle ends as ``reset``)."""
        with contextlib.suppress(RecordingFailed):  # the last episode's failure was told
            self.end("reset")
        try:  # (a renewed env counts anew: the files it finds are skipped)
            self._resets, self.path, self._file = _fresh_file(
                self.directory, self.public_id, self._resets
            )
        except OSError as exc:
            raise RecordingFailed(f"recording to {self.directory} failed: {_cause(exc)}") from None
        self._codec.previous = None
        if self._frame_codec is not None:
            self._frame_codec.previous = None
        record: dict[str, Any] = {
            "kind": "start",
            "format": FORMAT,
            **self.describe,
            **(self.marks() if self.marks is not None else {}),
            "episode": self.public_id,
            "seed": seed,
            "options": options,
            "from_snapshot": from_snapshot,
            "step": step,
            **({"task": task} if task is not None else {}),
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


def _fresh_file(directory: Path, stem: str, number: int) -> tuple[int, Path, IO[bytes]]:
    """A new private file ``directory/STEM-NNNN.jsonl`` numbered after ``number``, never
    one written before (numbers whose file exists are skipped), with its number and path;
    ``directory`` is made (private) if missing.

    Raises:
        OSError: the directory or the file cannot be made.
    """
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    while True:
        number += 1
        path = directory / f"{stem}-{number:04d}.jsonl"
        try:
            return number, path, _create_private(path)
        except FileExistsError:
            continue


def _create_private(path: Path) -> IO[bytes]:
    """A new file only its owner may read or write (0600 from its creation: no moment
    when another user could open it); ``FileExistsError`` if ``path`` exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    return os.fdopen(fd, "wb")


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
