"""Server settings: limits and behaviour that are not the environment's own.

Every field is an ``openenv-mcp serve`` flag of the same name
(``max_episodes`` -> ``--max-episodes``), with this default and this help text:
the CLI builds its options from this model, so nothing is said twice.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.codecs import Frames
from openenv_mcp.server.tools._profile import PROFILES, Profile, ProfileName
from openenv_mcp.sharding import SHARD_PATTERN

__all__ = ["ServerSettings"]


class ServerSettings(BaseModel):
    """How a server holds episodes and shapes its tools."""

    model_config = ConfigDict(extra="forbid")

    profile: ProfileName = Field(
        "full",
        description="full: every tool and frame form (trainers, MCPEnvClient, the "
        "Inspector). agent: for a model in a harness: reset, step, state, the env's own "
        "tools and per-action tools while they fit in 12 tools; PNG frames scaled up to be "
        "legible; results as text and image only, which every harness shows.",
    )
    frame_scale: int | None = Field(
        None,
        ge=1,
        le=8,
        description="Scale PNG frames by this integer (nearest neighbour). Default: 1 for "
        "the full profile (a trainer's frames are the env's exactly); for the agent "
        "profile, the least that makes the short edge at least 400 px.",
    )
    max_episodes: int = Field(
        1024, ge=1, description="Most live episodes at once; reset beyond it is refused."
    )
    max_episodes_per_client: int | None = Field(
        None,
        ge=1,
        description="Most live episodes one HTTP client may hold (a client is an address, as "
        "the server sees it); reset beyond it is refused, naming this flag. Default: a "
        "quarter of max_episodes (over --transport ray, of replicas x max_episodes, counted "
        "across the replicas). Over stdio the one client may use all of max_episodes.",
    )
    max_snapshots: int = Field(4096, ge=0, description="Most live snapshots at once.")
    max_snapshot_mib: float = Field(
        1024.0,
        ge=0,
        description="Most memory the live snapshots may hold together, MiB, as measured when "
        "each is taken (a coding episode's files, a game's state and frame); a snapshot "
        "past it is refused.",
    )
    idle_timeout: float = Field(
        3600.0,
        gt=0,
        description="Seconds an episode may sit unused before it is closed to make room.",
    )
    call_timeout: float = Field(
        60.0, gt=0, description="Seconds one environment call may take before it fails alone."
    )
    action_tools: bool = Field(True, description="Add one tool per named action (noop, fire, ...).")
    default_frames: Frames = Field(
        "png",
        description="Observation form when a call does not say: png image, raw array, "
        "zstd-compressed raw array, both (png and raw), or none.",
    )
    env_threads: bool | None = Field(
        None,
        description="Run environment calls on worker threads, so a slow call cannot block "
        "other episodes and fails alone at call_timeout (default: the environment's choice; "
        "Atari runs inline: a thread hop costs more than an emulator step).",
    )
    workers: int = Field(
        0,
        ge=0,
        le=256,
        description="Worker processes holding the environments, so one step_batch uses "
        "several cores (0: in the server process, fastest for one step per call).",
    )
    worker_start_timeout: float = Field(
        120.0,
        gt=0,
        description="Seconds a worker process may take to start (interpreter and imports), "
        "apart from call_timeout.",
    )
    reward: list[str] = Field(
        default_factory=list,
        description="Compose the reward: package.module:obj, a reward from openenv_mcp.rewards "
        "(repeatable; step rewards are summed into reward, each part reported in rewards; "
        "trajectory rewards score the episode at its end).",
    )
    seed: int | None = Field(
        None,
        ge=0,
        description="Seed for a reset that passes none: the first such reset uses it, the "
        "next seed+1, and so on (an agent's games then replay exactly).",
    )
    record: str | None = Field(
        None,
        description="Record every episode (each step, action, reward, info, frame, and the "
        "tool calls) into this directory, flushed per step; see openenv-mcp replay/export.",
    )
    record_video: bool | None = Field(
        None,
        description="With --record: also write an MP4 of each episode that has frames, for "
        "people, at low priority after it ends (default: on for the agent profile, off for "
        "the full one: a trainer's thousands of episodes want data, not films).",
    )
    record_errors: Literal["refuse", "continue"] = Field(
        "refuse",
        description="With --record, when a recording cannot be written (the disk full, the "
        "directory read-only, a file deleted): refuse, the call answers RecordingFailed "
        "(its episode breaks, and new episodes are refused while recording fails); "
        "continue, episodes go on unrecorded, each answer saying so (recording_failed). "
        "Either way /healthz says degraded.",
    )
    shard: str | None = Field(
        None,
        pattern=SHARD_PATTERN,
        description="This server's shard, when many servers share one address (Ray Serve "
        "replicas, a StatefulSet's pods behind a gateway): every handle it mints carries it "
        "(ep_...@SHARD), the handle parameters are marked for the Mcp-Param-Route header "
        "so a proxy routes each call to the server holding it, and a handle of another shard "
        "answers EpisodeLost.",
    )
    http_max_connections: int | None = Field(
        None,
        ge=1,
        description="Most open HTTP connections; past it the one waiting longest (still "
        "sending its request, idle between requests, or an event stream with nothing to "
        "send, ended cleanly so its client reconnects) is closed to make room. A request "
        "being answered is never closed; when all hold one, /healthz is still answered and "
        "other requests get 503. Default: half the process's descriptor limit (ulimit -n), "
        "at most 1024.",
    )
    http_read_timeout: float = Field(
        30.0,
        gt=0,
        description="Seconds an HTTP client has to send a whole request, its line, headers "
        "and body (from connecting, or from the first byte of a later request); then 408 "
        "and the connection is closed.",
    )
    http_max_header_bytes: int = Field(
        32 * 1024,
        ge=1024,
        description="Largest HTTP request line and headers, in bytes; larger is answered 431.",
    )
    http_keep_alive: float = Field(
        5.0, gt=0, description="Seconds an idle HTTP connection stays open between requests."
    )
    episode_host_idle: float = Field(
        900.0,
        gt=0,
        description="With --episode-host: seconds the host keeps its episodes once no stdio "
        "process is connected to it, before it exits.",
    )
    fast_path: bool = Field(
        True,
        description="Answer calls of this server's tools on the lean direct path (stdio, and "
        "sessionless HTTP requests), with the same bytes on the wire; off, every request "
        "goes through FastMCP's stock transports.",
    )

    @property
    def shape(self) -> Profile:
        """What :attr:`profile` does (:mod:`openenv_mcp.server.tools._profile`)."""
        return PROFILES[self.profile]
