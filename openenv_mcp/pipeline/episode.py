"""An episode's pipeline: its layers, built from the server's options, and the
operations a server runs on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp._rng import set_rng_from_wire
from openenv_mcp.codecs import Frames, encode_png
from openenv_mcp.environment import Environment, has_frame
from openenv_mcp.errors import ArgumentError
from openenv_mcp.pipeline.base import EpisodeState, Layer, SavedEpisode
from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.mask import ActionMask
from openenv_mcp.pipeline.narrator import Narrator
from openenv_mcp.pipeline.order import OrderEnforcing
from openenv_mcp.pipeline.recorder import Recorder, RecordErrors
from openenv_mcp.pipeline.repeat import step_repeated
from openenv_mcp.pipeline.rewards import ServedRewards
from openenv_mcp.pipeline.view import Outcome, View
from openenv_mcp.recording import EpisodeRecorder
from openenv_mcp.rewards import RewardSet, load_rewards

__all__ = ["EpisodePipeline", "PipelineOptions"]


@dataclass(frozen=True)
class PipelineOptions:
    """What a pipeline does beside stepping; picklable, so a worker process builds the same.

    Attributes:
        frame_scale: PNG frames are this many times the environment's; ``None``: legible
            (see :data:`~openenv_mcp.pipeline.view.MIN_FRAME_EDGE`).
        rewards: ``package.module:obj`` references of rewards to compose, loaded where
            the env lives (beside the env's own ``serving.rewards``).
        record: a directory to record every episode into (:mod:`openenv_mcp.recording`).
        record_video: also write an MP4 of each recorded episode with frames.
        describe: what a recording's start record says of the environment.
        record_errors: what a failed recording does (:mod:`.recorder`).
    """

    frame_scale: int | None = 1
    rewards: tuple[str, ...] = ()
    record: str | None = None
    record_video: bool = False
    describe: dict[str, Any] = field(default_factory=dict)
    record_errors: RecordErrors = "refuse"


class EpisodePipeline:
    """One environment and its episode, behind the pipeline's layers; every call on one
    pipeline is serialized by its caller.

    Args:
        env: the environment instance (the pipeline owns and closes it).
        episode_id: the handle of the episode it serves.
        options: frames, rewards and recording.
    """

    def __init__(
        self, env: Environment[Any], episode_id: str, options: PipelineOptions | None = None
    ) -> None:
        options = options or PipelineOptions()
        layer: Layer = EnvCore(env, episode_id)
        self.mask = ActionMask(layer)
        # Outside the mask: a step after the end is ResetNeeded, whatever the action.
        self.order = OrderEnforcing(self.mask)
        served = [*type(env).serving.rewards, *load_rewards(options.rewards)]
        self.rewards = ServedRewards(self.order, RewardSet(served) if served else None)
        layer = self.rewards
        self.recorder: Recorder | None = None
        if options.record is not None:
            writer = EpisodeRecorder(
                options.record, episode_id, env, options.describe, video=options.record_video
            )
            layer = self.recorder = Recorder(layer, writer, options.record_errors)
        self.narrator = Narrator(layer)
        self.top: Layer = self.narrator
        self.view = View(self.narrator.episode, options.frame_scale)

    @property
    def episode(self) -> EpisodeState:
        """The episode's state."""
        return self.top.episode

    @property
    def env(self) -> Environment[Any]:
        """The environment."""
        return self.episode.env

    # -- operations (see :mod:`.ops`) -----------------------------------------------------

    def reset(
        self,
        seed: int | None,
        options: dict[str, Any] | None,
        frames: Frames,
        np_random: dict[str, Any] | None = None,
        extras: tuple[str, ...] = (),
    ) -> Outcome:
        """Start an episode (seeded, with per-episode options).

        ``np_random`` (a state an earlier reset answered, drawn on by the client's
        copy) puts the env's generator there first, where no seed replaces it.
        """
        self.view.check_extras(extras)
        if np_random is not None and seed is None:
            generator = self.env.np_random
            if generator is None:
                raise ArgumentError(f"np_random: {self.env.name} has no random generator to set")
            set_rng_from_wire(generator, np_random)
        moment = self.top.reset(seed, options)
        self.episode.reward = 0.0
        text = self.narrator.reset_text(seed)
        return self.view.outcome(moment, text, frames, opening=True, extras=extras)

    def step(
        self, action: Any, frames: Frames, repeat: int = 1, extras: tuple[str, ...] = ()
    ) -> Outcome:
        """Take ``action`` (held for ``repeat`` steps, stopping where the episode ends)."""
        self.view.check_extras(extras)
        if self.recorder is not None:
            arguments: dict[str, Any] = {"action": action}
            if repeat != 1:
                arguments["repeat"] = repeat
            self.recorder.expect_call("step", arguments)
        moment = step_repeated(self.top, action, repeat)
        self.episode.reward = moment.reward
        text = self.narrator.step_text(action, moment)
        return self.view.outcome(moment, text, frames, stepped=True, extras=extras)

    def look(self, frames: Frames, extras: tuple[str, ...] = ()) -> Outcome:
        """The episode as it is, with the environment's state fields in ``info``."""
        self.view.check_extras(extras)
        moment = self.top.look()
        return self.view.outcome(moment, self.narrator.look_text(), frames, extras=extras)

    def snapshot(self) -> SavedEpisode:
        """The episode's full state, to restore here or in another pipeline."""
        return self.top.snapshot()

    def restore(self, saved: SavedEpisode, frames: Frames) -> Outcome:
        """Continue from a snapshot taken in this process or another."""
        moment = self.top.restore(saved)
        self.episode.reward = 0.0
        return self.view.outcome(moment, self.narrator.restore_text(), frames, opening=True)

    def call_tool(self, name: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The environment's own episode tool ``name``: a JSON-able answer."""
        return self.top.call_tool(name, params)

    def legal_actions(self) -> dict[str, Any]:
        """The actions legal now (all before the first reset), by number and name."""
        state = self.episode
        legal = self.mask.legal_now() if state.status != "new" else None
        return legal_actions(self.env, legal, state.narration.action_name)

    def summary(self) -> dict[str, Any]:
        """The episode so far: steps, returns, the trajectory rewards (at the end), and
        where it is recorded."""
        self.order.require_reset("episode_summary")
        state = self.episode
        summary: dict[str, Any] = {
            "episode_id": state.episode_id,
            "status": state.status,
            "steps": state.step,
            "episode_return": state.episode_return,
            "env_return": state.env_return,
            "terminated": state.terminated,
            "truncated": state.truncated,
        }
        if state.scored is not None:
            summary["trajectory"] = state.scored
        if state.recording is not None:
            summary["recording"] = state.recording
        return summary

    def frame_png(self) -> bytes | None:
        """The current frame as PNG at the environment's size, for a watcher (nothing
        recorded, nothing counted); ``None`` where there is no frame yet."""
        if not has_frame(self.env) or self.episode.status == "new":
            return None
        frame = self.env.render()
        return None if frame is None else encode_png(frame)

    def close(self) -> None:
        """End the recording (if the episode is mid-way) and free the environment."""
        self.top.close()


def legal_actions(
    env: Environment[Any],
    legal: list[int] | None,
    name_of: Callable[[int], str | None] | None = None,
) -> dict[str, Any]:
    """The ``legal_actions`` answer: each action legal now (every one where ``legal`` is
    ``None``) with its name and meaning where known."""
    actions = env.action_set
    space = env.action_space
    start = int(getattr(space, "start", 0))
    ids = legal if legal is not None else list(range(start, start + int(getattr(space, "n", 0))))
    listed = []
    for action in ids:
        entry: dict[str, Any] = {"id": action}
        named = actions.by_id(action) if actions is not None else None
        name = named.name if named is not None else (name_of(action) if name_of else None)
        if name is not None:
            entry["name"] = name
        if named is not None and named.meaning:
            entry["meaning"] = named.meaning
        listed.append(entry)
    return {"actions": listed}
