"""``MCPEnvClient``: a session and its first episode, in one object.

The convenience most code wants, with the faces built on top of it: ``sync()``
(:class:`~._sync.SyncEnvClient`) and ``as_gym()`` (:class:`~._gym.MCPGymEnv`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Unpack

from openenv_mcp.client._gym import MCPGymEnv
from openenv_mcp.client._seat import Seat, open_seat, take_seats
from openenv_mcp.client._session import Episode, Session, SessionOptions, Target
from openenv_mcp.client._sync import SyncEnvClient

if TYPE_CHECKING:
    from openenv_mcp.client._pettingzoo import MCPPettingZooEnv, MCPPettingZooParallelEnv

__all__ = ["MCPEnvClient"]


class MCPEnvClient(Episode):
    """A session and its first episode: an openenv-mcp server driven like a Gymnasium env.

    Every call is an MCP tool call. The transport follows from ``target``: a
    server object made by ``build_server`` (in memory), a command such as
    ``"openenv-mcp serve atari --game pong"`` (a stdio subprocess this client
    starts, owns and reaps), or an ``http(s)://`` URL (Streamable HTTP)::

        async with MCPEnvClient("openenv-mcp serve atari --game pong") as env:
            obs, info = await env.reset(seed=0)
            obs, reward, terminated, truncated, info = await env.step("FIRE")

    :meth:`spawn` opens more episodes on the same connection (a GRPO group);
    :meth:`sync` gives the same API without ``await``; the options are
    :class:`Session`'s.
    """

    def __init__(self, target: Target, **options: Unpack[SessionOptions]) -> None:
        super().__init__(Session(target, **options))

    async def __aenter__(self) -> MCPEnvClient:
        return await self.connect()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def connect(self) -> MCPEnvClient:
        """Connect the session and read the server's spec (``async with`` does this)."""
        await self.session.connect()
        return self

    @property
    def target(self) -> Target:
        """What this client connects to."""
        return self.session.target

    async def close(self) -> None:
        """Close the episode, then the session (a stdio server is stopped). Idempotent."""
        try:
            await super().close()
        finally:
            await self.session.close()

    def sync(self) -> SyncEnvClient:
        """The same client without ``await``: for scripts, notebooks and sync trainers.

        It runs on an event loop of its own (a background thread), so it works
        in a plain script and inside a running event loop alike. Call it on a
        client that is not connected yet; it connects.
        """
        return SyncEnvClient.start(self.session, self)

    def as_gym(self, render_mode: str | None = None) -> MCPGymEnv:
        """A :class:`gymnasium.Env` over this client (see :class:`MCPGymEnv`)."""
        return MCPGymEnv.from_client(self.sync(), render_mode=render_mode)

    def as_pettingzoo(
        self, render_mode: str | None = None, *, mask_in_observation: bool = False
    ) -> MCPPettingZooEnv:
        """A :class:`pettingzoo.AECEnv` over a server of seats, every seat in this client
        (see :class:`~openenv_mcp.client.MCPPettingZooEnv`; the ``pettingzoo`` extra)."""
        from openenv_mcp.client._pettingzoo import MCPPettingZooEnv

        return MCPPettingZooEnv.from_client(
            self.sync(), render_mode=render_mode, mask_in_observation=mask_in_observation
        )

    def as_pettingzoo_parallel(
        self, render_mode: str | None = None, *, mask_in_observation: bool = False
    ) -> MCPPettingZooParallelEnv:
        """A :class:`pettingzoo.ParallelEnv` over a server of seats of a game of
        simultaneous moves (see :class:`~openenv_mcp.client.MCPPettingZooParallelEnv`)."""
        from openenv_mcp.client._pettingzoo import MCPPettingZooParallelEnv

        return MCPPettingZooParallelEnv.from_client(
            self.sync(), render_mode=render_mode, mask_in_observation=mask_in_observation
        )

    async def seat(
        self,
        handle: str | None = None,
        *,
        table_id: str | None = None,
        join: bool = False,
        name: str | None = None,
    ) -> Seat:
        """One seat of a game on a server of seats, on this client's connection (made
        here if it is not yet): the seat ``handle`` names (a handle another client's
        reset handed out), or with ``join=True`` an open seat taken (of the game
        ``table_id``, the seat ``name``; by default the oldest game's first open seat)::

            async with MCPEnvClient("http://host:8000/mcp") as client:
                seat = await client.seat(handle)
                obs, reward, terminated, truncated, info = await seat.last()

        See :class:`~openenv_mcp.client.Seat`.
        """
        return await open_seat(self.session, handle, table_id=table_id, join=join, name=name)

    async def take_seats(
        self,
        seats: str | list[str] = "all",
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        from_snapshot: str | None = None,
    ) -> dict[str, Seat]:
        """Start a game holding ``seats`` (``"all"``, or names), by name in the game's
        order; from a seat's :meth:`Seat.snapshot` (``from_snapshot``), at that position
        at a new table (one member of a GRPO group)::

            saved = await seats["player_0"].snapshot()
            group = [await client.take_seats(from_snapshot=saved) for _ in range(8)]
        """
        return await take_seats(
            self.session, seats, seed=seed, options=options, from_snapshot=from_snapshot
        )

    def __repr__(self) -> str:
        return f"<MCPEnvClient {self.session!r} episode={self.episode_id}>"
