"""Server settings: limits and behaviour that are not the environment's own, in groups.

Each group is a small frozen value (:class:`Tools`, :class:`Limits`, :class:`Runtime`,
:class:`Episodes`, :class:`Recording`, :class:`HttpLimits`, :class:`EpisodeHost`), as
httpx's ``Timeout`` and ``Limits`` are; :class:`ServerSettings` holds one of each. Every
field is also an ``openenv-mcp serve`` flag of its flat name (``max_episodes`` ->
``--max-episodes``, ``HttpLimits.keep_alive`` -> ``--http-keep-alive``), with this default
and this help text, shown in its group's panel: the CLI builds its options from these
models, so nothing is said twice. The flat names work everywhere the groups do:
``ServerSettings(max_episodes=4)`` and ``settings.max_episodes`` read and write the same
value as ``ServerSettings(limits=Limits(max_episodes=4))`` and ``settings.limits.
max_episodes``, and the JSON form (``model_dump``, the ``spec`` resource, what a Ray
replica is handed) is flat.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    create_model,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

from openenv_mcp.codecs import Frames
from openenv_mcp.server.tools._profile import PROFILES, Profile, ProfileName
from openenv_mcp.sharding import SHARD_PATTERN
from openenv_mcp.transports import TRANSPORTS

__all__ = [
    "SETTINGS_FLAGS",
    "EpisodeHost",
    "Episodes",
    "HttpLimits",
    "Limits",
    "Recording",
    "Runtime",
    "Seating",
    "ServerSettings",
    "Tools",
    "flat_fields",
]


class _Group(BaseModel):
    """One group of settings: frozen, strict about its names."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    #: The ``serve --help`` panel of its flags.
    panel: ClassVar[str] = ""
    #: What its fields' flat names (and flags) start with.
    prefix: ClassVar[str] = ""


class Tools(_Group):
    """Which tools a client sees and how observations travel.

    The agent profile lists reset, step, state, the env's own tools and per-action tools
    while they fit in 12; its PNG frames are scaled up to be legible and its results are
    text and image only, which every harness shows (:mod:`openenv_mcp.server.tools._profile`).
    """

    panel: ClassVar[str] = "Tools and frames"

    profile: ProfileName = Field(
        "full",
        description="full: every tool and frame form (trainers, MCPEnvClient, the "
        "Inspector). agent: a lean tool set and legible frames, answered as "
        "text and image, for a model in a harness.",
    )
    frame_scale: int | None = Field(
        None,
        ge=1,
        le=8,
        description="Scale PNG frames by this integer (nearest neighbour). Default: 1 "
        "for the full profile; for the agent profile, the least that makes "
        "the short edge 400 px.",
    )
    action_tools: bool = Field(True, description="Add one tool per named action (noop, fire, ...).")
    default_frames: Frames = Field(
        "png",
        description="Observation form when a call does not say: png, raw, zstd "
        "(compressed raw), both (png and raw), or none.",
    )
    fast_path: bool = Field(
        True,
        description="Answer this server's tool calls on the lean direct path (stdio, "
        "sessionless HTTP), with the same bytes on the wire; off, FastMCP's "
        "stock transports answer all.",
    )


class Limits(_Group):
    """How many episodes and snapshots live at once, and for how long.

    A snapshot's size is measured when it is taken (a coding episode's files, a game's
    state and frame). Over stdio the one client may use all of ``max_episodes``; over
    ``--transport ray`` the per-client cap is a quarter of replicas x ``max_episodes``.
    """

    panel: ClassVar[str] = "Episode limits"

    max_episodes: int = Field(
        1024, ge=1, description="Most live episodes at once; reset beyond it is refused."
    )
    max_episodes_per_client: int | None = Field(
        None,
        ge=1,
        description="Most live episodes one HTTP client (an address) may hold; reset "
        "beyond it is refused. Default: a quarter of max_episodes, counted "
        "across the replicas over Ray.",
    )
    max_snapshots: int = Field(4096, ge=0, description="Most live snapshots at once.")
    max_snapshot_mib: float = Field(
        1024.0,
        ge=0,
        description="Most memory, in MiB, the live snapshots may hold together; a "
        "snapshot past it is refused.",
    )
    idle_timeout: float = Field(
        3600.0,
        gt=0,
        description="Seconds an episode may sit unused before it is closed to make room.",
    )
    call_timeout: float = Field(
        60.0, gt=0, description="Seconds one environment call may take before it fails alone."
    )


class Runtime(_Group):
    """Where environment calls run: inline, on threads, or in worker processes.

    On a thread, a slow call cannot block other episodes (Atari runs inline: a thread
    hop costs more than an emulator step). A worker's start (interpreter and imports)
    has its own timeout.
    """

    panel: ClassVar[str] = "Where environment calls run"

    workers: int = Field(
        0,
        ge=0,
        le=256,
        description="Worker processes holding the environments, so one step_batch uses "
        "several cores (0: in the server process, fastest for one step per "
        "call).",
    )
    worker_start_timeout: float = Field(
        120.0,
        gt=0,
        description="Seconds a worker process may take to start, apart from call_timeout.",
    )
    env_threads: bool | None = Field(
        None,
        description="Run environment calls on worker threads, so a slow call fails "
        "alone at call_timeout. Default: the environment's choice (Atari "
        "runs inline).",
    )


