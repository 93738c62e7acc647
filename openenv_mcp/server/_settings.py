"""Server settings: limits and behaviour that are not the environment's own."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ServerSettings"]

Frames = Literal["png", "raw", "zstd", "both", "none"]


class ServerSettings(BaseModel):
    """How a server holds episodes and shapes its tools.

    Field names double as ``openenv-mcp serve`` options (``--max-episodes``).
    """

    model_config = ConfigDict(extra="forbid")

    max_episodes: int = Field(
        1024, ge=1, description="Most live episodes at once; reset beyond it is refused."
    )
    max_snapshots: int = Field(4096, ge=0, description="Most live snapshots at once.")
    idle_timeout: float = Field(
        3600.0,
        gt=0,
        description="Seconds an episode may sit unused before it is closed to make room.",
    )
    call_timeout: float = Field(
        60.0, gt=0, description="Seconds one environment call may take before it fails alone."
    )
    action_tools: bool = Field(
        True, description="Add one tool per discrete action (noop, fire, ...)."
    )
    default_frames: Frames = Field(
        "png",
        description="Observation form when a call does not say: png image, raw array, "
        "zstd-compressed raw array, both (png and raw), or none.",
    )
    env_threads: bool | None = Field(
        None,
        description="Run environment calls on worker threads, so a slow call cannot block "
        "other episodes and fails alone at call_timeout. None: the environment's choice "
        "(envs whose calls are short and bounded, like Atari, run inline: a thread hop "
        "costs more than an emulator step).",
    )
    workers: int = Field(
        0,
        ge=0,
        le=256,
        description="Worker processes holding the environments: step_batch steps each "
        "worker's episodes at once, so a batch uses several cores. 0: environments live "
        "in the server process (fastest for one step per call).",
    )
    fast_lane: bool = Field(
        True,
        description="Answer calls of this server's tools on a lean fast path (stdio, and "
        "sessionless HTTP requests), with the same bytes on the wire; False leaves every "
        "request to FastMCP's stock transports.",
    )
