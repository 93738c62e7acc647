"""Recording (``serve --record``): every episode's start, steps, calls and end, flushed
before each answer (:class:`openenv_mcp.recording.EpisodeRecorder` writes the file).

A write that fails (the disk full, the directory read-only, the file deleted) is
:class:`~openenv_mcp.errors.RecordingFailed`: with ``record_errors="refuse"`` (the
default) it is the call's answer, so nothing is served unrecorded; with
``"continue"`` the episode goes on unrecorded (until its next reset records again)
and the answer says so in ``recording_failed``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from openenv_mcp.errors import EnvCrashed, OpenEnvError, RecordingFailed
from openenv_mcp.pipeline.base import Layer, Moment
from openenv_mcp.recording import EpisodeRecorder

if TYPE_CHECKING:
    from openenv_mcp.pipeline.ops import CallTool, Close, Look, Reset, Restore, Step

__all__ = ["RecordErrors", "Recorder"]

log = logging.getLogger("openenv_mcp.server")

#: What a failed recording does: fail the call (``refuse``), or go on unrecorded.
RecordErrors = Literal["refuse", "continue"]
T = TypeVar("T")


class Recorder(Layer):
    """Writes the episode as it happens; each record names the tool call its op is
    (:attr:`~openenv_mcp.pipeline.ops.Step.call`: the first step of a call names it,
    the steps a repeat holds after it name none).

    Args:
        inner: the next layer in.
        recorder: the writer of this episode's files.
    """

    def __init__(
        self, inner: Layer, recorder: EpisodeRecorder, errors: RecordErrors = "refuse"
    ) -> None:
        super().__init__(inner)
        self.recorder = recorder
        self.errors = errors

    def _guard(self, write: Callable[[], T], moment: Moment | None) -> T | None:
        """Run a write; a failure is the call's answer, or noted on ``moment`` (continue)."""
        try:
            return write()
        except RecordingFailed as exc:
            if self.errors == "refuse":
                raise
            log.warning("episode not recorded from here on: %s", exc)
            if moment is not None:
                moment.recording_error = str(exc)
            return None

    def reset(self, op: Reset) -> Moment:
        moment = self.inner.reset(op)
        path = self._guard(
            lambda: self.recorder.start(
                op.seed,
                op.options,
                moment.observation,
                moment.info,
                task=None if op.task is None else op.task.to_json(),
            ),
            moment,
        )
        self.episode.recording = None if path is None else str(path)
        return moment

    def step(self, op: Step, action: Any) -> Moment:
        state = self.episode
        try:
            moment = self.inner.step(op, action)
        except Exception as exc:
            # What breaks the episode ends its recording, saying why; an env's own
            # validation error (an illegal first action) changes nothing.
            if not isinstance(exc, OpenEnvError) or isinstance(exc, EnvCrashed):
                why = str(exc)
                self._guard(lambda: self.recorder.end("broken", steps=state.step, error=why), None)
            raise
        call = op.call
        self._guard(
            lambda: self.recorder.step(
                state.step,
                moment.action,
                moment.reward,
                moment.env_reward,
                moment.breakdown,
                moment.terminated,
                moment.truncated,
                moment.info,
                moment.observation,
                call,
            ),
            moment,
        )
        if moment.ended:
            self._guard(
                lambda: self.recorder.end(
                    "terminated" if moment.terminated else "truncated",
                    steps=state.step,
                    episode_return=state.episode_return,
                    env_return=state.env_return,
                    trajectory=moment.trajectory,
                    **({"task": state.task} if state.task is not None else {}),
                ),
                moment,
            )
        return moment

    def look(self, op: Look) -> Moment:
        moment = self.inner.look(op)
        self._guard(lambda: self.recorder.call("state", None, self.episode.step), moment)
        return moment

    def restore(self, op: Restore) -> Moment:
        moment = self.inner.restore(op)
        saved = op.saved
        # Not replayable from a seed: the start record says so.
        path = self._guard(
            lambda: self.recorder.start(
                None, None, moment.observation, moment.info, from_snapshot=True, step=saved.step
            ),
            moment,
        )
        self.episode.recording = None if path is None else str(path)
        return moment

    def call_tool(self, op: CallTool) -> dict[str, Any]:
        answer = self.inner.call_tool(op)
        self._guard(lambda: self.recorder.call(op.name, op.params, self.episode.step), None)
        return answer

    def close(self, op: Close) -> None:
        try:
            state = self.episode
            self.recorder.end("closed", steps=state.step, episode_return=state.episode_return)
        except RecordingFailed as exc:  # closing goes on: the failure is only told
            log.warning("closing an episode: %s", exc)
        finally:
            self.inner.close(op)
