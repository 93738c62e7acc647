"""One environment served over MCP: the prototype, the runtime, the episodes, the tools.

:class:`EnvApp` wires the rooms together and mounts them on a FastMCP server: the
runtime where environments live (``episodes/_runtime``, ``episodes/_workers``), the
episode table (``episodes/_episodes``), the handlers (``episodes/_handlers``), the
tool catalog (``tools/_catalog``), and the static description as resources.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import anyio.to_thread
from fastmcp import FastMCP
from pydantic import BaseModel

from openenv_mcp.environment import Environment, contract_problems
from openenv_mcp.errors import ArgumentError, RecordingFailed, UnknownTask
from openenv_mcp.pipeline import MAX_REPEAT, PipelineOptions
from openenv_mcp.recording import check_writable, finish_videos
from openenv_mcp.rewards import RewardSet, load_rewards
from openenv_mcp.server._settings import ServerSettings
from openenv_mcp.server._tasks import mount_tasks
from openenv_mcp.server.episodes._episodes import EpisodeTable
from openenv_mcp.server.episodes._handlers import Handlers
from openenv_mcp.server.episodes._runtime import LocalRef, LocalRuntime, Runtime
from openenv_mcp.server.episodes._seat_env import MARGIN, SeatEnv
from openenv_mcp.server.jobs import POLL_MS, TASKS_EXTENSION_ID, JobStore, McpTasksExtension
from openenv_mcp.server.tools._catalog import build_tools
from openenv_mcp.server.tools._direct import DirectCalls
from openenv_mcp.server.tools._tools import ModelTool, UnknownToolErrors
from openenv_mcp.spec import EnvSpec

__all__ = ["LONG_TOOLS", "EnvApp"]

#: Tools whose every call is long: answered as an MCP task to a client of the extension.
LONG_TOOLS = frozenset({"evaluate", "collect", "run_episode"})


class EnvApp:
    """One environment served over MCP: its episodes and its tools."""

    def __init__(
        self, env_cls: type[Environment[Any]], config: BaseModel, settings: ServerSettings
    ) -> None:
        self.env_cls = env_cls
        self.config = config
        self.settings = settings
        # The prototype answers static questions (spaces, actions); it plays no episode.
        self.prototype = env_cls(config)
        problems = contract_problems(self.prototype)
        if problems:
            self.prototype.close()
            raise ArgumentError(f"{env_cls.__name__} breaks the contract: " + "; ".join(problems))
        seats = self._seat_spaces() if settings.seats is not None else ()
        #: Everything static about the environment, read by every face of the server.
        self.spec = dataclasses.replace(
            EnvSpec.of(self.prototype, settings=settings.model_dump(mode="json")), seats=seats
        )
        #: The tasks it publishes (:mod:`openenv_mcp.tasks`), or ``None``.
        self.task_set = self.prototype.task_set()
        if settings.task is not None:  # checked now: a server that cannot start it says so
            if self.task_set is None:
                raise ArgumentError(f"--task {settings.task}: {env_cls.name} publishes no tasks")
            try:
                self.task_set.locate(settings.task)
            except UnknownTask as exc:
                raise ArgumentError(f"--task {settings.task}: {exc}") from None
        profile = settings.shape
        # Agents get frames they can read; trainers the env's own, pixel for pixel.
        scale = settings.frame_scale
        if scale is None and not profile.legible_frames:
            scale = 1
        video = settings.record_video
        self.record_video = profile.record_video if video is None else video
        # Loaded here once to fail at start (a bad reference, clashing names); each
        # runner loads its own where its env lives.
        rewards = RewardSet([*env_cls.serving.rewards, *load_rewards(settings.reward)])
        self.rewards = rewards
        options = PipelineOptions(
            frame_scale=scale,
            rewards=tuple(settings.reward),
            record=None if settings.record is None else str(self._record_dir(settings.record)),
            record_errors=settings.record_errors,
            record_video=self.record_video,
            describe={
                "env": env_cls.name,
                "env_class": f"{env_cls.__module__}:{env_cls.__qualname__}",
                "title": self.spec.title,
                "config": config.model_dump(mode="json"),
                "rewards": list(settings.reward),
            },
        )
        runtime: Runtime
        if settings.seats is not None:
            runtime = self._seat_runtime(options)
        elif settings.workers:
            from openenv_mcp.server.episodes._workers import WorkerRuntime

            runtime = WorkerRuntime(
                env_cls,
                config,
                settings.workers,
                call_timeout=settings.call_timeout,
                start_timeout=settings.worker_start_timeout,
                options=options,
            )
        else:
            threads = (
                not self.spec.serving.inline
                if settings.env_threads is None
                else settings.env_threads
            )
            # A judge awaits a scorer: inline it would hold up every other episode.
            threads = threads or rewards.is_async
            runtime = LocalRuntime(
                lambda: env_cls(config),
                threads=threads,
                call_timeout=settings.call_timeout,
                options=options,
            )
        self.runtime = runtime
        self.table = EpisodeTable(runtime, settings)
        self.handlers = Handlers(self.table, settings, self.prototype)
        self.tools: list[ModelTool] = build_tools(self.spec, self.handlers, settings)
        #: The long calls running (or run) as MCP tasks (:mod:`openenv_mcp.server.jobs`).
        self.jobs = JobStore(
            ttl_ms=round(settings.mcp_tasks_ttl * 1000),
            per_client=settings.mcp_tasks_per_client,
            poll_ms=POLL_MS,
            shard=settings.shard,  # task ids name it, as episode handles do
        )
        #: Extensions a request may declare that change its answer: the transports' direct
        #: paths leave such a request to the standard stack.
        self.extension_ids: set[str] = {TASKS_EXTENSION_ID}

    def long_call(self, name: str, arguments: dict[str, Any]) -> bool:
        """Whether a call may take long enough to run as an MCP task: an eval, a
        collection, a whole episode; a seat's step, which waits for its turn; a step of
        an env whose steps are slow (a sandboxed test run); a step held past ``MAX_REPEAT``."""
        if name in LONG_TOOLS:
            return True
        if name != "step":
            return False
        seated = self.handlers.tables is not None and arguments.get("wait", True) is not False
        repeat = arguments.get("repeat", 1)
        held = isinstance(repeat, int) and repeat > MAX_REPEAT
        return seated or held or self.env_cls.serving.slow_steps

    def _seat_spaces(self) -> tuple[str, ...]:
        """Serve a seat's spaces (its game's, where they differ from the one-seat env's):
        the prototype answers static questions, seats' included. The game's seats."""
        game = self.prototype.seated_game()
        if game is None:
            raise ArgumentError(
                f"--seats {self.settings.seats}: {self.env_cls.name} has one player; seats "
                "are for games of several (openspiel, chess, pettingzoo)"
            )
        try:
            first = game.possible_agents[0]
            self.prototype.action_space = game.action_space(first)
            self.prototype.observation_space = game.observation_space(first)
            return tuple(game.possible_agents)
        finally:
            game.close()

    def _seat_runtime(self, options: PipelineOptions) -> Runtime:
        """Where seats live: every seat of a game in this process (they share its game),
        each call on a thread of its own (a seat waits there for its turn)."""
        settings = self.settings
        if settings.workers:
            raise ArgumentError(
                f"--seats {settings.seats} with --workers {settings.workers}: the seats of a "
                "game share it in one process; leave --workers out"
            )
        if settings.turn_timeout + MARGIN > settings.call_timeout:
            raise ArgumentError(
                f"--turn-timeout {settings.turn_timeout:g} must be at least {MARGIN:g} s below "
                f"--call-timeout {settings.call_timeout:g} (a seat answers within its call)"
            )
        prototype, timeout = self.prototype, settings.call_timeout
        return LocalRuntime(
            lambda: SeatEnv(prototype, timeout),
            threads=True,
            call_timeout=timeout,
            options=options,
        )

    @staticmethod
    def _record_dir(record: str) -> Path:
        """The recording directory, checked now: a server that cannot record says so at
        start, not at its first episode."""
        try:
            return check_writable(record)
        except RecordingFailed as exc:
            raise ArgumentError(f"--record {record}: {exc}") from None

    async def aclose(self) -> None:
        """Close every episode, then the runtime (worker processes): server shutdown."""
        try:
            await self.table.close_all()
        finally:
            await self.runtime.aclose()
            self.prototype.close()
            if self.settings.record is not None and self.record_video:
                await anyio.to_thread.run_sync(finish_videos)

    def local_env(self, episode_id: str) -> Environment[Any]:
        """The environment of a live episode, where it lives in this process (tests, debugging).

        Raises:
            UnknownEpisode: no live episode has this handle.
            TypeError: its environment is in a worker process.
        """
        ref = self.table.get(episode_id).ref
        if not isinstance(ref, LocalRef):
            raise TypeError(f"episode {episode_id}'s environment is in a worker process")
        return ref.pipeline.env

    def direct_calls(self, server: FastMCP, transport: str) -> DirectCalls:
        """Answers to tool calls straight from JSON-RPC (a transport's direct path)."""
        return DirectCalls(
            self.tools,
            {"name": server.name, "version": str(server.version)},
            transport,
            frozenset(self.extension_ids),
        )

    def instructions(self) -> str:
        """The server's instructions: the environment's own words for a model, then how
        to drive it through this server's tools."""
        how = self.settings.shape.how_to
        return f"{self.spec.instructions.strip()}\n\n{how}"

    def spec_json(self) -> dict[str, Any]:
        """Everything static a client needs, before any episode: the ``spec`` resource."""
        return self.spec.to_json()

    def mount(self, server: FastMCP) -> None:
        """Add this environment's tools and resources to ``server``."""
        for tool in self.tools:
            server.add_tool(tool)
        server.add_extension(McpTasksExtension(self.jobs, self.long_call))
        self.handlers.server = server  # what an eval in the server connects to
        server.add_middleware(UnknownToolErrors(server))
        name = self.env_cls.name
        spec = json.dumps(self.spec_json())

        @server.resource(
            f"openenv://{name}/spec",
            name=f"{name}-spec",
            description="Spaces, actions, config and limits (JSON).",
            mime_type="application/json",
        )
        def spec_resource() -> str:
            return spec

        rules = self.instructions()

        @server.resource(
            f"openenv://{name}/rules",
            name=f"{name}-rules",
            description=f"How to play {self.spec.title}: the goal, the actions, the rules.",
            mime_type="text/markdown",
        )
        def rules_resource() -> str:
            return rules

        title = self.spec.title

        @server.prompt(
            "play",
            description=f"Play {title}: the rules, then start a game.",
        )
        def play() -> str:
            return (
                f"Play {title} with this server's tools, as well as you can.\n\n{rules}\n\n"
                "Start now: call reset, look at the frame, then choose your actions."
            )

        metadata = json.dumps(self.spec.metadata)

        @server.resource(
            f"openenv://{name}/metadata",
            name=f"{name}-metadata",
            description="Static facts about the environment (JSON).",
            mime_type="application/json",
        )
        def metadata_resource() -> str:
            return metadata

        if self.task_set is not None:
            mount_tasks(server, name, self.task_set, self.table.task_ledger)
