"""An episode's pipeline: its layers, built from the server's options, as one chain
an operation (:mod:`.ops`) runs down."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from openenv_mcp.codecs import Frames
from openenv_mcp.environment import Environment
from openenv_mcp.pipeline.base import EpisodeState, Layer, SavedEpisode
from openenv_mcp.pipeline.core import EnvCore, legal_actions
from openenv_mcp.pipeline.mask import ActionMask
from openenv_mcp.pipeline.narrator import Narrator
from openenv_mcp.pipeline.ops import (
    CallTool,
    Close,
    Frame,
    LegalActions,
    Look,
    Op,
    Reset,
    Restore,
    Snapshot,
    Step,
    Summary,
)
from openenv_mcp.pipeline.order import OrderEnforcing
from openenv_mcp.pipeline.recorder import Recorder, RecordErrors
from openenv_mcp.pipeline.repeat import Repeat
from openenv_mcp.pipeline.rewards import ServedRewards
from openenv_mcp.pipeline.tasks import JudgeTask, StartTask
from openenv_mcp.pipeline.view import Reply, View
from openenv_mcp.recording import EpisodeRecorder
from openenv_mcp.rewards import RewardSet, load_rewards

__all__ = ["EpisodePipeline", "PipelineOptions", "legal_actions"]

R = TypeVar("R")


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
    """One environment and its episode, behind the pipeline's layers: an operation goes in
    (:meth:`run`), its one answer comes out. The pipeline holds only the chain's outer
    end; every call on one pipeline is serialized by its caller.

    Args:
        env: the environment instance (the pipeline owns and closes it).
        episode_id: the handle of the episode it serves.
        options: frames, rewards and recording.
    """

    def __init__(
        self, env: Environment[Any], episode_id: str, options: PipelineOptions | None = None
    ) -> None:
        options = options or PipelineOptions()
        # Outside the mask: a step after the end is ResetNeeded, whatever the action.
        layer: Layer = OrderEnforcing(ActionMask(EnvCore(env, episode_id)))
        served = [*type(env).serving.rewards, *load_rewards(options.rewards)]
        layer = ServedRewards(layer, RewardSet(served) if served else None)
        layer = JudgeTask(layer)
        if options.record is not None:
            writer = EpisodeRecorder(
                options.record, episode_id, env, options.describe, video=options.record_video
            )
            layer = Recorder(layer, writer, options.record_errors)
        self.chain = View(Repeat(Narrator(StartTask(layer))), options.frame_scale)

    @property
    def episode(self) -> EpisodeState:
        """The episode's state."""
        return self.chain.episode

    @property
    def env(self) -> Environment[Any]:
        """The environment."""
        return self.chain.episode.env

    def run(self, op: Op[R]) -> R:
        """Run ``op`` down the chain; its answer (a :class:`~.view.Reply` for an op that
        answers with a view)."""
        return op.apply(self.chain)

    # -- each operation by name: the op built and run ---------------------------------------

    def reset(
        self,
        seed: int | None,
        options: dict[str, Any] | None,
        frames: Frames,
        np_random: dict[str, Any] | None = None,
        extras: tuple[str, ...] = (),
    ) -> Reply:
        """Start an episode (:class:`~.ops.Reset`)."""
        return self.chain.reset(Reset(seed, options, frames, np_random, extras))

    def step(
        self, action: Any, frames: Frames, repeat: int = 1, extras: tuple[str, ...] = ()
    ) -> Reply:
        """Take ``action``, held for ``repeat`` steps (:class:`~.ops.Step`)."""
        return self.chain.step(Step(action, frames, repeat, extras))

    def look(self, frames: Frames, extras: tuple[str, ...] = ()) -> Reply:
        """The episode as it is (:class:`~.ops.Look`)."""
        return self.chain.look(Look(frames, extras))

    def snapshot(self) -> SavedEpisode:
        """The episode's full state (:class:`~.ops.Snapshot`)."""
        return self.chain.snapshot(Snapshot())

    def restore(self, saved: SavedEpisode, frames: Frames) -> Reply:
        """Continue from a snapshot (:class:`~.ops.Restore`)."""
        return self.chain.restore(Restore(saved, frames))

    def call_tool(self, name: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The environment's own episode tool ``name`` (:class:`~.ops.CallTool`)."""
        return self.chain.call_tool(CallTool(name, params))

    def legal_actions(self) -> dict[str, Any]:
        """The actions legal now (:class:`~.ops.LegalActions`)."""
        return self.chain.legal_actions(LegalActions())

    def summary(self) -> dict[str, Any]:
        """The episode so far (:class:`~.ops.Summary`)."""
        return self.chain.summary(Summary())

    def frame_png(self) -> bytes | None:
        """The current frame as PNG, for a watcher (:class:`~.ops.Frame`)."""
        return self.chain.frame(Frame())

    def close(self) -> None:
        """End the recording and free the environment (:class:`~.ops.Close`)."""
        self.chain.close(Close())
