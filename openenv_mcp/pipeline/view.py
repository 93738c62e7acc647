"""What the wire carries of an answer: the structured view, the PNG frame and the text.

Made where the environment lives, so only this crosses a worker's pipe: a few
hundred bytes for a zstd Atari frame, rather than the frame's 100 KB.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from openenv_mcp._rng import rng_to_wire
from openenv_mcp.codecs import Frames, array_form, encode_png, encode_raw, wants_png
from openenv_mcp.environment import has_frame
from openenv_mcp.pipeline.base import EpisodeState, Moment
from openenv_mcp.spaces import encode, is_array_space

__all__ = ["MIN_FRAME_EDGE", "Outcome", "View"]

#: Frames scaled automatically (``frame_scale=None``) get at least this short edge, in
#: pixels: vision models read images under 200 px poorly.
MIN_FRAME_EDGE = 400


class Outcome(NamedTuple):
    """An episode operation's answer, ready for the wire.

    Attributes:
        view: the ``structuredContent``: episode id, status, counters, info,
            the summary and events, and the observation where the call's
            frames send it.
        png: the frame as PNG bytes, where the call asked for one.
        text: the summary a model reads (the same as ``view["summary"]``).
    """

    view: dict[str, Any]
    png: bytes | None
    text: str


class View:
    """Renders answers of one episode.

    Args:
        episode: the episode's state.
        frame_scale: PNG frames are this many times the environment's (nearest
            neighbour); ``None``: the least scale that makes the short edge at least
            :data:`MIN_FRAME_EDGE` pixels, so a model can read them.
    """

    def __init__(self, episode: EpisodeState, frame_scale: int | None) -> None:
        self.episode = episode
        self.frame_scale = frame_scale
        space = episode.env.observation_space
        self._space = space
        self._array_obs = is_array_space(space)
        self._has_frame = has_frame(episode.env)

    def outcome(
        self,
        moment: Moment,
        text: str,
        frames: Frames,
        *,
        opening: bool = False,
        stepped: bool = False,
        extras: tuple[str, ...] = (),
    ) -> Outcome:
        """The answer to an operation that left the episode at ``moment``.

        Args:
            moment: what the operation did (its reward, events, breakdown...).
            text: the summary a model reads.
            frames: how the observation travels (the call's, or the server's default).
            opening: the answer starts an episode (reset, or from a snapshot): it
                names the actions, and the recording.
            stepped: the answer is a step's: it says how many steps it took.
            extras: the env's arrays to send beside the observation, by name.
        """
        state = self.episode
        view: dict[str, Any] = {
            "episode_id": state.episode_id,
            "status": state.status,
            "step": state.step,
            "reward": state.reward,
            "episode_return": state.episode_return,
            "terminated": state.terminated,
            "truncated": state.truncated,
            "info": state.info,
            "summary": text,
            "events": moment.events,
        }
        if stepped:
            view["repeated"] = moment.taken
        actions = state.env.action_set
        if opening:
            if actions is not None:
                view["legal_actions"] = actions.names
            if state.recording is not None:
                view["recording"] = state.recording
        if moment.breakdown is not None:
            view["rewards"] = moment.breakdown
        if moment.trajectory is not None:
            view["trajectory"] = moment.trajectory
        if moment.recording_error is not None:
            view["recording_failed"] = moment.recording_error

        if opening:  # the generator a client mirrors (wrappers draw no-op starts from it)
            rng = rng_to_wire(state.env.np_random)
            if rng is not None:
                view["np_random"] = rng
        if extras:
            compress = frames != "raw"  # zstd unless raw was asked for: screens compress well
            env = state.env
            view["extras"] = {
                name: encode_raw(np.asarray(env.extra(name)), compress=compress) for name in extras
            }
        if self._array_obs:
            form = array_form(frames)
            if form is not None:
                view["observation"] = encode(self._space, state.observation, form)
        else:  # not an array: always sent, as JSON (its array leaves as the frames say)
            view["observation"] = encode(
                self._space, state.observation, array_form(frames) or "list"
            )
        return Outcome(view, self.png(frames), text)

    def check_extras(self, extras: tuple[str, ...]) -> None:
        """Refuse extras the env does not serve, before anything happens."""
        env = self.episode.env
        for name in extras:
            if name not in env.extra_names:
                env.extra(name)  # raises, naming the env's extras

    def png(self, frames: Frames) -> bytes | None:
        """The current frame as PNG, where the call's frames ask for one."""
        if not self._has_frame or not wants_png(frames):
            return None
        frame = self.episode.env.render()
        if frame is None:
            return None
        scale = self.frame_scale
        if scale is None:
            scale = max(1, -(-MIN_FRAME_EDGE // min(frame.shape[:2])))
        return encode_png(frame, scale=scale)
