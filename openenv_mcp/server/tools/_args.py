"""The tools' argument models: what each tool takes, validated before it runs.

Their JSON schemas are the tools' ``inputSchema``; :mod:`._catalog` patches in what only
the served environment knows (its action and option schemas).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.codecs import Frames
from openenv_mcp.environment import EnvTool
from openenv_mcp.pipeline import MAX_REPEAT, MAX_TASK_REPEAT
from openenv_mcp.sharding import SHARD_PATTERN

__all__ = [
    "MAX_BATCH",
    "ActionArgs",
    "AgentActionArgs",
    "AgentResetArgs",
    "AgentStepArgs",
    "BatchItem",
    "EpisodeArgs",
    "ReleaseArgs",
    "ResetArgs",
    "SnapshotResetArgs",
    "StateArgs",
    "StepArgs",
    "StepBatchArgs",
    "ViewArgs",
    "env_tool_args",
]

#: Most steps one step_batch call takes.
MAX_BATCH = 1024


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


EpisodeId = Annotated[
    str | None,
    Field(
        max_length=128,
        description="The episode handle returned by reset. Optional over stdio and in an "
        "MCP session (the caller's default episode: the last it reset); required over "
        "sessionless HTTP.",
    ),
]
FramesArg = Annotated[
    Frames | None,
    Field(
        description="How to return the observation: 'png' (an image; the default), 'raw' "
        "(base64 array in structuredContent, for trainers), 'zstd' (the same array "
        "zstd-compressed: far smaller for Atari frames), 'both' (png and raw), or 'none'.",
    ),
]


Shard = Annotated[
    str | None,
    Field(
        pattern=SHARD_PATTERN,
        description="On a sharded server (many replicas behind one address): the shard "
        "to run this call on, as in the handles (ep_...@SHARD): a snapshot's or an "
        "episode's shard, to start a group beside its snapshot or restart an episode. "
        "Omitted, a new episode goes to the least loaded shard.",
    ),
]


Extras = Annotated[
    list[str] | None,
    Field(
        max_length=16,
        description="Arrays to send beside the observation, by name (this environment's "
        "extras: an Atari env's screen_rgb, screen_grayscale and ram, what ALE wrappers "
        "read), zstd-compressed unless frames is raw.",
    ),
]


class ResetArgs(_Args):
    episode_id: EpisodeId = None
    shard: Shard = None
    seed: Annotated[
        int | None,
        Field(
            ge=0,
            description="Seed for reproducible episodes: any non-negative integer, as "
            "Gymnasium takes. Omitted, an episode continues its own random stream (a new "
            "episode draws fresh entropy).",
        ),
    ] = None
    options: Annotated[
        dict[str, Any] | None, Field(description="Per-episode options of this environment.")
    ] = None
    new_episode: Annotated[
        bool,
        Field(
            description="Over stdio, start an additional episode instead of restarting the "
            "default one (it becomes the default). Over HTTP every reset without "
            "episode_id is a new episode.",
        ),
    ] = False
    frames: FramesArg = None
    np_random: Annotated[
        dict[str, Any] | None,
        Field(
            description="Where a reset without seed continues the environment's random "
            "generator from: a state an earlier reset answered (its np_random), as the "
            "client's copy has drawn it on (a wrapper's no-op starts). Omitted, it goes on "
            "from where it is.",
        ),
    ] = None
    extras: Extras = None


class SnapshotResetArgs(ResetArgs):
    from_snapshot: Annotated[
        str | None,
        Field(max_length=128, description="Start from this snapshot handle (see snapshot)."),
    ] = None


Repeat = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_REPEAT,
        description=f"Hold the action for this many steps (1..{MAX_REPEAT}; it stops early "
        "where the episode ends or a life is lost). The answer has the last frame, the "
        "summed reward and every event on the way.",
    ),
]


TaskRepeat = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_TASK_REPEAT,
        description=f"Hold the action for this many steps (1..{MAX_REPEAT}; up to "
        f"{MAX_TASK_REPEAT} in a call run as an MCP task; it stops early where the episode "
        "ends or a life is lost). The answer has the last frame, the summed reward and every "
        "event on the way.",
    ),
]


class StepArgs(_Args):
    action: Any = Field(description="The action.")
    repeat: TaskRepeat = 1
    episode_id: EpisodeId = None
    frames: FramesArg = None
    extras: Extras = None


class EpisodeArgs(_Args):
    episode_id: EpisodeId = None


class ViewArgs(EpisodeArgs):
    frames: FramesArg = None


class StateArgs(ViewArgs):
    extras: Extras = None


class ActionArgs(ViewArgs):
    repeat: Repeat = 1


# The agent profile's arguments: no trainer options (frames, new episodes, snapshots).


class AgentResetArgs(_Args):
    seed: Annotated[
        int | None,
        Field(ge=0, description="Seed to replay a game exactly (any non-negative integer)."),
    ] = None
    options: Annotated[
        dict[str, Any] | None, Field(description="Per-episode options of this environment.")
    ] = None
    episode_id: EpisodeId = None


class AgentStepArgs(_Args):
    action: Any = Field(description="The action.")
    repeat: Repeat = 1
    episode_id: EpisodeId = None


class AgentActionArgs(EpisodeArgs):
    repeat: Repeat = 1


class BatchItem(_Args):
    episode_id: Annotated[str, Field(max_length=128, description="An episode handle.")]
    action: Any = Field(description="The action for this episode.")


class StepBatchArgs(_Args):
    steps: Annotated[
        list[BatchItem],
        Field(min_length=1, max_length=MAX_BATCH, description="One step per episode."),
    ]
    frames: FramesArg = None
    shard: Shard = None


class ReleaseArgs(_Args):
    snapshot_id: Annotated[str, Field(max_length=128, description="The snapshot handle.")]


def env_tool_args(tool: EnvTool) -> type[BaseModel]:
    """The argument model of an env tool: its own params, plus episode_id where needed."""
    base = EpisodeArgs if tool.kind == "episode" else _Args
    if tool.params is None:
        return base
    model: type[BaseModel] = type(f"{tool.params.__name__}Args", (tool.params, base), {})
    return model
