"""The per-client episode cap across a whole deployment, not per replica.

Every replica keeps its own episode table, so each alone would let one client (an
address, as Ray's proxy hands it on in the request's scope) hold its cap on every
replica: ``replicas`` times the cap, its new episodes spread over them by the
router. :class:`ClientLedger` (one more Serve deployment in the application, one
replica, no CPU reserved) counts each client's live episodes on every replica;
each replica's table (:class:`LedgerTable`) asks it before creating an episode
for an HTTP client, and tells it when one closes, so a client holds at most
``max_episodes_per_client`` episodes in all.

The ledger's counts are the replicas' own: the replica asks before creating
(granted: +1), and tells after closing, or after a creation it was granted
failed (-1). Every ``REPORT_PERIOD`` seconds each replica that holds any
client's episodes sends its whole count (with no call of its own in flight, so
nothing it reports is counted twice or missed); that report repairs a count a
lost call left wrong, refills a ledger Serve restarted (its counts lost), and
says the replica lives: a replica not heard from for ``EXPIRY`` seconds is gone
and its episodes with it. A client refused at its cap is named in the answers to
those reports for a while, and each replica then closes that client's idle
episodes (``idle_timeout``), as one server does for a client at its cap.

While the ledger cannot be reached (``LEDGER_TIMEOUT``; Serve restarts a dead one
in seconds, and calls wait for it), each replica falls back to a share of the cap,
``max_episodes_per_client // replicas`` (at least 1): a client gains no episode on
a replica where it holds its share, so it holds at most twice its cap in all (its
cap, if its episodes were spread evenly) until the ledger answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from openenv_mcp.errors import ServerFull
from openenv_mcp.server.episodes._episodes import Episode, EpisodeTable, current_client

__all__ = ["LEDGER_NAME", "ClientLedger", "LedgerTable", "attach_ledger", "deployment_cap"]

log = logging.getLogger("openenv_mcp.cluster")

LEDGER_NAME = "ClientLedger"
#: Seconds between a replica's whole-count reports.
REPORT_PERIOD = 2.0
#: Seconds after its last report (or call) that a replica's counts are dropped.
EXPIRY = 15.0
#: Seconds a client refused at its cap is named to the replicas (each closes its idle
#: episodes then).
PRESSED_FOR = 3 * REPORT_PERIOD
#: Seconds one call to the ledger may take before the replica falls back to its share.
LEDGER_TIMEOUT = 5.0
#: Seconds a replica uses its share, without asking, after a call to the ledger failed.
DOWN_FOR = 5.0


def deployment_cap(max_episodes_per_client: int | None, max_episodes: int, replicas: int) -> int:
    """Most live episodes one client may hold across the deployment: the setting, or a
    quarter of what the deployment holds (``replicas * max_episodes``), as one server's
    default is a quarter of its ``max_episodes``."""
    if max_episodes_per_client is not None:
        return max_episodes_per_client
    return max(1, replicas * max_episodes // 4)


class ClientLedger:
    """Live episodes per client per replica (shard), for the whole deployment.

    Its methods never await: each runs whole on the replica's event loop, so a grant
    is atomic.
    """

    def __init__(self) -> None:
        #: Changes when Serve restarts the ledger (its counts lost): replicas report anew.
        self.generation = secrets.token_hex(8)
        self.held: dict[str, Counter[str]] = {}
        self.seen: dict[str, float] = {}
        #: Clients refused at their cap, and when.
        self.pressed: dict[str, float] = {}

    def _heard(self, shard: str) -> None:
        now = time.monotonic()
        self.seen[shard] = now
        for gone in [s for s, t in self.seen.items() if now - t > EXPIRY]:
            del self.seen[gone]
            self.held.pop(gone, None)
        for client in [c for c, t in self.pressed.items() if now - t > PRESSED_FOR]:
            del self.pressed[client]

    def _total(self, client: str) -> int:
        return sum(counts[client] for counts in self.held.values())

    async def acquire(self, shard: str, client: str, cap: int) -> tuple[str, int]:
        """Count one more episode of ``client`` on ``shard`` if it holds fewer than
        ``cap`` in all: the generation, and what it held before (granted iff < cap)."""
        self._heard(shard)
        held = self._total(client)
        if held < cap:
            self.held.setdefault(shard, Counter())[client] += 1
        else:
            self.pressed[client] = time.monotonic()
        return self.generation, held

    async def release(self, shard: str, client: str) -> str:
        """One episode of ``client`` on ``shard`` is gone."""
        self._heard(shard)
        counts = self.held.get(shard)
        if counts is not None and counts[client] > 0:
            counts[client] -= 1
            if counts[client] == 0:
                del counts[client]
        return self.generation

    async def report(self, shard: str, counts: dict[str, int]) -> tuple[str, list[str]]:
        """``shard``'s whole count (no call of its own in flight): the generation, and the
        clients lately refused at their cap (whose idle episodes it should close)."""
        self._heard(shard)
        self.held[shard] = Counter({c: n for c, n in counts.items() if n > 0})
        return self.generation, sorted(self.pressed)

    async def forget(self, shard: str) -> None:
        """``shard`` is shutting down: its episodes go with it."""
        self.held.pop(shard, None)
        self.seen.pop(shard, None)

    async def holdings(self) -> dict[str, dict[str, int]]:
        """Each client's live episodes per shard (for tests and debugging)."""
        return {s: dict(c) for s, c in self.held.items()}


