"""Mount one environment on a FastMCP server: tools, resources, episodes."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.environment import Environment, EnvTool
from openenv_mcp.errors import (
    ArgumentError,
    EpisodeRequired,
    OpenEnvError,
    ResetNeeded,
    UnknownEpisode,
)
from openenv_mcp.server._episodes import Episode, EpisodeManager
from openenv_mcp.server._results import (
    Reply,
    episode_output_schema,
    episode_result,
    episode_view,
    error_text,
    image_block,
    json_reply,
    text_block,
)
from openenv_mcp.server._settings import Frames, ServerSettings
from openenv_mcp.server._slots import (
    WorkerPool,
    op_reset,
    op_restore,
    op_snapshot,
    op_state,
    op_step,
    op_tool,
)
from openenv_mcp.server._tools import ModelTool, UnknownToolErrors

__all__ = ["EnvApp"]

log = logging.getLogger("openenv_mcp.server")

MAX_BATCH = 1024


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


EpisodeId = Annotated[
    str | None,
    Field(
        max_length=128,
        description="The episode handle returned by reset. Optional over stdio (one client, "
        "one default episode); required over HTTP.",
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


class ResetArgs(_Args):
    episode_id: EpisodeId = None
    seed: Annotated[
        int | None,
        Field(ge=0, le=2**31 - 1, description="Seed for reproducible episodes (0..2^31-1)."),
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


class SnapshotResetArgs(ResetArgs):
    from_snapshot: Annotated[
        str | None,
        Field(max_length=128, description="Start from this snapshot handle (see snapshot)."),
    ] = None


class StepArgs(_Args):
    action: Any = Field(description="The action.")
    episode_id: EpisodeId = None
    frames: FramesArg = None


class EpisodeArgs(_Args):
    episode_id: EpisodeId = None


class ViewArgs(EpisodeArgs):
    frames: FramesArg = None


class BatchItem(_Args):
    episode_id: Annotated[str, Field(max_length=128, description="An episode handle.")]
    action: Any = Field(description="The action for this episode.")


class StepBatchArgs(_Args):
    steps: Annotated[
        list[BatchItem],
        Field(min_length=1, max_length=MAX_BATCH, description="One step per episode."),
    ]
    frames: FramesArg = None


class ReleaseArgs(_Args):
    snapshot_id: Annotated[str, Field(max_length=128, description="The snapshot handle.")]


def batch_output_schema(item: dict[str, Any]) -> dict[str, Any]:
    """``outputSchema`` of step_batch: per item, a step view or an error."""
    error = {
        "type": "object",
        "properties": {"episode_id": {"type": "string"}, "error": {"type": "string"}},
        "required": ["episode_id", "error"],
    }
    view = {**item, "properties": {**item["properties"], "image": {"type": "integer"}}}
    return {
        "type": "object",
        "properties": {"results": {"type": "array", "items": {"anyOf": [view, error]}}},
        "required": ["results"],
    }


def _tool_args(tool: EnvTool) -> type[BaseModel]:
    """The argument model of an env tool: its own params, plus episode_id where needed."""
    base = EpisodeArgs if tool.kind == "episode" else _Args
    if tool.params is None:
        return base
    model: type[BaseModel] = type(f"{tool.params.__name__}Args", (tool.params, base), {})
    return model


#: The transport of the call being served, where the fast lane serves it.
lane_transport: ContextVar[str | None] = ContextVar("openenv_lane_transport", default=None)


def _multi_client() -> bool:
    """Whether this call came over a transport shared by many clients (HTTP)."""
    transport = lane_transport.get()
    if transport is None:
        from fastmcp.server.dependencies import get_context

        try:
            transport = get_context().transport
        except RuntimeError:  # no request context: in memory, one client
            return False
    return transport in ("streamable-http", "sse")


class EnvApp:
    """One environment served over MCP: its episodes and its tools."""

    def __init__(
        self, env_cls: type[Environment], config: BaseModel, settings: ServerSettings
    ) -> None:
        self.env_cls = env_cls
        self.config = config
        self.settings = settings
        # The prototype answers static questions (actions, spaces); it plays no episode.
        self.prototype = env_cls(config)
        #: Static for a config, so read once: building it per step costs ~10 µs.
        self.obs_spec = self.prototype.observation_spec
        #: Worker processes holding the environments (``settings.workers``), or None.
        self.pool: WorkerPool | None = None
        if settings.workers:
            self.pool = WorkerPool(
                env_cls, config, settings.workers, self.prototype, settings.call_timeout
            )
            threads = False  # the pool times calls out itself
        else:
            threads = (
                not env_cls.run_inline if settings.env_threads is None else settings.env_threads
            )
        self.episodes = EpisodeManager(
            lambda: env_cls(config), settings, threads=threads, pool=self.pool
        )

    async def aclose(self) -> None:
        """Close every episode, then stop the worker processes (server shutdown)."""
        try:
            await self.episodes.close_all()
        finally:
            if self.pool is not None:
                self.pool.close()

    # -- episodes ------------------------------------------------------------------------

    def _resolve(self, episode_id: str | None) -> Episode:
        if episode_id is not None:
            return self.episodes.get(episode_id)
        if _multi_client():
            raise EpisodeRequired(
                "episode_id is required over HTTP, where many clients share the server: "
                "call reset (it returns an episode_id) and pass that id to later calls"
            )
        if self.episodes.default_id is None:
            raise ResetNeeded("no episode yet: call reset first")
        return self.episodes.get(self.episodes.default_id)

    @asynccontextmanager
    async def _locked(self, episode_id: str | None) -> AsyncIterator[Episode]:
        episode = self._resolve(episode_id)
        async with episode.lock:
            if self.episodes.episodes.get(episode.id) is not episode:
                raise UnknownEpisode(f"episode {episode.id!r} was closed while this call waited")
            yield episode

    def _frames(self, frames: Frames | None) -> Frames:
        return frames or self.settings.default_frames

    # -- control tools -------------------------------------------------------------------

    async def reset(self, args: ResetArgs) -> Reply:
        """Start (or restart) an episode; mint its handle."""
        from_snapshot = getattr(args, "from_snapshot", None)
        if from_snapshot is not None and (args.seed is not None or args.options):
            raise ArgumentError(
                "reset: from_snapshot continues a saved state, so it cannot be combined with "
                "seed or options"
            )
        snapshot = self.episodes.get_snapshot(from_snapshot) if from_snapshot else None
        created = False
        if args.episode_id is not None:
            episode = self.episodes.get(args.episode_id)
        elif (
            not args.new_episode
            and not _multi_client()
            and self.episodes.default_id in self.episodes.episodes
        ):
            episode = self.episodes.get(self.episodes.default_id)
        else:
            episode = await self.episodes.create()
            created = True
            if not _multi_client():
                self.episodes.default_id = episode.id
        frames = self._frames(args.frames)
        try:
            async with self._locked(episode.id):
                if episode.status == "broken":
                    await self.episodes.replace_env(episode)
                if snapshot is not None:
                    observed, text = await self.episodes.call(
                        episode, "reset", op_restore, self.obs_spec, snapshot.data, frames
                    )
                    snapshot.apply(episode, text)
                else:
                    info, observed, text = await self.episodes.call(
                        episode, "reset", op_reset, self.obs_spec, args.seed, args.options, frames
                    )
                    episode.start(info, text)
        except BaseException:
            if created:
                await self.episodes.close(episode.id)
            raise
        actions = self.prototype.action_set
        hint = f"legal actions: {actions.describe()}" if actions is not None else ""
        return episode_result(episode, observed, "reset", hint)

    async def step(self, episode_id: str | None, action: Any, frames: Frames | None) -> Reply:
        """Advance an episode by one action."""
        async with self._locked(episode_id) as episode:
            episode.require_running("step")
            parsed = episode.slot.parse_action(action)
            result, observed, text = await self.episodes.call(
                episode, "step", op_step, self.obs_spec, parsed, self._frames(frames)
            )
            episode.record(result, text)
            return episode_result(episode, observed, "stepped")

    async def step_batch(self, args: StepBatchArgs) -> Reply:
        """Step many episodes in one call (one action each), in one environment hop.

        Per-episode failures (an illegal action, an ended episode) come back as
        that item's ``error``; the other items still step.
        """
        items = args.steps
        ids = [item.episode_id for item in items]
        if len(set(ids)) != len(ids):
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            raise ArgumentError(
                f"step_batch: each episode may appear once per batch, got {repeated} twice"
            )
        wanted = self._frames(args.frames)
        errors: dict[int, OpenEnvError] = {}
        plan: list[tuple[int, Episode, Any]] = []
        async with AsyncExitStack() as stack:
            # Lock in handle order, so concurrent batches cannot deadlock.
            for index in sorted(range(len(items)), key=lambda i: ids[i]):
                try:
                    episode = await stack.enter_async_context(self._locked(ids[index]))
                    episode.require_running("step")
                    plan.append((index, episode, episode.slot.parse_action(items[index].action)))
                except OpenEnvError as exc:
                    errors[index] = exc
            plan.sort(key=lambda p: p[0])
            work = [
                (episode.slot, op_step, (self.obs_spec, action, wanted))
                for _, episode, action in plan
            ]
            # Local envs step in turn; envs in worker processes, each worker's at once.
            outcomes = await self.episodes.run_ops(work, episodes=[e for _, e, _ in plan])
            views: dict[int, dict[str, Any]] = {}
            images: list[dict[str, Any]] = []
            for (index, episode, _), outcome in zip(plan, outcomes, strict=True):
                if isinstance(outcome, Exception):
                    errors[index] = self.episodes.failed(episode, "step_batch", outcome)
                    continue
                result, observed, text = outcome
                episode.record(result, text)
                views[index] = episode_view(episode, observed)
                if observed.png is not None:
                    views[index]["image"] = len(images)
                    images.append(image_block(observed.png))
        results = [
            views[i] if i in views else {"episode_id": ids[i], "error": error_text(errors[i])}
            for i in range(len(items))
        ]
        ended = sum(1 for v in views.values() if v["status"] == "ended")
        text = (
            f"stepped {len(views)} of {len(items)} episodes ({len(errors)} errors, {ended} ended)"
        )
        if errors:
            first = min(errors)
            text += f"; first error, episode {ids[first]}: {error_text(errors[first])}"
        return Reply([text_block(text), *images], {"results": results})

    async def state(self, args: ViewArgs) -> Reply:
        """Describe an episode without changing it."""
        async with self._locked(args.episode_id) as episode:
            if episode.status == "new":
                raise ResetNeeded(f"state before reset: call reset first (episode {episode.id})")
            extra, observed = await self.episodes.call(
                episode, "state", op_state, self.obs_spec, self._frames(args.frames)
            )
            episode.info.update(extra)
            return episode_result(episode, observed, "state of")

    async def close(self, args: EpisodeArgs) -> Reply:
        """Close an episode and free its environment."""
        episode = self._resolve(args.episode_id)
        await self.episodes.close(episode.id)
        return json_reply({"episode_id": episode.id, "closed": True})

    async def snapshot(self, args: EpisodeArgs) -> Reply:
        """Save an episode's full state; later resets can start from it."""
        async with self._locked(args.episode_id) as episode:
            if episode.status in ("new", "broken"):
                raise ResetNeeded(
                    f"snapshot of an episode that is {episode.status}: call reset first"
                )
            data = await self.episodes.call(episode, "snapshot", op_snapshot)
            snap = self.episodes.add_snapshot(episode, data)
            return json_reply({"snapshot_id": snap.id, "episode_id": episode.id, "step": snap.step})

    async def release_snapshot(self, args: ReleaseArgs) -> Reply:
        """Free a snapshot."""
        self.episodes.release_snapshot(args.snapshot_id)
        return json_reply({"snapshot_id": args.snapshot_id, "released": True})

    # -- env tools -----------------------------------------------------------------------

    def _env_tool_handler(self, tool: EnvTool) -> Callable[[Any], Any]:
        if tool.kind == "static":

            async def static(args: Any) -> Reply:
                return json_reply(tool.handler(self.prototype, args))

            return static

        async def on_episode(args: Any) -> Reply:
            async with self._locked(args.episode_id) as episode:
                episode.require_running(tool.name)
                params = None if tool.params is None else args.model_dump(exclude={"episode_id"})
                data = await self.episodes.call(episode, tool.name, op_tool, tool.name, params)
                return json_reply(data)

        return on_episode

    # -- assembly ------------------------------------------------------------------------

    def spec(self) -> dict[str, Any]:
        """Everything static a client needs: served as the ``spec`` resource."""
        proto = self.prototype
        actions = proto.action_set
        return {
            "env": self.env_cls.name,
            "description": self.env_cls.description,
            "config": self.config.model_dump(mode="json"),
            "actions": actions.to_json() if actions is not None else None,
            "action_schema": proto.action_schema(),
            "observation": proto.observation_spec.model_dump(mode="json"),
            "reset_options": proto.reset_options_schema(),
            "supports_snapshots": self.env_cls.supports_snapshots,
            "settings": self.settings.model_dump(mode="json"),
        }

    def tools(self) -> list[ModelTool]:
        """Every tool this server lists."""
        proto = self.prototype
        output = episode_output_schema(proto)
        actions = proto.action_set
        action_text = (
            f" Legal actions: {', '.join(f'{a.id}={a.name}' for a in actions)}."
            if actions is not None
            else ""
        )
        options_schema = {
            "anyOf": [
                {
                    "type": "object",
                    "properties": proto.reset_options_schema(),
                    "additionalProperties": False,
                },
                {"type": "null"},
            ],
            "description": "Per-episode options of this environment.",
        }
        snapshots = self.env_cls.supports_snapshots
        tools = [
            ModelTool.build(
                "reset",
                f"Start a new episode of {proto.title} and return its first observation and "
                "its episode_id. Pass episode_id to restart that episode, seed to reproduce one"
                + (", from_snapshot to continue a saved state" if snapshots else "")
                + "."
                + action_text,
                SnapshotResetArgs if snapshots else ResetArgs,
                self.reset,
                output,
                schema_patch={"options": options_schema},
            ),
            ModelTool.build(
                "step",
                f"Take one action in an episode of {proto.title}; returns the observation, "
                "reward, terminated and truncated." + action_text,
                StepArgs,
                lambda a: self.step(a.episode_id, a.action, a.frames),
                output,
                schema_patch={"action": proto.action_schema()},
            ),
            ModelTool.build(
                "step_batch",
                "Step many episodes at once, one action each (for trainers running "
                "vectorised rollouts); returns one result per item, in order, each like "
                "step's structuredContent or {episode_id, error}.",
                StepBatchArgs,
                self.step_batch,
                batch_output_schema(output),
            ),
            ModelTool.build(
                "state",
                "Look at an episode without acting: its observation, step count, return and "
                "status.",
                ViewArgs,
                self.state,
                output,
                read_only=True,
            ),
            ModelTool.build(
                "close",
                "End an episode and free its resources (and its snapshots).",
                EpisodeArgs,
                self.close,
                None,
            ),
        ]
        if snapshots:
            tools += [
                ModelTool.build(
                    "snapshot",
                    "Save the full state of an episode (RNG included) and return a "
                    "snapshot_id; reset(from_snapshot=...) starts identical episodes from it "
                    "(GRPO groups).",
                    EpisodeArgs,
                    self.snapshot,
                    None,
                ),
                ModelTool.build(
                    "release_snapshot",
                    "Free a snapshot.",
                    ReleaseArgs,
                    self.release_snapshot,
                    None,
                ),
            ]
        names = {t.name for t in tools}
        for env_tool in proto.tools():
            params = _tool_args(env_tool)
            tools.append(
                ModelTool.build(
                    env_tool.name,
                    env_tool.description,
                    params,
                    self._env_tool_handler(env_tool),
                    None,
                    read_only=env_tool.read_only,
                )
            )
            names.add(env_tool.name)
        if actions is not None and self.settings.action_tools:
            for action in actions:
                name = actions.tool_name(action.id)
                if name in names:
                    name = f"act_{name}"
                meaning = f": {action.meaning}" if action.meaning else ""
                tools.append(
                    ModelTool.build(
                        name,
                        f"Step the episode with action {action.id} {action.name}{meaning}.",
                        ViewArgs,
                        self._action_handler(action.id),
                        output,
                    )
                )
        return tools

    def _action_handler(self, action_id: int) -> Callable[[ViewArgs], Any]:
        return lambda args: self.step(args.episode_id, action_id, args.frames)

    def mount(self, server: FastMCP) -> None:
        """Add this environment's tools and resources to ``server``."""
        for tool in self.tools():
            server.add_tool(tool)
        server.add_middleware(UnknownToolErrors(server))
        name = self.env_cls.name
        spec = self.spec()

        @server.resource(
            f"openenv://{name}/spec",
            name=f"{name}-spec",
            description="Actions, observation space, config and limits (JSON).",
            mime_type="application/json",
        )
        def spec_resource() -> str:
            return json.dumps(spec)

        metadata = self.prototype.metadata()

        @server.resource(
            f"openenv://{name}/metadata",
            name=f"{name}-metadata",
            description="Static facts about the environment (JSON).",
            mime_type="application/json",
        )
        def metadata_resource() -> str:
            return json.dumps(metadata)