class Episodes(_Group):
    """What each episode is scored by, seeded with (or which task it starts), and whose
    handles it carries.

    Step rewards are summed into ``reward``, each part reported in ``rewards``;
    trajectory rewards score the episode at its end. With a shard (Ray Serve replicas, a
    StatefulSet's pods behind a gateway) the handle parameters are marked for the
    Mcp-Param-Route header, and a handle of another shard answers ``EpisodeLost``.
    """

    panel: ClassVar[str] = "Rewards, seeds, tasks and shards"

    reward: list[str] = Field(
        default_factory=list,
        description="Compose the reward from package.module:obj or a reward of "
        "openenv_mcp.rewards; repeatable, each part reported in rewards.",
    )
    seed: int | None = Field(
        None,
        ge=0,
        description="Seed for a reset that passes none: the first such reset uses it, "
        "the next seed+1, and so on.",
    )
    task: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Start this task (its id) on every reset that names no task or seed: "
        "for a harness whose agent calls reset without options (an eval's agent runs).",
    )
    shard: str | None = Field(
        None,
        pattern=SHARD_PATTERN,
        description="This server's shard when many servers share one address: its "
        "handles carry it (ep_...@SHARD), so a proxy routes each call to "
        "the server holding it.",
    )


class Recording(_Group):
    """Where episodes are recorded and what a failed write does.

    ``record_errors="refuse"`` breaks the episode whose recording failed and refuses new
    ones while recording fails; ``"continue"`` goes on unrecorded, each answer saying so
    (``recording_failed``). Either way ``/healthz`` says degraded.
    """

    panel: ClassVar[str] = "Recording"

    record: str | None = Field(
        None,
        description="Record every episode (steps, actions, rewards, frames, tool calls) "
        "into this directory, flushed per step; see openenv-mcp replay and "
        "export.",
    )
    record_video: bool | None = Field(
        None,
        description="With --record: also write an MP4 of each episode with frames. "
        "Default: on for the agent profile, off for the full one.",
    )
    record_errors: Literal["refuse", "continue"] = Field(
        "refuse",
        description="With --record, when a recording cannot be written: refuse (the "
        "call answers RecordingFailed) or continue unrecorded, each answer "
        "saying so.",
    )


class HttpLimits(_Group):
    """What one HTTP server holds its connections to (over ``--transport http`` and
    ``ray``); see :mod:`openenv_mcp.server.transports._limits`.

    Past ``max_connections`` the connection waiting longest (still sending its request,
    idle between requests, or an event stream with nothing to send, ended cleanly so its
    client reconnects) is closed; a request being answered never is, and when all hold
    one, ``/healthz`` is still answered and other requests get 503.
    """

    panel: ClassVar[str] = TRANSPORTS["http"].panel
    prefix: ClassVar[str] = "http_"

    max_connections: int | None = Field(
        None,
        ge=1,
        description="Most open HTTP connections; past it the longest-waiting idle one "
        "is closed to make room. Default: half the descriptor limit (ulimit "
        "-n), at most 1024.",
    )
    read_timeout: float = Field(
        30.0,
        gt=0,
        description="Seconds an HTTP client has to send a whole request (line, headers, "
        "body); then 408 and the connection is closed.",
    )
    max_header_bytes: int = Field(
        32 * 1024,
        ge=1024,
        description="Largest HTTP request line and headers, in bytes; larger is answered 431.",
    )
    keep_alive: float = Field(
        5.0, gt=0, description="Seconds an idle HTTP connection stays open between requests."
    )


class EpisodeHost(_Group):
    """The per-user episode host behind ``--episode-host`` (and ``--agent`` over stdio)."""

    panel: ClassVar[str] = TRANSPORTS["stdio"].panel
    prefix: ClassVar[str] = "episode_host_"

    idle: float = Field(
        900.0,
        gt=0,
        description="Seconds the episode host keeps its episodes once no stdio process "
        "is connected to it, before it exits.",
    )


class Seating(_Group):
    """Games of several players with every player (or those named) a seat its own client
    drives (:mod:`openenv_mcp.seats`): ``reset`` hands out one handle per seat, ``join``
    takes an open one; the others are the env's built-in opponents."""

    panel: ClassVar[str] = "Seats"

    seats: str | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="Make players seats clients drive: 'all', or seat names by comma "
        "(player_0; white): the rest are the env's built-in opponents. Default: one "
        "agent against them, as the env serves it.",
    )
    turn_timeout: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="Seconds a seat's call waits for its turn (and, after its move, for "
        "its next turn) before it answers; bounded by call_timeout.",
    )


