"""``SyncEnvClient``: :class:`MCPEnvClient` without ``await``.

The async client runs on an event loop of its own, in a background thread (an
anyio blocking portal); each sync method hands a coroutine to that loop and
waits for its answer. Because the caller's thread only waits, this works the
same in a plain script and inside a running event loop (a Jupyter cell, an
async trainer), where ``asyncio.run`` would refuse to start.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from anyio.from_thread import BlockingPortal, start_blocking_portal
from gymnasium import spaces

from openenv_mcp.client._client import ClientFrames, MCPEnvClient, Transition
from openenv_mcp.client._spaces import ServerSpec
from openenv_mcp.environment import ActionSet
from openenv_mcp.errors import ResetNeeded

if TYPE_CHECKING:
    from openenv_mcp.client._gym import MCPGymEnv

__all__ = ["EventLoopThread", "SyncEnvClient"]

T = TypeVar("T")


class EventLoopThread:
    """An asyncio event loop on a daemon thread, for driving async clients from sync code."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = self._stack.enter_context(
            start_blocking_portal("asyncio", name="openenv-mcp-client")
        )
        self._lock = threading.Lock()

    def run(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``await func(*args)`` on the loop and return (or raise) its outcome.

        Raises:
            ResetNeeded: the loop was stopped (its client closed).
        """
        portal = self._portal
        if portal is None:
            raise ResetNeeded("this client is closed")
        return portal.call(func, *args)

    def stop(self) -> None:
        """Stop the loop and join its thread. Idempotent."""
        with self._lock:
            if self._portal is None:
                return
            self._portal = None
        self._stack.close()


class SyncEnvClient:
    """The blocking face of an :class:`MCPEnvClient`: the same API without ``await``.

    Made by :meth:`MCPEnvClient.sync`::

        with MCPEnvClient("openenv-mcp serve atari --game pong").sync() as env:
            obs, info = env.reset(seed=0)
            obs, reward, terminated, truncated, info = env.step("FIRE")
    """

    def __init__(self, client: MCPEnvClient, loop: EventLoopThread, *, owns_loop: bool) -> None:
        self._client = client
        self._loop = loop
        self._owns_loop = owns_loop

    @classmethod
    def start(cls, client: MCPEnvClient) -> SyncEnvClient:
        """Start a loop thread and connect ``client`` on it.

        Raises:
            RuntimeError: ``client`` is already connected (on another loop, where
                its connection must stay).
        """
        if client.connected:
            raise RuntimeError(
                "sync() needs a client that is not connected yet: its connection must live "
                "on the sync client's own event loop. Use MCPEnvClient(target).sync()."
            )
        loop = EventLoopThread()
        try:
            loop.run(client.connect)
        except BaseException:
            loop.stop()
            raise
        return cls(client, loop, owns_loop=True)

    def __enter__(self) -> SyncEnvClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- what the async client knows -------------------------------------------------------

    @property
    def client(self) -> MCPEnvClient:
        """The async client underneath (its coroutines belong to this client's loop)."""
        return self._client

    @property
    def spec(self) -> ServerSpec:
        """The server's static description."""
        return self._client.spec

    @property
    def env_name(self) -> str:
        """The environment's registered name."""
        return self._client.env_name

    @property
    def actions(self) -> ActionSet | None:
        """The discrete actions, or ``None`` for free-form actions."""
        return self._client.actions

    def get_action_meanings(self) -> list[str]:
        """Action names in index order."""
        return self._client.get_action_meanings()

    @property
    def action_space(self) -> spaces.Space[Any]:
        """The Gymnasium action space."""
        return self._client.action_space

    @property
    def observation_space(self) -> spaces.Space[Any]:
        """The Gymnasium observation space."""
        return self._client.observation_space

    @property
    def tool_names(self) -> list[str]:
        """Every tool the server lists."""
        return self._client.tool_names

    @property
    def episode_id(self) -> str | None:
        """This client's episode handle (``None`` until the first reset)."""
        return self._client.episode_id

    @property
    def frames(self) -> ClientFrames:
        """How array observations travel (``"zstd"``, ``"raw"`` or ``"png"``)."""
        return self._client.frames

    @property
    def connected(self) -> bool:
        """Whether the connection is open."""
        return self._client.connected

    # -- the episode -------------------------------------------------------------------------

    def reset(
        self,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        from_snapshot: str | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """See :meth:`MCPEnvClient.reset`."""

        async def reset() -> tuple[Any, dict[str, Any]]:
            return await self._client.reset(seed=seed, options=options, from_snapshot=from_snapshot)

        return self._loop.run(reset)

    def step(self, action: Any) -> Transition:
        """See :meth:`MCPEnvClient.step`."""
        return self._loop.run(self._client.step, action)

    def state(self) -> tuple[Any, dict[str, Any]]:
        """See :meth:`MCPEnvClient.state`."""
        return self._loop.run(self._client.state)

    def render(self) -> np.ndarray | None:
        """See :meth:`MCPEnvClient.render`."""
        return self._loop.run(self._client.render)

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        """See :meth:`MCPEnvClient.call`."""

        async def call() -> dict[str, Any]:
            return await self._client.call(tool, **args)

        return self._loop.run(call)

    def snapshot(self) -> str:
        """See :meth:`MCPEnvClient.snapshot`."""
        return self._loop.run(self._client.snapshot)

    def release_snapshot(self, snapshot_id: str) -> None:
        """See :meth:`MCPEnvClient.release_snapshot`."""
        self._loop.run(self._client.release_snapshot, snapshot_id)

    def spawn(self) -> SyncEnvClient:
        """Another sync client on this connection, with an episode of its own."""
        return SyncEnvClient(self._client.spawn(), self._loop, owns_loop=False)

    def close(self) -> None:
        """Close the episode, and for the owning client the connection and its loop."""
        try:
            self._loop.run(self._client.close)
        except ResetNeeded:  # the owner already stopped the loop, closing everything
            pass
        finally:
            if self._owns_loop:
                self._loop.stop()

    def as_gym(self, render_mode: str | None = None) -> MCPGymEnv:
        """A :class:`gymnasium.Env` over this client (see :class:`MCPGymEnv`)."""
        from openenv_mcp.client._gym import MCPGymEnv

        return MCPGymEnv.from_client(self, render_mode=render_mode)

    def __repr__(self) -> str:
        return f"<SyncEnvClient of {self._client!r}>"
