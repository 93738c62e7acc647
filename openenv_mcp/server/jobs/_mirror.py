"""Tasks seen by every replica of a sharded server, not only the one running them.

Behind a router of replicas a client's ``tasks/get`` names its task in the body alone
(no routing header), so it reaches any replica. A :class:`JobMirror` (a place all the
replicas reach: on Ray Serve, :class:`~openenv_mcp.cluster._tasks.TaskLedger`) holds
each task's answer as its owner last published it; the replica a request reaches
answers from its own store when it holds the task, else from the mirror.

The owner publishes a task when it is made (before the client learns its id), when
its progress changes (at most once a ``PUBLISH_PERIOD``) and when it ends (its result
kept there for ``ttlMs``). A cancel reaching another replica is recorded at the mirror;
the owner asks the mirror every ``SYNC_PERIOD`` which of its live tasks were asked to
stop (those asks also tell the mirror the owner lives) and cancels them itself.

The mirror is a hook: this package knows only the protocol, the cluster package plugs
an implementation into a replica's :class:`~openenv_mcp.server.jobs.JobStore` when it
builds the replica (:func:`attach_mirror`). A mirror that does not answer
(``MIRROR_TIMEOUT``) costs a replica nothing but the other replicas' view: it answers its
own tasks as before and leaves the mirror alone for ``DOWN_FOR`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol, TypeVar

from openenv_mcp.server.jobs._store import Job, JobStore
from openenv_mcp.sharding import shard_of

__all__ = [
    "DOWN_FOR",
    "IDLE_PERIOD",
    "MIRROR_TIMEOUT",
    "PUBLISH_PERIOD",
    "SYNC_PERIOD",
    "JobMirror",
    "MirroredJobStore",
    "attach_mirror",
]

log = logging.getLogger("openenv_mcp.server")

#: Seconds between an owner's asks for cancels of its live tasks.
SYNC_PERIOD = 0.5
#: Seconds at least between two publications of one working task's progress.
PUBLISH_PERIOD = 1.0
#: Seconds between an owner's asks while it holds only finished tasks (so it learns of a
#: mirror that restarted, and publishes them anew).
IDLE_PERIOD = 5.0
#: Seconds one call to the mirror may take.
MIRROR_TIMEOUT = 5.0
#: Seconds a replica leaves the mirror alone after a call to it failed.
DOWN_FOR = 5.0

T = TypeVar("T")


class JobMirror(Protocol):
    """Where a replica's tasks are seen by its siblings (one per deployment).

    ``answer`` is a task's ``tasks/get`` result as its owner would give it (``taskId``,
    ``status``, ``statusMessage``, the ``result`` or ``error`` once ended). Every method
    answers a generation, a token that changes when the mirror lost what it held (it
    restarted), so owners publish their tasks anew.
    """

    async def publish(
        self, task_id: str, owner: str, tool: str, answer: dict[str, Any], ttl_ms: int, ended: bool
    ) -> str:
        """Hold ``answer`` for ``task_id`` of client ``owner`` (until ``ttl_ms`` after
        it ended, if ``ended``); the generation."""
        ...

    async def lookup(self, task_id: str, owner: str) -> tuple[str, dict[str, Any]] | None:
        """``task_id``'s tool and answer, if it is ``owner``'s; else ``None`` (unknown,
        expired or another client's are one answer)."""
        ...

    async def cancel(self, task_id: str, owner: str) -> tuple[str, dict[str, Any]] | None:
        """Record a cancel of ``task_id`` if it is ``owner``'s and still working; its tool
        and answer as they stand, or ``None`` as :meth:`lookup`."""
        ...

    async def cancels(self, task_ids: Sequence[str]) -> tuple[str, list[str]]:
        """The generation, and those of ``task_ids`` (the asker's live tasks) another
        replica was asked to cancel; the ask also says the asker lives."""
        ...


class MirroredJobStore(JobStore):
    """A replica's tasks, seen by the other replicas through a mirror, and theirs by it
    (see the module). Made by :func:`attach_mirror` from the store the server built (its
    class swapped): the server's extension keeps using the same object."""

    mirror: JobMirror
    #: The generation last answered (``None`` before any answer).
    generation: str | None
    #: Each task's last published answer, and when it was sent (``time.monotonic``).
    sent: dict[str, tuple[dict[str, Any], float]]
    down_until: float
    #: A call failed since the last whole publication: publish everything anew.
    missed: bool
    _loop: asyncio.Task[None] | None
    _wake: asyncio.Event | None

    # -- answering -----------------------------------------------------------------------

    def _elsewhere(self, task_id: str) -> bool:
        """Whether ``task_id`` may be another replica's (asked of the mirror): not held
        here, and not naming this replica's shard."""
        return task_id not in self.jobs and shard_of(task_id) != self.shard

    async def find(self, task_id: str, owner: str) -> tuple[str, dict[str, Any]]:
        if not self._elsewhere(task_id):
            return await super().find(task_id, owner)
        found = await self._ask("lookup", self.mirror.lookup(task_id, owner))
        if found is None:
            raise self._unknown(task_id)
        return found

    async def cancel(self, task_id: str, owner: str) -> None:
        if not self._elsewhere(task_id):
            return await super().cancel(task_id, owner)
        if await self._ask("cancel", self.mirror.cancel(task_id, owner)) is None:
            raise self._unknown(task_id)
        return None

    async def published(self, job: Job) -> None:
        self._start_sync()
        await self.publish(job)

    # -- calls to the mirror ------------------------------------------------------------

    async def _ask(self, what: str, call: Awaitable[T]) -> T | None:
        """``call``'s answer, or ``None`` if the mirror failed or is resting after a
        failure (logged once an outage)."""
        if time.monotonic() < self.down_until:
            if asyncio.iscoroutine(call):
                call.close()
            self.missed = True
            return None
        try:
            return await asyncio.wait_for(call, MIRROR_TIMEOUT)
        except Exception as exc:
            log.warning(
                "the task mirror did not answer %s (%r): other replicas cannot see this "
                "replica's tasks for %gs",
                what,
                exc,
                DOWN_FOR,
            )
            self.down_until = time.monotonic() + DOWN_FOR
            self.missed = True
            return None

    def _note(self, generation: str | None) -> bool:
        """Keep ``generation``; whether it is a new one (the mirror restarted)."""
        if generation is None:
            return False
        changed = self.generation is not None and generation != self.generation
        self.generation = generation
        return changed

    async def publish(self, job: Job) -> None:
        """Publish ``job``'s answer as it stands."""
        answer = job.answer(self.ttl_ms, self.poll_ms)
        generation = await self._ask(
            "publish",
            self.mirror.publish(job.id, job.owner, job.tool, answer, self.ttl_ms, not job.live),
        )
        if generation is None:
            return
        self.sent[job.id] = (answer, time.monotonic())
        if self._note(generation):
            await self.publish_all()

    async def publish_all(self) -> None:
        """Publish every task the store holds (the mirror is new, or was down)."""
        self.sweep()
        for job in list(self.jobs.values()):
            await self.publish(job)

    # -- the owner's loop ---------------------------------------------------------------

    def _start_sync(self) -> None:
        """Run the loop (on the serving event loop), or wake it: a task was made."""
        if self._wake is None:
            self._wake = asyncio.Event()
        self._wake.set()
        if self._loop is None or self._loop.done():
            self._loop = asyncio.get_running_loop().create_task(self._run())

    async def aclose(self) -> None:
        """End the loop (the server is shutting down)."""
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(BaseException):
                await self._loop
            self._loop = None

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            self.sweep()
            if not self.jobs:
                self.sent.clear()
                return
            period = SYNC_PERIOD if self.running() else IDLE_PERIOD
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), period)
            try:
                await self.tick()
            except Exception:  # never the end of the loop
                log.exception("syncing tasks with the task mirror failed")

    async def tick(self) -> None:
        """Take the cancels recorded for this replica's live tasks, and publish those
        whose progress changed (each at most once a ``PUBLISH_PERIOD``)."""
        self.sweep()
        for gone in [i for i in self.sent if i not in self.jobs]:
            del self.sent[gone]
        live = self.running()
        answered = await self._ask("cancels", self.mirror.cancels([j.id for j in live]))
        if answered is None:
            return
        generation, asked = answered
        for task_id in asked:
            job = self.jobs.get(task_id)
            if job is not None and job.live and not job.control.cancelled:
                log.info("task %s: %s cancel asked at another replica", job.id, job.tool)
                job.cancel()
        if self._note(generation) or self.missed:
            self.missed = False
            await self.publish_all()
            return
        now = time.monotonic()
        for job in live:
            before = self.sent.get(job.id)
            if before is None or (
                now - before[1] >= PUBLISH_PERIOD
                and job.answer(self.ttl_ms, self.poll_ms) != before[0]
            ):
                await self.publish(job)


def attach_mirror(store: JobStore, mirror: JobMirror, shard: str) -> MirroredJobStore:
    """Make ``store`` (a sharded server's tasks, as the server built them) name ``shard``
    in new task ids, publish its tasks to ``mirror`` and answer the other replicas' from it."""
    store.__class__ = MirroredJobStore
    assert isinstance(store, MirroredJobStore)
    store.shard = shard
    store.mirror = mirror
    store.generation = None
    store.sent = {}
    store.down_until = 0.0
    store.missed = False
    store._loop = None
    store._wake = None
    return store
