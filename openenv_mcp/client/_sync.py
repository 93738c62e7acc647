"""``SyncEnvClient``: :class:`MCPEnvClient` without ``await``.

The async client runs on an event loop of its own
(:class:`~openenv_mcp.client._loop.EventLoopThread`), which each sync call runs in the
calling thread (no thread hop per call), or on a helper thread where the caller's
thread runs a loop already. :class:`SyncEpisode` is the blocking face of any
:class:`Episode` (``spawn()`` hands them out); :class:`SyncEnvClient` is the one
that owns the session and the loop. This works the same in a plain script and inside
a running event loop (a Jupyter cell, an async trainer), where ``asyncio.run`` would
refuse to start. A client left open is closed at interpreter exit (or when
collected), so a script never hangs on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from openenv_mcp.client._loop import EventLoopThread
from openenv_mcp.client._session import Episode, Session, Transition
from openenv_mcp.client._spec import ServerSpec
from openenv_mcp.codecs import ClientFrames
from openenv_mcp.environment import ActionSet
from openenv_mcp.errors import ResetNeeded
from openenv_mcp.tasks import Task

if TYPE_CHECKING:
    from openenv_mcp.client._seat import Seat

__all__ = ["SyncEnvClient", "SyncEpisode", "SyncSeat"]


class SyncEpisode:
    """The blocking face of an :class:`Episode`: the same API without ``await``."""

    def __init__(self, episode: Episode, loop: EventLoopThread) -> None:
        self._episode = episode
        self._loop = loop

    @property
    def episode(self) -> Episode:
        """The async episode underneath (its coroutines belong to this object's loop)."""
        return self._episode

    @property
    def session(self) -> Session:
        """The session it belongs to."""
        return self._episode.session

    @property
    def loop(self) -> EventLoopThread:
        """The event loop thread its calls run on."""
        return self._loop

    # -- what the server is ----------------------------------------------------------------

    @property
    def server_spec(self) -> ServerSpec:
        """The server's static description."""
        return self._episode.server_spec

    @property
    def env_name(self) -> str:
        """The environment's registered name."""
        return self._episode.env_name

    @property
    def actions(self) -> ActionSet | None:
        """The named discrete actions, or ``None``."""
        return self._episode.actions

    def get_action_meanings(self) -> list[str]:
        """Action names in value order."""
        return self._episode.get_action_meanings()

    @property
    def action_space(self) -> spaces.Space[Any]:
        """The Gymnasium action space."""
        return self._episode.action_space

    @property
    def observation_space(self) -> spaces.Space[Any]:
        """The Gymnasium observation space."""
        return self._episode.observation_space

    @property
    def tool_names(self) -> list[str]:
        """Every tool the server lists."""
        return self._episode.tool_names

    @property
    def episode_id(self) -> str | None:
        """This episode's handle (``None`` until the first reset)."""
        return self._episode.episode_id

    @property
    def frames(self) -> ClientFrames:
        """How array observations travel (``"zstd"``, ``"raw"`` or ``"png"``)."""
        return self._episode.frames

    @property
    def connected(self) -> bool:
        """Whether the session is connected and this episode open."""
        return self._episode.connected

    # -- the episode -------------------------------------------------------------------------

    def reset(
        self,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        from_snapshot: str | None = None,
        np_random: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """See :meth:`Episode.reset`."""

        async def reset() -> tuple[Any, dict[str, Any]]:
            return await self._episode.reset(
                seed=seed, options=options, from_snapshot=from_snapshot, np_random=np_random
            )

        return self._loop.run(reset)

    @property
    def splits(self) -> list[dict[str, Any]]:
        """See :attr:`Episode.splits`."""
        return self._episode.splits

    def tasks(self, split: str) -> list[Task]:
        """See :meth:`Episode.tasks`."""
        return self._loop.run(self._episode.tasks, split)

    def task_stats(self) -> dict[str, Any]:
        """See :meth:`Episode.task_stats`."""
        return self._loop.run(self._episode.task_stats)

    def step(self, action: Any) -> Transition:
        """See :meth:`Episode.step`."""
        return self._loop.run(self._episode.step, action)

    def state(self) -> tuple[Any, dict[str, Any]]:
        """See :meth:`Episode.state`."""
        return self._loop.run(self._episode.state)

    def render(self) -> np.ndarray | None:
        """See :meth:`Episode.render`."""
        return self._loop.run(self._episode.render)

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        """See :meth:`Episode.call`."""

        async def call() -> dict[str, Any]:
            return await self._episode.call(tool, **args)

        return self._loop.run(call)

    def snapshot(self) -> str:
        """See :meth:`Episode.snapshot`."""
        return self._loop.run(self._episode.snapshot)

    def release_snapshot(self, snapshot_id: str) -> None:
        """See :meth:`Episode.release_snapshot`."""
        self._loop.run(self._episode.release_snapshot, snapshot_id)

    def spawn(self) -> SyncEpisode:
        """Another episode on this session, with the same blocking face."""
        return SyncEpisode(self._episode.spawn(), self._loop)

    def close(self) -> None:
        """Close the episode."""
        with contextlib.suppress(ResetNeeded):  # the owner's loop stopped, closing everything
            self._loop.run(self._episode.close)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._episode!r}>"


class SyncEnvClient(SyncEpisode):
    """A blocking client that owns its session, its first episode and its event loop.

    Made by :meth:`MCPEnvClient.sync` (or :meth:`start` from a session)::

        with MCPEnvClient("openenv-mcp serve atari --game pong").sync() as env:
            obs, info = env.reset(seed=0)
            obs, reward, terminated, truncated, info = env.step("FIRE")
    """

    @classmethod
    def start(cls, session: Session, episode: Episode | None = None) -> SyncEnvClient:
        """Start a loop thread, connect ``session`` on it, and own it with ``episode``
        (a new one by default).

        Raises:
            RuntimeError: ``session`` is already connected (on another loop, where
                its connection must stay).
        """
        if session.connected:
            raise RuntimeError(
                "sync() needs a client that is not connected yet: its connection must live "
                "on the sync client's own event loop. Use MCPEnvClient(target).sync()."
            )
        loop = EventLoopThread()
        try:
            loop.run(session.connect)
        except BaseException:
            loop.stop()
            raise
        owned = episode if episode is not None else session.episode()
        client = cls(owned, loop)
        loop.adopt(client, _closer(owned, session))
        return client

    def __enter__(self) -> SyncEnvClient:
        return self

    def seat(
        self,
        handle: str | None = None,
        *,
        table_id: str | None = None,
        join: bool = False,
        name: str | None = None,
    ) -> SyncSeat:
        """One seat of a game on a server of seats, blocking (see
        :meth:`MCPEnvClient.seat <openenv_mcp.client.MCPEnvClient.seat>`); it keeps this
        client alive, and closing it closes the seat only."""
        from openenv_mcp.client._seat import open_seat

        async def take() -> SyncSeat:
            found = await open_seat(self.session, handle, table_id=table_id, join=join, name=name)
            return SyncSeat(found, self._loop, owner=self)

        return self._loop.run(take)

    def take_seats(
        self,
        seats: str | list[str] = "all",
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        from_snapshot: str | None = None,
    ) -> dict[str, SyncSeat]:
        """A game holding ``seats``, blocking (see :meth:`MCPEnvClient.take_seats
        <openenv_mcp.client.MCPEnvClient.take_seats>`)."""
        from openenv_mcp.client._seat import take_seats

        async def take() -> dict[str, SyncSeat]:
            taken = await take_seats(
                self.session, seats, seed=seed, options=options, from_snapshot=from_snapshot
            )
            return {name: SyncSeat(seat, self._loop, owner=self) for name, seat in taken.items()}

        return self._loop.run(take)

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the episode, the session (a stdio server is stopped) and the loop.

        A client never closed is closed the same way at interpreter exit, or when it
        is garbage-collected.
        """
        self._loop.stop()


class SyncSeat(SyncEpisode):
    """The blocking face of a :class:`Seat` (``SyncEnvClient.seat(...)``)::

        client = MCPEnvClient("http://host:8000/mcp").sync()
        with client.seat(handle) as seat:
            obs, reward, terminated, truncated, info = seat.last()
            while not (terminated or truncated):
                seat.step(policy(obs, info["action_mask"]))
                obs, reward, terminated, truncated, info = seat.last()

    It keeps the client it came from alive; closing it closes the seat only.
    """

    def __init__(self, seat: Seat, loop: EventLoopThread, owner: object = None) -> None:
        super().__init__(seat, loop)
        self._seat = seat
        self._owner = owner

    @property
    def seat(self) -> Seat:
        """The async seat underneath."""
        return self._seat

    @property
    def name(self) -> str | None:
        """The seat's name in its game."""
        return self._seat.name

    @property
    def handle(self) -> str:
        """The seat's handle."""
        return self._seat.handle

    @property
    def table_id(self) -> str | None:
        """The game's handle (for another client's ``join``)."""
        return self._seat.table_id

    @property
    def ended(self) -> bool:
        """Whether the server has told the seat its game ended."""
        return self._seat.ended

    @property
    def info(self) -> dict[str, Any]:
        """The info of the seat's latest answer."""
        return self._seat.info

    def step(self, action: Any, *, wait: bool = True) -> Transition:
        """See :meth:`Seat.step`."""

        async def step() -> Transition:
            return await self._seat.step(action, wait=wait)

        return self._loop.run(step)

    def state(self, *, wait: bool = False) -> tuple[Any, dict[str, Any]]:
        """See :meth:`Seat.state`."""

        async def state() -> tuple[Any, dict[str, Any]]:
            return await self._seat.state(wait=wait)

        return self._loop.run(state)

    def snapshot(self) -> str:
        """See :meth:`Seat.snapshot`."""
        return self._loop.run(self._seat.snapshot)

    def last(self, *, wait: bool = True) -> Transition:
        """See :meth:`Seat.last`."""

        async def last() -> Transition:
            return await self._seat.last(wait=wait)

        return self._loop.run(last)

    def __enter__(self) -> SyncSeat:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _closer(episode: Episode, session: Session) -> Callable[[], Awaitable[None]]:
    async def close() -> None:
        try:
            await episode.close()
        finally:
            await session.close()

    return close
