"""Episodes and snapshots: handles, isolation, order, limits and eviction.

Each live episode owns one environment instance (in a :class:`Slot` here or a
:class:`RemoteSlot` in a worker process) and one lock; every call on an
episode holds its lock, so calls on one episode are serialized and calls on
different episodes run independently. Environment code runs on a worker thread
(or in a worker process) under a per-call timeout, so a slow environment fails
alone.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread

from openenv_mcp.environment import Environment, StepResult
from openenv_mcp.errors import (
    EnvCallTimeout,
    EnvCrashed,
    OpenEnvError,
    ResetNeeded,
    ServerFull,
    UnknownEpisode,
    UnknownSnapshot,
)
from openenv_mcp.server._settings import ServerSettings
from openenv_mcp.server._slots import Op, RemoteSlot, Slot, WorkerPool, op_close, run_here

__all__ = ["Episode", "EpisodeManager", "Snapshot"]

log = logging.getLogger("openenv_mcp.server")

T = TypeVar("T")
Status = Literal["new", "running", "ended", "broken"]


def _handle(prefix: str) -> str:
    # 128 bits from the OS CSPRNG: handles are capabilities, not labels.
    return f"{prefix}_{secrets.token_urlsafe(16)}"


@dataclass
class Episode:
    """One live episode and everything the server tracks about it."""

    id: str
    slot: Slot | RemoteSlot
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    status: Status = "new"
    step: int = 0
    episode_return: float = 0.0
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    #: The observation's line for result texts (the observation stays in the slot).
    obs_text: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    broken_reason: str = ""
    last_used: float = field(default_factory=time.monotonic)
    snapshots: set[str] = field(default_factory=set)
    #: Set when the env call last abandoned at its timeout returns; until then that
    #: call may still be using the env, so nothing else may touch it.
    abandoned: threading.Event | None = None

    @property
    def env(self) -> Environment:
        """The environment, where it lives in this process."""
        if isinstance(self.slot, RemoteSlot):
            raise AttributeError(f"episode {self.id}'s environment is in a worker process")
        return self.slot.env

    @property
    def env_in_use(self) -> bool:
        """Whether an abandoned call may still be running in this episode's env."""
        return self.abandoned is not None and not self.abandoned.is_set()

    def record(self, result: StepResult, obs_text: str | None) -> None:
        """Fold a step result into the episode's counters."""
        self.step += 1
        self.reward = float(result.reward)
        self.episode_return += self.reward
        self.terminated = bool(result.terminated)
        self.truncated = bool(result.truncated)
        self.obs_text = obs_text
        self.info = dict(result.info)
        self.status = "ended" if (self.terminated or self.truncated) else "running"

    def start(self, info: dict[str, Any], obs_text: str | None) -> None:
        """Reset the counters for a fresh episode."""
        self.status = "running"
        self.step = 0
        self.episode_return = 0.0
        self.reward = 0.0
        self.terminated = self.truncated = False
        self.obs_text = obs_text
        self.info = dict(info)
        self.broken_reason = ""

    def require_running(self, what: str) -> None:
        """Enforce order: ``step`` only between ``reset`` and the episode's end."""
        if self.status == "new":
            raise ResetNeeded(f"{what} before reset: call reset first (episode {self.id})")
        if self.status == "broken":
            raise ResetNeeded(
                f"episode {self.id} is broken ({self.broken_reason}); call reset to start over"
            )
        if self.status == "ended":
            why = "terminated" if self.terminated else "truncated"
            raise ResetNeeded(
                f"episode {self.id} has ended ({why} at step {self.step}, return "
                f"{self.episode_return:g}); call reset to start a new one"
            )


@dataclass
class Snapshot:
    """A saved episode state that new episodes can start from."""

    id: str
    episode_id: str
    #: What the environment saved, with its observation (``op_snapshot``'s output).
    data: Any
    step: int
    episode_return: float
    status: Status
    terminated: bool
    truncated: bool
    info: dict[str, Any]

    def apply(self, episode: Episode, obs_text: str | None) -> None:
        """Set ``episode``'s counters to the snapshot's (the env is restored separately)."""
        episode.status = self.status
        episode.step = self.step
        episode.episode_return = self.episode_return
        episode.reward = 0.0
        episode.terminated = self.terminated
        episode.truncated = self.truncated
        episode.obs_text = obs_text
        episode.info = dict(self.info)
        episode.broken_reason = ""


