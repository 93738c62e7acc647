"""What each tool does: reset, step, step_batch, state, close, snapshots, env tools.

Handlers find the episode a call means (:class:`._episodes.EpisodeTable`), hold its
lock, and hand one operation (:mod:`openenv_mcp.pipeline.ops`) to the episode's
pipeline where its environment lives; an episode operation's answer comes back as
the tool's reply (the pipeline's view writes it: the view, the frame, the text).
Their argument models are in :mod:`openenv_mcp.server.tools._catalog`, which lists them
as tools.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from contextvars import ContextVar
from typing import Any

from openenv_mcp.codecs import Frames
from openenv_mcp.environment import Environment, EnvTool
from openenv_mcp.errors import ArgumentError, OpenEnvError
from openenv_mcp.pipeline import (
    CallTool,
    LegalActions,
    Look,
    Reset,
    Restore,
    Snapshot,
    Step,
    Summary,
    legal_actions,
)
from openenv_mcp.server._settings import ServerSettings
from openenv_mcp.server.episodes._episodes import (
    Caller,
    Episode,
    EpisodeTable,
    current_caller,
    current_run,
)
from openenv_mcp.server.episodes._seats import Tables
from openenv_mcp.server.tools._results import Reply, error_text, json_reply, text_block
from openenv_mcp.tasks import TASK_OPTIONS
from openenv_mcp.transports import is_shared
from openenv_mcp.wire.sdk import request_transport

__all__ = ["Handlers", "direct_transport"]

#: The transport of the call being served, where a direct path serves it
#: (``"stdio"``, ``"memory"``, ``"streamable-http"``); else FastMCP's context says.
direct_transport: ContextVar[str | None] = ContextVar("openenv_direct_transport", default=None)


#: Where a Streamable HTTP session's caller is kept: its connection's state, which lives
#: as long as the session.
_SESSION_CALLER = "openenv_mcp.caller"


def _caller(table: EpisodeTable) -> Caller | None:
    """Who this call comes from, where its transport tells callers apart (a stdio process,
    an episode host's connection, a Streamable HTTP session); ``None`` where nothing
    does (an HTTP request without a session), where calls must name their episode."""
    direct = direct_transport.get()
    if direct is not None:  # a direct path: stdio's lines, or HTTP's sessionless calls
        return None if is_shared(direct) else _in_run(current_caller.get() or table.local)
    if is_shared(request_transport()):
        return _session_caller()
    return _in_run(current_caller.get() or table.local)


def _in_run(caller: Caller) -> Caller:
    """``caller``, joined to the harness run its connection belongs to (an episode
    host's, where the relay named one)."""
    if caller.run is None:
        caller.run = current_run.get()
    return caller


def _session_caller() -> Caller | None:
    """The caller of this call's Streamable HTTP session (kept with the session's
    connection, so it ends with the session); ``None`` for a request without one (the
    2026-07-28 protocol's, or a stateless server's): nothing identifies its caller."""
    from fastmcp.server.dependencies import get_context

    try:
        request = get_context().request_context
    except RuntimeError:
        return None
    # The SDK keeps a session's Connection (its id, per-connection state) on the
    # ServerSession it builds per request; FastMCP reads it the same way.
    connection = getattr(getattr(request, "session", None), "_connection", None)
    if connection is None or getattr(connection, "session_id", None) is None:
        return None
    state: dict[str, Any] = connection.state
    caller = state.get(_SESSION_CALLER)
    if not isinstance(caller, Caller):
        caller = state[_SESSION_CALLER] = Caller()
    return caller


class Handlers:
    """The tools' behaviour, over one server's episode table."""

    def __init__(
        self, table: EpisodeTable, settings: ServerSettings, prototype: Environment[Any]
    ) -> None:
        self.table = table
        self.settings = settings
        self.prototype = prototype
        #: What the profile answers with (the agent profile: text and image only).
        self.profile = settings.shape
        self._unseeded = 0
        #: Whether rewards are served beside the env's own (``--reward``, ``env.rewards()``).
        self.rewarded = bool(settings.reward) or bool(type(prototype).serving.rewards)
        #: The FastMCP server these handlers answer for, once mounted on it (the
        #: ``evaluate`` tool's eval connects to it in memory).
        self.server: Any = None
        #: The games of seats, where the server serves seats (``--seats``).
        self.tables: Tables | None = (
            Tables(table, settings, prototype) if settings.seats is not None else None
        )

    def _default_seed(self) -> int | None:
        """``settings.seed``, then one more for each reset that passed no seed."""
        if self.settings.seed is None:
            return None
        seed = self.settings.seed + self._unseeded
        self._unseeded += 1
        return seed

    def _start(
        self, seed: int | None, options: dict[str, Any] | None
    ) -> tuple[int | None, dict[str, Any] | None]:
        """The seed and options a reset starts with. A reset that names a task keeps its
        own (the task has its seed); one that names neither a task nor a seed starts the
        server's task (``--task``) where it has one, else takes the server's next seed."""
        options = options or {}
        if seed is not None or any(key in options for key in TASK_OPTIONS):
            return seed, options or None
        if self.settings.task is not None:
            return None, {**options, "task": self.settings.task}
        return self._default_seed(), options or None

    def _frames(self, frames: Frames | None) -> Frames:
        return self.profile.frames or frames or self.settings.default_frames

    def _reply(self, reply: Reply) -> Reply:
        """An episode operation's reply, as the profile answers (the agent profile: without
        its structured view)."""
        return reply if self.profile.structured else Reply(reply.content)

    async def reset(self, args: Any) -> Reply:
        """Start (or restart) an episode; mint its handle."""
        from_snapshot = getattr(args, "from_snapshot", None)
        if from_snapshot is not None and (args.seed is not None or args.options):
            raise ArgumentError(
                "reset: from_snapshot continues a saved state, so it cannot be combined with "
                "seed or options"
            )
        table = self.table
        table.check_route(getattr(args, "shard", None), [args.episode_id, from_snapshot])
        if self.tables is not None:
            return await self._reset_seats(args)
        snapshot = table.get_snapshot(from_snapshot) if from_snapshot else None
        caller = _caller(table)
        new = getattr(args, "new_episode", False)
        episode, created = await table.for_reset(args.episode_id, new, caller)
        frames = self._frames(getattr(args, "frames", None))
        try:
            async with table.locked(episode.id, caller):
                if episode.broken:
                    await table.renew(episode)
                if snapshot is not None:
                    outcome = await table.call(episode, Restore(snapshot.saved, frames))
                else:
                    seed, options = self._start(args.seed, args.options)
                    reset = Reset(
                        seed,
                        options,
                        frames,
                        getattr(args, "np_random", None),
                        tuple(getattr(args, "extras", None) or ()),
                    )
                    outcome = await table.call(episode, reset)
        except BaseException:
            if created:
                await table.close(episode.id)
            raise
        return self._reply(outcome)

    async def _reset_seats(self, args: Any) -> Reply:
        """Start a game of seats (``--seats``): the seats it claims, each an episode."""
        assert self.tables is not None
        from_snapshot = getattr(args, "from_snapshot", None)
        snapshot = None if from_snapshot is None else self.table.get_snapshot(from_snapshot)
        seed, options = (None, None) if snapshot else self._start(args.seed, args.options)
        reset = Reset(
            seed,
            options,
            self._frames(getattr(args, "frames", None)),
            None,
            tuple(getattr(args, "extras", None) or ()),
        )
        handle = args.episode_id
        reply = await self.tables.reset(
            handle,
            getattr(args, "seats", None),
            reset,
            _caller(self.table),
            None if snapshot is None else snapshot.saved.env_state,
        )
        return self._reply(reply)

    async def join(self, args: Any) -> Reply:
        """Take an open seat of a game of seats (``--seats``)."""
        if self.tables is None:
            raise ArgumentError("join: this server serves no seats (serve ENV --seats ...)")
        return self._reply(
            await self.tables.join(
                args.table_id, args.seat, self._frames(None), _caller(self.table)
            )
        )

    async def wait_turn(self, episode_id: str | None) -> None:
        """Wait (bounded) until a seat's turn comes or its game ends."""
        if self.tables is not None:
            episode = self.table.resolve(episode_id, _caller(self.table))
            await self.tables.wait_turn(episode.id)

    async def step(
        self,
        episode_id: str | None,
        action: Any,
        frames: Frames | None,
        repeat: int = 1,
        extras: tuple[str, ...] = (),
        wait: bool | None = None,
    ) -> Reply:
        """Advance an episode by one action (held for ``repeat`` steps)."""
        async with self.table.locked(episode_id, _caller(self.table)) as episode:
            self.table.require_sound(episode)
            if self.tables is not None:
                self.tables.waits(episode.id, wait)
            step = Step(action, self._frames(frames), repeat, extras)
            outcome = await self.table.call(episode, step)
            return self._reply(outcome)

    async def step_batch(self, args: Any) -> Reply:
        """Step many episodes in one call (one action each), in one runtime hop.

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
        frames = self._frames(args.frames)
        caller = _caller(self.table)
        errors: dict[int, OpenEnvError] = {}
        plan: list[tuple[int, Episode]] = []
        async with AsyncExitStack() as stack:
            # Lock in handle order, so concurrent batches cannot deadlock.
            for index in sorted(range(len(items)), key=lambda i: ids[i]):
                try:
                    self.table.check_route(args.shard, [ids[index]])
                    episode = await stack.enter_async_context(self.table.locked(ids[index], caller))
                    self.table.require_sound(episode)
                    plan.append((index, episode))
                except OpenEnvError as exc:
                    errors[index] = exc
            plan.sort(key=lambda p: p[0])
            # Local envs step in turn; envs in worker processes, each worker's share at once.
            outcomes = await self.table.call_many(
                [e for _, e in plan], [Step(items[i].action, frames) for i, _ in plan]
            )
        views: dict[int, dict[str, Any]] = {}
        images: list[dict[str, Any]] = []
        for (index, _), outcome in zip(plan, outcomes, strict=True):
            if isinstance(outcome, OpenEnvError):
                errors[index] = outcome
                continue
            view = views[index] = outcome.view
            for block in outcome.content[1:]:  # its frame, where it has one
                view["image"] = len(images)
                images.append(block)
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

    async def state(self, args: Any) -> Reply:
        """Describe an episode without changing it (a broken one from what was last sent)."""
        async with self.table.locked(args.episode_id, _caller(self.table)) as episode:
            if episode.broken and episode.last_view is not None:
                text = (
                    f"Episode {episode.id} is broken ({episode.broken}) at step "
                    f"{episode.last_view['step']}, return "
                    f"{episode.last_view['episode_return']:g}: call reset to start over."
                )
                view = {**episode.last_view, "status": "broken", "summary": text, "events": []}
                return Reply([text_block(text)], view if self.profile.structured else None)
            self.table.require_sound(episode)
            frames = self._frames(getattr(args, "frames", None))
            extras = tuple(getattr(args, "extras", None) or ())
            return self._reply(await self.table.call(episode, Look(frames, extras)))

    async def episode_summary(self, args: Any) -> Reply:
        """Steps, returns, trajectory scores and credit, and the recording of an episode."""
        async with self.table.locked(args.episode_id, _caller(self.table)) as episode:
            return json_reply(await self.table.call(episode, Summary()))

    async def close(self, args: Any) -> Reply:
        """Close an episode and free its environment."""
        episode = self.table.resolve(args.episode_id, _caller(self.table))
        await self.table.close(episode.id)
        return json_reply({"episode_id": episode.id, "closed": True})

    async def snapshot(self, args: Any) -> Reply:
        """Save an episode's full state; later resets can start from it."""
        async with self.table.locked(args.episode_id, _caller(self.table)) as episode:
            self.table.require_sound(episode)
            saved = await self.table.call(episode, Snapshot())
            snap = self.table.add_snapshot(episode, saved)
            return json_reply(
                {"snapshot_id": snap.id, "episode_id": episode.id, "step": saved.step}
            )

    async def release_snapshot(self, args: Any) -> Reply:
        """Free a snapshot."""
        self.table.release_snapshot(args.snapshot_id)
        return json_reply({"snapshot_id": args.snapshot_id, "released": True})

    def env_tool(self, tool: EnvTool) -> Any:
        """The handler of an environment's own tool."""
        if tool.kind == "static":

            async def static(args: Any) -> Reply:
                return json_reply(tool.handler(self.prototype, args))

            return static

        async def on_episode(args: Any) -> Reply:
            async with self.table.locked(args.episode_id, _caller(self.table)) as episode:
                self.table.require_sound(episode)
                params = None if tool.params is None else args.model_dump(exclude={"episode_id"})
                return json_reply(await self.table.call(episode, CallTool(tool.name, params)))

        return on_episode

    async def legal_actions(self, args: Any) -> Reply:
        """The actions legal now in an episode; every action where no episode is meant
        (none named, and no default one)."""
        caller = _caller(self.table)
        if args.episode_id is None and self.table.default_of(caller) is None:
            return json_reply(legal_actions(self.prototype, None))
        async with self.table.locked(args.episode_id, caller) as episode:
            self.table.require_sound(episode)
            return json_reply(await self.table.call(episode, LegalActions()))
