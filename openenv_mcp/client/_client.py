"""``MCPEnvClient``: a session and its first episode, in one object.

The convenience most code wants, with the faces built on top of it: ``sync()``
(:class:`~._sync.SyncEnvClient`) and ``as_gym()`` (:class:`~._gym.MCPGymEnv`).
"""

from __future__ import annotations

from typing import Unpack

from openenv_mcp.client._gym import MCPGymEnv
from openenv_mcp.client._session import Episode, Session, SessionOptions, Target
from openenv_mcp.client._sync import SyncEnvClient

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

    def __repr__(self) -> str:
        return f"<MCPEnvClient {self.session!r} episode={self.episode_id}>"