class EpisodeManager:
    """Live episodes and snapshots of one server."""

    def __init__(
        self,
        make_env: Callable[[], Environment],
        settings: ServerSettings,
        threads: bool,
        clock: Callable[[], float] = time.monotonic,
        pool: WorkerPool | None = None,
    ) -> None:
        self._make_env = make_env
        self.settings = settings
        #: Seconds, for idle eviction (tests substitute a clock they control).
        self.clock = clock
        #: Run environment code on worker threads (with the per-call timeout).
        self.threads = threads
        #: Worker processes holding every environment, or None: they live here.
        self.pool = pool
        self.episodes: dict[str, Episode] = {}
        self.snapshots: dict[str, Snapshot] = {}
        #: The episode used when a single-client caller passes no handle.
        self.default_id: str | None = None
        #: Env calls abandoned on their threads (a thread cannot be stopped): each
        #: event is set when its call finally returns.
        self._abandoned: list[threading.Event] = []

    # -- lookup ----------------------------------------------------------------------

    def get(self, episode_id: str) -> Episode:
        """The live episode with this handle.

        Raises:
            UnknownEpisode: naming the handle and the likely reasons.
        """
        episode = self.episodes.get(episode_id)
        if episode is None:
            raise UnknownEpisode(
                f"no live episode {episode_id!r}: it was never created, was closed, or was "
                f"evicted after {self.settings.idle_timeout:g}s idle; call reset without "
                "episode_id to start a new one"
            )
        episode.last_used = self.clock()
        return episode

    def get_snapshot(self, snapshot_id: str) -> Snapshot:
        """The live snapshot with this handle."""
        snapshot = self.snapshots.get(snapshot_id)
        if snapshot is None:
            raise UnknownSnapshot(
                f"no live snapshot {snapshot_id!r}: it was never created, was released, or "
                "its episode was closed"
            )
        return snapshot

    # -- lifecycle -------------------------------------------------------------------

    async def create(self) -> Episode:
        """Mint a new episode with a fresh environment instance.

        Raises:
            ServerFull: when ``max_episodes`` are live even after idle eviction.
        """
        if len(self.episodes) >= self.settings.max_episodes:
            await self.evict_idle()
        if len(self.episodes) >= self.settings.max_episodes:
            raise ServerFull(
                f"server full: {len(self.episodes)} live episodes (max_episodes="
                f"{self.settings.max_episodes}); close episodes you no longer need or wait "
                f"for idle ones to be evicted after {self.settings.idle_timeout:g}s"
            )
        slot = await self.new_slot()
        episode = Episode(id=_handle("ep"), slot=slot, last_used=self.clock())
        self.episodes[episode.id] = episode
        return episode

    async def close(self, episode_id: str) -> None:
        """Close an episode, free its environment and its snapshots."""
        episode = self.episodes.pop(episode_id, None)
        if episode is None:
            return
        if self.default_id == episode_id:
            self.default_id = None
        for snapshot_id in episode.snapshots:
            self.snapshots.pop(snapshot_id, None)
        # Wait for a call in flight on this episode before freeing its env.
        async with episode.lock:
            if episode.env_in_use:
                log.warning("episode %s: its env is still busy in an abandoned call", episode_id)
            else:
                await self._close_env(episode.slot)

    async def close_all(self) -> None:
        """Close every episode (server shutdown)."""
        for episode_id in list(self.episodes):
            await self.close(episode_id)

    async def evict_idle(self) -> int:
        """Close episodes unused for ``idle_timeout`` seconds; return how many."""
        cutoff = self.clock() - self.settings.idle_timeout
        stale = [
            e.id for e in self.episodes.values() if e.last_used < cutoff and not e.lock.locked()
        ]
        for episode_id in stale:
            log.info("evicting idle episode %s", episode_id)
            await self.close(episode_id)
        return len(stale)

    async def replace_env(self, episode: Episode) -> None:
        """Give a broken episode a fresh environment instance."""
        old, episode.slot = episode.slot, await self.new_slot()
        if not episode.env_in_use:
            # A timed-out call may still be running in its thread: leave that env be.
            await self._close_env(old)
        episode.abandoned = None

    def add_snapshot(self, episode: Episode, data: Any) -> Snapshot:
        """Record a snapshot of ``episode`` taken as ``data``."""
        if len(self.snapshots) >= self.settings.max_snapshots:
            raise ServerFull(
                f"server full: {len(self.snapshots)} live snapshots (max_snapshots="
                f"{self.settings.max_snapshots}); release snapshots you no longer need"
            )
        snapshot = Snapshot(
            id=_handle("snap"),
            episode_id=episode.id,
            data=data,
            step=episode.step,
            episode_return=episode.episode_return,
            status=episode.status,
            terminated=episode.terminated,
            truncated=episode.truncated,
            info=dict(episode.info),
        )
        self.snapshots[snapshot.id] = snapshot
        episode.snapshots.add(snapshot.id)
        return snapshot

    def release_snapshot(self, snapshot_id: str) -> None:
        """Free a snapshot."""
        snapshot = self.get_snapshot(snapshot_id)
        del self.snapshots[snapshot_id]
        owner = self.episodes.get(snapshot.episode_id)
        if owner is not None:
            owner.snapshots.discard(snapshot_id)

    # -- running environment code ------------------------------------------------------

    async def run_blocking(
        self, fn: Callable[..., T], *args: Any, episodes: Sequence[Episode] = ()
    ) -> T:
        """Run environment code as configured (worker thread with timeout, or inline).

        Once started, a call runs to its end or its timeout, even if the caller is
        cancelled meanwhile (the client gave up, or shutdown): the episode's lock
        stays held, so no other call can reach the env while it runs. A call that
        times out is abandoned on its thread and marked on ``episodes``, whose envs
        it may still be using.
        """
        if not self.threads:
            return fn(*args)
        returned = threading.Event()

        def run() -> T:
            try:
                return fn(*args)
            finally:
                returned.set()

        try:
            with anyio.CancelScope(shield=True), anyio.fail_after(self.settings.call_timeout):
                result = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        finally:
            if not returned.is_set():
                self._abandoned.append(returned)
                for episode in episodes:
                    episode.abandoned = returned
        return result

    def abandoned_calls(self) -> int:
        """How many abandoned env calls are still running on their threads."""
        self._abandoned = [event for event in self._abandoned if not event.is_set()]
        return len(self._abandoned)

    async def new_slot(self) -> Slot | RemoteSlot:
        """A fresh environment instance, where environments live."""
        if self.pool is not None:
            return await self.pool.new_slot()
        return Slot(await self.run_blocking(self._make_env))

    async def run_ops(self, items: Sequence[Op], episodes: Sequence[Episode] = ()) -> list[Any]:
        """Run operations where their environments live: each one's value or exception.

        In worker processes, each worker runs its share at once and the event
        loop goes on meanwhile; here, in turn (on a thread under the timeout, or
        inline). A timeout is each affected item's outcome.
        """
        if self.pool is not None:
            return await self.pool.run_many(items)
        try:
            return await self.run_blocking(run_here, items, episodes=episodes)
        except TimeoutError as exc:
            return [exc] * len(items)

    async def call(self, episode: Episode, what: str, op: Callable[..., T], *args: Any) -> T:
        """Run ``op(slot, *args)`` on ``episode``'s environment (its lock held by the caller).

        An exception from the environment comes back as :meth:`failed` says; the
        server and other episodes go on.
        """
        (outcome,) = await self.run_ops([(episode.slot, op, args)], episodes=(episode,))
        if isinstance(outcome, OpenEnvError):
            raise outcome  # the env's own validation error: the episode is fine
        if isinstance(outcome, Exception):
            raise self.failed(episode, what, outcome) from outcome
        return outcome  # type: ignore[no-any-return]

    def failed(self, episode: Episode, what: str, exc: Exception) -> OpenEnvError:
        """The error to send for ``exc``, raised by ``episode``'s environment in ``what``.

        The environment's own validation errors (:class:`OpenEnvError`) leave the
        episode as it was; anything else breaks it (:class:`EnvCrashed`,
        :class:`EnvCallTimeout`).
        """
        if isinstance(exc, OpenEnvError):
            return exc
        episode.status = "broken"
        if isinstance(exc, TimeoutError):
            episode.broken_reason = f"timed out after {self.settings.call_timeout:g}s in {what}"
            log.error("episode %s: %s", episode.id, episode.broken_reason)
            return EnvCallTimeout(
                f"the environment {episode.broken_reason}; episode {episode.id} is broken, "
                "call reset to start over"
            )
        episode.broken_reason = f"{type(exc).__name__} in {what}"
        log.error("episode %s: environment raised in %s", episode.id, what, exc_info=exc)
        return EnvCrashed(
            f"the environment raised {type(exc).__name__} in {what}; episode {episode.id} "
            "is broken, call reset to start over"
        )

    async def _close_env(self, slot: Slot | RemoteSlot) -> None:
        (outcome,) = await self.run_ops([(slot, op_close, ())])
        if isinstance(outcome, Exception):
            log.error("error while closing an environment", exc_info=outcome)