class McpTasks(_Group):
    """Long calls (``evaluate``, ``collect``, ``run_episode``, a seat's wait, a slow step)
    answered as MCP tasks to a client that negotiates the tasks extension
    (:mod:`openenv_mcp.server.jobs`); every other client gets them answered in the call."""

    panel: ClassVar[str] = "MCP tasks"
    prefix: ClassVar[str] = "mcp_tasks_"

    ttl: float = Field(
        3600.0,
        gt=0,
        le=7 * 24 * 3600,
        description="Seconds a finished task's result stays readable (tasks/get), from "
        "any connection of the client that made it.",
    )
    per_client: int = Field(
        8, ge=1, le=1000, description="Most tasks one client may have running at once."
    )


#: The groups, by their attribute on :class:`ServerSettings`.
GROUPS: dict[str, type[_Group]] = {
    "tools": Tools,
    "limits": Limits,
    "runtime": Runtime,
    "episodes": Episodes,
    "recording": Recording,
    "http": HttpLimits,
    "episode_host": EpisodeHost,
    "seating": Seating,
    "mcp_tasks": McpTasks,
}
#: Flat name -> (group, field in it).
_FLAT: dict[str, tuple[str, str]] = {
    group.prefix + name: (attr, name)
    for attr, group in GROUPS.items()
    for name in group.model_fields
}


def flat_fields() -> dict[str, tuple[FieldInfo, str]]:
    """Every setting by its flat name (the flag's): its field and its group's panel."""
    return {
        flat: (GROUPS[attr].model_fields[name], GROUPS[attr].panel)
        for flat, (attr, name) in _FLAT.items()
    }


class ServerSettings(BaseModel):
    """How a server holds episodes and shapes its tools: one value per group.

    Takes the groups (``limits=Limits(max_episodes=4)``) or any flat names
    (``max_episodes=4``), or both; reads both ways too (``settings.max_episodes``).
    """

    model_config = ConfigDict(extra="forbid")

    tools: Tools = Field(default_factory=Tools)
    limits: Limits = Field(default_factory=Limits)
    runtime: Runtime = Field(default_factory=Runtime)
    episodes: Episodes = Field(default_factory=Episodes)
    recording: Recording = Field(default_factory=Recording)
    http: HttpLimits = Field(default_factory=HttpLimits)
    episode_host: EpisodeHost = Field(default_factory=EpisodeHost)
    seating: Seating = Field(default_factory=Seating)
    mcp_tasks: McpTasks = Field(default_factory=McpTasks)

    def __init__(self, **data: Any) -> None:
        """Groups or flat names, as keyword arguments (see the class)."""
        super().__init__(**data)

    @model_validator(mode="before")
    @classmethod
    def _group_flat_names(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        grouped: dict[str, Any] = {}
        for key, value in data.items():
            if key not in _FLAT:
                grouped[key] = value  # a group, or an unknown name (refused by the model)
                continue
            attr, name = _FLAT[key]
            group = grouped.get(attr, {})
            if isinstance(group, BaseModel):
                group = group.model_dump(exclude_unset=True)
            grouped[attr] = {**group, name: value}
        return grouped

    @model_serializer(mode="wrap")
    def _flat_json(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        nested = handler(self)
        flat: dict[str, Any] = {}
        for key, values in nested.items():
            prefix = GROUPS[key].prefix
            flat.update({prefix + name: value for name, value in values.items()})
        return flat

    @property
    def shape(self) -> Profile:
        """What :attr:`profile` does (:mod:`openenv_mcp.server.tools._profile`)."""
        return PROFILES[self.tools.profile]

    if TYPE_CHECKING:  # the flat names, read-only (set below)
        profile: ProfileName
        frame_scale: int | None
        action_tools: bool
        default_frames: Frames
        fast_path: bool
        max_episodes: int
        max_episodes_per_client: int | None
        max_snapshots: int
        max_snapshot_mib: float
        idle_timeout: float
        call_timeout: float
        workers: int
        worker_start_timeout: float
        env_threads: bool | None
        reward: list[str]
        seed: int | None
        task: str | None
        shard: str | None
        record: str | None
        record_video: bool | None
        record_errors: Literal["refuse", "continue"]
        http_max_connections: int | None
        http_read_timeout: float
        http_max_header_bytes: int
        http_keep_alive: float
        episode_host_idle: float
        seats: str | None
        turn_timeout: float
        mcp_tasks_ttl: float
        mcp_tasks_per_client: int


def _flat_property(attr: str, name: str) -> property:
    def read(self: ServerSettings) -> Any:
        return getattr(getattr(self, attr), name)

    read.__doc__ = f"``settings.{attr}.{name}``"
    return property(read)


for _flat, (_attr, _name) in _FLAT.items():
    setattr(ServerSettings, _flat, _flat_property(_attr, _name))

#: The flat settings as one model: what ``serve`` parses its flags against (and its
#: errors name the flags' own names).
SETTINGS_FLAGS: type[BaseModel] = create_model(
    "ServerSettingsFlags",
    __config__=ConfigDict(extra="forbid"),
    **{flat: (field.annotation, field) for flat, (field, _) in flat_fields().items()},  # type: ignore[call-overload]
)
