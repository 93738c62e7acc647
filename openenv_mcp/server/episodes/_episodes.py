"""The server's table of live episodes and snapshots: handles, locks, the default
episode, limits, eviction, and what a failed environment call means.

Each live episode owns one environment (in the runtime: this process or a
worker) and one lock; every call on an episode holds its lock, so calls on one
episode are serialized and calls on different episodes run independently.
The episode's own counters live with its environment
(:class:`~openenv_mcp.pipeline.EpisodePipeline`); the table keeps only what the
server must know without asking it: where the environment is, when the episode
was last used, its snapshots, and whether it is broken (its environment raised
or hung, so it is untrusted until ``reset``).
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import numpy as np

from openenv_mcp.errors import (
    ArgumentError,
    EnvCallTimeout,
    EnvCrashed,
    EpisodeLost,
    EpisodeRequired,
    OpenEnvError,
    RecordingFailed,
    ResetNeeded,
    ServerFull,
    UnknownEpisode,
    UnknownSnapshot,
)
from openenv_mcp.pipeline import Frame, Op, SavedEpisode, Step
from openenv_mcp.pipeline.view import Reply
from openenv_mcp.server._settings import ServerSettings
from openenv_mcp.server.episodes._runtime import Runtime
from openenv_mcp.server.faces._feed import Feed
from openenv_mcp.sharding import shard_of, with_shard
from openenv_mcp.tasks import TaskLedger
from openenv_mcp.wire.handles import public_id

__all__ = [
    "Caller",
    "Episode",
    "EpisodeTable",
    "Run",
    "Snapshot",
    "current_caller",
    "current_client",
    "current_run",
    "made_episodes",
]

log = logging.getLogger("openenv_mcp.server")

R = TypeVar("R")

#: Who the call being served came from, for the per-client episode cap: set by the
#: HTTP guard (the client's address); ``None`` over stdio and in memory, where the
#: server has one client.
current_client: ContextVar[str | None] = ContextVar("openenv_current_client", default=None)
#: Where the episodes made in this context are noted: a long call that must close every
#: episode it made however it ends (an eval in the server, cancelled mid-run) sets it.
made_episodes: ContextVar[set[str] | None] = ContextVar("openenv_made_episodes", default=None)


@dataclass(eq=False)
class Run:
    """A harness run an episode host tells apart across its connections: the process that
    starts the stdio servers relaying to it (its pid and start time, or what
    ``OPENENV_MCP_HARNESS_RUN`` names). A harness that starts a server per tool call
    makes a new connection, a new :class:`Caller`, for every call; the run's default
    episode (the last any of its connections reset) is what such a call without a
    handle means.

    Two of its connections open at once (concurrent samples, parallel tool calls) make
    it *crowded*: which episode a call without a handle means can no longer be told, so
    from then on such calls must name their episode (a connection's own default, in a
    connection held open, still stands).
    """

    key: str
    default_id: str | None = None
    #: Its connections open now.
    open: int = 0
    crowded: bool = False
    #: When its last connection closed (the table's clock), to forget it once idle.
    left: float = 0.0


@dataclass(eq=False)
class Caller:
    """A client its transport tells apart (a stdio process, a connection to an episode
    host, a Streamable HTTP session): the episode its calls without a handle mean (the
    last it reset)."""

    default_id: str | None = None
    #: The harness run its connection belongs to (an episode host's connection, where
    #: the relay named one): its default stands in while this caller has none.
    run: Run | None = None


#: The caller of the call being served, where the transport tells callers apart (set by
#: each line connection); ``None`` elsewhere.
current_caller: ContextVar[Caller | None] = ContextVar("openenv_current_caller", default=None)

#: The harness run of the connection being served, where an episode host was told one
#: (:meth:`EpisodeTable.joined`); ``None`` elsewhere.
current_run: ContextVar[Run | None] = ContextVar("openenv_current_run", default=None)

#: What a call without a handle or a default episode is told: its client may have made
#: its episode in another connection or server process.
_FRESH = (
    "if reset was called already, it was in another connection or server process: this "
    "client seems to have reconnected, or to start a new server for each call, and a new "
    "connection has no default episode. Pass the episode_id from reset's answer to every "
    "call (or, for a client that starts a stdio server per call, serve with --stdio "
    "--episode-host: episodes then outlive each server process)"
)
#: The same in an episode host, for a connection of a harness run none of whose
#: connections has reset an episode.
_FRESH_RUN = (
    "if reset was called already, it came from another harness process than this call (a "
    "launcher such as `uv run` between the harness and each server makes every call a "
    "process of its own: set OPENENV_MCP_HARNESS_RUN to one value for the whole run). Pass "
    "the episode_id from reset's answer to every call"
)


def _handle(prefix: str, shard: str | None) -> str:
    # 128 bits from the OS CSPRNG: handles are capabilities, not labels.
    return with_shard(f"{prefix}_{secrets.token_urlsafe(16)}", shard)


@dataclass(eq=False)
class Episode:
    """One live episode, as the server tracks it."""

    id: str
    #: Where its environment is (the runtime's reference).
    ref: Any
    last_used: float
    #: Taken without a trip through the event loop when free (most calls): a step's
    #: whole server time is ~50 us, and a checkpoint per call is a share of it.
    lock: anyio.Lock = field(default_factory=lambda: anyio.Lock(fast_acquire=True))
    snapshots: set[str] = field(default_factory=set)
    #: Why its environment is untrusted until reset ("" while it is fine).
    broken: str = ""
    #: Its last view sent (without the observation): what ``state`` tells of it once broken.
    last_view: dict[str, Any] | None = None
    #: The client that created it (``current_client``), whose cap it counts against.
    client: str | None = None
    #: Made by a protocol whose clients never close episodes (OpenEnv's plain HTTP
    #: routes): at its client's cap the least recently used such episode is closed to
    #: make room, as OpenEnv's own server forgets an HTTP episode after each call.
    reclaimable: bool = False


@dataclass(frozen=True)
class Snapshot:
    """A saved episode that new episodes can start from."""

    id: str
    episode_id: str
    saved: SavedEpisode
    #: What it holds, in bytes (:func:`held_bytes`), counted against ``max_snapshot_mib``.
    nbytes: int = 0
    #: The client that took it, whose share of the snapshot budget it counts against.
    client: str | None = None


def held_bytes(value: Any, depth: int = 0) -> int:
    """About how many bytes ``value`` holds: its buffers, strings and arrays, through
    containers, dataclasses and plain objects (a lower bound for opaque objects)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, str):
        return len(value)
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if depth > 32:
        return sys.getsizeof(value)
    if isinstance(value, dict):
        items = value.items()
        return 64 + sum(held_bytes(k, depth + 1) + held_bytes(v, depth + 1) for k, v in items)
    if isinstance(value, list | tuple | set | frozenset):
        return 56 + sum(held_bytes(v, depth + 1) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return 56 + sum(
            held_bytes(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        )
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return 56 + held_bytes(vars(value), depth + 1)
    return sys.getsizeof(value)


class EpisodeTable:
    """Live episodes and snapshots of one server."""

    def __init__(
        self,
        runtime: Runtime,
        settings: ServerSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.runtime = runtime
        self.settings = settings
        #: Seconds, for idle eviction (tests substitute a clock they control).
        self.clock = clock
        self.episodes: dict[str, Episode] = {}
        self.snapshots: dict[str, Snapshot] = {}
        #: Bytes the live snapshots hold (their ``nbytes``).
        self.snapshot_bytes = 0
        #: The caller of in-process clients no transport tells apart (FastMCP's in-memory
        #: client): one default episode for them all.
        self.local = Caller()
        #: Why recording fails, while it does (``/healthz`` says degraded); ``None``: fine.
        self.recording_problem: str | None = None
        #: What watchers see of the episodes (the web page); ``None`` when nobody can watch.
        self.feed: Feed | None = None
        #: Harness runs an episode host was told of, by key (:meth:`joined`).
        self.runs: dict[str, Run] = {}
        #: Episodes made since the server started (an unknown handle in a server that
        #: made none comes from another server process).
        self.made = 0
        #: Each task's ended episodes and successes (the ``task-stats`` resource).
        self.task_ledger = TaskLedger()
        #: Called with each closed episode's handle (a table of seats forgets its seat).
        self.closers: list[Callable[[str], None]] = []

    # -- lookup ----------------------------------------------------------------------

    def get(self, episode_id: str) -> Episode:
        """The live episode with this handle.

        Raises:
            UnknownEpisode: naming the handle and the likely reasons.
        """
        episode = self.episodes.get(episode_id)
        if episode is None:
            self.require_here(episode_id, "episode")
            if not self.made:
                raise UnknownEpisode(
                    f"no live episode {episode_id!r}: this server process has made no "
                    "episode since it started, so the id comes from another one: the client "
                    "seems to start a new server for each call, or to have reconnected to a "
                    "server that restarted (its episodes went with it). Call reset without "
                    "episode_id to start a new one; for a client that starts a stdio server "
                    "per call, serve with --stdio --episode-host so episodes outlive each "
                    "server process"
                )
            raise UnknownEpisode(
                f"no live episode {episode_id!r}: it was never created, was closed, or was "
                f"evicted after {self.settings.idle_timeout:g}s idle; call reset without "
                "episode_id to start a new one"
            )
        episode.last_used = self.clock()
        return episode

    def resolve(self, episode_id: str | None, caller: Caller | None) -> Episode:
        """The episode a call means: the one it names, or its caller's default.

        Args:
            episode_id: the handle the call passed, if any.
            caller: who calls, where the transport tells; ``None`` where nothing tells
                callers apart (HTTP without a session), where there is no default.

        Raises:
            EpisodeRequired: no handle, and nothing tells whose default to use.
            ResetNeeded: no handle and no default episode (yet, or any more).
        """
        if episode_id is not None:
            return self.get(episode_id)
        if caller is None:
            raise EpisodeRequired(
                "episode_id is required over HTTP without an MCP session (a sessionless "
                "request: nothing tells this caller apart from the others sharing the "
                "server): call reset (it returns an episode_id) and pass that id to later "
                "calls"
            )
        run = caller.run
        default = caller.default_id
        if default is None and run is not None:
            if run.crowded:
                raise EpisodeRequired(
                    "this call names no episode, and the harness run it comes from has had "
                    "calls in flight from several server processes at once (concurrent "
                    "samples, or parallel tool calls, each starting its own server), so "
                    "which episode it means cannot be told: pass the episode_id from "
                    "reset's answer"
                )
            default = run.default_id
        if default is None:
            why = _FRESH if run is None else _FRESH_RUN
            raise ResetNeeded(f"no episode yet: call reset first; {why}")
        episode = self.episodes.get(default)
        if episode is None:  # closed, or evicted when idle
            caller.default_id = None
            if run is not None and run.default_id == default:
                run.default_id = None
            raise ResetNeeded(
                "no episode any more (the last one was closed, or evicted after "
                f"{self.settings.idle_timeout:g}s idle): call reset to start one"
            )
        episode.last_used = self.clock()
        return episode

    def default_of(self, caller: Caller | None) -> str | None:
        """The live episode a call of ``caller`` without a handle means, if any: its own
        default, else its run's (while the run is not crowded)."""
        if caller is None:
            return None
        default = caller.default_id
        run = caller.run
        if default is None and run is not None and not run.crowded:
            default = run.default_id
        return default if default in self.episodes else None

    @contextmanager
    def joined(self, key: str | None) -> Iterator[Run | None]:
        """Serve one connection of the harness run ``key`` within (``None``: none was
        named, the connection is a caller on its own): its calls without a handle fall
        back on the run's default episode (see :class:`Run`)."""
        if key is None:
            yield None
            return
        now = self.clock()
        for stale in [
            k
            for k, r in self.runs.items()
            if not r.open and now - r.left > self.settings.idle_timeout
        ]:
            del self.runs[stale]
        run = self.runs.get(key)
        if run is None:
            run = self.runs[key] = Run(key)
        run.open += 1
        if run.open > 1 and not run.crowded:
            run.crowded = True
            log.info("harness run %s: connections at once; calls must name their episode", key)
        token = current_run.set(run)
        try:
            yield run
        finally:
            current_run.reset(token)
            run.open -= 1
            run.left = self.clock()

    async def for_reset(
        self, episode_id: str | None, new: bool, caller: Caller | None
    ) -> tuple[Episode, bool]:
        """The episode a ``reset`` restarts, or a new one (``True``) that becomes the
        caller's default."""
        if episode_id is not None:
            return self.get(episode_id), False
        default = None if new else self.default_of(caller)
        if default is not None:
            episode, created = self.get(default), False
        else:
            episode, created = await self.create(), True
        if caller is not None:
            caller.default_id = episode.id
            if caller.run is not None:
                caller.run.default_id = episode.id
        return episode, created

    @asynccontextmanager
    async def locked(self, episode_id: str | None, caller: Caller | None) -> AsyncIterator[Episode]:
        """The episode a call means, with its lock held."""
        episode = self.resolve(episode_id, caller)
        async with episode.lock:
            if self.episodes.get(episode.id) is not episode:
                raise UnknownEpisode(f"episode {episode.id!r} was closed while this call waited")
            yield episode

    def get_snapshot(self, snapshot_id: str) -> Snapshot:
        """The live snapshot with this handle."""
        snapshot = self.snapshots.get(snapshot_id)
        if snapshot is None:
            self.require_here(snapshot_id, "snapshot")
            raise UnknownSnapshot(
                f"no live snapshot {snapshot_id!r}: it was never created, was released, or "
                "its episode was closed"
            )
        return snapshot

    # -- shards ------------------------------------------------------------------------

    def require_here(self, handle: str, what: str) -> None:
        """Refuse a handle of another shard: a call reaches a shard not its own only when
        the proxy found the handle's shard gone (or nothing routes, as over stdio).

        Raises:
            EpisodeLost: naming the handle, its shard and this one.
        """
        own = self.settings.shard
        theirs = shard_of(handle)
        if own is not None and theirs is not None and theirs != own:
            raise EpisodeLost(
                f"{what} {handle!r} lived on shard {theirs!r}, which is gone (this is shard "
                f"{own!r}): its state went with it; call reset without episode_id to start "
                "a new episode"
            )

    def check_route(self, shard: str | None, handles: Sequence[str | None]) -> None:
        """Check a call's routing parameter (``reset``'s and ``step_batch``'s ``shard``)
        against this server and the handles the call names.

        Raises:
            ArgumentError: ``shard`` on an unsharded server, or a handle of another shard
                than the one the call was routed to.
            EpisodeLost: the call asked for a shard that is gone (it came here instead).
            UnknownEpisode: a handle of another shard, with no ``shard`` to route on.
        """
        own = self.settings.shard
        if shard is None:
            for handle in handles:
                theirs = None if handle is None else shard_of(handle)
                if own is not None and theirs is not None and theirs != own:
                    raise UnknownEpisode(
                        f"{handle!r} lives on shard {theirs!r} and this call reached shard "
                        f"{own!r}: pass shard={theirs!r} so the call is routed there"
                    )
            return
        if own is None:
            raise ArgumentError(
                f"shard={shard!r}: this server is not sharded (serve --shard NAME, or "
                "--ray, makes one); leave shard out"
            )
        if shard != own:
            raise EpisodeLost(
                f"shard {shard!r} is gone (this call reached shard {own!r}): the episodes "
                "and snapshots it held went with it; reset without shard to start anew"
            )
        for handle in handles:
            theirs = None if handle is None else shard_of(handle)
            if theirs is not None and theirs != own:
                raise ArgumentError(
                    f"{handle!r} lives on shard {theirs!r}, not on shard={shard!r}: one call "
                    "goes to one shard (group step_batch by shard)"
                )

    # -- lifecycle -------------------------------------------------------------------

    async def create(self) -> Episode:
        """Mint a new episode with a fresh environment.

        Raises:
            ServerFull: when ``max_episodes`` are live even after idle eviction.
        """
        client = current_client.get()
        if client is not None:
            await self._check_client_cap(client)
        if len(self.episodes) >= self.settings.max_episodes:
            await self.evict_idle()
        if len(self.episodes) >= self.settings.max_episodes:
            raise ServerFull(
                f"server full: {len(self.episodes)} live episodes (max_episodes="
                f"{self.settings.max_episodes}); close episodes you no longer need or wait "
                f"for idle ones to be evicted after {self.settings.idle_timeout:g}s"
            )
        episode_id = _handle("ep", self.settings.shard)
        episode = Episode(
            id=episode_id,
            ref=await self._new_env(episode_id),
            last_used=self.clock(),
            client=client,
        )
        self.episodes[episode.id] = episode
        self.made += 1
        noted = made_episodes.get()
        if noted is not None:
            noted.add(episode.id)
        if self.feed is not None:
            self.feed.opened(episode.id)
        return episode

    @property
    def client_cap(self) -> int:
        """Most live episodes one client may hold (``max_episodes_per_client``)."""
        cap = self.settings.max_episodes_per_client
        return cap if cap is not None else max(1, self.settings.max_episodes // 4)

    async def _check_client_cap(self, client: str) -> None:
        """Refuse a new episode to a client holding its cap, after closing its idle ones
        and then, if it still holds its cap, its least recently used reclaimable one.

        Raises:
            ServerFull: naming the cap, the client and what to do.
        """
        cap = self.client_cap
        held = await self._make_room(client, cap, self._held_by)
        if held >= cap:
            raise ServerFull(
                f"this client (address {client}) holds {held} live episodes, its cap "
                f"(max_episodes_per_client={cap}, of max_episodes={self.settings.max_episodes} "
                "for all clients): close episodes you no longer need (the close tool), wait "
                f"for idle ones to be evicted after {self.settings.idle_timeout:g}s, or ask "
                "the server's operator to raise --max-episodes-per-client"
            )

    async def _make_room(self, client: str, cap: int, held: Callable[[str], int]) -> int:
        """Make room for ``client`` at ``cap`` (as ``held`` counts its episodes): its idle
        episodes closed, then its least recently used reclaimable one; what it holds then."""
        if held(client) >= cap:
            await self.evict_idle(client)
        if held(client) >= cap:
            await self._reclaim(client)
        return held(client)

    async def _reclaim(self, client: str) -> None:
        """Close ``client``'s least recently used reclaimable episode not in a call."""
        mine = [
            e
            for e in self.episodes.values()
            if e.client == client and e.reclaimable and not e.lock.locked()
        ]
        if mine:
            oldest = min(mine, key=lambda e: e.last_used)
            log.info("closing %s to make room for its client", public_id(oldest.id))
            await self.close(oldest.id)

    def _held_by(self, client: str) -> int:
        return sum(1 for e in self.episodes.values() if e.client == client)

    async def _new_env(self, episode_id: str) -> Any:
        try:
            return await self.runtime.create(episode_id)
        except OpenEnvError:
            raise
        except TimeoutError:
            raise EnvCallTimeout(
                f"creating an environment took over {self.runtime.call_timeout:g}s (call_timeout)"
            ) from None
        except Exception as exc:
            log.error("creating an environment failed", exc_info=exc)
            raise EnvCrashed(
                f"creating the environment raised {type(exc).__name__}; see the server log"
            ) from exc

    async def renew(self, episode: Episode) -> None:
        """Give a broken episode a fresh environment (its lock held by the caller)."""
        old = episode.ref
        episode.ref = await self._new_env(episode.id)
        episode.broken = ""
        episode.last_view = None
        await self.runtime.discard(old)  # a call abandoned in it keeps it, see discard

    async def close(self, episode_id: str) -> None:
        """Close an episode, free its environment and its snapshots."""
        episode = self.episodes.pop(episode_id, None)
        if episode is None:
            return
        for snapshot_id in episode.snapshots:
            self._forget_snapshot(snapshot_id)
        async with episode.lock:  # a call in flight on this episode finishes first
            await self.runtime.discard(episode.ref)
        if self.feed is not None:
            self.feed.closed_episode(episode_id)
        for closer in self.closers:
            closer(episode_id)

    async def close_all(self) -> None:
        """Close every episode (server shutdown)."""
        for episode_id in list(self.episodes):
            await self.close(episode_id)

    async def evict_idle(self, client: str | None = None) -> int:
        """Close episodes unused for ``idle_timeout`` seconds (of ``client`` only, if
        given); return how many."""
        cutoff = self.clock() - self.settings.idle_timeout
        stale = [
            e.id
            for e in self.episodes.values()
            if e.last_used < cutoff
            and not e.lock.locked()
            and (client is None or e.client == client)
        ]
        for episode_id in stale:
            log.info("evicting idle episode %s", public_id(episode_id))
            await self.close(episode_id)
        return len(stale)

    def add_snapshot(self, episode: Episode, saved: SavedEpisode) -> Snapshot:
        """Keep ``saved`` (a snapshot of ``episode``) under a new handle.

        Raises:
            ServerFull: past ``max_snapshots`` or ``max_snapshot_mib``, or, for an HTTP
                client, past its share of them: the share of ``max_episodes`` that its
                episode cap is, so one client cannot take every snapshot either.
        """
        size = held_bytes(saved)
        settings = self.settings
        if len(self.snapshots) >= settings.max_snapshots:
            raise ServerFull(
                f"server full: {len(self.snapshots)} live snapshots (max_snapshots="
                f"{settings.max_snapshots}); release snapshots you no longer need"
            )
        budget = int(settings.max_snapshot_mib * 2**20)
        if self.snapshot_bytes + size > budget:
            raise ServerFull(
                f"server full: this snapshot holds {size / 2**20:.1f} MiB and the live "
                f"snapshots {self.snapshot_bytes / 2**20:.1f} MiB of at most "
                f"{settings.max_snapshot_mib:g} MiB (max_snapshot_mib); release "
                "snapshots you no longer need"
            )
        client = current_client.get()
        if client is not None:
            self._check_client_snapshots(client, size)
        handle = _handle("snap", settings.shard)
        snapshot = Snapshot(handle, episode.id, saved, nbytes=size, client=client)
        self.snapshots[snapshot.id] = snapshot
        self.snapshot_bytes += size
        episode.snapshots.add(snapshot.id)
        return snapshot

    def _check_client_snapshots(self, client: str, size: int) -> None:
        """Refuse a snapshot past ``client``'s share of the snapshot limits."""
        share = self.client_cap / self.settings.max_episodes
        most = max(1, int(self.settings.max_snapshots * share))
        budget = self.settings.max_snapshot_mib * 2**20 * share
        mine = [s for s in self.snapshots.values() if s.client == client]
        held = sum(s.nbytes for s in mine)
        why = ""
        if len(mine) >= most:
            why = f"holds {len(mine)} live snapshots, its share of max_snapshots ({most})"
        elif held + size > budget:
            why = (
                f"holds {held / 2**20:.1f} MiB of live snapshots and this one "
                f"{size / 2**20:.1f} MiB, over its share of max_snapshot_mib "
                f"({budget / 2**20:g} MiB)"
            )
        if why:
            raise ServerFull(
                f"this client (address {client}) {why}: each client may hold the share of "
                f"the snapshot limits that its episode cap is of max_episodes "
                f"({self.client_cap} of {self.settings.max_episodes}); release snapshots "
                "you no longer need"
            )

    def _forget_snapshot(self, snapshot_id: str) -> None:
        snapshot = self.snapshots.pop(snapshot_id, None)
        if snapshot is not None:
            self.snapshot_bytes -= snapshot.nbytes

    def release_snapshot(self, snapshot_id: str) -> None:
        """Free a snapshot."""
        snapshot = self.get_snapshot(snapshot_id)
        self._forget_snapshot(snapshot_id)
        owner = self.episodes.get(snapshot.episode_id)
        if owner is not None:
            owner.snapshots.discard(snapshot_id)

    # -- environment calls -------------------------------------------------------------

    def require_sound(self, episode: Episode) -> None:
        """Refuse a call on a broken episode (its environment raised or hung)."""
        if episode.broken:
            raise ResetNeeded(
                f"episode {episode.id} is broken ({episode.broken}); call reset to start over"
            )

    async def call(self, episode: Episode, op: Op[R]) -> R:
        """Run ``op`` on ``episode``'s pipeline (its lock held by the caller).

        Raises:
            OpenEnvError: the environment's own validation error (the episode is
                fine), or what :meth:`failed` makes of anything else.
        """
        (outcome,) = await self.call_many([episode], [op])
        if isinstance(outcome, OpenEnvError):
            raise outcome
        value: R = outcome
        return value

    async def call_many(self, episodes: Sequence[Episode], ops: Sequence[Op[Any]]) -> list[Any]:
        """One operation per episode in one runtime hop (each worker's share at once): each
        one's value, or the :class:`OpenEnvError` it ended in."""
        outcomes = await self.runtime.run(
            [(e.ref, op) for e, op in zip(episodes, ops, strict=True)]
        )
        for i, (episode, outcome) in enumerate(zip(episodes, outcomes, strict=True)):
            if isinstance(outcome, Exception):
                outcomes[i] = self.failed(episode, ops[i].tool, outcome)
            elif isinstance(outcome, Reply):
                view = outcome.view
                episode.last_view = {k: v for k, v in view.items() if k != "observation"}
                self._note_recording(view)
                if isinstance(ops[i], Step) and "task" in view:  # judged where it ended
                    self.task_ledger.note(view["task"])
            if self.feed is not None and ops[i].watched:
                self.feed.called(episode.id, ops[i], outcomes[i])
        return outcomes

    async def peek_frame(self, episode: Episode) -> bytes | None:
        """The episode's current frame as PNG, for a watcher: no tool call, nothing
        recorded, and a failure (``None``) never breaks the episode."""
        async with episode.lock:
            if self.episodes.get(episode.id) is not episode or episode.broken:
                return None
            (png,) = await self.runtime.run([(episode.ref, Frame())])
        if isinstance(png, Exception):
            log.debug("episode %s: no frame for a watcher: %r", public_id(episode.id), png)
            return None
        return png if isinstance(png, bytes) else None

    def _note_recording(self, view: dict[str, Any]) -> None:
        """Keep track of whether recording works, from what an answer says of it."""
        failed = view.get("recording_failed")
        if failed is not None:
            self.recording_problem = str(failed)
        elif view.get("recording") is not None:  # an episode's file started fine
            self.recording_problem = None

    def failed(self, episode: Episode, what: str, exc: Exception) -> OpenEnvError:
        """The error to send for ``exc``, raised by ``episode``'s environment in ``what``.

        The environment's own validation errors (:class:`OpenEnvError`, such as
        an illegal action) leave the episode as it was; anything else breaks it
        (:class:`EnvCrashed`, :class:`EnvCallTimeout`) until ``reset``.
        """
        if isinstance(exc, RecordingFailed):
            # The env moved on but its record did not: untrusted until reset.
            self.recording_problem = str(exc)
            episode.broken = f"its recording failed in {what}"
            log.error("episode %s: %s", public_id(episode.id), exc)
            return RecordingFailed(f"{exc}; episode {episode.id} is broken, call reset")
        if isinstance(exc, OpenEnvError) and not isinstance(exc, EnvCrashed):
            return exc
        if isinstance(exc, TimeoutError):
            episode.broken = f"timed out after {self.runtime.call_timeout:g}s in {what}"
            log.error("episode %s: %s", public_id(episode.id), episode.broken)
            return EnvCallTimeout(
                f"the environment {episode.broken}; episode {episode.id} is broken, "
                "call reset to start over"
            )
        if isinstance(exc, EnvCrashed):  # its worker died, or a served reward failed
            episode.broken = f"{exc} in {what}"
            log.error("episode %s: %s", public_id(episode.id), episode.broken)
            return type(exc)(f"{exc}; episode {episode.id} is broken, call reset to start over")
        episode.broken = f"{type(exc).__name__} in {what}"
        log.error("episode %s: environment raised in %s", public_id(episode.id), what, exc_info=exc)
        return EnvCrashed(
            f"the environment raised {type(exc).__name__} in {what}; episode {episode.id} "
            "is broken, call reset to start over"
        )