class _LedgerDown(Exception):
    """The ledger did not answer in time (or at all)."""


class _Gate:
    """Calls to the ledger run together; a whole-count report runs with none in flight."""

    def __init__(self) -> None:
        self.busy = 0
        self.quiet = asyncio.Event()
        self.quiet.set()
        self.open = asyncio.Event()
        self.open.set()

    @contextlib.asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        await self.open.wait()
        self.busy += 1
        self.quiet.clear()
        try:
            yield
        finally:
            self.busy -= 1
            if self.busy == 0:
                self.quiet.set()

    @contextlib.asynccontextmanager
    async def alone(self) -> AsyncIterator[None]:
        self.open.clear()
        try:
            await self.quiet.wait()
            yield
        finally:
            self.open.set()


class LedgerTable(EpisodeTable):
    """A replica's episode table whose per-client cap is the deployment's (the ledger's).

    Made by :func:`attach_ledger` from the table the server built (its class swapped):
    the server's handlers keep using the same object.
    """

    ledger: Any
    shard: str
    cap: int
    replicas: int
    #: Grants received for episodes not yet in the table (their creation under way).
    pending: Counter[str]
    #: Episodes the ledger counts (granted, or in a report): a close of one tells it.
    counted: set[str]
    gate: _Gate | None
    generation: str | None
    down_until: float
    detached: bool
    report_now: asyncio.Event | None
    reporter: asyncio.Task[None] | None

    @property
    def client_cap(self) -> int:
        """This replica's share of the cap: what it falls back to without the ledger, and
        what sizes a client's share of its snapshot limits."""
        return max(1, self.cap // self.replicas)

    async def _check_client_cap(self, client: str) -> None:
        """Checked in :meth:`create`, at the ledger, before the table's own checks."""

    async def create(self) -> Episode:
        client = current_client.get()
        if client is None:
            return await super().create()
        granted = await self._reserve(client)
        try:
            episode = await super().create()
        except BaseException:
            if granted:
                await self._release(client, None)
            raise
        if granted:
            self.pending[client] -= 1
            self.counted.add(episode.id)
        return episode

    async def close(self, episode_id: str) -> None:
        episode = self.episodes.get(episode_id)
        await super().close(episode_id)
        if episode is not None and episode.client is not None:
            await self._release(episode.client, episode.id)

    # -- the ledger --------------------------------------------------------------------

    def _held_here(self, client: str) -> int:
        return self._held_by(client) + self.pending[client]

    async def _reserve(self, client: str) -> bool:
        """Count a new episode of ``client`` at the ledger (``True``), or, without the
        ledger, check it against this replica's share (``False``).

        Raises:
            ServerFull: the client holds its cap (after its idle episodes here closed).
        """
        self._start_reporting()
        for attempt in (0, 1):
            try:
                held = await self._acquire(client)
            except _LedgerDown:
                await self._check_share(client)
                return False
            if held < self.cap:
                return True
            if attempt == 0:  # make room as one server does: this client's idle episodes
                before = len(self.episodes)
                await self.evict_idle(client)
                if len(self.episodes) == before:
                    await self._reclaim(client)
                if len(self.episodes) == before:
                    break
        raise ServerFull(
            f"this client (address {client}) holds {held} live episodes across the "
            f"deployment's {self.replicas} replicas, its cap (max_episodes_per_client="
            f"{self.cap}, of {self.replicas} x max_episodes={self.settings.max_episodes} for "
            "all clients): close episodes you no longer need (the close tool), wait for idle "
            f"ones to be evicted after {self.settings.idle_timeout:g}s, or ask the server's "
            "operator to raise --max-episodes-per-client"
        )

    async def _acquire(self, client: str) -> int:
        """What ``client`` held at the ledger before this ask (counted one more if under
        the cap)."""
        if self.detached or time.monotonic() < self.down_until:
            raise _LedgerDown
        async with self._gate().call():
            generation, held = await self._ask("acquire", self.shard, client, self.cap)
            if held < self.cap:
                self.pending[client] += 1
        self._note(generation)
        return int(held)

    async def _check_share(self, client: str) -> None:
        share = self.client_cap
        held = await self._make_room(client, share, self._held_here)
        if held >= share:
            raise ServerFull(
                f"this client (address {client}) holds {held} live episodes on this replica, "
                f"its share ({share}) of its cap (max_episodes_per_client={self.cap} across "
                f"{self.replicas} replicas; the count across them is unavailable just now): "
                "close episodes you no longer need (the close tool), or try again shortly"
            )

    async def _release(self, client: str, episode_id: str | None) -> None:
        """Tell the ledger an episode of ``client`` is gone: ``episode_id`` closed, or
        (``None``) a creation it granted failed."""
        if self.detached or time.monotonic() < self.down_until:
            self._forget(client, episode_id)  # the next report counts anew
            return
        async with self._gate().call():
            if not self._forget(client, episode_id):
                return
            try:
                generation = await self._ask("release", self.shard, client)
            except _LedgerDown:
                return
        self._note(generation)

    def _forget(self, client: str, episode_id: str | None) -> bool:
        """Drop what this replica counts of a gone episode; whether the ledger counts it
        (an episode made while the ledger was down is not, until a report)."""
        if episode_id is None:
            self.pending[client] -= 1
            return True
        if episode_id in self.counted:
            self.counted.discard(episode_id)
            return True
        return False

    async def _ask(self, method: str, *args: Any) -> Any:
        try:
            return await asyncio.wait_for(self._response(method, *args), LEDGER_TIMEOUT)
        except Exception as exc:  # a timeout, a dead ledger: fall back to shares
            now = time.monotonic()
            if now >= self.down_until:  # once an outage, not once a call
                log.warning(
                    "the client ledger did not answer %s (%r): each replica allows a client "
                    "its share of the cap until it answers",
                    method,
                    exc,
                )
            self.down_until = now + DOWN_FOR
            raise _LedgerDown from exc

    async def _response(self, method: str, *args: Any) -> Any:
        return await getattr(self.ledger, method).remote(*args)

    def _note(self, generation: str) -> None:
        changed = self.generation is not None and generation != self.generation
        if changed and self.report_now is not None:  # a new ledger: it counts none of ours
            self.report_now.set()
        self.generation = generation

    # -- reports -----------------------------------------------------------------------

    def _gate(self) -> _Gate:
        """The gate, made on the event loop that serves (not where the table was made)."""
        if self.gate is None:
            self.gate = _Gate()
        return self.gate

    def _start_reporting(self) -> None:
        if self.reporter is None and not self.detached:
            self.report_now = asyncio.Event()
            self.reporter = asyncio.get_running_loop().create_task(self._report_loop())

    async def _report_loop(self) -> None:
        """Report every ``REPORT_PERIOD`` seconds (at once when the ledger is new), and
        close the idle episodes of the clients it names."""
        assert self.report_now is not None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.report_now.wait(), REPORT_PERIOD)
            self.report_now.clear()
            try:
                for client in await self.report():
                    await self.evict_idle(client)
            except Exception:  # never the end of reporting
                log.exception("reporting to the client ledger failed")

    async def report(self) -> list[str]:
        """Send the ledger this replica's whole count; the clients lately refused at their
        cap (``[]`` if the ledger did not answer)."""
        async with self._gate().alone():
            counts: Counter[str] = Counter()
            counted: set[str] = set()
            for episode in self.episodes.values():
                if episode.client is not None:
                    counts[episode.client] += 1
                    counted.add(episode.id)
            counts.update(self.pending)
            self.counted = counted
            try:
                generation, pressed = await self._ask("report", self.shard, dict(+counts))
            except _LedgerDown:
                return []
            self.down_until = 0.0
        self._note(generation)
        return list(pressed)

    async def detach(self) -> None:
        """Stop reporting and tell the ledger this replica is going (best effort): at
        shutdown, before the table closes its episodes."""
        self.detached = True
        if self.reporter is not None:
            self.reporter.cancel()
            with contextlib.suppress(BaseException):
                await self.reporter
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._response("forget", self.shard), 2.0)


def attach_ledger(
    table: EpisodeTable, *, ledger: Any, shard: str, cap: int, replicas: int
) -> LedgerTable:
    """Make ``table`` count its clients' episodes at ``ledger`` (a handle to the
    :class:`ClientLedger` deployment) against ``cap``, across ``replicas`` replicas."""
    table.__class__ = LedgerTable
    assert isinstance(table, LedgerTable)
    table.ledger = ledger
    table.shard = shard
    table.cap = cap
    table.replicas = replicas
    table.pending = Counter()
    table.counted = set()
    table.gate = None
    table.generation = None
    table.down_until = 0.0
    table.detached = False
    table.report_now = None
    table.reporter = None
    return table
