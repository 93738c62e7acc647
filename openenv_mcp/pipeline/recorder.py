"""Recording (``serve --record``): every episode's start, steps, calls and end, flushed
before each answer (:class:`openenv_mcp.recording.EpisodeRecorder` writes the file)."""

from __future__ import annotations

from typing import Any

from openenv_mcp.errors import EnvCrashed, OpenEnvError
from openenv_mcp.pipeline.base import Layer, Moment, SavedEpisode
from openenv_mcp.recording import EpisodeRecorder

__all__ = ["Recorder"]


class Recorder(Layer):
    """Writes the episode as it happens.

    Args:
        inner: the next layer in.
        recorder: the writer of this episode's files.
    """

    def __init__(self, inner: Layer, recorder: EpisodeRecorder) -> None:
        super().__init__(inner)
        self.recorder = recorder
        #: The tool call the next step record carries (the first step of a call only).
        self._call: dict[str, Any] | None = None

    def expect_call(self, tool: str, arguments: dict[str, Any]) -> None:
        """The tool call whose steps come next: its first step's record names it."""
        self._call = {"tool": tool, "arguments": arguments}

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> Moment:
        moment = self.inner.reset(seed, options)
        path = self.recorder.start(seed, options, moment.observation, moment.info)
        self.episode.recording = str(path)
        return moment

    def step(self, action: Any) -> Moment:
        state = self.episode
        try:
            moment = self.inner.step(action)
        except Exception as exc:
            # What breaks the episode ends its recording, saying why; an env's own
            # validation error (an illegal first action) changes nothing.
            if not isinstance(exc, OpenEnvError) or isinstance(exc, EnvCrashed):
                self.recorder.end("broken", steps=state.step, error=str(exc))
            raise
        call, self._call = self._call, None
        self.recorder.step(
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
        )
        if moment.ended:
            self.recorder.end(
                "terminated" if moment.terminated else "truncated",
                steps=state.step,
                episode_return=state.episode_return,
                env_return=state.env_return,
                trajectory=moment.trajectory,
            )
        return moment

    def look(self) -> Moment:
        moment = self.inner.look()
        self.recorder.call("state", None, self.episode.step)
        return moment

    def restore(self, saved: SavedEpisode) -> Moment:
        moment = self.inner.restore(saved)
        # Not replayable from a seed: the start record says so.
        path = self.recorder.start(
            None, None, moment.observation, moment.info, from_snapshot=True, step=saved.step
        )
        self.episode.recording = str(path)
        return moment

    def call_tool(self, name: str, params: dict[str, Any] | None) -> dict[str, Any]:
        answer = self.inner.call_tool(name, params)
        self.recorder.call(name, params, self.episode.step)
        return answer

    def close(self) -> None:
        try:
            state = self.episode
            self.recorder.end("closed", steps=state.step, episode_return=state.episode_return)
        finally:
            self.inner.close()
